#> gradcheck
"""Gradient checks: the engine's Jacobians against central differences.

Introduced in chapter `gradcheck` (Gradient checks with finite differences).
`gradcheck` follows torch.autograd.gradcheck: same defaults, same criterion
|analytic - numeric| <= atol + rtol * |numeric| on every entry of the full
Jacobian, in float64; it returns True or raises GradcheckError naming the
worst entry.
"""

import numpy as np

from .numeric import numerical_jacobian


class GradcheckError(RuntimeError):
    """A gradient disagrees with central differences (a RuntimeError)."""


def _as_inputs(inputs):
    return [inputs] if hasattr(inputs, "data") else list(inputs)


def numerical_jacobians(f, inputs, eps=1e-6):
    """One Jacobian per input, (output size) x (input size), by central differences
    (`numerical_jacobian` of chapter `chain-rule`): two forward passes per entry."""
    inputs = _as_inputs(inputs)
    jacobians = []
    for x in inputs:
        original = x.data

        def f_of_x(values):  # f as a function of this input's entries alone
            x.data = values.reshape(original.shape)
            return f(*inputs).data

        jacobians.append(numerical_jacobian(f_of_x, original, h=eps) if original.size else None)
        x.data = original
    return jacobians


def analytic_jacobians(f, inputs):
    """One Jacobian per input; row j from a backward sweep seeded with e_j."""
    inputs = _as_inputs(inputs)
    #< gradcheck, replaced in training
    # saved = [x.grad.copy() for x in inputs]
    #> training
    saved = [None if x.grad is None else x.grad.copy() for x in inputs]  # after zero_grad()
    #> gradcheck
    size = np.size(f(*inputs).data)
    rows = [[] for _ in inputs]
    for j in range(size):
        for x in inputs:
            x.grad = np.zeros(x.shape)  # leaves accumulate: start at 0
        y = f(*inputs)
        seed = np.zeros(y.shape)
        seed.flat[j] = 1.0
        y.backward(seed)
        for k, x in enumerate(inputs):
            rows[k].append(x.grad.ravel().copy())
    for x, grad in zip(inputs, saved):
        x.grad = grad
    return [np.stack(r) if r else np.zeros((0, np.size(x.data)))
            for r, x in zip(rows, inputs)]


def gradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Compare every Jacobian entry of f(*inputs) with central differences.

    Returns True, or raises GradcheckError naming the worst entry.
    """
    inputs = _as_inputs(inputs)
    analytic = analytic_jacobians(f, inputs)
    numeric = numerical_jacobians(f, inputs, eps)
    worst = None  # (how far past the allowed gap, input k, output j, entry i)
    for k, (a, n) in enumerate(zip(analytic, numeric)):
        if n is None or not n.size:
            continue  # an empty input, or an empty output, has no entries to check
        excess = np.abs(a - n) / (atol + rtol * np.abs(n))
        j, i = np.unravel_index(np.argmax(excess), excess.shape)
        if worst is None or excess[j, i] > worst[0]:
            worst = (excess[j, i], k, j, i)
    if worst is None or worst[0] <= 1.0:
        return True
    _, k, j, i = worst
    out_shape = np.shape(f(*inputs).data)
    a, n = analytic[k][j, i], numeric[k][j, i]
    entry = tuple(int(t) for t in np.unravel_index(i, inputs[k].shape))
    output = tuple(int(t) for t in np.unravel_index(j, out_shape))
    raise GradcheckError(
        f"Jacobian mismatch for input {k} at entry {entry} and output "
        f"{output}: analytic {a:.6g}, numerical {n:.6g}, |difference| "
        f"{abs(a - n):.3g} > atol + rtol * |numerical| = "
        f"{atol + rtol * abs(n):.3g}"
    )


#> higher-order
def gradgradcheck(f, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0):
    """gradcheck of the gradients themselves, as torch.autograd.gradgradcheck.

    The VJP of f, (inputs, v) -> J(inputs)^T v, computed by `grad` with create_graph=True,
    is a function like any other: each of its outputs (one per input of f) is checked by
    `gradcheck` against central differences, in every input of f and in v. The seed v is
    `grad_outputs`, or random (with `seed`) when None. The VJP itself is first compared
    with central differences of f: a closure's create_graph rule is code of its own, which
    `gradcheck` (an ordinary sweep) never runs. Returns True or raises GradcheckError.
    """
    from .higher import grad
    from .tensor import Tensor

    inputs = _as_inputs(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = rng.standard_normal(np.shape(f(*inputs).data))
    v = Tensor(grad_outputs.data if isinstance(grad_outputs, Tensor) else grad_outputs)
    numeric = numerical_jacobians(f, inputs, eps)
    for k in range(len(inputs)):
        def vjp_k(*args, k=k):  # args: the inputs of f, then v
            return grad(f(*args[:-1]), args[:-1], args[-1], create_graph=True,
                        allow_unused=True)[k]

        first = vjp_k(*inputs, v)
        expected = (np.zeros(np.shape(inputs[k].data)) if numeric[k] is None else
                    (numeric[k].T @ np.ravel(v.data)).reshape(np.shape(inputs[k].data)))
        got = np.zeros_like(expected) if first is None else first.data
        excess = np.abs(got - expected) - (atol + rtol * np.abs(expected))
        if excess.size and excess.max() > 0:
            i = np.unravel_index(np.argmax(excess), excess.shape)
            raise GradcheckError(
                f"the gradient of input {k} from a create_graph sweep disagrees with central "
                f"differences at entry {tuple(int(t) for t in i)}: {got[i]:.6g} against "
                f"{expected[i]:.6g}")
        if first is None:
            continue  # f does not depend on input k: nothing to check
        try:
            gradcheck(vjp_k, [*inputs, v], eps, atol, rtol)
        except GradcheckError as error:
            raise GradcheckError(f"second derivatives of input {k}: {error}") from None
    return True
