"""Gradient checks at the precision float64 gives.

Central differences with h = 1e-6 are good to about 1e-10 in float64 (engine/numeric.py
says why), so an engine test compares at rtol 1e-7: a VJP off by 0.05% fails here,
while PyTorch's defaults (atol 1e-5, rtol 1e-3, which chapter `gradcheck` teaches and
tests/test_gradcheck.py pins) would pass it.
"""

import numpy as np

RTOL = 1e-7
ATOL = 1e-8


def gradcheck(f, inputs, rtol=RTOL, atol=ATOL):
    """engine.gradcheck at float64 precision (imported here: the engine of the test's
    chapter is the one on the path)."""
    from engine import gradcheck as engine_gradcheck

    return engine_gradcheck(f, inputs, atol=atol, rtol=rtol)


def central_differences(f, x, h=1e-6):
    """d sum(f(x)) / dx entry by entry: the engine's own `numerical_grad` (chapter
    `chain-rule`), so the tests use the book's one finite-difference routine."""
    from engine import numerical_grad

    return numerical_grad(lambda v: np.sum(f(v)), np.asarray(x, dtype=np.float64), h=h)
