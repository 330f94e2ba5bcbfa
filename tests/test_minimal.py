"""The yardsticks of chapter fast's "The cost of safety": the minimal engine
(tests/benchmarks/minimal.py) and the finished engine with one guarantee removed
(tests/benchmarks/safety.py) compute the NumPy floor's gradients, at the first
iteration and at the second (so that zeroing works), as run.py checks before it times."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import minimal  # tests/benchmarks, on pytest's pythonpath (pyproject.toml)
import verifier
import workloads as W

SAFETY_WORKLOADS = ("running_small", "mlp", "leaf")  # the chain runs in the minimal test only


def cheap_floor(a, b):
    """y = x1 x2 + x1 - x2 by hand, for a workloads.py that has no `cheap_numpy` yet."""
    def step():
        y = a * b + a - b  # noqa: F841
        return b + 1.0, a - 1.0

    return step


def floor_and_inputs(program):
    if program == "cheap":
        data = W.running_inputs(W.RUNNING_LARGE)
        return getattr(W, "cheap_numpy", cheap_floor)(*data), data
    workload = {"running": "running_small", "mlp": "mlp", "chain": "chain",
                "leaf": "leaf"}[program]
    data = W.inputs(workload)
    return getattr(W, f"{program}_numpy")(*data), data


def assert_close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == np.float64
        scale = np.max(np.abs(w))
        assert np.max(np.abs(g - w)) <= 1e-12 * scale, np.max(np.abs(g - w)) / scale


def test_chain_depth_is_the_harness():
    assert minimal.CHAIN_DEPTH == W.CHAIN_DEPTH


@pytest.mark.parametrize("program", ["running", "mlp", "chain", "leaf", "cheap"])
def test_minimal_matches_the_floor(program):
    floor, data = floor_and_inputs(program)
    want = floor()
    step = getattr(minimal, f"{program}_minimal")(*data)
    assert_close(step(), want)  # first iteration
    assert_close(step(), want)  # second: the grads were zeroed, not added to


def test_minimal_copies_nothing_it_is_given():
    a, b = W.running_inputs(3)
    before = a.copy(), b.copy()
    minimal.running_minimal(a, b)()
    assert np.array_equal(a, before[0]) and np.array_equal(b, before[1])


BENCH = verifier.ROOT / "tests" / "benchmarks"


def child(code, timeout):
    """Run `code` in a fresh Python whose path starts with tests/benchmarks (the helpers it
    imports): each experiment patches the engine, so each runs in a process of its own."""
    path = os.pathsep.join(p for p in (str(BENCH), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=verifier.ROOT, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": path})


SAFETY_CHECK = """
import numpy as np
import safety, workloads as W
W.CHAIN_DEPTH = {depth}  # the chain at a depth that checks, not one that times
safety.apply({name!r})
for workload in {workloads!r}:
    data = W.inputs(workload)
    want = getattr(W, W.WORKLOADS[workload]["program"] + "_numpy")(*data)()
    step = W.setup(workload, "engine_with_" + {name!r}, data)
    for _ in range(2):
        for g, w in zip(step(), want):
            scale = np.max(np.abs(w))
            assert np.max(np.abs(np.asarray(g) - w)) <= 1e-12 * scale, (workload, {name!r})
print("ok")
"""


@pytest.mark.parametrize("name", ["unversioned", "paused", "thresholds", "bare",
                                  "storage_versions"])
def test_safety_experiment_matches_the_floor(name):
    """Each experiment patches the engine, so each runs in a process of its own."""
    import safety

    assert name in safety.EXPERIMENTS
    code = SAFETY_CHECK.format(name=name, workloads=SAFETY_WORKLOADS, depth="W.CHAIN_DEPTH")
    done = child(code, 300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.parametrize("name", ["bare_sweep", "bare_sweep_grads",
                                  "bare_sweep_grads_operands"])
def test_the_ladder_matches_the_floor_where_it_runs(name):
    """The ladder past `bare` runs on the running program and the chain only (run.py); its
    grads are wrong where a parent was broadcast, which the next test shows."""
    import safety

    assert name in safety.EXPERIMENTS and name in safety.ONLY_ON
    code = SAFETY_CHECK.format(name=name, workloads=safety.LADDER_WORKLOADS, depth=1000)
    done = child(code, 300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


KEPT = """
import gc, json
import numpy as np
import safety
if {name!r}:
    safety.apply({name!r})
from engine import Tensor, no_grad

def refused(run):
    try:
        run()
    except RuntimeError:
        return True
    return False

x = Tensor([1.0, 2.0, 3.0])
y = (x * x).sum()
paused = not gc.isenabled()
x.data[1] = 5.0  # memory's Step 6: a write into a saved array
kept = {{"versions": refused(y.backward), "collector": not paused}}
y = (x * x).sum()
y.backward()
kept["release"] = refused(y.backward)  # a second sweep through a freed graph
b = Tensor([1.0])
(x + b).sum().backward()
kept["broadcast"] = b.grad.shape == (1,)
with no_grad():
    kept["grad_mode"] = not (x * x).requires_grad
print(json.dumps(kept))
"""


def test_each_rung_of_the_ladder_removes_what_it_names_and_keeps_the_rest_removed():
    """The ladder is cumulative: `bare` (versions, the collector's running), then the release
    and the checks of the sweep, then broadcasting's VJP, then the grad mode of operations."""
    import safety

    removed = {"": [], "bare": ["versions", "collector"], "bare_sweep": ["release"],
               "bare_sweep_grads": ["broadcast"], "bare_sweep_grads_operands": ["grad_mode"]}
    assert list(removed)[1:] == list(safety.LADDER)
    gone = []
    for name, more in removed.items():
        gone += more
        code = KEPT.format(name=name)
        done = child(code, 120)
        assert done.returncode == 0, done.stderr[-2000:]
        kept = json.loads(done.stdout)
        assert sorted(k for k, v in kept.items() if not v) == sorted(gone), (name, kept)


CAUGHT = """
import json
import safety
if {name!r}:
    safety.apply({name!r})
print(json.dumps(safety.caught()))
"""


def caught_with(name):
    code = CAUGHT.format(name=name)
    done = child(code, 120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_which_writes_each_version_counter_catches():
    """Chapter memory's writes: the VersionedArray refuses all but the NumPy function with
    out=, as that chapter says; versions kept per storage by the engine see only the writes
    that go through the tensor (its setter); with no counter, every one is silent."""
    through_the_tensor = {"x.data += 1", "x.data = new", "SGD(...).step()"}
    engine = caught_with("")
    assert {w for w, v in engine.items() if v == "silent"} == {
        "np.multiply(x.data, 2, out=x.data)"}, engine
    storage = caught_with("storage_versions")
    assert {w for w, v in storage.items() if v == "refused"} == through_the_tensor, storage
    assert set(caught_with("unversioned").values()) == {"silent"}
