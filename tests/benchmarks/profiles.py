"""Where one iteration's time goes, before and after each step of chapter `fast`.

    python tests/benchmarks/profiles.py            # writes book/data/step-profiles.json
    python tests/benchmarks/profiles.py --out F    # writes F instead
    python tests/benchmarks/profiles.py --glue     # then: the page's glued texts from the file

Not a test (the README's pytest command does not collect it); about two minutes.

For each step of chapter `fast` that can be undone (workloads.ABLATIONS), one workload the
step is about (STEPS says which and why) is profiled with that step undone
(`engine_without_<step>`) and as the finished engine (`engine`). Every variant runs in a fresh
worker process, started as run.py's workers are (its Worker: one BLAS/OpenMP thread, set by
importing run.py before NumPy; its library_info; the gradients of a first and a second
iteration checked against the NumPy floor). The variants of one workload are alive at once and
sampled in ROUNDS rounds, in a rotating order, so that a change of load on the machine hits
them alike. In each round every worker:

* times one sample without the profiler, as run.py does (enough iterations to last MIN_TIME
  seconds, a full collection first, the collector on), and the time the cycle collector took
  inside it (gc.callbacks);
* profiles one sample of as many iterations with cProfile, the collector paused: a pass of the
  collector is charged to whichever function allocated when it started, so its time is taken
  from the unprofiled sample instead. Kept: every function's own time (tottime) and calls per
  iteration.

Stored: the medians over the rounds. cProfile is deterministic: it counts every call, and adds
a cost at every call and return, so a function called often looks heavier than it is. The
stored `inflation` (the iteration under the profiler over the iteration without it, both
without the collector's time) says by how much the whole iteration grows; the page reads the
functions' times beside the unprofiled total, not as the times of an unprofiled run.
"""

import os
import sys
from pathlib import Path

import run  # beside this script, whose folder Python puts first; sets the thread variables
import workloads as W  # before NumPy loads

import argparse
import cProfile
import gc
import json
import pstats
import statistics
import subprocess
import time

ROOT = run.ROOT
RESULTS = ROOT / "book" / "data" / "step-profiles.json"
SCHEMA = 1
ROUNDS, MIN_TIME, WARMUP = 5, 0.1, 0.2  # rounds, seconds per sample at least, of warm-up

# the step (workloads.ABLATIONS) -> its number, the workload whose profile shows it, and why
STEPS = {
    "wrap": ("Step 1", "running_small",
             "the fixed cost of making five results, with no arithmetic to hide it"),
    "adopt": ("Step 2", "mlp",
              "grads of 784x256 weights, where a copy of the first VJP is large"),
    "plain": ("Step 4", "chain",
              "three ufuncs per node on a VersionedArray, 100,000 nodes"),
    "clock": ("Step 5", "running_small",
              "the version notes and checks of five operations, with no arithmetic to hide them"),
    "sweep": ("Step 6", "chain",
              "the sweep's own loop, run 100,000 times with next to no arithmetic"),
    "seed": ("Step 7", "running_large",
             "a seed of 1,000,000 ones: the step pays only where the seed is large"),
    "loss": ("Step 8", "mlp", "the only workload with a loss"),
    "priority": ("Step 9", "running_small",
                 "closures that mix plain and versioned arrays, with no arithmetic to hide them"),
}
assert set(STEPS) == set(W.ABLATIONS), "a step of chapter fast without a profile here"


# -- in the worker --------------------------------------------------------------------------


def code_names():
    """{(file, first line, name): qualified name} of every function of the engine's modules as
    they are now (after an ablation patched them, a patched function gets the name of what it
    replaced: `Tensor._result`), of their nested functions, and of the workloads' own."""
    import inspect
    import types

    names = {}

    def add(code, qualname):
        names[(code.co_filename, code.co_firstlineno, code.co_name)] = qualname
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                add(const, f"{qualname}.{const.co_name}")

    def add_function(obj, qualname):
        obj = inspect.unwrap(obj) if callable(obj) else obj
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            for part in (obj.fget, obj.fset):
                if part is not None:
                    add(part.__code__, qualname)
        elif isinstance(obj, types.FunctionType):
            add(obj.__code__, qualname)

    for function in vars(W).values():  # the benchmark's own `step` closures
        if isinstance(function, types.FunctionType):
            add(function.__code__, f"workloads.{function.__qualname__}")
    modules = [m for name, m in sys.modules.items()
               if name == "engine" or name.startswith("engine.")]
    for module in modules:
        for name, obj in vars(module).items():
            if isinstance(obj, type) and obj.__module__.startswith("engine"):
                for attribute, member in vars(obj).items():
                    add_function(member, f"{obj.__name__}.{attribute}")
            elif getattr(obj, "__module__", "") and str(obj.__module__).startswith("engine"):
                add_function(obj, name)
            elif isinstance(obj, types.FunctionType) and obj.__code__.co_filename == W.__file__:
                add_function(obj, name)  # a module-level function an ablation replaced
    return names


def type_names():
    """{address: name} of the types a built-in's cProfile name can point at by address
    ("<built-in method __new__ of type object at 0x...>"): Python's, NumPy's, the engine's."""
    import builtins

    import numpy as np

    spaces = [vars(builtins), vars(np)] + [vars(m) for name, m in list(sys.modules.items())
                                           if name == "engine" or name.startswith("engine.")]
    return {f"{id(t):#x}": t.__name__ for space in spaces for t in space.values()
            if isinstance(t, type)}


def label(key, names, modules, types=None):
    """A readable name for a cProfile key: `Tensor.sin`, `numpy.zeros`, `ndarray.sum`."""
    file, line, name = key
    if (file, line, name) in names:
        return names[key]
    if file == "~":  # a built-in: "<built-in method numpy.zeros>", "<method 'x' of 'y' objects>"
        if " of type object at " in name:  # a type's method, named by the type's address
            method, address = name.removeprefix("<built-in method ").removesuffix(">").split(
                " of type object at ")
            return f"{(types or {}).get(address, 'a type')}.{method}"
        if name.startswith("<built-in method "):
            return name.removeprefix("<built-in method ").removesuffix(">")
        if name.startswith("<method '"):
            method, owner = name[len("<method '"):].split("' of '")
            return f"{owner.split(' ')[0].removesuffix(chr(39))}.{method}"
        return name.strip("<>")
    module = modules.get(file)
    return f"{module}.{name}" if module else f"{Path(file).name}:{name}"


def timed_sample(step, loops):
    """One sample without the profiler, as run.py takes it: seconds per iteration, and the
    seconds of it that the cycle collector took (gc.callbacks)."""
    spent, started = [0.0], [0.0]

    def clock(phase, info):
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            spent[0] += time.perf_counter() - started[0]

    gc.collect()
    gc.callbacks.append(clock)
    try:
        start = time.perf_counter()
        for _ in range(loops):
            step()
        seconds = (time.perf_counter() - start) / loops
    finally:
        gc.callbacks.remove(clock)
    return seconds, spent[0] / loops


def profiled_sample(step, loops):
    """One profile of `loops` iterations, with the collector paused: a pass of the collector
    would be charged to whichever function happened to allocate when it started (the chain's
    passes, over a growing graph, land in a different function in each variant), so its time
    is taken apart, by `timed_sample`. {key: (seconds, calls)} per iteration, and the wall time
    per iteration under the profiler."""
    gc.collect()
    profile = cProfile.Profile()
    gc.disable()
    try:
        start = time.perf_counter()
        profile.enable()
        for _ in range(loops):
            step()
        profile.disable()
        wall = (time.perf_counter() - start) / loops
    finally:
        gc.enable()
    return {key: (tottime / loops, calls / loops)
            for key, (_, calls, tottime, *_) in pstats.Stats(profile).stats.items()}, wall


def worker(workload, implementation):
    """Check, then answer `calibrate`, `time` and `profile` requests on stdin (run.py's
    protocol, one JSON line each, and its start-up: library_info, the gradients checked)."""
    import numpy as np

    info = run.library_info(implementation)
    import engine

    info["engine_file"] = engine.__file__  # the tree's engine, not a snapshot
    if implementation.startswith("engine_without_"):
        W.ablate(implementation.removeprefix("engine_without_"))
    data = W.inputs(workload)
    step = W.setup(workload, implementation, data)
    floor = [np.array(g, copy=True) for g in W.setup(workload, "numpy", data)()]
    first = [np.array(g, copy=True) for g in step()]
    second = [np.array(g, copy=True) for g in step()]  # zeroing works: no accumulation
    difference = max(run.largest_difference(first, floor), run.largest_difference(second, floor))
    run._send({"event": "checked", "difference": difference, "info": info,
               "ok": bool(len(first) == len(floor) and difference <= run.CHECK_TOLERANCE)})
    del first, second, floor
    loops, names = 1, None
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "calibrate":
            start = time.perf_counter()
            while time.perf_counter() - start < request["warmup"]:
                step()
            while True:  # enough iterations for one sample to last min_time
                gc.collect()
                start = time.perf_counter()
                for _ in range(loops):
                    step()
                elapsed = time.perf_counter() - start
                if elapsed >= request["min_time"]:
                    break
                loops = max(loops * 2, int(loops * request["min_time"] / max(elapsed, 1e-9)))
            run._send({"event": "calibrated", "loops": loops})
        elif request["cmd"] == "time":
            seconds, collector = timed_sample(step, loops)
            run._send({"event": "timed", "seconds": seconds, "collector": collector})
        elif request["cmd"] == "profile":
            stats, wall = profiled_sample(step, loops)
            if names is None:  # every module the iteration uses is loaded by now
                names, types = code_names(), type_names()
                modules = {getattr(m, "__file__", None): name
                           for name, m in list(sys.modules.items())}
            functions = {}
            for key, (seconds, calls) in stats.items():  # two keys can share a name: add
                entry = functions.setdefault(label(key, names, modules, types), [0.0, 0.0])
                entry[0] += seconds
                entry[1] += calls
            run._send({"event": "profiled", "wall": wall, "functions": functions})
        elif request["cmd"] == "stop":
            break


# -- the driver -----------------------------------------------------------------------------


class Worker(run.Worker):
    """run.py's worker, started on this script: the same environment (run.py's thread
    variables, set on import) with the tree's own engine first on PYTHONPATH."""

    def __init__(self, workload, implementation):
        self.implementation = implementation
        self.busy = 0.0  # run.Worker.ask adds its waits here
        # glibc's thresholds fixed in every profiled worker: whether a worker's heap crosses
        # them depends on its history (chapter fast, "Which gains are the allocator's"), and a
        # cliff in one profile and not the other would be charged to the step
        env = {**os.environ, **W.PINNED_ENV}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", workload, implementation],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def profile_workload(workload, implementations):
    """{implementation: {...}}: one fresh worker per implementation, all alive at once, sampled
    in ROUNDS rounds in a rotating order (as run.py does), so that a change of load on the
    machine hits every variant alike. Each round takes one sample without the profiler and one
    profile of every worker; a function's time is its median over the rounds."""
    workers = [Worker(workload, impl) for impl in implementations]
    timed = {impl: [] for impl in implementations}
    profiled = {impl: [] for impl in implementations}
    try:
        checks = {}
        for w in workers:
            checked = checks[w.implementation] = w.ask()
            if not checked["ok"]:
                raise SystemExit(f"{workload}: {w.implementation}'s gradients differ from the "
                                 f"NumPy floor by {checked['difference']:.3g}: nothing profiled")
        loops = {w.implementation: w.ask({"cmd": "calibrate", "min_time": MIN_TIME,
                                          "warmup": WARMUP})["loops"] for w in workers}
        for r in range(ROUNDS):
            turn = workers[r % len(workers):] + workers[:r % len(workers)]
            for w in turn:
                timed[w.implementation].append(w.ask({"cmd": "time"}))
            for w in turn:
                profiled[w.implementation].append(w.ask({"cmd": "profile"}))
    finally:
        for w in workers:
            w.stop()
    results = {}
    for impl in implementations:
        seconds = statistics.median(t["seconds"] for t in timed[impl])
        collector = statistics.median(t["collector"] for t in timed[impl])
        wall = statistics.median(p["wall"] for p in profiled[impl])
        functions = {}
        for name in set().union(*(p["functions"] for p in profiled[impl])):
            values = [p["functions"].get(name, (0.0, 0.0)) for p in profiled[impl]]
            functions[name] = (statistics.median(v[0] for v in values),
                               statistics.median(v[1] for v in values))
        results[impl] = {
            "workload": workload, "implementation": impl, "info": checks[impl]["info"],
            "gradient_difference": checks[impl]["difference"], "loops": loops[impl],
            "us": round(seconds * 1e6, 3),
            "samples_us": [round(t["seconds"] * 1e6, 3) for t in timed[impl]],
            "collector_us": round(collector * 1e6, 3),
            "profiled_us": round(wall * 1e6, 3),
            # the profiled iteration (collector paused) over the same iteration without the
            # profiler and without the collector's time: what cProfile's cost per call adds
            "inflation": round(wall / (seconds - collector), 3),
            # every function, largest first: own time per iteration (µs) and calls per iteration
            "functions": [{"name": name, "us": round(t * 1e6, 3), "calls": round(c, 2)}
                          for name, (t, c) in sorted(functions.items(),
                                                     key=lambda f: (-f[1][0], f[0]))],
        }
    return results


def profile_steps():
    started = time.perf_counter()
    section = {
        "schema": SCHEMA,
        "command": "python tests/benchmarks/profiles.py",
        "date": run.now(), "commit": run.commit_info(), "machine": run.machine_info(),
        "settings": {"profiler": f"cProfile (Python {sys.version.split()[0]})",
                     "rounds": ROUNDS, "min_time": MIN_TIME, "warmup": WARMUP, "threads": 1,
                     "malloc_env": dict(W.PINNED_ENV),
                     "gc": "enabled, gc.collect() before each sample; paused while profiling",
                     "iteration": "leaves made once; zero the gradients, forward, backward"},
        "variants": {}, "steps": {},
    }
    by_workload = {}
    for step, (_, workload, _) in STEPS.items():
        by_workload.setdefault(workload, ["engine"]).append(f"engine_without_{step}")
    for workload, implementations in by_workload.items():
        print(f"  {workload}: {', '.join(implementations)}", flush=True)
        for impl, result in profile_workload(workload, implementations).items():
            section["variants"][f"{workload}/{impl}"] = result
    for step, (number, workload, why) in STEPS.items():
        section["steps"][step] = {"number": number, "undone": W.ABLATIONS[step],
                                  "workload": workload, "title": W.WORKLOADS[workload]["title"],
                                  "why": why, "before": f"{workload}/engine_without_{step}",
                                  "after": f"{workload}/engine"}
    section["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    section["seconds"] = round(time.perf_counter() - started, 1)
    return section


def summary(section):
    lines = []
    for step, s in section["steps"].items():
        before, after = section["variants"][s["before"]], section["variants"][s["after"]]
        lines.append(f"{s['number']} ({step}), {s['title']}: {before['us']:.1f} us before, "
                     f"{after['us']:.1f} us after (collector {before['collector_us']:.1f}, "
                     f"{after['collector_us']:.1f}); under cProfile x{before['inflation']:.2f} "
                     f"and x{after['inflation']:.2f}")
        for which, v in (("before", before), ("after", after)):
            top = ", ".join(f"{f['name']} {f['us']:.1f}" for f in v["functions"][:6])
            lines.append(f"    {which}: {top}")
    return "\n".join(lines)


PAGE = ROOT / "book" / "fast.md"


def page_module(name):
    """book/<name>.py, loaded by its path: the page's cells import it from their folder."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "book" / f"{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def glue_page(profiles_path=RESULTS, page=PAGE):
    """Rewrite the glued texts that chapter fast declares for its profiles (`profile_<step>_on`,
    `profile_<step>`, `profile_objects` in its cells' `glue:` options) from the stored profiles,
    as the page's cells glue them (book/step_profiles.py). The verifier's --update rewrites
    the tables' expect blocks, not these."""
    import re

    page_module("benchmark_results")  # which step_profiles imports
    step_profiles = page_module("step_profiles")

    profiles = step_profiles.load(profiles_path)
    texts = {"profile_objects": step_profiles.collector_sentence(profiles, "chain")}
    for step in profiles["steps"]:
        texts[f"profile_{step}_on"] = step_profiles.workload_of(profiles, step)
        texts[f"profile_{step}"] = step_profiles.sentence(profiles, step)
    source = page.read_text()
    for name, text in texts.items():
        source, found = re.subn(rf"^  {name}: .*$", lambda _: f"  {name}: "
                                + json.dumps(text, ensure_ascii=False), source, flags=re.M)
        if found != 1:
            raise SystemExit(f"{page}: {found} declarations of the glued text {name}")
    page.write_text(source)
    print(f"rewritten: the {len(texts)} glued texts of the profiles in {page}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help=f"results file (default {RESULTS.relative_to(ROOT)})")
    parser.add_argument("--glue", action="store_true",
                        help=f"profile nothing: rewrite the glued texts that "
                        f"{PAGE.relative_to(ROOT)} declares from the stored profiles (then run "
                        "tests/verifier.py --update fast for the tables)")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return
    if args.glue:
        glue_page(args.out)
        return
    section = profile_steps()
    print(summary(section))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(section, indent=1, ensure_ascii=False) + "\n")
    print(f"written: {args.out} ({section['seconds']} s)")


if __name__ == "__main__":
    main()
