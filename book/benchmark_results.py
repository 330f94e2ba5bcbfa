"""The benchmark's stored results, for the pages that show them.

`tests/benchmarks/run.py` writes `book/data/benchmarks.json`: a section `workloads`
(the appendix speed and chapter fast read it) and a section `build` (the execution
report reads it). Each full run of the workloads also goes into
`book/data/benchmark-runs.json` (`history`): the last few runs, cut to what their
verdicts rest on, which chapter fast compares. Each section says where and when it
was measured; `machine` puts that into one sentence, `duration` writes a time,
`ratio_text` a ratio, `paired` counts the rounds within a target, `verdict` writes
a target's ratio, verdict and rounds, and `missing` is what a page shows when the
file has no such section. The pages' cells run in book/, so `import
benchmark_results` finds this file; each page names it in its front matter's
`data_files`, so the page runs again when it changes and a downloaded notebook
carries it.
"""

import json
from pathlib import Path

from IPython.display import Markdown

RESULTS = Path("data") / "benchmarks.json"  # book/data/benchmarks.json, beside the pages
HISTORY = Path("data") / "benchmark-runs.json"  # the last full runs' verdicts and samples


def load():
    """The stored results ({} when the benchmark has never been run here)."""
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def history():
    """The last full runs, oldest first, each cut to its verdicts' samples ([] when none)."""
    return json.loads(HISTORY.read_text()) if HISTORY.exists() else []


def missing(what):
    return Markdown(f"*No {what} in `{RESULTS}` here: run `python tests/benchmarks/run.py` "
                    "from the root of the book's repository.*")


def machine(section, what, all_libraries=True):
    """One sentence: the machine, libraries, commit, date and load of a stored section."""
    m, c = section["machine"], section["commit"]
    commit = f"`{c['short']}`" + (" with uncommitted changes" if c["dirty"] else "")
    libraries = [f"Python {m['python']}", f"NumPy {m['numpy']} ({m['numpy_blas']})"]
    if all_libraries:
        libraries += [f"PyTorch {m['torch']} ({m['torch_blas']})", f"autograd {m['autograd']}"]
    load = m["load_average"][0]
    after = m.get("load_average_after", [load])[0]
    return Markdown(
        f"{what} on **{m['cpu']}** ({m['cores']} cores, {m['system']}), "
        f"{', '.join(libraries)}; commit {commit}, {section['date'][:16].replace('T', ' ')} "
        f"UTC. Load average (one minute) {load:g} before the run and {after:g} after: "
        f"with {m['cores']} cores, anything near or above {m['cores']} means other programs "
        "were competing for the processor.")


def duration(seconds):
    """A time in the unit that suits it, three significant digits (e.g. 174 µs, 9.87 ms).
    It rounds first, then picks the unit and the decimals: 99.99 µs is 100 µs, not 100.0 µs."""
    seconds = float(f"{seconds:.3g}")
    scale, unit = (1e6, "µs") if seconds < 1e-3 else (1e3, "ms") if seconds < 1 else (1, "s")
    value = seconds * scale
    digits = 0 if value >= 100 else 1 if value >= 10 else 2
    return f"{value:.{digits}f}\u00a0{unit}"  # a no-break space: the unit stays with its number


def paired(workload):
    """The engine's time over its target's reference, one ratio per round: the i-th sample of
    every implementation comes from the same round of the same set of processes, so each ratio
    compares two times taken minutes apart at most, and their range is how far one run's
    verdict can be trusted. Returns (sorted ratios, how many are within the target)."""
    times, target = workload["times"], workload["target"]
    ratios = sorted(e / r for e, r in zip(times["engine"]["samples"],
                                          times[target["versus"]]["samples"], strict=True))
    return ratios, sum(ratio <= target["ratio"] for ratio in ratios)


def ratio_text(ratio, target):
    """A ratio with two decimals, or three when two would hide which side of the target it is."""
    close = f"{ratio:.2f}" == f"{target['ratio']:.2f}"
    return f"{ratio:.3f}x" if close else f"{ratio:.2f}x"


def verdict(workload):
    """A target's ratio, verdict and rounds within it, for a table cell: "1.11x, **not met**;
    3 of 9" (no-break spaces keep the count on one line)."""
    target = workload["target"]
    each, within = paired(workload)
    met = "met" if target["met"] else "**not met**"
    return f"{ratio_text(target['measured'], target)}, {met}; {within}\u00a0of\u00a0{len(each)}"
