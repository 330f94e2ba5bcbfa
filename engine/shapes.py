#> shapes
"""Shape machinery: broadcasting forward, and its VJP backward.

Introduced in chapter `shapes` (Matrix products, reductions and broadcasting).
`broadcast_shape` is the forward rule every binary operation checks;
`unbroadcast` is its vector-Jacobian product, applied once, in
`Tensor._run_closure`, to every parent's contribution.
"""

import numpy as np


def broadcast_shape(shape_a, shape_b, op):
    """The shape NumPy gives `a op b`, or a ValueError naming both shapes."""
    if shape_a == shape_b:
        return shape_a  # the common case, and nothing to check
    try:
        return np.broadcast_shapes(shape_a, shape_b)
    except ValueError:
        raise ValueError(
            f"{op}: shapes {shape_a} and {shape_b} cannot be broadcast "
            "together (aligned from the right, each pair of lengths must be "
            "equal or contain a 1)"
        ) from None


def unbroadcast(grad, shape):
    """Sum `grad` down to `shape`: the VJP of broadcasting from `shape`."""
    if getattr(grad, "shape", None) == shape:
        return grad  # nothing was broadcast: the common case, checked first
    grad = np.asarray(grad, dtype=np.float64)
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:  # axes that broadcasting prepended
        grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1)
    if stretched and grad.ndim == len(shape):  # length-1 axes, stretched
        grad = grad.sum(axis=stretched, keepdims=True)
    if grad.shape != shape:
        raise ValueError(f"unbroadcast: a gradient of shape {grad.shape} "
                         f"cannot be summed to shape {shape}")
    return grad
