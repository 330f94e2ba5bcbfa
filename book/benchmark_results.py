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
    """A target's ratio, whether it holds in this run, and rounds within it, for a table cell:
    "1.11x, **does not hold**; 3 of 9" (no-break spaces keep the count on one line). "Met" is
    kept for the book's rule: held on two kinds of processor."""
    target = workload["target"]
    each, within = paired(workload)
    met = "holds" if target["met"] else "**does not hold**"
    return f"{ratio_text(target['measured'], target)}, {met}; {within}\u00a0of\u00a0{len(each)}"


# -- the run's noise, and what is shown within it ------------------------------------------


def band(workload):
    """The run's noise band on `workload` (0.03 for ±3%), from its null variant: the finished
    engine timed again in a worker of its own (tests/benchmarks/run.py, `noise`); None for a
    run without one."""
    return workload.get("noise", {}).get("band")


def shown(ratio, workload):
    """Whether `ratio` (a time over another) is outside the workload's noise band: a gain or a
    loss the run can tell from noise. Without a band nothing is shown."""
    width = band(workload)
    return width is not None and abs(ratio - 1.0) > width


def with_band(ratio, workload, digits=2):
    """A ratio with the run's noise, for a table cell: "1.57x (±3.0%)", or
    "1.02x (±3.0%, not shown)" inside the band (a tenth of a percent, so that 1.03x beside
    ±2.6% reads as shown)."""
    width = band(workload)
    if width is None:
        return f"{ratio:.{digits}f}x (noise not measured)"
    noise = f"±{100 * width:.1f}%"
    if abs(abs(ratio - 1.0) - width) < 0.005:  # at the band's edge: a third decimal says which side
        digits = max(digits, 3)
    return f"{ratio:.{digits}f}x ({noise}" + ("" if shown(ratio, workload) else ", not shown") + ")"


def step_ratio(workload, key):
    """The time of `key` (the finished engine with a step undone) over the finished engine's."""
    t = workload["times"]
    return t[key]["median"] / t["engine"]["median"]


def tried_ratio(workload, key):
    """The finished engine's time over its time with a change tried (above 1: it pays)."""
    t = workload["times"]
    return t["engine"]["median"] / t[key]["median"]


def not_shown_steps(section):
    """The labels of the steps undone whose ratio is inside the band on every workload: kept
    steps the run cannot show to pay, which must say what else they buy."""
    work = section["workloads"].values()
    return [label for key, label in section.get("ablations", {}).items()
            if all(band(w) is not None and not shown(step_ratio(w, key), w) for w in work)]


def cumulative(section, name):
    """The steps added in order on one workload: [(label, time, ratio to the row before,
    ratio of the all-undone time to this one)], from the engine with every step undone to the
    finished engine. The ratios to the row before multiply to the last cumulative ratio."""
    w = section["workloads"][name]
    t = w["times"]
    keys = list(section.get("cumulative", {}))
    if not keys:
        return []
    # Steps 1..8 kept is the engine without Step 9; Steps 1..9 is the finished engine
    rows = [(section["cumulative"][k], k) for k in keys]
    rows.append(("engine with Steps 1 to 8 only", "engine_without_priority"))
    rows.append(("engine with Steps 1 to 9 (the finished engine)", "engine"))
    start = t[keys[0]]["median"]
    out, before = [], None
    for label, key in rows:
        now = t[key]["median"]
        out.append((label, key, now, None if before is None else before / now, start / now))
        before = now
    return out


def pinned_pairs(section):
    """(label, default key, pinned key) for each variant timed with glibc's thresholds both
    ways."""
    return [(section["implementations"].get(key.removesuffix("_pinned"))
             or section.get("ablations", {}).get(key.removesuffix("_pinned"), key),
             key.removesuffix("_pinned"), key) for key in section.get("pinned", {})]


# -- where a target holds: the book's rule asks for two kinds of processor ------------------


def processors_met(section, runs):
    """{workload: sorted kinds of processor on which the target held} over the runs kept
    (`history()`) of the stored run's commit, and the stored run itself; a workload missed on
    any run of that commit counts on none."""
    sha = section["commit"]["sha"]
    same = [r for r in runs if r["commit"].get("sha") == sha and not r["commit"].get("dirty")]
    found = {}
    for name, w in section["workloads"].items():
        verdicts = [(section["machine"]["cpu"], w["target"]["met"])]
        verdicts += [(r.get("machine", "not recorded"), r["workloads"][name]["target"]["met"])
                     for r in same if name in r["workloads"]]
        kinds = {cpu for cpu, _ in verdicts if cpu != "not recorded"}
        found[name] = sorted(kinds) if all(met for _, met in verdicts) else []
    return found


def targets_sentence(section, runs):
    """How many targets count as met by the book's rule (two kinds of processor at the stored
    commit), and where each holds in this run."""
    where = processors_met(section, runs)
    met = [n for n, kinds in where.items() if len(kinds) >= 2]
    here = [n for n, w in section["workloads"].items() if w["target"]["met"]]
    cpu = section["machine"]["cpu"]
    total = len(section["workloads"])
    if len(met) == total:
        return f"{total} of {total} targets met, each on two kinds of processor or more"
    one = [n for n in here if n not in met]
    text = f"{len(met)} of {total} targets met by the book's rule (two kinds of processor)"
    if one:
        text += (f"; {len(one)} of {total} hold in this run on {cpu} (one kind of processor: "
                 "not yet met by the book's rule)")
    return text
