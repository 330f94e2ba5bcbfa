"""The benchmark script (tests/benchmarks/run.py) runs, checks before it times, and stores
what the pages fast, speed and report read. Timings are not tested: only that they exist and fit
together."""

import json
import math
import os
import subprocess
import sys

import verifier
from support.side_jobs import Job

ROOT = verifier.ROOT
RUN = ROOT / "tests" / "benchmarks" / "run.py"
STORED = ROOT / "book" / "data" / "benchmarks.json"


STEPS = ("wrap", "adopt", "slots", "plain", "clock", "sweep", "seed", "loss", "priority")


def check_workloads(section):
    assert set(section["implementations"]) == {"engine", "engine_memory", "numpy", "torch",
                                               "autograd"}
    assert set(section["ablations"]) == {f"engine_without_{s}" for s in STEPS}  # fast's steps
    assert list(section["cumulative"]) == [  # the steps added in order; 1..8 and 1..9 are
        "engine_through_none", *(f"engine_through_{s}" for s in STEPS[:-2])]  # timed already
    assert section["null"] == {"engine_null": "engine again (the null variant)"}
    assert set(section["tried"]) == {"engine_with_inplace",  # tried in fast, not kept
                                     "engine_with_unchecked", "engine_with_shapes"}
    assert {"engine_pinned", "engine_memory_pinned", "engine_without_adopt_pinned",
            "engine_without_sweep_pinned"} <= set(section["pinned"])
    names = (set(section["implementations"]) | set(section["ablations"]) | set(section["tried"])
             | set(section["null"]) | set(section["cumulative"]) | set(section["pinned"])
             | set(section["minimal"]) | set(section["safety"]))
    only_on = section.get("only_on", {})  # safety.py's ladder: some workloads only
    for name, w in section["workloads"].items():
        assert set(w["times"]) == {n for n in names if name in only_on.get(n, [name])}, name
        for impl, t in w["times"].items():
            assert t["checked"] and t["gradient_difference"] <= 1e-12, (name, impl)
            assert t["median"] > 0 and len(t["samples"]) == (
                w["rounds"] * w["sets"])
            assert t["page_faults"] >= 0 and t["first"]["faults"] >= 0, (name, impl)
            # glibc's thresholds fixed in the pinned workers only
            assert t["info"]["malloc_env"] == (section["pinned_env"] if impl.endswith("_pinned")
                                               else {}), (name, impl)
        # the engine before chapter fast is the snapshot of memory, not the package
        assert "/snapshots/memory-" in w["times"]["engine_memory"]["info"]["engine_file"]
        assert "/snapshots/" not in w["times"]["engine"]["info"]["engine_file"]
        assert "/snapshots/" not in w["times"]["engine_null"]["info"]["engine_file"]
        target = w["target"]
        ratio = w["times"]["engine"]["median"] / w["times"][target["versus"]]["median"]
        assert math.isclose(w["ratios"][target["versus"]], ratio)
        assert target["met"] == (ratio <= target["ratio"])
        noise = w["noise"]
        assert len(noise["per_set"]) == w["sets"], name
        assert math.isclose(noise["band"], max(abs(r - 1) for r in [
            noise["pooled"], *noise["per_set"], *noise["quartiles"]]))


def quick_run(folder):
    out = folder / "bench.json"
    run = subprocess.run([sys.executable, str(RUN), "--only", "running_small", "--quick",
                          "--out", str(out)], capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    return run, json.loads(out.read_text()) if out.exists() else None


QUICK_RUN = Job("benchmark-quick-run", quick_run, guess=41)


def side_jobs(item):
    """The quick run: a child the test only waits on, run beside the session."""
    return [QUICK_RUN] if item.originalname == (
        "test_a_quick_run_checks_times_and_stores_one_workload") else []


def test_a_quick_run_checks_times_and_stores_one_workload():
    run, stored = QUICK_RUN.result()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "running_small" in run.stdout and "page faults" in run.stdout
    section = stored["workloads"]
    assert list(section["workloads"]) == ["running_small"]
    check_workloads(section)


def test_the_stored_results_have_everything_the_pages_read():
    stored = json.loads(STORED.read_text())
    check_workloads(stored["workloads"])
    assert list(stored["workloads"]["workloads"]) == [
        "running_small", "running_large", "mlp", "chain", "cheap_large", "leaf"]
    assert not stored["workloads"]["commit"]["dirty"], "measured with uncommitted changes"
    build = stored["build"]
    assert math.isclose(build["overhead"], build["cold_build"] - build["scripts_sum"], abs_tol=0.11)


def test_the_engine_before_fast_that_the_chapter_reads_is_the_snapshot_of_memory():
    """book/data/engine-before-fast.json: write it again with
    `python tests/benchmarks/run.py --engine-before` after a change to an earlier chapter's lines."""
    import run

    stored = json.loads((ROOT / "book" / "data" / "engine-before-fast.json").read_text())
    assert stored == run.engine_before(), "stale: run tests/benchmarks/run.py --engine-before"


def test_a_page_runs_as_the_build_timing_s_plain_script(tmp_path):
    """The build timing runs each chapter's cells as one script written outside the book,
    from the chapter's folder (run.run_build): the report's cells import the module beside
    them, book/benchmark_results.py, as the kernel finds it there."""
    import myst_reader
    import run

    path = ROOT / "book" / "report.md"
    script = tmp_path / "report.py"
    script.write_text(run.chapter_script(myst_reader.read_chapter(path, ROOT)))
    env = {**run.script_env(path, tmp_path, ROOT), "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, str(script)], cwd=path.parent, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_target_s_paired_ratios_compare_samples_of_the_same_round():
    """benchmark_results.paired divides the engine's i-th sample by the reference's i-th:
    run.run_workload appends one sample of every implementation per round, so the i-th
    samples are of one round; the count says how many rounds were within the target."""
    import benchmark_results

    workload = {"target": {"versus": "torch", "ratio": 0.5},
                "times": {"engine": {"samples": [4.0, 1.0, 3.0]},
                          "torch": {"samples": [10.0, 1.0, 5.0]}}}
    assert benchmark_results.paired(workload) == ([0.4, 0.6, 1.0], 1)
    stored = json.loads(STORED.read_text())["workloads"]
    for name, w in stored["workloads"].items():
        ratios, within = benchmark_results.paired(w)
        assert len(ratios) == len(w["times"]["engine"]["samples"]) > 1, name


def test_the_log_of_runs_ends_with_the_stored_run():
    """A full run appends its verdicts' samples to book/data/benchmark-runs.json (run.py,
    add_to_history), which chapter fast shows: the log's last entry is the stored run, cut."""
    import run

    runs = json.loads(run.HISTORY.read_text())
    stored = json.loads(STORED.read_text())["workloads"]
    assert runs[-1] == run.history_entry(stored), "stale: the stored run is not the log's last"
    assert 1 <= len(runs) <= run.KEPT_RUNS
    assert [r["date"] for r in runs] == sorted(r["date"] for r in runs)
    for entry in runs:
        for name, w in entry["workloads"].items():
            engine, versus = w["times"]["engine"], w["times"][w["target"]["versus"]]
            assert len(engine["samples"]) == len(versus["samples"]) > 1, (entry["date"], name)


def test_a_full_run_adds_its_entry_to_the_log(tmp_path):
    import run

    stored = json.loads(STORED.read_text())["workloads"]
    log = tmp_path / "runs.json"
    for _ in range(run.KEPT_RUNS + 2):
        run.add_to_history(stored, log)
    runs = json.loads(log.read_text())
    assert len(runs) == run.KEPT_RUNS and runs[-1] == run.history_entry(stored)


def test_an_implementation_s_name_says_what_its_worker_runs():
    import workloads as W

    assert W.variant("engine_memory_pinned") == {"base": "engine", "engine": "memory", "undo": (),
                                                 "experiment": None, "pinned": True}
    assert W.variant("engine_without_adopt")["undo"] == ("adopt",)
    assert W.variant("engine_through_none")["undo"] == W.STEPS
    assert W.variant("engine_through_slots")["undo"] == (
        "plain", "clock", "sweep", "seed", "loss", "priority")
    assert W.variant("engine_null")["engine"] == "finished"
    assert W.variant("numpy_pinned") == {"base": "numpy", "engine": None, "undo": (),
                                         "experiment": None, "pinned": True}
    assert W.STEPS == STEPS == tuple(W.UNDOS)
    assert list(W.ABLATIONS) == [s for s in STEPS if s != "slots"]  # profiles.py's steps


UNDO = """
import numpy as np
import workloads as W
import run
W.ablate({steps!r})
import engine
for name in W.WORKLOADS:
    W.CHAIN_DEPTH = 50  # the check, not the time
    data = W.inputs(name)
    step = W.setup(name, "engine", data)
    floor = W.setup(name, "numpy", data)()
    assert max(run.largest_difference(step(), floor),
               run.largest_difference(step(), floor)) <= run.CHECK_TOLERANCE, name
t = engine.Tensor(np.ones(2)) * 2.0
print(hasattr(type(t), "__slots__"), sorted(getattr(t, "__dict__", {{}})))
"""


def _undo(steps):
    here = str(ROOT / "tests" / "benchmarks")  # workloads and run, for the child to import
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", UNDO.format(steps=steps)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split("\n")[-2]


def test_undoing_one_step_or_all_of_them_keeps_the_gradients():
    """ablate takes one step (helper profiles calls it so) or several; the combined undos of
    Steps 1 and 5 (both replace _result) and Step 3's class without slots still compute the
    NumPy floor's gradients (each in a fresh process: the undos patch the engine)."""
    assert _undo("clock") == "True []"
    assert _undo(STEPS).startswith("False ['_data', 'backward_fn', 'grad', 'op', 'parents'")
    assert _undo(("wrap", "clock")) == "True []"
    import workloads as W

    try:
        W.ablate("nothing")
    except ValueError as error:
        assert "nothing" in str(error)
    else:
        raise AssertionError("an unknown step was accepted")


def test_the_noise_band_comes_from_the_null_variant():
    import run

    times = {"engine": {"samples": [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]},
             "engine_null": {"samples": [1.1, 1.0, 1.0, 2.0, 1.9, 1.9]}}
    noise = run.noise(times, repeats=3, sets=2)
    assert noise["per_set"] == [1.0, 0.95] and noise["pooled"] == 1.0  # medians 1.5 and 1.5
    assert noise["quartiles"] == [0.95, 1.025] and math.isclose(noise["band"], 0.05)
    times["engine_null"]["samples"] = [1.3, 1.0, 0.7, 2.0, 2.0, 2.0]  # medians that agree
    assert math.isclose(run.noise(times, repeats=3, sets=2)["band"], 0.1)  # are no band of 0


def test_a_ratio_is_shown_only_outside_the_band():
    import benchmark_results as B

    w = {"noise": {"band": 0.03}}
    assert B.with_band(1.57, w) == "1.57x (±3.0%)"
    assert B.with_band(1.02, w) == "1.02x (±3.0%, not shown)"
    assert B.with_band(1.04, {"noise": {"band": 0.026}}) == "1.04x (±2.6%)"
    # at the band's edge a third decimal shows which side of it the ratio is
    assert B.with_band(1.0306, {"noise": {"band": 0.03}}) == "1.031x (±3.0%)"
    assert B.with_band(1.0294, {"noise": {"band": 0.03}}) == "1.029x (±3.0%, not shown)"
    assert B.with_band(1.02, {}) == "1.02x (noise not measured)"
    section = {"ablations": {"engine_without_a": "engine without A",
                             "engine_without_b": "engine without B"},
               "workloads": {n: {"noise": {"band": 0.05}, "times": {
                   "engine": {"median": 1.0}, "engine_without_a": {"median": 1.04},
                   "engine_without_b": {"median": r}}} for n, r in (("x", 1.01), ("y", 1.2))}}
    assert B.not_shown_steps(section) == ["engine without A"]


def test_a_target_met_on_one_kind_of_processor_is_not_met_by_the_book_s_rule():
    import benchmark_results as B

    def run(cpu, met):
        return {"commit": {"sha": "abc", "dirty": False}, "machine": cpu,
                "workloads": {"mlp": {"target": {"met": met}}}}

    section = {"commit": {"sha": "abc", "dirty": False}, "machine": {"cpu": "Xeon"},
               "workloads": {"mlp": {"target": {"met": True}}}}
    assert B.processors_met(section, [run("Xeon", True)]) == {"mlp": ["Xeon"]}
    assert B.targets_sentence(section, [run("Xeon", True)]) == (
        "0 of 1 targets met by the book's rule (two kinds of processor); 1 of 1 hold in this "
        "run on Xeon (one kind of processor: not yet met by the book's rule)")
    assert B.processors_met(section, [run("EPYC", True)]) == {"mlp": ["EPYC", "Xeon"]}
    assert B.processors_met(section, [run("EPYC", False)]) == {"mlp": []}
    assert B.targets_sentence(section, [run("EPYC", True)]).startswith("1 of 1 targets met")


# what a stored run measured: the engine and the workers' code. An edit of any of these after
# the run makes the stored times those of another program, so the run must be taken again.
MEASURED = ("engine", "tests/benchmarks/workloads.py", "tests/benchmarks/minimal.py",
            "tests/benchmarks/safety.py")


def changed_since(commit, measured=MEASURED):
    """The measured files that differ between `commit` and the working tree."""
    run = subprocess.run(["git", "diff", "--name-only", commit, "--", *measured],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, f"git diff against the stored run's commit {commit}: {run.stderr}"
    return run.stdout.split()


def test_the_stored_runs_measured_the_engine_as_it_is_now():
    """The issue's 'the stored run is from the final commit': the run's commit may be older
    than HEAD (the results are committed after it), but nothing it measured may have changed."""
    stored = json.loads(STORED.read_text())["workloads"]["commit"]
    assert not changed_since(stored["sha"]), (
        f"book/data/benchmarks.json measured commit {stored['short']}; since then "
        f"{changed_since(stored['sha'])} changed: run tests/benchmarks/run.py again")
    profiles = json.loads((ROOT / "book" / "data" / "step-profiles.json").read_text())["commit"]
    assert not profiles["dirty"], "step-profiles.json: measured with uncommitted changes"
    with_profiler = (*MEASURED, "tests/benchmarks/profiles.py")
    assert not changed_since(profiles["sha"], with_profiler), (
        f"book/data/step-profiles.json measured commit {profiles['short']}; since then "
        f"{changed_since(profiles['sha'], with_profiler)} changed: run tests/benchmarks/profiles.py again")
