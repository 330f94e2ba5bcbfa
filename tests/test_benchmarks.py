"""The benchmark script (tests/benchmarks/run.py) runs, checks before it times, and stores
what the pages fast, speed and report read. Timings are not tested: only that they exist and fit
together."""

import json
import math
import os
import subprocess
import sys

import verifier

ROOT = verifier.ROOT
RUN = ROOT / "tests" / "benchmarks" / "run.py"
STORED = ROOT / "book" / "data" / "benchmarks.json"


def check_workloads(section):
    assert set(section["implementations"]) == {"engine", "engine_memory", "numpy", "torch",
                                               "autograd"}
    assert set(section["ablations"]) == {  # chapter fast's steps, each undone
        "engine_without_adopt", "engine_without_wrap", "engine_without_plain",
        "engine_without_clock", "engine_without_sweep", "engine_without_seed",
        "engine_without_loss", "engine_without_priority"}
    assert set(section["tried"]) == {"engine_with_inplace",  # tried in fast, not kept
                                     "engine_with_unchecked", "engine_with_shapes"}
    names = set(section["implementations"]) | set(section["ablations"]) | set(section["tried"])
    for name, w in section["workloads"].items():
        assert set(w["times"]) == names, name
        for impl, t in w["times"].items():
            assert t["checked"] and t["gradient_difference"] <= 1e-12, (name, impl)
            assert t["median"] > 0 and len(t["samples"]) == (
                section["settings"]["repeats"] * section["settings"]["processes"])
            assert t["page_faults"] >= 0 and t["first"]["faults"] >= 0, (name, impl)
        # the engine before chapter fast is the snapshot of memory, not the package
        assert "/snapshots/memory-" in w["times"]["engine_memory"]["info"]["engine_file"]
        assert "/snapshots/" not in w["times"]["engine"]["info"]["engine_file"]
        target = w["target"]
        ratio = w["times"]["engine"]["median"] / w["times"][target["versus"]]["median"]
        assert math.isclose(w["ratios"][target["versus"]], ratio)
        assert target["met"] == (ratio <= target["ratio"])


def test_a_quick_run_checks_times_and_stores_one_workload(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, str(RUN), "--only", "running_small", "--quick",
                          "--out", str(out)], capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "running_small" in run.stdout and "page faults" in run.stdout
    section = json.loads(out.read_text())["workloads"]
    assert list(section["workloads"]) == ["running_small"]
    check_workloads(section)


def test_the_stored_results_have_everything_the_pages_read():
    stored = json.loads(STORED.read_text())
    check_workloads(stored["workloads"])
    assert list(stored["workloads"]["workloads"]) == [
        "running_small", "running_large", "mlp", "chain", "leaf"]
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
    import cells
    import execution
    import run

    path = ROOT / "book" / "report.md"
    script = tmp_path / "report.py"
    script.write_text(run.chapter_script(cells.read_chapter(path, ROOT)))
    env = {**os.environ, "MPLBACKEND": "Agg", **execution.kernel_env(path, tmp_path, ROOT)}
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
