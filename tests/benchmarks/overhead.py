"""How much does the engine cost over raw NumPy? A benchmark, not a test: run it by hand.

    python tests/benchmarks/overhead.py

For each array size it times the running program y = ln x1 + x1 x2 - sin x2,
forward and backward, once through `engine.Tensor` and once as hand-written
NumPy (the same forward, and the gradient formulas 1/x1 + x2 and x1 - cos x2),
and a two-layer MLP training step (engine vs hand-written NumPy backprop).
It prints the median time of each and the ratio. Small arrays show the fixed
Python cost per operation; large ones show that the engine adds little beyond
the NumPy calls it makes.
"""

import os
import statistics
import time

# One BLAS thread: on a shared 2-core machine a second thread makes large matrix
# products swing by 10x from run to run, and the comparison would measure the load.
for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(name, "1")

import numpy as np  # noqa: E402  (after the thread settings, which numpy reads on import)

from engine import Tensor, functional  # noqa: E402


def median_seconds(fn, repeat=7, min_time=0.05):
    fn()
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        if time.perf_counter() - start > min_time:
            break
        loops *= 2
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        samples.append((time.perf_counter() - start) / loops)
    return statistics.median(samples)


def running_program_engine(a, b):
    x1, x2 = Tensor(a), Tensor(b)
    y = x1.log() + x1 * x2 - x2.sin()
    y.backward()
    return x1.grad, x2.grad


def running_program_numpy(a, b):
    y = np.log(a) + a * b - np.sin(b)
    return y, 1 / a + b, a - np.cos(b)


def mlp_step_engine(x, targets, w1, b1, w2, b2):
    params = [Tensor(w1), Tensor(b1), Tensor(w2), Tensor(b2)]
    hidden = (Tensor(x) @ params[0] + params[1]).relu()
    loss = functional.cross_entropy(hidden @ params[2] + params[3], targets)
    loss.backward()
    return [p.grad for p in params]


def mlp_step_numpy(x, targets, w1, b1, w2, b2):
    z = x @ w1 + b1
    h = np.maximum(z, 0)
    logits = h @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(shifted)
    p /= p.sum(axis=1, keepdims=True)
    n = len(targets)
    d_logits = p.copy()
    d_logits[np.arange(n), targets] -= 1
    d_logits /= n
    d_h = d_logits @ w2.T
    d_z = d_h * (z > 0)
    return [x.T @ d_z, d_z.sum(0), h.T @ d_logits, d_logits.sum(0)]


def main():
    rng = np.random.default_rng(0)
    print(f"{'workload':<34}{'engine':>12}{'numpy':>12}{'ratio':>8}")
    for n in (10, 1_000, 100_000, 1_000_000):
        a, b = rng.uniform(0.5, 2, n), rng.uniform(-3, 3, n)
        g_engine = running_program_engine(a, b)
        g_numpy = running_program_numpy(a, b)[1:]
        assert all(np.allclose(e, m) for e, m in zip(g_engine, g_numpy))
        t_engine = median_seconds(lambda: running_program_engine(a, b))
        t_numpy = median_seconds(lambda: running_program_numpy(a, b))
        print(f"{'running program, n = ' + str(n):<34}{t_engine * 1e6:>10.1f}us"
              f"{t_numpy * 1e6:>10.1f}us{t_engine / t_numpy:>8.2f}")
    for batch, width in ((32, 64), (256, 256), (1024, 512)):
        x = rng.normal(size=(batch, 20))
        targets = rng.integers(0, 10, batch)
        w1, b1 = rng.normal(size=(20, width)) * 0.1, np.zeros(width)
        w2, b2 = rng.normal(size=(width, 10)) * 0.1, np.zeros(10)
        args = (x, targets, w1, b1, w2, b2)
        for e, m in zip(mlp_step_engine(*args), mlp_step_numpy(*args)):
            assert np.allclose(e, m)
        t_engine = median_seconds(lambda: mlp_step_engine(*args))
        t_numpy = median_seconds(lambda: mlp_step_numpy(*args))
        print(f"{f'MLP step, batch {batch}, width {width}':<34}{t_engine * 1e6:>10.1f}us"
              f"{t_numpy * 1e6:>10.1f}us{t_engine / t_numpy:>8.2f}")


if __name__ == "__main__":
    main()
