"""A graph 1,000,000 operations deep: backward works, the gradient is right, the memory is bounded.

The chain is y = x * c * c * ... * c (N multiplications by one constant tensor
c = 1.000001), so dy/dx = c ** N, about e = 2.718 for N = 1,000,000. It runs in
a fresh Python process, so that its peak memory is its own: the child reports
its resident memory before the graph, after the forward pass (the whole graph
alive) and its peak during backward (the graph, plus the topological order,
the visited set and one grad per node), as bytes per node.

The bound, 4,096 bytes per node at the peak: a node here is one Tensor (named
slots, about 100 bytes), its 0-d float64 VersionedArray (about 200) and the
backward closure with its cells and the tuple of parents (about 300); backward
adds an entry in the topological order, the visited set and the stack (about
150) and the node's grad array (about 100).
That is about 1 KB; 4 KB leaves room for the allocator's slack and other
platforms, and still fails if a node ever keeps four times what it should
(a copy per node, a frame per node from recursion, a leak of the graph).
"""

import json
import subprocess
import sys
import textwrap

import pytest

from support.side_jobs import Job

DEPTH = 1_000_000
C = 1.000001
MAX_BYTES_PER_NODE = 4096

CHILD = textwrap.dedent(f"""
    import gc, json, resource, time
    import numpy as np
    from engine import Tensor

    def resident_kib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() // 1024

    warm = Tensor(1.0) * 2.0  # import and first-call costs before the baseline
    warm.backward()
    del warm
    gc.collect()
    before = resident_kib()
    x = Tensor(1.0)
    c = Tensor({C!r}, requires_grad=False)
    start = time.perf_counter()
    y = x
    for _ in range({DEPTH}):
        y = y * c
    forward = time.perf_counter() - start
    after_forward = resident_kib()
    start = time.perf_counter()
    y.backward()
    backward = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({{"grad": float(x.grad), "forward_s": forward, "backward_s": backward,
                       "graph_bytes_per_node": (after_forward - before) * 1024 / {DEPTH},
                       "peak_bytes_per_node": (peak - before) * 1024 / {DEPTH}}}))
""")


def run_child(folder):
    return subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=1200)


CHILD_RUN = Job("deep-graph", run_child, guess=18)


def side_jobs(item):
    """The child: its own process, so its peak memory is its own, run beside the session."""
    return [CHILD_RUN] if sys.platform.startswith("linux") else []


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_a_graph_a_million_operations_deep_runs_backward_in_bounded_memory():
    child = CHILD_RUN.result()
    assert child.returncode == 0, child.stderr
    assert child.stderr == "", child.stderr  # no warning, no recursion trouble
    m = json.loads(child.stdout)
    figures = (f"depth {DEPTH:,}: forward {m['forward_s']:.1f} s, backward {m['backward_s']:.1f} s, "
               f"graph {m['graph_bytes_per_node']:.0f} bytes per node, peak during backward "
               f"{m['peak_bytes_per_node']:.0f} bytes per node")
    print("\n" + figures)
    assert m["grad"] == pytest.approx(C ** DEPTH, rel=1e-9), figures
    # the graph really was alive (a measurement of nothing would pass any upper bound)
    assert m["graph_bytes_per_node"] > 100, figures
    assert m["peak_bytes_per_node"] < MAX_BYTES_PER_NODE, figures
