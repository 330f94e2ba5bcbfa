"""The stored profiles of chapter fast's steps, for the tables at the end of each step.

`tests/benchmarks/profiles.py` writes `book/data/step-profiles.json`: for each step of
chapter fast that can be undone, the workload that step is about, profiled with cProfile with
the step undone ("before") and as the finished engine ("after"), each function's own time and
calls per iteration, and the iteration timed without the profiler. `table` draws a step's
table, `sentence` says in one sentence what it shows, `workload_of` names the workload and why
it was chosen; `engine_table` and `collector_sentence` do the same for one variant alone (Step
3, which cannot be undone). The chapter's cells run in book/, so `import step_profiles` finds
this file; the page names it and the data in its front matter's `data_files`.
"""

import json
from pathlib import Path

from benchmark_results import duration

PROFILES = Path("data") / "step-profiles.json"  # book/data/step-profiles.json, beside the page
ROWS = 6  # functions per table; the rest is one row


def load(path=PROFILES):
    """The stored profiles (None when profiles.py has never been run here)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else None


MISSING = ("*No stored profiles in `data/step-profiles.json`: run `python "
           "tests/benchmarks/profiles.py` from the root of the book's repository.*")


def _functions(variant):
    return {f["name"]: f for f in variant["functions"]}


def _pair(profiles, step):
    s = profiles["steps"][step]
    return profiles["variants"][s["before"]], profiles["variants"][s["after"]]


def _us(functions, name):
    return functions[name]["us"] if name in functions else 0.0


def _calls(functions, name):
    return functions[name]["calls"] if name in functions else 0


def _time(us):
    return duration(us * 1e-6) if us else "–"


def _count(calls):
    return f"{calls:,.0f}" if calls >= 1 or calls == 0 else f"{calls:.2g}"


def top(profiles, step, count=ROWS):
    """The `count` functions with the most own time, before or after, largest first, and the
    two the sentence names (`changed_most`) if they are not among them."""
    before, after = (_functions(v) for v in _pair(profiles, step))
    largest = sorted(set(before) | set(after),
                     key=lambda n: (-max(_us(before, n), _us(after, n)), n))[:count]
    return largest + [n for n in changed_most(before, after) if n not in largest]


def changed_most(fb, fa):
    """The two functions whose own time changes most between `fb` and `fa`."""
    return sorted(fb.keys() | fa.keys(), key=lambda n: (-abs(_us(fb, n) - _us(fa, n)), n))[:2]


def _totals(variant):
    return sum(f["us"] for f in variant["functions"])


def _tail_rows(variants, shown):
    """The rows under the functions, one (time, calls) cell pair per variant: the rest, the
    whole profiled iteration, the collector, and the iteration without the profiler."""
    def rest(v, key):
        f = _functions(v)
        return sum(f[n][key] for n in f if n not in shown)

    rows = [("everything else", [(_time(rest(v, "us")), _count(rest(v, "calls")))
                                 for v in variants]),
            ("all of it, under cProfile (collector paused)",
             [(_time(_totals(v)), _count(sum(f["calls"] for f in v["functions"])))
              for v in variants])]
    if any(v["collector_us"] > 0.01 * v["us"] for v in variants):
        rows.append(("the cycle collector, without the profiler",
                     [(_time(v["collector_us"]), "") for v in variants]))
    rows.append(("**one iteration, without the profiler**",
                 [(f"**{_time(v['us'])}**", "") for v in variants]))
    return rows


def table(profiles, step, count=ROWS):
    """Markdown: where one iteration's time goes with `step` undone and as the engine has it."""
    before, after = _pair(profiles, step)
    fb, fa = _functions(before), _functions(after)
    shown = top(profiles, step, count)
    lines = ["| Own time per iteration, under cProfile | before | after | calls before "
             "| calls after |",
             "|---|---:|---:|---:|---:|"]
    for name in shown:
        lines.append(f"| `{name}` | {_time(_us(fb, name))} | {_time(_us(fa, name))} | "
                     f"{_count(_calls(fb, name))} | {_count(_calls(fa, name))} |")
    for label, ((tb, cb), (ta, ca)) in _tail_rows((before, after), shown):
        lines.append(f"| {label} | {tb} | {ta} | {cb} | {ca} |")
    return "\n".join(lines)


def workload_of(profiles, step):
    """The workload a step's profile runs, and why that one (plain text, for glue)."""
    s = profiles["steps"][step]
    return f"the {s['title']} ({s['why']})"


def _calls_text(calls):
    return f"{_count(calls)} call" + ("" if calls == 1 else "s")


def _change(fb, fa, name):
    def side(f):
        us, calls = _us(f, name), _calls(f, name)
        return f"{_time(us)} in {_calls_text(calls)}" if us else "none"
    return f"{name} ({side(fb)} with the step undone, {side(fa)} with it)"


def sentence(profiles, step):
    """One sentence: the two functions whose own time changes most, and the iteration's time
    under cProfile and without it; when the two move apart, that the profile cannot place the
    step's gain."""
    before, after = _pair(profiles, step)
    fb, fa = _functions(before), _functions(after)
    ranked = changed_most(fb, fa)
    profiled = _totals(before), _totals(after)
    text = (f"The own times that change most are those of "
            f"{' and '.join(_change(fb, fa, n) for n in ranked)}. Under cProfile the iteration "
            f"takes {_time(profiled[0])} and {_time(profiled[1])}, without it "
            f"{_time(before['us'])} and {_time(after['us'])} (the collector's time aside, "
            f"cProfile makes it {before['inflation']:.1f} and {after['inflation']:.1f} times as "
            f"long)")
    if (profiled[1] - profiled[0]) * (after["us"] - before["us"]) < 0:
        text += ("; the profile and the time move in opposite directions, so the profile "
                 "cannot place the step's effect")
    return text + "."


def engine_table(profiles, workload, count=ROWS):
    """Markdown: where one iteration of `workload` goes in the finished engine alone."""
    variant = profiles["variants"][f"{workload}/engine"]
    f = _functions(variant)
    shown = [x["name"] for x in variant["functions"][:count]]
    lines = ["| Own time per iteration, under cProfile | time | calls |", "|---|---:|---:|"]
    for name in shown:
        lines.append(f"| `{name}` | {_time(_us(f, name))} | {_count(_calls(f, name))} |")
    for label, ((time, calls),) in _tail_rows((variant,), shown):
        lines.append(f"| {label} | {time} | {calls} |")
    return "\n".join(lines)


def collector_sentence(profiles, workload):
    """One sentence: the collector's share of an iteration of `workload`, without the profiler."""
    variant = profiles["variants"][f"{workload}/engine"]
    title = variant_title(profiles, workload)
    return (f"Without the profiler, the cycle collector took {_time(variant['collector_us'])} of "
            f"the {_time(variant['us'])} of one iteration of the {title} "
            f"({100 * variant['collector_us'] / variant['us']:.0f}%), a share that cProfile "
            f"would have charged to whichever function happened to allocate when a pass began.")


def variant_title(profiles, workload):
    return next(s["title"] for s in profiles["steps"].values() if s["workload"] == workload)
