#> chain-rule
"""Central differences: derivatives estimated from values alone.

Introduced in chapter `chain-rule`, where every derivative worked by hand is
checked against them; chapter `gradcheck` studies their error. The estimate
(f(x + h e_j) - f(x - h e_j)) / (2 h) has a truncation error of about
h^2 |f'''| / 6 and a rounding error of about eps |f| / h: with h = 1e-6 and
|f|, |f'''| near 1, rounding (about 2e-10 in float64) dominates truncation
(about 2e-13).
"""

import numpy as np


def numerical_grad(f, x, h=1e-6):
    """The gradient of a scalar-valued `f` at `x` (a float or an array) by central differences.

    Returns a float for a float `x`, else an array of the shape of `x`.
    """
    if np.ndim(x) == 0:
        x = float(x)
        return (float(f(x + h)) - float(f(x - h))) / (2 * h)
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[j] = h
        grad[j] = (float(f(x + step)) - float(f(x - step))) / (2 * h)
    return grad


def numerical_jacobian(f, x, h=1e-6):
    """The Jacobian (outputs x inputs) of `f`: R^n -> R^m at the vector `x`."""
    x = np.array(x, dtype=np.float64).ravel()
    columns = []
    for j in range(x.size):
        step = np.zeros_like(x)
        step[j] = h
        y_plus = np.asarray(f(x + step), dtype=np.float64).ravel()
        y_minus = np.asarray(f(x - step), dtype=np.float64).ravel()
        columns.append((y_plus - y_minus) / (2 * h))
    return np.stack(columns, axis=1)
