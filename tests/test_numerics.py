"""Every chapter verifies in every numerical environment of tests/numerics.py.

Each environment runs the whole book afresh (never from the build's cache) in its
own `python tests/verifier.py --environment NAME` process: other OpenBLAS kernels,
NumPy's SIMD levels turned off, more than one BLAS thread, and the perturbed
engine. One test per environment and chapter; a failure shows the verifier's report,
naming the chapter's file and line.

The machine as it is, is not in the matrix: tests/test_chapters.py verifies every
chapter on it, and the book runs afresh on it twice more (test_determinism's second
clean build, byte-identical to the verified one, and test_notebook_roundtrip's
downloaded notebooks, checked against their `expect:`).

The matrix is most of the test command's work: so when a session will run the
matrix's tests, tests/conftest.py starts the matrix as the session starts
(`start_in_background`) and puts those tests last. Its verifier processes run on both
cores at a lower priority (`NICENESS`): the session's own work comes first, the matrix
takes the rest, and on two cores it ends before the session does instead of after it.
"""

import atexit
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import hypothesis
from hypothesis import strategies as st
import pytest

import book_config
import myst_reader
import numerics
import verifier
from support import background
from support.books import FRONT

ROOT = verifier.ROOT
ENVIRONMENTS = numerics.environments()
MATRIX = [e for e in ENVIRONMENTS if e.name != "machine"]  # the machine: see above
SUMMARY = ROOT / "_build" / "numerics.json"
NICENESS = 10  # of the matrix run beside the session: CFS then gives it a tenth of a busy core
CHAPTERS = book_config.chapter_paths(ROOT)


_live = set()  # verifier processes still running, stopped if the session ends first
atexit.register(lambda: [process.kill() for process in list(_live)])


def run_matrix(environments, out_dir, chapters=(), root=ROOT, cores=None, niceness=0):
    """{environment name: {chapter: result}} from one verifier process per environment.

    They run side by side as far as `cores` allow (an environment with several BLAS
    threads takes the cores it uses, at most all of them), at `niceness` (Unix).
    """
    cores = cores or min(os.cpu_count() or 1, 2)
    features = numerics.numpy_cpu_features()

    def slots(environment):
        return min(environment.threads or cores, cores)

    # the environments that take the most cores first: one left for last would wait for
    # every other to end, then run alone on cores it mostly leaves idle (its BLAS threads
    # work only in large matrix products)
    pending = sorted((e for e in environments if e.runnable(features) is None),
                     key=lambda e: -slots(e))
    results = {e.name: {"skipped": e.runnable(features)} for e in environments
               if e.runnable(features) is not None}
    running = []  # (environment, process, json path, log path, cores it uses, start)
    began = time.perf_counter()

    while pending or running:
        free = cores - sum(r[4] for r in running)
        fits = [e for e in pending if slots(e) <= free] if running else pending[:1]
        if fits:  # the first environment that fits in the cores left
            environment = fits[0]
            pending.remove(environment)
            out = Path(out_dir) / f"{environment.name}.json"
            log = Path(out_dir) / f"{environment.name}.log"
            command = [sys.executable, str(root / "tests" / "verifier.py"),
                       "--environment", environment.name, "--json", str(out), *chapters]
            with open(log, "w") as log_file:
                process = subprocess.Popen(command, cwd=root, stdout=log_file,
                                           stderr=subprocess.STDOUT,
                                           preexec_fn=lowered(niceness))
            _live.add(process)
            running.append((environment, process, out, log, slots(environment),
                            time.perf_counter()))
            continue
        time.sleep(0.2)
        for entry in list(running):
            environment, process, out, log, _, start = entry
            if process.poll() is None:
                continue
            running.remove(entry)
            _live.discard(process)
            chapters_done = json.loads(out.read_text()) if out.exists() else {}
            results[environment.name] = {
                "chapters": chapters_done, "returncode": process.returncode,
                "seconds": round(time.perf_counter() - start, 1),
                "started_at": round(start - began, 1),  # seconds into the matrix's run
                "log": log.read_text(errors="replace")[-4000:],
            }
    return results


def lowered(niceness):
    """What a child runs before it starts: lower its priority by `niceness` (Unix)."""
    if not niceness or not hasattr(os, "nice"):
        return None
    return lambda: os.nice(niceness)


class Background:
    """The matrix run beside the session, on both cores, at a lower priority."""

    def __init__(self, environments, out_dir):
        self.started = time.perf_counter()
        self.future = background.start(run_matrix, environments, out_dir, (),
                                       ROOT, None, NICENESS)

    def wait(self):
        return self.future.result()


_background = []


def reads_background(item):
    """The matrix's own tests (tests/conftest.py runs them last)."""
    return getattr(item, "originalname", None) == "test_chapter_verifies_in_environment"


def start_in_background(build):
    """Start the matrix now (tests/conftest.py calls this once the session is collected)."""
    if not _background:
        out_dir = Path(build) / "numerics"
        shutil.rmtree(out_dir, ignore_errors=True)  # no result of an earlier session is read
        out_dir.mkdir(parents=True)
        _background.append(Background(MATRIX, out_dir))


@pytest.fixture(scope="session")
def matrix(tmp_path_factory):
    started = time.perf_counter()
    if _background:
        results = _background[0].wait()
        started = _background[0].started
    else:
        results = run_matrix(MATRIX, tmp_path_factory.mktemp("numerics"))
    SUMMARY.parent.mkdir(exist_ok=True)
    SUMMARY.write_text(json.dumps({"seconds": round(time.perf_counter() - started, 1),
                                   "results": results}, indent=1))
    return results


@pytest.mark.slow  # the whole book, afresh, once per environment
@pytest.mark.parametrize("chapter", CHAPTERS, ids=[book_config.slug(p, ROOT) for p in CHAPTERS])
@pytest.mark.parametrize("environment", MATRIX, ids=[e.name for e in MATRIX])
def test_chapter_verifies_in_environment(environment, chapter, matrix):
    result = matrix[environment.name]
    if result.get("skipped"):
        pytest.skip(f"{environment.name}: {result['skipped']}")
    name = book_config.display_path(chapter, ROOT)
    done = result["chapters"].get(name)
    if done is None:
        pytest.fail(f"{environment.name}: the verifier never reported {name} (exit "
                    f"{result['returncode']}); its output ends:\n{result['log']}", pytrace=False)
    if not done["ok"]:
        variables = environment.variables()
        shown = " ".join(f"{k}={v}" for k, v in variables.items() if k != "IPYTHONDIR")
        pytest.fail(f"in environment {environment.name} ({environment.what}; {shown}):\n"
                    f"{done['report']}", pytrace=False)


def test_every_environment_changes_what_it_says():
    """The variables take effect: the forced kernels and SIMD levels are the ones running."""
    features = numerics.numpy_cpu_features()
    for environment in ENVIRONMENTS:
        if environment.runnable(features) is not None:
            continue
        variables = environment.variables(features)
        got = numerics.probe(variables)
        if "NPY_DISABLE_CPU_FEATURES" in variables:
            off = set(variables["NPY_DISABLE_CPU_FEATURES"].split(","))
            assert not off & set(got["numpy_simd"]), (environment.name, got)
        if environment.coretype and got["openblas_core"] is not None:
            # OpenBLAS names Prescott's kernels after the older Katmai
            aliases = {"Prescott": {"Prescott", "Katmai"}}.get(environment.coretype,
                                                              {environment.coretype})
            assert got["openblas_core"] in aliases, (environment.name, got)


def test_perturbation_moves_every_engine_result_and_keeps_runs_repeatable():
    """The perturbed engine is off by 1 or 2 ulps, the same way on every run."""
    code = r"""
import numpy as np, perturbation
nudger = perturbation.install(1)
from engine import Tensor, Var
def run():
    x1, x2 = Tensor([2.0, 1.0, 0.5]), Tensor([5.0, 0.0, 2.0])
    y = x1.log() + x1 * x2 - x2.sin()
    y.backward()
    return y.data.copy(), x1.grad.copy()
(y, g), (y2, g2) = run(), run()
exact_y = np.log([2.0, 1.0, 0.5]) + np.array([10.0, 0.0, 1.0]) - np.sin([5.0, 0.0, 2.0])
ulps = np.abs(y - exact_y) / np.spacing(np.abs(exact_y))
v = Var(2.0).log()
print(int(np.array_equal(y, y2) and np.array_equal(g, g2)), int(ulps.max() <= 8),
      int(np.any(y != exact_y)), int(v.value != np.log(2.0)), int(nudger.count > 0))
"""
    # `python -c` imports from its working directory: perturbation.py, beside this file
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "tests",
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1", "1", "1", "1", "1"], done.stdout + done.stderr


def test_perturbation_hands_back_an_array_it_leaves_exact_as_it_is():
    """Exact values (whole numbers: the seed of ones) move on no machine, so the nudger returns
    the same array: a read-only seed with strides of 0 stays one, as the chapters print."""
    import perturbation

    nudger = perturbation.Nudger(1)
    seed = np.ndarray((5,), np.float64, np.ones(1), 0, (0,))
    seed.flags.writeable = False
    assert nudger.array(seed, in_place=False) is seed
    moved = nudger.array(np.array([0.1, 2.0]), in_place=False)
    assert moved[0] != 0.1 and moved[1] == 2.0


@pytest.mark.filterwarnings("error")  # and a nudge never overflows
@hypothesis.given(st.floats(allow_nan=False, allow_infinity=False), st.integers(0, 5))
def test_a_float_moves_as_the_same_entry_of_an_array_does(value, seed):
    """The scalar path (Var, Dual) takes the same step as the array path (Tensor): one rule,
    whichever type carries the value."""
    import perturbation

    nudger = perturbation.Nudger(seed)
    as_float = nudger.array(value, in_place=False)
    assert type(as_float) is float
    assert as_float == nudger.array(np.array([value]), in_place=False)[0]


CHAOS_CONFIG = """\
title: fragile numbers
only_build_toc_files: true
exclude_patterns: [_build]
execute:
  execute_notebooks: cache
  timeout: 120
"""

# A robust cell, then a chaotic one: a recurrent layer iterated until its state
# forgets where it started, printed to 12 digits. Matrix products carry the
# kernels' rounding in, the recurrence amplifies it.
CHAOS = FRONT + """
# Fragile

```{code-cell} ipython3
---
expect: placeholder
---
import numpy as np
from engine import Tensor

rng = np.random.default_rng(0)
W = Tensor(rng.normal(size=(100, 100)) * 0.3, requires_grad=False)  # gain 3: chaotic
h = Tensor(rng.normal(size=(20, 100)), requires_grad=False)
print("one step, rounded:", np.round((h @ W).tanh().data[0, :3], 6))
```

```{code-cell} ipython3
---
expect: placeholder
---
for _ in range(300):
    h = (h @ W).tanh()  # chaotic
print(f"after 300 steps: {h.data.sum():.12f}")
```
"""


@pytest.fixture(scope="module")
def fragile_book(tmp_path_factory):
    book = tmp_path_factory.mktemp("fragile")
    (book / "book").mkdir()
    (book / "_config.yml").write_text(CHAOS_CONFIG)
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                   "  - file: book/chaos\n")
    (book / "book" / "intro.md").write_text("# Fragile numbers\n")
    path = book / "book" / "chaos.md"
    path.write_text(CHAOS)
    # the expectations are what this machine prints, as an author would write them
    result = verifier.verify(path, root=book, build=book / "_build", update=True)
    assert result.ok and len(result.rewritten) == 2, result.report()
    return book


@pytest.mark.slow  # runs a throwaway chapter in every environment
def test_a_chaotic_number_fails_in_other_environments_naming_its_line(fragile_book, tmp_path):
    path = fragile_book / "book" / "chaos.md"
    chaotic = next(c for c in myst_reader.read_chapter(path, fragile_book).cells if "300 steps" in c.source)
    # another kernel family than the one this process runs (OPENBLAS_CORETYPE may be set)
    features = numerics.numpy_cpu_features()
    own = numerics.probe({})["openblas_core"]
    other_blas = next(e for e in ENVIRONMENTS if e.coretype and e.runnable(features) is None
                      and numerics.probe(e.variables(features))["openblas_core"] != own)
    chosen = [other_blas] + [e for e in ENVIRONMENTS if e.perturb_seed is not None]
    results = run_matrix(chosen, tmp_path, chapters=[str(path)], root=ROOT)
    for environment in chosen:
        if results[environment.name].get("skipped"):
            continue
        done = results[environment.name]["chapters"]["book/chaos.md"]
        assert not done["ok"], f"{environment.name} printed the chaotic number unchanged"
        report = done["report"]
        assert f"book/chaos.md:{chaotic.line}: printed text differs from expect:" in report
        assert "problem(s) in 1 of 2 code cells" in report, report  # the robust cell passes
