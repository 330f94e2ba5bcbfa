"""Comparing the engine's numbers with PyTorch's, at float64 precision."""

import numpy as np
import torch

RTOL = 1e-10
ATOL_FACTOR = 1e-12  # times the largest finite entry (at least 1): zeros compare absolutely


def assert_same(mine, theirs, what):
    """The engine's array against PyTorch's: same shape, float64, close, nan/inf in place."""
    if torch.is_tensor(theirs):
        theirs = theirs.detach().numpy()
    theirs = np.asarray(theirs, dtype=np.float64)
    mine = np.asarray(mine)
    assert mine.dtype == np.float64, f"{what}: dtype {mine.dtype}"
    assert mine.shape == theirs.shape, f"{what}: shape {mine.shape}, PyTorch {theirs.shape}"
    finite = theirs[np.isfinite(theirs)]
    scale = max(1.0, float(np.max(np.abs(finite), initial=0.0)))
    np.testing.assert_allclose(mine, theirs, rtol=RTOL, atol=ATOL_FACTOR * scale,
                               equal_nan=True, err_msg=what)
