"""How fast is the engine? Time six workloads five ways, and time the book's build.

    python tests/benchmarks/run.py                  # everything (25 minutes or so), writes it all
    python tests/benchmarks/run.py --only mlp chain # some workloads, printed only
    python tests/benchmarks/run.py --quick          # fewer, shorter samples, printed only
    python tests/benchmarks/run.py --build          # only the build timings, written
    python tests/benchmarks/run.py --show           # print the stored results again
    python tests/benchmarks/run.py --commit HEAD    # measure a commit, not the working tree
    python tests/benchmarks/run.py --quick --implementations engine_pinned --out /tmp/b.json
                                                    # some implementations, written to a file

Not a test (the README's pytest command does not collect it). Needs torch==2.13.0
and autograd (tests/benchmarks/requirements.txt) besides the book's requirements.

Workloads (tests/benchmarks/workloads.py): each runs forward + backward in
float64 through the engine, hand-written NumPy (the floor), PyTorch on the CPU,
HIPS autograd and, where tests/benchmarks/minimal.py exists, the minimal engine
(`minimal`). The engine runs as the book finishes it (`engine`), again under
another name (`engine_null`, the null variant: its ratio to `engine` is the
run's noise), as chapter `memory` leaves it (`engine_memory`: the snapshot before
chapter `fast`, written by book/_ext/snapshots.py and put first on that worker's
PYTHONPATH), with each step of chapter `fast` undone in turn
(`engine_without_<step>`, workloads.UNDOS), with the steps added in order
(`engine_through_<step>`: Steps 1 to that one kept, the rest undone;
`engine_through_none`: all undone), with any change that chapter (or
tests/benchmarks/safety.py) tried and did not keep (`engine_with_<name>`,
workloads.experiments()), and a few of these again with glibc's malloc
thresholds fixed in the worker's environment (`<name>_pinned`,
workloads.PINNED_ENV), all in the same rounds. How they are timed, so that the
ratios are fair:

* Each implementation runs in its own worker process (`--worker`), started the
  same way, with the same NumPy inputs, one BLAS/OpenMP thread (the variables
  below are set before NumPy is imported; PyTorch gets set_num_threads(1)) and
  Python's garbage collector enabled, as it is by default.
* Before any timing, each worker checks its gradients, from a first AND a second
  iteration (so that zeroing works), against the NumPy floor: the largest
  difference must be under 1e-12 of the largest gradient entry.
* Inputs and parameters become the library's leaves once; one timed iteration
  zeroes the gradients the library's own way, runs forward and backward.
* In each fresh worker, before anything else, the first iteration is timed with
  its minor page faults (`first`): a fresh process's allocation state. The
  first set of workers (below) starts them one at a time, each after the one
  before has checked, so that this iteration runs while no other worker imports
  or checks; `first` is that set's.
* Each worker warms up, then picks how many iterations make one sample last at
  least `--min-time` seconds. Samples are taken in rounds, one sample per
  implementation per round in a rotating order, so that a change of load on the
  machine hits all four alike; a full collection (gc.collect) precedes every
  sample.
* A worker's time moves by a few percent with its process (where malloc and the
  kernel happen to place its heap and arrays), so a full run starts a fresh set
  of workers three times, one set after another, and samples each set for a few
  rounds (`FULL["by_workload"]`: fewer for the slow chain). The time of
  an implementation is the median of all its samples, over every set; the ratios
  are ratios of these medians.
* The noise band of a workload (`noise`): the largest |ratio - 1| of
  `engine_null` over `engine`, from the pooled medians, from each set's medians
  alone, and at the quartiles of the per-round ratios. A ratio of two of the
  engine's variants within it is not shown.

Build (`--build`): the working tree (tracked and untracked, not ignored files)
is copied to a temporary folder, so nothing is cached and concurrent edits do
not leak in, and the copy's engine is the one imported. Timed there: a cold
`jupyter-book build . -W -n --keep-going` (with each notebook's execution time
as myst-nb logs it); each chapter's code cells run as one plain Python script
(cwd book/, matplotlib's Agg backend, figures closed after each cell as the
inline backend does; the median of `--script-runs` runs); and rebuilds with
nothing changed. The build's overhead is the cold build minus the sum of the
plain scripts. The build runs with the machine's default threads, as a
reader's would.

With `--commit REV` both parts measure that commit as `git archive` gives it
(the workers import its `engine`), so concurrent edits of the working tree do
not leak in; otherwise the working tree is measured, and the results say
whether it had uncommitted changes.

Results go to book/data/benchmarks.json (schema 2). The workloads' section
keeps: `implementations` (the five columns), `null`, `minimal` (empty without
minimal.py), `ablations`, `cumulative`, `tried`, `pinned` ({name: label}) and
`pinned_env`, `safety` (safety.py's changes, {name: label}), `only_on`
({implementation: workloads} for those timed on some workloads only); per workload
`times` ({implementation: samples, median, page_faults, first, loops,
busy_seconds (the run's wait for that worker, for planning settings), info with
malloc_env}), `ratios`, `target`, `rounds` (per set), `sets` and `noise` ({band,
pooled, per_set, quartiles, per_round}). The workloads' section is what chapter
`book/fast.md` and the appendix page `book/speed.md` draw their tables and
figures from; the build's section is shown by the execution report,
`book/report.md`. A full run of the workloads replaces their section, a build
run replaces the build section; each section records its date, commit and
machine. `--only` and `--quick` runs are printed, not written, unless `--out`
names a file. A full run of the workloads into the book's results also appends
its verdicts, with the samples of the engine and of each target's reference, to
book/data/benchmark-runs.json, which keeps the last KEPT_RUNS runs: chapter
`fast` shows how the verdicts moved from run to run.
"""

import os

ORIGINAL_ENV = dict(os.environ)  # for the build, which must run as a reader's would
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
for _name in THREAD_VARIABLES:
    os.environ[_name] = "1"  # before NumPy (and PyTorch) read them on import

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = ROOT / "book" / "data" / "benchmarks.json"
# the engine as chapter `memory` leaves it, as data: chapter `fast` compares it with its own
# engine in fresh processes, in the build and in a downloaded notebook alike
ENGINE_BEFORE = ROOT / "book" / "data" / "engine-before-fast.json"
# the verdicts of the last full runs, each with the samples they rest on: chapter `fast` shows
# how they moved from run to run, which one stored run cannot show
HISTORY = ROOT / "book" / "data" / "benchmark-runs.json"
KEPT_RUNS = 10

import workloads as W  # noqa: E402  (beside this script)

SCHEMA = 2  # 2: the null variant and band, steps added in order, pinned malloc, cheap_large
CHECK_TOLERANCE = 1e-12  # largest |gradient - floor| over the largest |floor entry|

# the issue's targets: the engine's time over the reference's time must be at most `ratio`
TARGETS = {
    "running_small": {"versus": "torch", "ratio": 0.5},
    "running_large": {"versus": "numpy", "ratio": 1.2},
    "mlp": {"versus": "numpy", "ratio": 1.1},
    "chain": {"versus": "torch", "ratio": 0.8},
    "leaf": {"versus": "numpy", "ratio": 2.0},
    # the running program's 1,000,000 entries without log and sin: the same bandwidth bound,
    # so the same allowance over the floor (running_large's 1.2x)
    "cheap_large": {"versus": "numpy", "ratio": 1.2},
}
LABELS = {"engine": "engine", "engine_memory": "engine before fast", "numpy": "NumPy by hand",
          "torch": "PyTorch CPU", "autograd": "HIPS autograd"}
NULL_LABEL = {W.NULL: "engine again (the null variant)"}
MINIMAL_LABEL = {W.MINIMAL: "minimal engine"}
ABLATED = tuple(f"engine_without_{step}" for step in W.UNDOS)
ABLATION_LABELS = {f"engine_without_{step}": f"engine without {what}"
                   for step, what in W.UNDOS.items()}
# the steps added in order: `engine_through_<step>` keeps Steps 1 to that one, undoes the rest
CUMULATIVE = tuple(f"engine_through_{kept}" for kept in W.CUMULATIVE)
CUMULATIVE_LABELS = {f"engine_through_{kept}": "engine with every step undone" if kept == "none"
                     else "engine with Step 1 only" if kept == W.STEPS[0]
                     else f"engine with Steps 1 to {W.STEPS.index(kept) + 1} only"
                     for kept in W.CUMULATIVE}
# glibc's thresholds fixed (W.PINNED_ENV): which gains are the allocator's
PINNED = ("engine_pinned", "engine_memory_pinned", "numpy_pinned",
          "engine_without_adopt_pinned", "engine_without_sweep_pinned")
PINNED_LABELS = {name: f"{name.removesuffix('_pinned')}, malloc's thresholds fixed"
                 for name in PINNED}


def tried_labels():
    """{engine_with_<name>: label} for chapter fast's changes and tests/benchmarks/safety.py's."""
    return {f"engine_with_{name}": f"engine with {what}"
            for name, what in W.experiments().items()}


def only_on():
    """{implementation: the workloads it runs on}, for those that do not run on every one:
    tests/benchmarks/safety.py's ladder past `bare` (its ONLY_ON)."""
    safety = W.beside("safety")
    return {f"engine_with_{name}": tuple(names)
            for name, names in getattr(safety, "ONLY_ON", {}).items()}


def minimal_available():
    return W.beside("minimal") is not None  # tests/benchmarks/minimal.py, helper safety's


# `processes` sets of fresh workers, one set after another, each sampled for `repeats` rounds:
# a worker's time moves by a few percent with its process (where its heap and arrays land),
# so pooling several processes per implementation keeps one lucky process out of a ratio
# Settings for about 25 minutes on the book's 2-core machine, 38 implementations and six
# workloads (a --quick run's busy_seconds per worker, scaled): the chain's iteration takes up to
# 2 s, and its check alone four of them, so it runs fewer rounds in two sets
FULL = {"repeats": 4, "processes": 3, "min_time": 0.15, "warmup": 0.15,
        "by_workload": {"chain": {"repeats": 3, "processes": 2}}}
QUICK = {"repeats": 3, "processes": 1, "min_time": 0.05, "warmup": 0.05}


# -- one implementation, in its own process -------------------------------------------


def _send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def library_info(implementation):
    """What the worker's library runs on: versions, BLAS, threads."""
    import numpy as np

    info = {"numpy": np.__version__}
    if implementation == "torch":
        import torch

        torch.set_num_threads(1)
        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads(),
                    torch_blas="MKL" if torch.backends.mkl.is_available() else "other")
    if implementation == "autograd":
        info["autograd"] = metadata.version("autograd")
    info["gc_enabled"] = gc.isenabled()
    return info


def largest_difference(grads, floor):
    """max over arrays of max|g - f| / max|f|."""
    import numpy as np

    worst = 0.0
    for g, f in zip(grads, floor):
        g, f = np.asarray(g, dtype=float), np.asarray(f, dtype=float)
        if g.shape != f.shape:
            return float("inf")
        scale = float(np.max(np.abs(f))) or 1.0
        worst = max(worst, float(np.max(np.abs(g - f))) / scale)
    return worst


def worker(workload, implementation):
    """Check, then answer `calibrate` and `sample` requests on stdin, one JSON line each."""
    import numpy as np

    info = library_info(implementation)
    wanted = W.variant(implementation)
    info["malloc_env"] = {k: os.environ[k] for k in W.PINNED_ENV if k in os.environ}
    if wanted["engine"] is not None:
        import engine

        info["engine_file"] = engine.__file__  # which engine: the snapshot or the package
        if wanted["undo"]:
            W.ablate(wanted["undo"])
        if wanted["experiment"]:
            W.experiment(wanted["experiment"])
    data = W.inputs(workload)
    step = W.setup(workload, implementation, data)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    step()  # the first iteration in a fresh process
    first_call = {"seconds": time.perf_counter() - start,
             "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults}
    floor = [np.array(g, copy=True) for g in W.setup(workload, "numpy", data)()]
    first = [np.array(g, copy=True) for g in step()]
    second = [np.array(g, copy=True) for g in step()]  # zeroing works: no accumulation
    difference = max(largest_difference(first, floor), largest_difference(second, floor))
    _send({"event": "checked", "difference": difference,
           "ok": bool(len(first) == len(floor) and difference <= CHECK_TOLERANCE),
           "info": info, "first": first_call})
    del first, second, floor
    loops = 1
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "calibrate":
            start = time.perf_counter()
            while True:  # warm up
                step()
                if time.perf_counter() - start >= request["warmup"]:
                    break
            while True:
                gc.collect()
                start = time.perf_counter()
                for _ in range(loops):
                    step()
                elapsed = time.perf_counter() - start
                if elapsed >= request["min_time"]:
                    break
                loops = max(loops * 2, int(loops * request["min_time"] / max(elapsed, 1e-9)))
            _send({"event": "calibrated", "loops": loops})
        elif request["cmd"] == "sample":
            gc.collect()
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            for _ in range(loops):
                step()
            seconds = (time.perf_counter() - start) / loops
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
            # pages the kernel had to hand over: fresh memory, which malloc took from the
            # system because it had given it back (see the page's section on page faults)
            _send({"event": "sample", "seconds": seconds, "faults": faults / loops})
        elif request["cmd"] == "stop":
            break


class Worker:
    def __init__(self, workload, implementation, engine_root=None, memory_root=None):
        """`engine_root`: a folder whose `engine` package the worker imports (default: the
        installed one); `memory_root`: the folder of the snapshot of chapter `memory`,
        which the `engine_memory` worker imports."""
        self.implementation = implementation
        wanted = W.variant(implementation)
        if wanted["engine"] == "memory":
            engine_root = memory_root
        env = dict(os.environ)
        for name in W.PINNED_ENV:  # glibc's defaults unless the implementation pins them
            env.pop(name, None)
        if wanted["pinned"]:
            env.update(W.PINNED_ENV)
        if engine_root is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(engine_root),
                                                              env.get("PYTHONPATH")]))
        self.busy = 0.0  # seconds the run waited for this worker: for planning its settings
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", workload, implementation],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
            cwd=engine_root or ROOT)

    def ask(self, request=None):
        started = time.perf_counter()
        try:
            return self._ask(request)
        finally:
            self.busy += time.perf_counter() - started

    def _ask(self, request=None):
        if request is not None:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait()
            raise RuntimeError(f"the {self.implementation} worker stopped (exit code {code})")
        return json.loads(line)

    def stop(self):
        if self.process.poll() is None:
            try:
                self.process.stdin.write(json.dumps({"cmd": "stop"}) + "\n")
                self.process.stdin.flush()
            except BrokenPipeError:
                pass
        self.process.wait(timeout=60)


def run_workload(workload, implementations, settings, engine_root=None, memory_root=None):
    """{implementation: {...}} for one workload: check, calibrate and sample in rounds, in
    each of `settings["processes"]` sets of fresh workers; the median pools every sample."""
    results = {impl: {"samples": [], "faults": [], "loops": []} for impl in implementations}
    sets = settings["processes"]
    for number in range(sets):
        workers = []
        try:
            # the first set starts its workers one at a time, each after the last one's check,
            # so that each `first` iteration is timed while no other worker imports or checks;
            # later sets start theirs together (their imports overlap with nothing timed)
            sequential = number == 0
            if not sequential:
                workers = [Worker(workload, impl, engine_root, memory_root)
                           for impl in implementations]
            for impl in implementations:
                if sequential:
                    workers.append(Worker(workload, impl, engine_root, memory_root))
                w = workers[-1] if sequential else workers[implementations.index(impl)]
                checked = w.ask()
                if not checked["ok"]:
                    raise SystemExit(f"{workload}: {w.implementation}'s gradients differ from "
                                     f"the NumPy floor by {checked['difference']:.3g} "
                                     f"(relative), more than {CHECK_TOLERANCE:g}: nothing timed")
                result = results[w.implementation]
                result["checked"] = True
                result["gradient_difference"] = max(checked["difference"],
                                                    result.get("gradient_difference", 0.0))
                result.setdefault("info", checked["info"])
                result.setdefault("first", checked["first"])  # the first set's, started alone
            for w in workers:
                results[w.implementation]["loops"].append(w.ask(
                    {"cmd": "calibrate", "min_time": settings["min_time"],
                     "warmup": settings["warmup"]})["loops"])
            for r in range(settings["repeats"]):
                turn = workers[r % len(workers):] + workers[:r % len(workers)]
                for w in turn:
                    answer = w.ask({"cmd": "sample"})
                    results[w.implementation]["samples"].append(answer["seconds"])
                    results[w.implementation]["faults"].append(answer["faults"])
                if sys.stdout.isatty():
                    print(f"  {workload}: processes {number + 1} of {sets}, round {r + 1} of "
                          f"{settings['repeats']}", end="\r", flush=True)
        finally:
            for w in workers:
                w.stop()
                results[w.implementation].setdefault("busy_seconds", []).append(
                    round(w.busy, 2))
    if sys.stdout.isatty():
        print(" " * 60, end="\r")
    for result in results.values():
        result["median"] = statistics.median(result["samples"])
        result["page_faults"] = statistics.median(result.pop("faults"))  # per iteration
    return results


# -- what was measured on what ----------------------------------------------------------


def git(*args):
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def commit_info(commit=None):
    """The commit measured: HEAD and the working tree's changes, or `commit` as archived."""
    if commit is not None:
        return {"sha": git("rev-parse", commit), "short": git("rev-parse", "--short", commit),
                "dirty": False, "changed_files": [], "from": f"git archive {commit}"}
    # `XY path`; git() strips the output, and with it the first line's leading space
    changed = [line.split(maxsplit=1)[-1]
               for line in (git("status", "--porcelain") or "").splitlines()]
    return {"sha": git("rev-parse", "HEAD"), "short": git("rev-parse", "--short", "HEAD"),
            "dirty": bool(changed), "changed_files": changed, "from": "the working tree"}


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def numpy_blas():
    import numpy as np

    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas['name']} {blas['version']}"
    except Exception:
        return "unknown"


def machine_info():
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": version("numpy"),
        "torch": version("torch"),
        "autograd": version("autograd"),
        "numpy_blas": numpy_blas(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def engine_before(root=ROOT):
    """{"chapter", "hash", "files"}: the snapshot of chapter `memory` (book/_ext/snapshots.py)."""
    import snapshots  # book/_ext, on sys.path after `pip install -e .` (setup.py)

    return {"chapter": "memory", "hash": snapshots.snapshot_hash("memory", root),
            "files": snapshots.snapshot_files("memory", root)}


def history_entry(section):
    """A full run's section cut to what its verdicts rest on: for each workload its title, its
    target and the samples of the engine and of the target's reference, in the order taken."""
    workloads = {}
    for name, w in section["workloads"].items():
        versus = w["target"]["versus"]
        workloads[name] = {"title": w["title"], "target": w["target"],
                           "times": {impl: {"samples": w["times"][impl]["samples"]}
                                     for impl in ("engine", versus)}}
    return {"commit": section["commit"], "date": section["date"],
            "machine": section["machine"]["cpu"],  # the ratios move with the processor
            "load_average": section["machine"]["load_average"], "workloads": workloads}


def add_to_history(section, path=HISTORY):
    """Append this run's entry to the log of runs, keeping the last KEPT_RUNS."""
    runs = json.loads(path.read_text()) if path.exists() else []
    runs = (runs + [history_entry(section)])[-KEPT_RUNS:]
    path.write_text(json.dumps(runs, indent=1) + "\n")
    print(f"written: {path} ({len(runs)} runs)")


def write_engine_before(path=ENGINE_BEFORE):
    path.write_text(json.dumps(engine_before(), indent=1, sort_keys=True) + "\n")
    print(f"written: {path}")


def memory_snapshot(root, folder):
    """The engine as chapter `memory` leaves it, written under `folder` (snapshots.py)."""
    import snapshots  # book/_ext, on sys.path after `pip install -e .` (setup.py)

    return snapshots.snapshot_folder("memory", folder, root=root)


def chosen_implementations(ablations=True, only=None):
    """Every implementation a run times, in the order of its tables: the five columns, the
    null variant, the minimal engine (where tests/benchmarks/minimal.py exists), then with
    `ablations` each step undone, the steps added in order, the changes tried and the pinned
    allocator's variants. `only`: keep these names (and the engine and the null variant, which
    every ratio and the band need)."""
    names = W.IMPLEMENTATIONS + (W.NULL,) + ((W.MINIMAL,) if minimal_available() else ())
    if ablations:
        names += ABLATED + CUMULATIVE + tuple(tried_labels()) + PINNED
    if only:
        names = tuple(n for n in names if n in only or n in ("engine", W.NULL))
    return names


def noise(times, repeats, sets):
    """The run's noise band on one workload, from the null variant: the same code as `engine`
    in a worker of its own, so its ratio to `engine` would be exactly 1 without noise. The
    band is the largest |ratio - 1| over: the ratio of the pooled medians (computed as every
    printed ratio is), the ratios of each set of processes taken alone (fewer samples, so
    wider), and the lower and upper quartiles of the per-round ratios (so that two medians that
    happen to agree do not make the band nothing). A printed ratio within 1 +- band could be
    noise."""
    null, engine = times[W.NULL]["samples"], times["engine"]["samples"]
    pooled = statistics.median(null) / statistics.median(engine)
    per_set = [statistics.median(null[k * repeats:(k + 1) * repeats])
               / statistics.median(engine[k * repeats:(k + 1) * repeats]) for k in range(sets)]
    per_round = [n / e for n, e in zip(null, engine, strict=True)]
    q1, _, q3 = statistics.quantiles(per_round, n=4) if len(per_round) > 1 else per_round * 3
    return {"band": max(abs(r - 1.0) for r in [pooled, *per_set, q1, q3]), "pooled": pooled,
            "per_set": per_set, "quartiles": [q1, q3], "per_round": per_round}


def run_workloads(names, settings, commit=None, ablations=True, only=None):
    started = time.perf_counter()
    engine_root = None
    if commit is not None:  # the workers import the engine of that commit
        engine_root = snapshot(Path(tempfile.mkdtemp(prefix="engine-timing-")) / "root", commit)
    memory_folder = Path(tempfile.mkdtemp(prefix="engine-memory-"))
    memory_root = memory_snapshot(engine_root or ROOT, memory_folder)
    implementations = chosen_implementations(ablations, only)
    tried = tried_labels()
    section = {
        "date": now(),
        "commit": commit_info(commit),
        "machine": machine_info(),
        "settings": dict(settings, threads=1, thread_variables=list(THREAD_VARIABLES),
                         gc="enabled (default); gc.collect() before each sample",
                         check_tolerance=CHECK_TOLERANCE,
                         iteration="leaves made once; zero the gradients, forward, backward"),
        "implementations": dict(LABELS),
        "ablations": {k: v for k, v in ABLATION_LABELS.items() if k in implementations},
        # chapter fast's changes tried and not kept, and tests/benchmarks/safety.py's (helper
        # safety's page section shows those): both run as engine_with_<name>
        "tried": {k: v for k, v in tried.items()
                  if k in implementations and k.removeprefix("engine_with_") in W.EXPERIMENTS},
        "safety": {k: v for k, v in tried.items()
                   if k in implementations and k.removeprefix("engine_with_") not in W.EXPERIMENTS},
        "null": {k: v for k, v in NULL_LABEL.items() if k in implementations},
        "minimal": {k: v for k, v in MINIMAL_LABEL.items() if k in implementations},
        "cumulative": {k: v for k, v in CUMULATIVE_LABELS.items() if k in implementations},
        "pinned": {k: v for k, v in PINNED_LABELS.items() if k in implementations},
        "pinned_env": dict(W.PINNED_ENV),
        # implementations timed on some workloads only: {name: those workloads}
        "only_on": {k: list(v) for k, v in only_on().items() if k in implementations},
        "workloads": {},
    }
    for name in names:
        these = {**settings, **settings.get("by_workload", {}).get(name, {})}
        timed = tuple(i for i in implementations
                      if name in section["only_on"].get(i, (name,)))
        times = run_workload(name, timed, these, engine_root, memory_root)
        target = TARGETS[name]
        medians = {impl: t["median"] for impl, t in times.items()}
        ratio = medians["engine"] / medians[target["versus"]]
        section["workloads"][name] = {
            **{k: W.WORKLOADS[name][k] for k in ("title", "measures", "size", "description")},
            "times": times,
            "ratios": {impl: medians["engine"] / m for impl, m in medians.items()},
            "target": dict(target, measured=ratio, met=bool(ratio <= target["ratio"])),
            "rounds": these["repeats"],  # per set of processes
            "sets": these["processes"],
            "noise": noise(times, these["repeats"], these["processes"]),
        }
        for impl, t in times.items():
            section["machine"].update({k: v for k, v in t["info"].items()
                                       if k in ("torch_blas", "torch_threads")})
        print(f"  {name}: done ({time.perf_counter() - started:.0f} s into the run)")
    section["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    section["seconds"] = round(time.perf_counter() - started, 1)
    if engine_root is not None:
        shutil.rmtree(engine_root.parent, ignore_errors=True)
    shutil.rmtree(memory_folder, ignore_errors=True)
    return section


# -- the build -------------------------------------------------------------------------


def snapshot(dest, commit=None):
    """Copy the working tree's files (tracked, and untracked but not ignored) to `dest`,
    or, with `commit`, the files of that commit (`git archive`)."""
    dest.mkdir(parents=True)
    if commit is not None:
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        return dest
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode()
    for relative in filter(None, listing.split("\0")):
        source = ROOT / relative
        if source.is_file():
            target = dest / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


def build_env(copy):
    env = dict(ORIGINAL_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(copy), env.get("PYTHONPATH")]))
    return env


def jupyter_book(copy, log, problems):
    """Seconds one build of `copy` takes. A build that fails (a warning, with -W) still
    runs to the end (--keep-going), so it is timed all the same; its warnings go to
    `problems`, and the build fails the run only if it did not finish."""
    command = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(copy),
               "-W", "-n", "--keep-going"]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=copy, env=build_env(copy), capture_output=True,
                            text=True)
    seconds = time.perf_counter() - start
    output = _ANSI.sub("", result.stdout + result.stderr)
    log.write_text(output)
    if result.returncode != 0:
        if "build finished with problems" not in output:
            tail = "\n".join(output.splitlines()[-30:])
            raise SystemExit(f"the build stopped (log: {log}):\n{tail}")
        warnings = [line for line in output.splitlines() if ": WARNING: " in line]
        problems.extend(w for w in warnings if w not in problems)
        print(f"    (the build finished with {len(warnings)} warning(s): see the results)")
    return seconds


CLOSE_FIGURES = ("if 'matplotlib.pyplot' in sys.modules:\n"
                 "    sys.modules['matplotlib.pyplot'].close('all')\n")


def script_env(path, build_dir, root, base=os.environ):
    """The variables a chapter's plain script runs with: the kernel's (the engine as of the
    chapter), and the chapter's folder first on PYTHONPATH, as a kernel finds the modules
    beside the page (book/benchmark_results.py); Python puts the script's own folder there."""
    import execution

    env = {**base, **execution.kernel_env(path, build_dir, root)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(path.parent), env.get("PYTHONPATH")) if p)
    return env


def chapter_script(chapter):
    """A chapter's code cells as one plain script (matplotlib's Agg backend, every figure
    closed after each cell as the notebook's inline backend does); a `raises-exception`
    cell may raise. It runs with `script_env`."""
    parts = ["import sys\nimport matplotlib\nmatplotlib.use('Agg')\n"]
    for cell in chapter.cells:
        source = "\n".join(line for line in cell.source.splitlines()
                           if not line.lstrip().startswith(("%", "!")))
        if cell.raises:
            parts.append(f"try:\n    exec(compile({source!r}, 'cell', 'exec'))\n"
                         "except Exception:\n    pass\n")
        else:
            parts.append(source + "\n")
        parts.append(CLOSE_FIGURES)
    return "\n".join(parts)


# book/_ext/engine_cache.py runs every chapter before myst-nb reads it, and logs each run
_EXECUTED = re.compile(r"^engine_cache: ran (?P<docname>\S+) on \S+ in (?P<seconds>[\d.]+) s$",
                       re.M)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def in_build_seconds(copy, log):
    """{chapter path: seconds} its notebook executed in the build, as engine_cache logs it
    (two chapters run at a time, so these add up to more than the build's own time)."""
    return {f"{match['docname']}.md": float(match["seconds"])
            for match in _EXECUTED.finditer(_ANSI.sub("", log.read_text()))}


def run_build(rebuilds=3, keep=False, commit=None, script_repeats=3):
    started = time.perf_counter()
    section = {"date": now(), "commit": commit_info(commit), "machine": machine_info(),
               "command": "jupyter-book build . -W -n --keep-going",
               "threads": "the machine's defaults (no thread variables set)",
               "script_repeats": script_repeats}
    folder = Path(tempfile.mkdtemp(prefix="book-build-timing-"))
    try:
        copy = snapshot(folder / "book-root", commit)
        print("  cold build ...", flush=True)
        problems = section["build_warnings"] = []
        section["cold_build"] = jupyter_book(copy, folder / "cold.log", problems)
        cached = in_build_seconds(copy, folder / "cold.log")
        rebuilds_seconds = []
        for i in range(rebuilds):
            print(f"  rebuild {i + 1} of {rebuilds}, nothing changed ...", flush=True)
            rebuilds_seconds.append(jupyter_book(copy, folder / f"rebuild-{i + 1}.log",
                                                 problems))
        section["rebuilds"] = rebuilds_seconds
        section["rebuild"] = statistics.median(rebuilds_seconds)

        import book_config  # the working tree's tooling, reading the copy's chapters
        import myst_reader

        chapters = []
        env = build_env(copy)
        env["MPLBACKEND"] = "Agg"
        for path in book_config.chapter_paths(copy):
            chapter = myst_reader.read_chapter(path, copy)
            script = folder / f"{path.stem}.py"
            script.write_text(chapter_script(chapter))
            print(f"  {path.stem} as a plain script ...", flush=True)
            runs = []
            for _ in range(script_repeats):
                start = time.perf_counter()
                # on the engine as of the chapter, as in the build
                chapter_env = script_env(path, copy / "_build", copy, env)
                result = subprocess.run([sys.executable, str(script)], cwd=path.parent,
                                        env=chapter_env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
                runs.append(time.perf_counter() - start)
                if result.returncode != 0:
                    raise SystemExit(f"{path.name} failed as a plain script:\n"
                                     f"{result.stderr[-3000:]}")
            relative = path.relative_to(copy).as_posix()
            chapters.append({"chapter": path.stem, "script": round(statistics.median(runs), 3),
                             "script_runs": [round(r, 3) for r in runs],
                             "in_build": cached.get(relative)})
        section["chapters"] = chapters
        section["scripts_sum"] = sum(c["script"] for c in chapters)
        section["overhead"] = section["cold_build"] - section["scripts_sum"]
        section["target_rebuild"] = 15.0
        section["rebuild_met"] = bool(section["rebuild"] < section["target_rebuild"])
    finally:
        if keep:
            print(f"  kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    section["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    section["seconds"] = round(time.perf_counter() - started, 1)
    return section


# -- printing ---------------------------------------------------------------------------


def fmt_time(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def workloads_table(section):
    """One row per implementation (time and page faults per iteration, median), one column per
    workload; then each workload's target and noise band."""
    work = section["workloads"]
    names = list(work)
    impls = list(dict.fromkeys(i for w in work.values() for i in w["times"]))
    lines = [f"{'implementation':<34}" + "".join(f"{n:>24}" for n in names)]
    for impl in impls:
        cells = []
        for n in names:
            t = work[n]["times"].get(impl)
            cells.append(f"{fmt_time(t['median'])} ({t['page_faults']:.0f})" if t else "-")
        lines.append(f"{impl:<34}" + "".join(f"{c:>24}" for c in cells))
    for n, w in work.items():
        target = w["target"]
        lines.append(f"{n}: engine / torch {w['ratios'].get('torch', float('nan')):.2f}x, "
                     f"engine / numpy {w['ratios'].get('numpy', float('nan')):.2f}x; target "
                     f"<= {target['ratio']:.2f}x {target['versus']}: "
                     + ("met" if target["met"] else "NOT met")
                     + (f"; noise band +-{100 * w['noise']['band']:.1f}% (null / engine "
                        f"{w['noise']['pooled']:.3f})" if "noise" in w else ""))
    m = section["machine"]
    st = section["settings"]
    lines.append(f"(page faults): minor, per iteration, median; median of "
                 f"{st['repeats']} rounds x {st['processes']} sets of processes per "
                 f"implementation, one thread, gc on; {m['cpu']}, {m['cores']} cores, load "
                 f"{m['load_average']}; commit {section['commit']['short']}"
                 + (" (uncommitted changes)" if section["commit"]["dirty"] else ""))
    return "\n".join(lines)


def build_table(section):
    lines = [f"{'chapter':<16}{'plain script':>14}{'in the build':>14}"]
    for c in section["chapters"]:
        in_build = "-" if c["in_build"] is None else f"{c['in_build']:.2f} s"
        lines.append(f"{c['chapter']:<16}{c['script']:>12.2f} s{in_build:>14}")
    lines += [
        f"{'cold build':<30}{section['cold_build']:>8.1f} s",
        f"{'sum of plain scripts':<30}{section['scripts_sum']:>8.1f} s",
        f"{'build overhead':<30}{section['overhead']:>8.1f} s",
        f"{'rebuild, nothing changed':<30}{section['rebuild']:>8.1f} s  (median of "
        f"{len(section['rebuilds'])}; target < {section['target_rebuild']:.0f} s: "
        + ("met)" if section["rebuild_met"] else "NOT met)"),
    ]
    for warning in section.get("build_warnings", []):
        lines.append(f"build warning: {warning}")
    return "\n".join(lines)


def load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {"schema": SCHEMA}


def save(path, results):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    results["schema"] = SCHEMA
    results["command"] = "python tests/benchmarks/run.py"
    path.write_text(json.dumps(results, indent=1) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=list(W.WORKLOADS), metavar="WORKLOAD",
                        help=f"run only these workloads ({', '.join(W.WORKLOADS)}); no build")
    parser.add_argument("--quick", action="store_true", help="3 short rounds, for development")
    parser.add_argument("--no-ablations", action="store_true",
                        help="time the engine without the runs that undo one step of chapter "
                        "fast each")
    parser.add_argument("--no-build", action="store_true",
                        help="time the workloads only and keep the stored build timings")
    parser.add_argument("--implementations", nargs="+", metavar="NAME",
                        help="time only these implementations (and engine, engine_null)")
    parser.add_argument("--build", action="store_true",
                        help="only the build timings (cold build, plain scripts, rebuilds)")
    parser.add_argument("--rebuilds", type=int, default=3, help="rebuilds to time (default 3)")
    parser.add_argument("--script-runs", type=int, default=3,
                        help="runs of each chapter's plain script; the median counts (default 3)")
    parser.add_argument("--keep", action="store_true", help="keep the build's temporary copy")
    parser.add_argument("--commit", metavar="REV",
                        help="measure this commit (its engine, and its build; from git "
                        "archive) instead of the working tree")
    parser.add_argument("--out", type=Path, help=f"results file (default {RESULTS.relative_to(ROOT)}"
                        "; --only and --quick write only to a file named here)")
    parser.add_argument("--show", action="store_true", help="print the stored results, run nothing")
    parser.add_argument("--engine-before", action="store_true",
                        help=f"only write {ENGINE_BEFORE.relative_to(ROOT)}, the engine as chapter "
                        "memory leaves it, which chapter fast reads (a full run writes it too)")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        worker(*args.worker)
        return
    if args.engine_before:
        write_engine_before()
        return
    out = args.out or RESULTS
    results = load(out)
    if args.show:
        if "workloads" in results:
            print(workloads_table(results["workloads"]))
        if "build" in results:
            print(build_table(results["build"]))
        return
    write = args.out is not None or not (args.only or args.quick or args.implementations)
    settings = QUICK if args.quick else FULL
    if not args.build:
        names = args.only or list(W.WORKLOADS)
        print(f"workloads: {', '.join(names)} ({'quick' if args.quick else 'full'} settings)")
        section = run_workloads(names, settings, args.commit, not args.no_ablations,
                                args.implementations)
        print(workloads_table(section))
        if write:
            results["workloads"] = section
    if args.build or not (args.only or args.quick or args.no_build):
        print(f"build timings (a temporary copy of {args.commit or 'the working tree'})")
        section = run_build(rebuilds=args.rebuilds, keep=args.keep, commit=args.commit,
                            script_repeats=args.script_runs)
        print(build_table(section))
        if write or args.build:
            results["build"] = section
    if write or args.build:
        save(out, results)
        print(f"written: {out}")
        if args.out is None and args.commit is None:
            write_engine_before()
            if "workloads" in results and not args.build:  # a new full run of the workloads
                add_to_history(results["workloads"])
    else:
        print("not written (--only or --quick); add --out FILE to keep these results")


if __name__ == "__main__":
    main()
