"""The profiles of chapter fast's steps (tests/benchmarks/profiles.py writes
book/data/step-profiles.json; book/step_profiles.py draws the tables at the end of each step).
Timings are not tested: only that the stored file has what the page reads, that its names are
the engine's, and that the tables and sentences say what the data says."""

import json
import re
import subprocess
import sys

import pytest

import verifier

ROOT = verifier.ROOT
STORED = ROOT / "book" / "data" / "step-profiles.json"
PROFILES = ROOT / "tests" / "benchmarks" / "profiles.py"


def stored():
    return json.loads(STORED.read_text())


def test_the_stored_profiles_cover_every_step_that_can_be_undone():
    import workloads

    profiles = stored()
    assert set(profiles["steps"]) == set(workloads.ABLATIONS)
    assert re.fullmatch(r"[0-9a-f]{40}", profiles["commit"]["sha"]), profiles["commit"]
    assert isinstance(profiles["commit"]["dirty"], bool)
    for key in ("cpu", "cores", "python", "numpy", "numpy_blas"):
        assert profiles["machine"][key], key
    for step, s in profiles["steps"].items():
        assert s["workload"] in workloads.WORKLOADS, step
        assert s["before"] == f"{s['workload']}/engine_without_{step}", step
        assert s["after"] == f"{s['workload']}/engine", step
        assert s["undone"] == workloads.ABLATIONS[step] and s["number"] in s["undone"], step


def test_each_stored_variant_was_checked_and_its_functions_are_named_by_the_engine():
    profiles = stored()
    names_of = {}
    for key, v in profiles["variants"].items():
        workload, implementation = key.split("/")
        assert (v["workload"], v["implementation"]) == (workload, implementation)
        assert v["gradient_difference"] <= 1e-12, key
        assert "/snapshots/" not in v["info"]["engine_file"], key  # the tree's own engine
        assert v["us"] > 0 and v["profiled_us"] > 0 and 0 <= v["collector_us"] < v["us"], key
        assert v["inflation"] == pytest.approx(v["profiled_us"] / (v["us"] - v["collector_us"]),
                                               rel=1e-2), key
        assert len(v["samples_us"]) == profiles["settings"]["rounds"], key
        times = [f["us"] for f in v["functions"]]
        assert times == sorted(times, reverse=True), f"{key}: not largest first"
        names = [f["name"] for f in v["functions"]]
        assert len(names) == len(set(names)), key
        # no memory address in a name: the same function has the same name in every run
        assert not [n for n in names if "0x" in n], [n for n in names if "0x" in n]
        names_of[key] = {f["name"]: f["calls"] for f in v["functions"]}
    # the engine's own functions by their qualified names, the patched ones by what they replace
    assert names_of["running_small/engine"]["Tensor._result"] == 5
    assert names_of["running_small/engine_without_wrap"]["Tensor.__init__"] == 5
    assert "Tensor.__init__" not in names_of["running_small/engine"]
    assert names_of["running_small/engine_without_clock"]["record_versions"] == 5
    assert names_of["chain/engine"]["Tensor.sin.backward_fn"] == 100_000


def test_a_worker_profiles_the_step_undone_under_the_names_it_replaced():
    """One worker of profiles.py, driven as the driver does: the patched `_result` of Step 1's
    undo is profiled as `Tensor._result`, and it calls `Tensor.__init__` once per operation."""
    requests = "".join(json.dumps(r) + "\n" for r in (
        {"cmd": "calibrate", "min_time": 0.01, "warmup": 0.01}, {"cmd": "time"},
        {"cmd": "profile"}, {"cmd": "stop"}))
    done = subprocess.run([sys.executable, str(PROFILES), "--worker", "running_small",
                           "engine_without_wrap"], input=requests, capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    checked, calibrated, timed, profiled = map(json.loads, done.stdout.splitlines())
    assert checked["ok"] and calibrated["loops"] >= 1 and timed["seconds"] > 0
    functions = profiled["functions"]
    assert functions["Tensor.__init__"][1] == 5 and functions["Tensor._result"][1] == 5
    assert functions["workloads.running_engine.step"][1] == 1


def profiles_of(before, after, collector=(0.0, 0.0)):
    """A stored file's shape with one step, `loss`, and its two variants' functions
    ({name: (µs, calls)})."""
    def variant(functions, us, collector_us):
        return {"us": us, "collector_us": collector_us, "inflation": 2.0,
                "functions": [{"name": n, "us": t, "calls": c} for n, (t, c)
                              in sorted(functions.items(), key=lambda f: -f[1][0])]}

    return {"steps": {"loss": {"number": "Step 8", "workload": "mlp", "title": "MLP",
                               "why": "a loss", "before": "mlp/engine_without_loss",
                               "after": "mlp/engine"}},
            "variants": {"mlp/engine_without_loss": variant(before, 50.0, collector[0]),
                         "mlp/engine": variant(after, 40.0, collector[1])}}


def rows(markdown):
    return [[cell.strip() for cell in line.strip("|").split("|")]
            for line in markdown.splitlines()[2:]]


def test_a_step_s_table_lists_the_largest_functions_before_or_after_and_the_rest():
    import step_profiles

    before = {f"f{i}": (10.0 - i, 1) for i in range(8)}  # f0 10 µs ... f7 3 µs
    after = {**before, "f0": (1.0, 1), "new": (9.5, 2)}
    del after["f1"]
    profiles = profiles_of(before, after)
    assert step_profiles.top(profiles, "loss", 3) == ["f0", "new", "f1"]  # by max(before, after)
    # the two the sentence names (their own times change most) are rows even when smaller
    assert step_profiles.top(profiles, "loss", 1) == ["f0", "new"]
    table = rows(step_profiles.table(profiles, "loss", count=3))
    assert table[0] == ["`f0`", "10.0\u00a0µs", "1.00\u00a0µs", "1", "1"]
    assert table[1] == ["`new`", "–", "9.50\u00a0µs", "0", "2"]
    assert table[2] == ["`f1`", "9.00\u00a0µs", "–", "1", "0"]
    # the rest: f2..f7 on both sides, 8 + 7 + ... + 3 = 33 µs and six calls
    assert table[3] == ["everything else", "33.0\u00a0µs", "33.0\u00a0µs", "6", "6"]
    assert table[4][0].startswith("all of it") and table[4][1:3] == ["52.0\u00a0µs",
                                                                     "43.5\u00a0µs"]
    assert table[5] == ["**one iteration, without the profiler**", "**50.0\u00a0µs**",
                        "**40.0\u00a0µs**", "", ""]
    assert len(table) == 6, "no row for a collector that took nothing"
    with_collector = rows(step_profiles.table(profiles_of(before, after, (20.0, 0.0)), "loss"))
    assert ["the cycle collector, without the profiler", "20.0\u00a0µs", "–", "", ""] in \
        with_collector


def test_a_step_s_sentence_names_the_two_largest_changes_and_when_the_profile_cannot_tell():
    import step_profiles

    before = {"same": (30.0, 4), "gone": (2.0, 5), "kept": (1.0, 1)}
    after = {"same": (10.0, 4), "kept": (1.5, 3)}
    sentence = step_profiles.sentence(profiles_of(before, after), "loss")
    assert sentence == (
        "The own times that change most are those of same (30.0\u00a0µs in 4 calls with the "
        "step undone, 10.0\u00a0µs in 4 calls with it) and gone (2.00\u00a0µs in 5 calls with "
        "the step undone, none with it). Under cProfile the iteration takes 33.0\u00a0µs and "
        "11.5\u00a0µs, without it 50.0\u00a0µs and 40.0\u00a0µs (the collector's time aside, "
        "cProfile makes it 2.0 and 2.0 times as long)."), sentence
    # under cProfile the iteration grows while without it it shrinks: the profile cannot tell
    against = step_profiles.sentence(profiles_of(before, {**after, "same": (40.0, 4)}), "loss")
    assert against.endswith("the profile and the time move in opposite directions, so the "
                            "profile cannot place the step's effect."), against


def test_the_engine_alone_table_and_the_collector_s_share():
    import step_profiles

    profiles = profiles_of({"a": (1.0, 1)}, {"a": (30.0, 3), "b": (5.0, 1)}, (0.0, 10.0))
    profiles["steps"]["loss"]["workload"] = "mlp"
    table = rows(step_profiles.engine_table(profiles, "mlp", count=1))
    assert table[0] == ["`a`", "30.0\u00a0µs", "3"]
    assert table[1] == ["everything else", "5.00\u00a0µs", "1"]
    assert ["the cycle collector, without the profiler", "10.0\u00a0µs", ""] in table
    assert step_profiles.collector_sentence(profiles, "mlp").startswith(
        "Without the profiler, the cycle collector took 10.0\u00a0µs of the 40.0\u00a0µs of one "
        "iteration of the MLP (25%)")


def test_a_missing_file_loads_as_none(tmp_path):
    import step_profiles

    assert step_profiles.load(tmp_path / "none.json") is None
    assert "profiles.py" in step_profiles.MISSING and "\n" not in step_profiles.MISSING
