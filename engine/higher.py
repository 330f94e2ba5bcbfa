#> higher-order
"""Derivatives of derivatives: a backward sweep whose own operations are recorded.

Introduced in chapter `higher-order` (Derivatives of derivatives). `grad` follows
torch.autograd.grad. With create_graph=True the sweep hands each closure its node,
`out`, and the closure computes its VJPs with engine operations on tensors instead
of NumPy on arrays, so the gradients it returns have a graph of their own, which a
second sweep can differentiate, to any order. Without it, the sweep runs on arrays,
as `backward` does.
"""

import numpy as np

from .shapes import unbroadcast
from .tensor import Tensor
#> memory
from .memory import check_saved, release
#> errors
from .tensor import TROUBLE


#> higher-order
def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """The gradients of `outputs` with respect to `inputs`, as torch.autograd.grad does:
    a tuple with one Tensor per input, or None for an input the outputs do not depend on
    (only with `allow_unused=True`). Each output is seeded with its `grad_outputs` entry
    (ones when None). No `.grad` is read or written. With `create_graph=True` the returned
    tensors have a graph, and `grad` of them gives second derivatives.
    """
    outputs, inputs = _tensors(outputs, "outputs"), _tensors(inputs, "inputs")
    for k, x in enumerate(inputs):
        if not x.requires_grad:
            raise RuntimeError(f"grad: input {k} does not require a gradient: make it with "
                               "requires_grad=True")
    grads = {}  # node -> the sum of the VJPs that reached it so far
    for y, seed in zip(outputs, _seeds(outputs, grad_outputs, create_graph)):
        grads[y] = seed if y not in grads else grads[y] + seed
    order = _order(outputs)
    #< higher-order, replaced in errors
    # _sweep(order, grads, set(inputs), create_graph)
    #> errors
    TROUBLE.warn(TROUBLE.watch(_sweep, order, grads, set(inputs), create_graph))
    #> memory
    if not (create_graph if retain_graph is None else retain_graph):
        for node in order:
            release(node)  # as backward does: what the closures saved can go
    #> higher-order
    result = []
    for k, x in enumerate(inputs):
        g = grads.get(x)
        if g is None and not allow_unused:
            raise RuntimeError(f"grad: input {k} is not used to compute the outputs; pass "
                               "allow_unused=True to get None for it")
        if g is not None and not isinstance(g, Tensor):
            g = Tensor(g, requires_grad=False, copy=False)
        result.append(g)
    return tuple(result)


def _tensors(values, what):
    """A Tensor, or a list or tuple of them, as a tuple; anything else is an error."""
    values = (values,) if isinstance(values, Tensor) else values
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, Tensor) for v in values):
        raise TypeError(f"grad: {what} must be a Tensor or a list or tuple of Tensors")
    if what == "outputs":
        for k, y in enumerate(values):
            if not y.requires_grad:
                raise RuntimeError(f"grad: output {k} does not require a gradient: no input "
                                   "that requires one was used to compute it")
    return tuple(values)


def _seeds(outputs, grad_outputs, create_graph):
    """One seed per output: ones, or the given one, checked; a Tensor for a create_graph
    sweep (kept as it is if it is one, so that second derivatives reach it), else an array."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif not isinstance(grad_outputs, (list, tuple)):  # one seed, for one output
        grad_outputs = [grad_outputs]
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    seeds = []
    for y, v in zip(outputs, grad_outputs):
        if v is None:
            v = np.ones(y.shape)
        shape = np.shape(v.data if isinstance(v, Tensor) else v)
        if shape != y.shape:
            raise ValueError(f"grad: grad_outputs of shape {shape} for an output of shape "
                             f"{y.shape}")
        if create_graph:
            seeds.append(v if isinstance(v, Tensor) else Tensor(v, requires_grad=False))
        else:
            seeds.append(np.array(v.data if isinstance(v, Tensor) else v, dtype=np.float64))
    return seeds


def _order(outputs):
    """The nodes of every output's graph, once each, each after its parents."""
    order, seen = [], set()
    for y in outputs:
        for node in y.topo_order():
            if node not in seen:
                seen.add(node)
                order.append(node)
    return order


def _sweep(order, grads, keep, create_graph):
    """Run the closures from the last node to the first, summing VJPs into `grads`.

    A create_graph sweep calls `backward_fn(y_bar, node)`: y_bar is a Tensor, and the
    closure answers with engine operations. A node's grad is dropped once its closure
    has run, unless it is one of the inputs (`keep`).
    """
    #> memory
    from .memory import _grad_enabled  # the flag that no_grad() clears
    if create_graph and not _grad_enabled[0]:  # inside no_grad(): record anyway, as PyTorch
        _grad_enabled[0] = True  # does (create_graph asks for a graph; no_grad is outside)
        try:
            return _sweep(order, grads, keep, create_graph)
        finally:
            _grad_enabled[0] = False
    #> higher-order
    for node in reversed(order):
        y_bar = grads.get(node) if node in keep else grads.pop(node, None)
        if y_bar is None or not node.op:
            continue  # not reached from the outputs, or a leaf: nothing to run
        #> memory
        check_saved(node)  # raises if the graph was freed or a saved value changed
        #> errors
        TROUBLE.op = node.op
        #> higher-order
        vjps = node.backward_fn(y_bar, node) if create_graph else node.backward_fn(y_bar)
        for parent, vjp in zip(node.parents, vjps):
            if vjp is None or not parent.requires_grad:
                continue
            if create_graph and not isinstance(vjp, Tensor):
                raise TypeError(f"grad: the closure of '{node.op}' returned a "
                                f"{type(vjp).__name__} to a create_graph sweep, which needs "
                                "a Tensor: its rule computes with arrays, not engine operations")
            vjp = _unbroadcast(vjp, parent.shape)
            old = grads.get(parent)
            grads[parent] = vjp if old is None else old + vjp  # never in place: may be shared


def _unbroadcast(vjp, shape):
    """`unbroadcast` of chapter `shapes`, for an array or, in engine operations, a Tensor."""
    if np.shape(vjp.data if isinstance(vjp, Tensor) else vjp) == shape:
        return vjp
    if not isinstance(vjp, Tensor):
        return unbroadcast(vjp, shape)
    lead = vjp.ndim - len(shape)  # axes that broadcasting put in front
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and vjp.shape[lead + i] != 1)
    return vjp.sum(axis=axes, keepdims=True).reshape(shape)


#< higher-order, replaced in memory
# def backward_with_graph(root, gradient):
#> memory
def backward_with_graph(root, gradient, retain_graph=None):
#> higher-order
    """`root.backward(gradient, create_graph=True)`: each leaf's grad becomes a Tensor with
    a graph (added to the grad it had, out of place); results keep no grad, as in PyTorch."""
    leaves = [node for node in root.topo_order() if not node.op]
    #< higher-order, replaced in memory
    # grads = grad(root, leaves, gradient, create_graph=True, allow_unused=True)
    #> memory
    grads = grad(root, leaves, gradient, retain_graph, create_graph=True, allow_unused=True)
    #> higher-order
    for x, g in zip(leaves, grads):
        if g is not None:
            x.grad = g if x.grad is None else x.grad + g


def hvp(f, x, v):
    """(f(x), H v) for a function f of one tensor x whose value f(x) has one entry, H its
    Hessian at x, as torch.autograd.functional.hvp: reverse over reverse, two sweeps."""
    x = _leaf(x)
    y = f(x)
    (g,) = grad(y, x, create_graph=True)  # the gradient, as a tensor with a graph
    (h_v,) = grad(g, x, grad_outputs=_array(v, x.shape, "v"))  # d(g . v)/dx = H v
    return _value(y), h_v


def vjp(f, x, u):
    """(f(x), J^T u): one reverse sweep seeded with u."""
    x = _leaf(x)
    y = f(x)
    return _value(y), grad(y, x, grad_outputs=_array(u, y.shape, "u"))[0]


def jvp(f, x, v):
    """(f(x), J v) with reverse sweeps only: J^T u for a u that needs a gradient is linear
    in u, so its VJP with seed v is J v (two sweeps, the second through the first)."""
    x = _leaf(x)
    y = f(x)
    u = Tensor(np.zeros(y.shape))  # any value: J^T u is linear in u
    (g,) = grad(y, x, grad_outputs=u, create_graph=True)
    (j_v,) = grad(g, u, grad_outputs=_array(v, x.shape, "v"))
    return _value(y), j_v


def jacobian(f, x, by="rows"):
    """The Jacobian of f at x, of shape f(x).shape + x.shape: by rows, one VJP per entry of
    the output (m sweeps), or by columns, one JVP per entry of the input (n of them)."""
    x = _leaf(x)
    out_shape = f(x).shape
    if by == "rows":
        rows = [vjp(f, x, _unit(out_shape, j))[1].data for j in range(int(np.prod(out_shape)))]
        return Tensor(np.reshape(rows, out_shape + x.shape), requires_grad=False)
    if by == "columns":
        cols = [jvp(f, x, _unit(x.shape, i))[1].data for i in range(x.data.size)]
        return Tensor(np.moveaxis(np.reshape(cols, x.shape + out_shape),
                                  range(x.ndim), range(-x.ndim, 0)), requires_grad=False)
    raise ValueError(f"jacobian: by must be 'rows' or 'columns', got {by!r}")


def hessian(f, x):
    """The Hessian at x of a function f of one tensor x whose value f(x) has one entry, of
    shape x.shape + x.shape: one Hessian-vector product per entry of x."""
    x = _leaf(x)
    rows = [hvp(f, x, _unit(x.shape, i))[1].data for i in range(x.data.size)]
    return Tensor(np.reshape(rows, x.shape + x.shape), requires_grad=False)


def _leaf(x):
    """x as a new leaf that needs a gradient: its own copy of the values."""
    return Tensor(x.data if isinstance(x, Tensor) else x, requires_grad=True)


def _value(y):
    """y's values as a constant (Tensor.detach comes only in chapter `memory`)."""
    return Tensor(y.data, requires_grad=False, copy=False)


def _array(v, shape, name):
    v = np.asarray(v.data if isinstance(v, Tensor) else v, dtype=np.float64)
    if v.shape != shape:
        raise ValueError(f"{name} of shape {v.shape} does not fit shape {shape}")
    return v


def _unit(shape, i):
    e = np.zeros(shape)
    e.flat[i] = 1.0
    return e
