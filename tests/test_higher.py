"""Chapter `higher-order`: second derivatives against PyTorch's double backward.

- Every operation of chapters `tensors` to `losses` and of the catalogue: the gradient
  from `engine.grad(y, inputs, u, create_graph=True)`, then the gradient of
  sum_k <g_k, v_k> with respect to every input and to the seed u itself (a Hessian-vector
  product plus the Jacobian-vector product J v), equal PyTorch's to relative 1e-8. Each
  operation is checked alone and inside a smooth program (x (1 + 0.1 sin x) before it,
  z sin z after it), so that the y_bar its closure receives has a graph of its own.
  Shapes (size-1 axes, 0-d, broadcasting) come from the shared hypothesis strategies;
  values come from a seeded generator, continuous, so that no tie and no kink is hit.
- The kinks and ties themselves (relu and abs at 0, max and min ties, maximum at a tie,
  clip at a bound, std of equal entries, x ** p at 0) against PyTorch's conventions.
- The random programs of tests/support/programs.py, as the first-order comparison runs them.
- `engine.gradgradcheck` on every operation, and failing on a wrong second derivative.
- A third derivative by three nested calls; hessian, jacobian, hvp, jvp and vjp against
  torch.autograd.functional; backward(create_graph=True) and grad's semantics and errors.
"""

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import engine
from engine import GradcheckError, Tensor, functional as F, gradgradcheck
from engine.higher import hessian, hvp, jacobian, jvp, vjp
from support import programs
from support.programs import Program
from support.strategies import examples, pairs, shapes

pytestmark = [pytest.mark.chapter("higher-order"), pytest.mark.filterwarnings("error")]

RTOL = 1e-8  # second derivatives: relative to the largest entry of PyTorch's array (or 1)
FIRST_RTOL = 1e-10  # first derivatives, as tests/test_against_torch.py


def assert_close(mine, theirs, what, rtol=RTOL):
    """The engine's array (or Tensor, or None for zeros) against PyTorch's, to `rtol`
    relative to each entry, with a floor of `rtol` times the largest entry (or 1)."""
    if torch.is_tensor(theirs):
        theirs = theirs.detach().numpy(force=True)  # force: abs's double backward is a ZeroTensor
    mine = mine.data if isinstance(mine, Tensor) else mine
    theirs = np.asarray(theirs, dtype=np.float64)
    mine = np.zeros(theirs.shape) if mine is None else np.asarray(mine, dtype=np.float64)
    assert mine.shape == theirs.shape, f"{what}: shape {mine.shape}, PyTorch {theirs.shape}"
    scale = max(1.0, float(np.max(np.abs(theirs), initial=0.0)))
    np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=rtol * scale, equal_nan=True,
                               err_msg=what)


# -- the double backward on both libraries ---------------------------------------------


def engine_double_backward(f, inputs, u, vs):
    """First: g = J^T u by a create_graph sweep. Second: the gradient of sum_k <g_k, v_k>
    with respect to every input (H v) and to u (J v). None stands for zeros."""
    leaves = [Tensor(a) for a in inputs]
    seed = Tensor(u)
    y = f(*leaves)
    assert y.shape == np.shape(u)
    gs = engine.grad(y, leaves, seed, create_graph=True, allow_unused=True)
    parts = [(g * v).sum() for g, v in zip(gs, vs) if g is not None]
    s = sum(parts[1:], parts[0]) if parts else None
    if s is None or not s.requires_grad:
        return y, gs, [None] * (len(leaves) + 1)
    return y, gs, engine.grad(s, leaves + [seed], allow_unused=True)


def torch_double_backward(f, inputs, u, vs):
    leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
    seed = torch.tensor(u, dtype=torch.float64, requires_grad=True)
    y = f(*leaves)
    gs = torch.autograd.grad(y, leaves, seed, create_graph=True, allow_unused=True)
    parts = [(g * torch.from_numpy(v)).sum() for g, v in zip(gs, vs) if g is not None]
    s = sum(parts[1:], parts[0]) if parts else None
    if s is None or not s.requires_grad:
        return y, gs, [None] * (len(leaves) + 1)
    return y, gs, torch.autograd.grad(s, leaves + [seed], allow_unused=True)


def compare_second(engine_fn, torch_fn, inputs, rng, what=""):
    """engine_fn and torch_fn on the same inputs: values, first derivatives (J^T u),
    second derivatives (H v for each input, J v for the seed) against PyTorch."""
    with torch.no_grad():
        shape = tuple(torch_fn(*[torch.tensor(a) for a in inputs]).shape)
    u = rng.normal(size=shape)
    vs = [rng.normal(size=np.shape(a)) for a in inputs]
    y, gs, second = engine_double_backward(engine_fn, inputs, u, vs)
    y_t, gs_t, second_t = torch_double_backward(torch_fn, inputs, u, vs)
    assert_close(y, y_t, f"value{what}", FIRST_RTOL)
    for k, (g, g_t) in enumerate(zip(gs, gs_t)):
        expected = np.zeros(np.shape(inputs[k])) if g_t is None else g_t
        assert_close(g, expected, f"first derivative of input {k}{what}", FIRST_RTOL)
    names = [f"H v of input {k}" for k in range(len(inputs))] + ["J v (the seed's)"]
    shapes_ = [np.shape(a) for a in inputs] + [shape]
    for name, h, h_t, s in zip(names, second, second_t, shapes_):
        assert_close(h, np.zeros(s) if h_t is None else h_t, f"{name}{what}")


def pre(t):
    """Before the operation: smooth, keeps the sign and stays away from 0 (|x| >= 0.5
    gives |pre(x)| >= 0.45), so the operation's domain is kept."""
    return t * (1.0 + 0.1 * t.sin())


def post(z):
    return z * z.sin()


def wrapped(fn, which):
    """fn with `pre` on the inputs numbered in `which`, and `post` on its output."""
    def run(*ts):
        return post(fn(*[pre(t) if k in which else t for k, t in enumerate(ts)]))
    return run


# -- inputs without ties or kinks ------------------------------------------------------


def normal(rng, shape):
    return np.asarray(rng.normal(size=shape))


def positive(rng, shape):
    return np.asarray(rng.uniform(0.5, 2.0, size=shape))


def nonzero(rng, shape):
    return np.asarray(rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape))


SHAPES = shapes(max_dims=3, max_side=3)
SHAPES_1 = shapes(min_dims=1, max_dims=3, max_side=3)
PAIRS = pairs(max_dims=3, max_side=3)


def draw_axis(draw, ndim, tuples=True):
    """None, an int (maybe negative) or a tuple of distinct axes."""
    if ndim == 0:
        return None
    forms = [st.none(), st.integers(-ndim, ndim - 1)]
    if tuples:
        forms.append(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim,
                              unique=True).map(tuple))
    return draw(st.one_of(*forms))


def torch_dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis


# Each case: (draw, rng) -> (inputs, engine_fn, torch_fn, which inputs `pre` may touch).
# `draw` is hypothesis's, for shapes and parameters; `rng` gives the values.

def binary(op, b_kind=normal):
    def case(draw, rng):
        sa, sb = draw(PAIRS).input_shapes
        return [normal(rng, sa), b_kind(rng, sb)], op, op, (0, 1)
    return case


def with_number(draw, rng):
    c = draw(st.sampled_from([2.0, -0.5, 3.0]))
    form = draw(st.integers(0, 5))
    fn = [lambda t: c + t, lambda t: c - t, lambda t: t - c, lambda t: t * c,
          lambda t: c / t, lambda t: t / c][form]
    return [nonzero(rng, draw(SHAPES))], fn, fn, (0,)


def with_array_constant(draw, rng):
    sx, sc = draw(PAIRS).input_shapes
    c = nonzero(rng, sc)

    def fn(t, lib):
        cc = torch.from_numpy(c) if lib == "torch" else c
        return (t + cc) * (cc - t) / (t * cc + 7.0) + cc / t
    return [nonzero(rng, sx)], lambda t: fn(t, "engine"), lambda t: fn(t, "torch"), (0,)


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)),
                 ((2, 2, 3), (3, 4)), ((2, 3), (2, 3, 4)), ((2, 2, 3), (2, 3, 2)),
                 ((1, 2, 3), (2, 3, 2)), ((2, 1, 2, 3), (3, 3, 2)), ((3,), (2, 3, 2)),
                 ((2, 2, 3), (3,)), ((1, 3), (3, 1))]


def matmul(draw, rng):
    sa, sb = draw(st.sampled_from(MATMUL_SHAPES))
    op = lambda a, b: a @ b  # noqa: E731
    return [normal(rng, sa), normal(rng, sb)], op, op, (0, 1)


def unary(method, kind=normal, shape=SHAPES):
    def case(draw, rng):
        fn = lambda t: getattr(t, method)()  # noqa: E731
        return [kind(rng, draw(shape))], fn, fn, (0,)
    return case


def power_number(draw, rng):
    p = draw(st.sampled_from([2, 3, 1, 0, -1, -2, 0.5, -1.5, 2.5]))
    kind = normal if float(p).is_integer() and p >= 0 else (
        nonzero if float(p).is_integer() else positive)
    fn = lambda t: t ** p  # noqa: E731
    return [kind(rng, draw(SHAPES))], fn, fn, (0,)


def power_tensor(draw, rng):
    sx, sp = draw(PAIRS).input_shapes
    op = lambda x, p: x ** p  # noqa: E731
    return [positive(rng, sx), normal(rng, sp)], op, op, (0, 1)


def number_to_tensor(draw, rng):
    c = draw(st.sampled_from([2.0, 0.5, 3.0]))
    fn = lambda t: c ** t  # noqa: E731
    return [normal(rng, draw(SHAPES))], fn, fn, (0,)


def reduction(name):
    def case(draw, rng):
        shape = draw(SHAPES_1 if name in ("max", "min") else SHAPES)
        axis, keep = draw_axis(draw, len(shape)), draw(st.booleans())

        def torch_fn(t):
            dims = torch_dims(axis, t.ndim)
            if name == "sum":
                return t.sum(dim=dims, keepdim=keep)
            if name == "mean":
                return t.mean(dim=dims, keepdim=keep)
            return getattr(torch, "amax" if name == "max" else "amin")(t, dim=dims, keepdim=keep)
        return ([normal(rng, shape)], lambda t: getattr(t, name)(axis=axis, keepdims=keep),
                torch_fn, (0,))
    return case


def reshape(draw, rng):
    shape = draw(SHAPES)
    size = int(np.prod(shape))
    target = draw(st.sampled_from([(size,), (-1,), (1, -1), (size, 1)] + ([()] if size == 1
                                                                         else [])))
    return [normal(rng, shape)], lambda t: t.reshape(target), lambda t: t.reshape(target), (0,)


def transpose(draw, rng):
    shape = draw(SHAPES)
    ndim, form = len(shape), draw(st.integers(0, 2))
    if form == 0 or ndim < 2:
        return ([normal(rng, shape)], lambda t: t.T,
                lambda t: t.permute(tuple(range(t.ndim))[::-1]), (0,))
    if form == 1:
        a, b = draw(st.lists(st.integers(-ndim, ndim - 1), min_size=2, max_size=2).filter(
            lambda ab: ab[0] % ndim != ab[1] % ndim))
        return ([normal(rng, shape)], lambda t: t.transpose(a, b),
                lambda t: t.transpose(a, b), (0,))
    perm = tuple(draw(st.permutations(range(ndim))))
    return [normal(rng, shape)], lambda t: t.transpose(perm), lambda t: t.permute(perm), (0,)


def indexing(draw, rng):
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
    n = shape[0]
    forms = [(1,), (slice(None, None, 2),), (slice(-2, None),),
             (np.array([0, 0, n - 1, 0]),), (np.array([n - 1, -1]),),
             (rng.random(shape[:1]) < 0.6,), (Ellipsis, np.array([0, 0]))]
    if len(shape) >= 2:
        forms += [(0, slice(None)), (slice(None), 0), (np.array([0, 0]), slice(None, 1)),
                  (rng.random(shape[:2]) < 0.5,)]
    if len(shape) >= 3:
        forms += [(0, slice(None), np.array([0, 0, shape[2] - 1])),  # ints first, as PyTorch
                  (0, ..., np.array([0, 0]))]
    index = draw(st.sampled_from(range(len(forms))))
    index = forms[index]
    index = tuple(i % n if isinstance(i, int) and k == 0 else i for k, i in enumerate(index))

    def torch_fn(t):
        return t[tuple(torch.from_numpy(i) if isinstance(i, np.ndarray) else i for i in index)]
    return [normal(rng, shape)], lambda t: t[index], torch_fn, (0,)


def clip(draw, rng):
    low, high = draw(st.sampled_from([(-0.5, 0.5), (None, 0.3), (-0.2, None), (0.0, 1.0)]))
    return ([normal(rng, draw(SHAPES))], lambda t: t.clip(low, high),
            lambda t: t.clamp(low, high), (0,))


def squeeze(draw, rng):
    shape = draw(SHAPES)
    axis = draw_axis(draw, len(shape))

    def torch_fn(t):
        return t.squeeze() if axis is None else t.squeeze(axis)
    return [normal(rng, shape)], lambda t: t.squeeze(axis), torch_fn, (0,)


def unsqueeze(draw, rng):
    shape = draw(SHAPES)
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    return ([normal(rng, shape)], lambda t: t.unsqueeze(axis), lambda t: t.unsqueeze(axis),
            (0,))


def spread(name):
    def case(draw, rng):
        shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=3))
        axis, keep = draw_axis(draw, len(shape)), draw(st.booleans())
        correction = draw(st.sampled_from([0, 1]))

        def torch_fn(t):
            return getattr(torch, name)(t, dim=torch_dims(axis, t.ndim), correction=correction,
                                        keepdim=keep)
        return ([normal(rng, shape)],
                lambda t: getattr(t, name)(axis=axis, correction=correction, keepdims=keep),
                torch_fn, (0,))
    return case


def extremum(name):
    def case(draw, rng):
        sa, sb = draw(PAIRS).input_shapes
        mine, theirs = getattr(engine, name), getattr(torch, name)

        def torch_fn(a, b):
            return theirs(*torch.broadcast_tensors(a, b))  # torch.maximum broadcasts too
        return [normal(rng, sa), normal(rng, sb)], mine, torch_fn, (0, 1)
    return case


def where(draw, rng):
    sa, sb, sc = draw(mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3,
                                                    max_side=3)).input_shapes
    condition = np.asarray(rng.random(sc) < 0.5)
    return ([normal(rng, sa), normal(rng, sb)], lambda a, b: engine.where(condition, a, b),
            lambda a, b: torch.where(torch.from_numpy(condition), a, b), (0, 1))


def joined(name):
    def case(draw, rng):
        shape = draw(SHAPES_1 if name == "concatenate" else SHAPES)
        count = draw(st.integers(1, 3))
        if name == "concatenate":
            axis = draw(st.integers(-len(shape), len(shape) - 1))
            lengths = [draw(st.integers(1, 3)) for _ in range(count)]
            shapes_ = [shape[:axis % len(shape)] + (n,) + shape[axis % len(shape) + 1:]
                       for n in lengths]
            return ([normal(rng, s) for s in shapes_], lambda *ts: engine.concatenate(ts, axis),
                    lambda *ts: torch.cat(ts, axis), tuple(range(count)))
        axis = draw(st.integers(-len(shape) - 1, len(shape)))
        return ([normal(rng, shape) for _ in range(count)], lambda *ts: engine.stack(ts, axis),
                lambda *ts: torch.stack(ts, axis), tuple(range(count)))
    return case


def softmax_family(name):
    def case(draw, rng):
        shape = draw(SHAPES_1)
        axis = draw(st.integers(-len(shape), len(shape) - 1))
        mine = getattr(F, name)
        theirs = {"logsumexp": torch.logsumexp, "log_softmax": torch.log_softmax,
                  "softmax": torch.softmax}[name]
        return ([2.0 * normal(rng, shape)], lambda t: mine(t, axis=axis),
                lambda t: theirs(t, axis), (0,))
    return case


def classification(draw, rng):
    n, c = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return 2.0 * normal(rng, (n, c)), rng.integers(0, c, size=n)


def cross_entropy(draw, rng):
    logits, targets = classification(draw, rng)
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    ignore_index = draw(st.sampled_from([None, -100, 0, 7]))  # 0: a class that exists
    if ignore_index is not None and draw(st.booleans()):  # some rows ignored
        targets = np.where(rng.random(len(targets)) < 0.5, ignore_index, targets)
    if reduction == "mean" and ignore_index is not None and (targets == ignore_index).all():
        reduction = "sum"  # a mean over no rows: see test_difference_mean_over_no_rows
    if draw(st.booleans()):  # an int array, as a training loop has: the fast path when the
        targets = np.asarray(targets, dtype=np.int64)  # mean counts every row
    else:
        targets = [int(t) for t in targets]  # a list: the general way
    targets_t = torch.tensor(targets)

    def torch_fn(t):
        return torch.nn.functional.cross_entropy(
            t, targets_t, reduction=reduction,
            ignore_index=-100 if ignore_index is None else ignore_index)
    return ([logits], lambda t: F.cross_entropy(t, targets, reduction, ignore_index),
            torch_fn, (0,))


def nll_loss(draw, rng):
    logits, targets = classification(draw, rng)
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    if draw(st.booleans()):  # some rows ignored, one kept (the mean of none: see below)
        targets[1:][rng.random(len(targets) - 1) < 0.4] = -100
    targets_t = torch.from_numpy(targets)

    def torch_fn(t):
        return torch.nn.functional.nll_loss(torch.log_softmax(t, 1), targets_t,
                                            reduction=reduction)
    return ([logits], lambda t: F.nll_loss(F.log_softmax(t, axis=1), targets, reduction),
            torch_fn, (0,))


def mse_loss(draw, rng):
    shape = draw(SHAPES)
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    if draw(st.booleans()):  # the target a constant
        target = normal(rng, shape)
        return ([normal(rng, shape)], lambda t: F.mse_loss(t, target, reduction),
                lambda t: torch.nn.functional.mse_loss(t, torch.from_numpy(target),
                                                       reduction=reduction), (0,))
    return ([normal(rng, shape), normal(rng, shape)],
            lambda a, b: F.mse_loss(a, b, reduction),
            lambda a, b: torch.nn.functional.mse_loss(a, b, reduction=reduction), (0, 1))


def _catalogue(case):
    return pytest.param(case, marks=pytest.mark.chapter("catalogue"))


CASES = {
    "+": binary(lambda a, b: a + b), "-": binary(lambda a, b: a - b),
    "*": binary(lambda a, b: a * b), "/": binary(lambda a, b: a / b, nonzero),
    "number on either side": with_number, "array constant": with_array_constant,
    "@": matmul, "neg": unary("__neg__"),
    "** number": power_number, "** tensor": power_tensor, "number ** tensor": number_to_tensor,
    "exp": unary("exp"), "log": unary("log", positive), "sin": unary("sin"),
    "cos": unary("cos"), "tanh": unary("tanh"), "sigmoid": unary("sigmoid"),
    "relu": unary("relu"), "sqrt": unary("sqrt", positive), "abs": unary("abs"),
    "sum": reduction("sum"), "mean": reduction("mean"), "max": reduction("max"),
    "min": _catalogue(reduction("min")), "reshape": reshape, "transpose": transpose,
    "index": indexing, "clip": _catalogue(clip), "squeeze": _catalogue(squeeze),
    "unsqueeze": _catalogue(unsqueeze), "var": _catalogue(spread("var")),
    "std": _catalogue(spread("std")), "maximum": _catalogue(extremum("maximum")),
    "minimum": _catalogue(extremum("minimum")), "where": _catalogue(where),
    "concatenate": _catalogue(joined("concatenate")), "stack": _catalogue(joined("stack")),
    "logsumexp": softmax_family("logsumexp"), "log_softmax": softmax_family("log_softmax"),
    "softmax": softmax_family("softmax"), "cross_entropy": cross_entropy,
    "nll_loss": nll_loss, "mse_loss": _catalogue(mse_loss),
}
CASE_PARAMS = [pytest.param(c.values[0], id=name, marks=c.marks)
               if isinstance(c, type(pytest.param(0))) else pytest.param(c, id=name)
               for name, c in CASES.items()]


@pytest.mark.parametrize("case", CASE_PARAMS)
@examples(15)
@given(data=st.data(), seed=st.integers(0, 2**31))
def test_second_derivatives_of_every_operation_match_pytorch(case, data, seed):
    rng = np.random.default_rng(seed)
    inputs, engine_fn, torch_fn, which = case(data.draw, rng)
    compare_second(engine_fn, torch_fn, inputs, rng, ", alone")
    compare_second(wrapped(engine_fn, which), wrapped(torch_fn, which), inputs, rng,
                   ", inside a smooth program")


# -- kinks and ties: PyTorch's conventions, to second order ----------------------------

ZEROS = np.array([[-1.5, 0.0, 2.0], [0.0, 0.5, -0.0]])
TIES = np.array([[2.0, 2.0, -1.0], [0.5, -3.0, 0.5]])


def on_both(name):
    """The same function for the engine and for PyTorch, by method name."""
    return lambda t: getattr(t, name)()


KINKS = {
    "relu at 0": ([ZEROS], on_both("relu"), on_both("relu")),
    "abs at 0": ([ZEROS], on_both("abs"), on_both("abs")),
    "max ties, every axis": ([TIES], lambda t: t.max(), lambda t: torch.amax(t)),
    "max ties, axis 1": ([TIES], lambda t: t.max(axis=1), lambda t: torch.amax(t, 1)),
    "max ties, axis 0 kept": ([np.array([[1.0, 2.0], [1.0, 0.0]])],
                              lambda t: t.max(axis=0, keepdims=True),
                              lambda t: torch.amax(t, 0, keepdim=True)),
    "min ties": ([-TIES], lambda t: t.min(axis=1), lambda t: torch.amin(t, 1)),
    "maximum at a tie": ([TIES, np.array([2.0, 1.0, -1.0])],
                         lambda a, b: engine.maximum(a, b), torch.maximum),
    "minimum at a tie": ([TIES, np.array([2.0, 1.0, -1.0])],
                         lambda a, b: engine.minimum(a, b), torch.minimum),
    "clip at its bounds": ([np.array([-1.0, -0.5, 0.0, 0.5, 1.0])],
                           lambda t: t.clip(-0.5, 0.5), lambda t: t.clamp(-0.5, 0.5)),
    "x ** 2 at 0": ([ZEROS], lambda t: t ** 2, lambda t: t ** 2),
    "x ** 3 at 0": ([ZEROS], lambda t: t ** 3, lambda t: t ** 3),
    "x ** 1 at 0": ([ZEROS], lambda t: t ** 1, lambda t: t ** 1),
    "x ** 0 at 0": ([ZEROS], lambda t: t ** 0, lambda t: t ** 0),
    "relu of a tie at 0 inside max": ([np.array([0.0, 0.0, -1.0])],
                                      lambda t: t.relu().max(), lambda t: torch.amax(t.relu())),
}
CATALOGUE_KINKS = {"min ties", "maximum at a tie", "minimum at a tie", "clip at its bounds"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.chapter("catalogue"))
                                  if n in CATALOGUE_KINKS else n for n in KINKS])
def test_second_derivatives_at_kinks_and_ties_follow_pytorch(name):
    inputs, engine_fn, torch_fn = KINKS[name]
    for seed in range(3):
        rng = np.random.default_rng(seed)
        compare_second(engine_fn, torch_fn, inputs, rng, ", alone")
        compare_second(lambda *ts: post(engine_fn(*ts)), lambda *ts: post(torch_fn(*ts)),
                       inputs, rng, ", then z sin z")


# -- deliberate differences: where PyTorch's double backward gives nan -----------------
# In each case PyTorch's first derivative is a finite convention (0), but its double
# backward computes through the 0 / 0 or 0 * log 0 that the convention avoided, and gives
# nan. The engine's second derivatives keep the convention (its masks are constants), so
# they are the derivatives of the first derivatives it returns: finite, pinned here.


def engine_second(f, inputs, u, vs):
    """engine_double_backward's results as arrays (zeros for None)."""
    y, gs, second = engine_double_backward(f, inputs, u, vs)
    shapes_ = [np.shape(a) for a in inputs] + [np.shape(u)]
    return ([np.zeros(np.shape(a)) if g is None else g.data for g, a in zip(gs, inputs)],
            [np.zeros(s) if h is None else h.data for h, s in zip(second, shapes_)])


def test_difference_x_to_a_tensor_power_at_0():
    x, p = np.zeros(3), np.array([0.0, 2.0, 3.0])
    f = lambda x, p: (x ** p).sum()  # noqa: E731
    # the Hessian of sum(x ** p) in (x, p), one HVP per unit vector: at x = 0 the slope
    # in p is 0 (the engine's convention, and PyTorch's first derivative), so every mixed
    # and p-p entry is 0; d2/dx2 x ** p is p (p - 1) x ** (p - 2): 0, 2 and 0 here
    hessian_rows = []
    for i in range(6):
        v = np.zeros(6)
        v[i] = 1.0
        _, (h_x, h_p, _) = engine_second(f, [x, p], np.array(1.0), [v[:3], v[3:]])
        hessian_rows.append(np.concatenate([h_x, h_p]))
    expected = np.zeros((6, 6))
    expected[1, 1] = 2.0
    np.testing.assert_array_equal(np.array(hessian_rows), expected)
    _, _, second_t = torch_double_backward(f, [x, p], np.array(1.0),
                                           [np.ones(3), np.ones(3)])
    assert np.isnan(second_t[0].detach().numpy()).any()  # PyTorch: 0 * log 0 in the mixed term


@pytest.mark.chapter("catalogue")
def test_difference_std_of_equal_entries():
    x = np.array([[1.5, 1.5, 1.5], [0.0, 1.0, 2.0]])
    rng = np.random.default_rng(0)
    u, v = rng.normal(size=2), rng.normal(size=x.shape)
    f = lambda t: t.std(axis=1)  # noqa: E731
    (g,), (h_x, j_v) = engine_second(f, [x], u, [v])
    _, gs_t, (h_x_t, j_v_t) = torch_double_backward(lambda t: t.std(dim=1), [x], u, [v])
    assert_close(g, gs_t[0], "first derivative")  # 0 on the row of equal entries, in both
    np.testing.assert_array_equal(g[0], 0.0)
    # the row of equal entries: the engine's second derivatives are 0, PyTorch's nan
    np.testing.assert_array_equal(h_x[0], 0.0)
    assert j_v[0] == 0.0 and np.isnan(j_v_t[0].item())
    assert_close(h_x[1], h_x_t[1], "H v on the other row")
    assert_close(j_v[1], j_v_t[1], "J v on the other row")


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_difference_mean_over_no_rows(loss):
    logits, targets = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]]), np.array([-100, -100])
    mine, theirs = getattr(F, loss), getattr(torch.nn.functional, loss)
    rng = np.random.default_rng(0)
    u, v = np.array(rng.normal()), rng.normal(size=logits.shape)
    y, (g,), (h, j_v) = engine_double_backward(lambda t: mine(t, targets), [logits], u, [v])
    y_t, (g_t,), (h_t, j_v_t) = torch_double_backward(
        lambda t: theirs(t, torch.from_numpy(targets)), [logits], u, [v])
    assert np.isnan(y.data) and np.isnan(y_t.item())  # a mean over no rows: nan, in both
    assert_close(g, g_t, "first derivative: 0 in both")
    assert h is None or not np.any(h.data)  # no second derivative in x, in both
    assert not torch.any(h_t) if h_t is not None else True
    assert j_v is None or float(j_v.data) == 0.0  # the engine: g = 0 u, so dg/du = 0
    assert np.isnan(j_v_t.item())  # PyTorch: the 0 / 0 of the mean


# -- random programs ------------------------------------------------------------------
# The generator of tests/support/programs.py, as tests/test_against_torch.py runs it (seeds
# 0 to 399) and tests/test_random_programs.py (from 10 000): here seeds from 20 000. Its
# programs apply relu, abs and max only to exact values, with ties and zeros, where the
# libraries' conventions agree to second order too (the masks are constants in both).

N_PROGRAMS = 400
FIRST_SEED = 20_000


def program_seeds(block, blocks=4):
    return range(FIRST_SEED + block * N_PROGRAMS // blocks,
                 FIRST_SEED + (block + 1) * N_PROGRAMS // blocks)


def test_the_programs_cover_every_operation_of_the_generator():
    seen = set().union(*(Program(seed).names() for block in range(4)
                         for seed in program_seeds(block)))
    assert seen == programs.every_name() | {"input"}


@pytest.mark.parametrize("block", range(4))
def test_random_programs_second_derivatives_match_pytorch(block):
    for seed in program_seeds(block):
        program = Program(seed)
        compare_second(lambda *ts: program.run(list(ts), programs.ENGINE),
                       lambda *ts: program.run(list(ts), programs.TORCH),
                       program.inputs, np.random.default_rng(seed),
                       f", program {seed}: {program.labels()}")



def _dot(gs, vs, lib):
    """sum_k <g_k, v_k> over the gradients that have a graph (None if none has)."""
    parts = [(g * (torch.from_numpy(v) if lib == "torch" else v)).sum()
             for g, v in zip(gs, vs) if g is not None and g.requires_grad]
    return sum(parts[1:], parts[0]) if parts else None


def test_random_programs_third_derivatives_match_pytorch():
    # three sweeps, each through the graph the one before made: the engine operations of
    # a create_graph sweep (_spread, _index_add, the VJPs of @ and **) differentiated again
    for seed in range(FIRST_SEED + N_PROGRAMS, FIRST_SEED + N_PROGRAMS + 60):
        program, rng = Program(seed), np.random.default_rng(seed)
        xs = [Tensor(a) for a in program.inputs]
        xs_t = [torch.tensor(a, requires_grad=True) for a in program.inputs]
        y, y_t = program.run(xs, programs.ENGINE), program.run(xs_t, programs.TORCH)
        u = rng.normal(size=y.shape)
        vs, ws = ([rng.normal(size=np.shape(a)) for a in program.inputs] for _ in range(2))
        g = engine.grad(y, xs, u, create_graph=True, allow_unused=True)
        g_t = torch.autograd.grad(y_t, xs_t, torch.from_numpy(u), create_graph=True,
                                  allow_unused=True)
        s, s_t = _dot(g, vs, "engine"), _dot(g_t, vs, "torch")
        if s is None and s_t is None:  # linear in every input: nothing more to compare
            continue
        none = (None,) * len(xs)  # a sum that has no graph: its derivatives are 0
        h = none if s is None else engine.grad(s, xs, create_graph=True, allow_unused=True)
        h_t = none if s_t is None else torch.autograd.grad(s_t, xs_t, create_graph=True,
                                                           allow_unused=True)
        s, s_t = _dot(h, ws, "engine"), _dot(h_t, ws, "torch")
        third = none if s is None else engine.grad(s, xs, allow_unused=True)
        third_t = none if s_t is None else torch.autograd.grad(s_t, xs_t, allow_unused=True)
        for k, (t3, t3_t) in enumerate(zip(third, third_t)):
            assert_close(t3, np.zeros(np.shape(program.inputs[k])) if t3_t is None else t3_t,
                         f"third derivative of input {k}, program {seed}: {program.labels()}")


# -- gradgradcheck --------------------------------------------------------------------


@pytest.mark.parametrize("case", CASE_PARAMS)
@examples(4)
@given(data=st.data(), seed=st.integers(0, 2**31))
def test_gradgradcheck_passes_on_every_operation(case, data, seed):
    rng = np.random.default_rng(seed)
    inputs, engine_fn, _, which = case(data.draw, rng)
    assert gradgradcheck(engine_fn, [Tensor(a) for a in inputs], seed=seed % 1000)
    assert gradgradcheck(wrapped(engine_fn, which), [Tensor(a) for a in inputs])


def square_with_rule(graph_rule):
    """x * x as one operation whose create_graph branch is `graph_rule(x, y_bar)`."""
    def square(x):
        def backward_fn(y_bar, out=None):
            if out is not None:
                return (graph_rule(x, y_bar),)
            return (2.0 * x.data * y_bar,)
        return x._result(x.data * x.data, (x,), "square", backward_fn)
    return square


RIGHT = square_with_rule(lambda x, y_bar: 2.0 * x * y_bar)
# the array rule's value, as a constant: right in y_bar, but x's own slope 2 is lost
CONSTANT_IN_X = square_with_rule(lambda x, y_bar: Tensor(2.0 * x.data, requires_grad=False)
                                 * y_bar)
WRONG_SLOPE = square_with_rule(lambda x, y_bar: 2.0 * x * x * y_bar)  # 2 x^2, not 2 x


def test_gradgradcheck_fails_on_a_wrong_second_derivative():
    x = Tensor(np.array([0.5, -1.25, 2.0]))
    assert engine.gradcheck(RIGHT, [x]) and gradgradcheck(RIGHT, [x])
    # the first derivative is right, so gradcheck passes; the second is not
    assert engine.gradcheck(CONSTANT_IN_X, [x])
    with pytest.raises(GradcheckError, match="second derivatives of input 0"):
        gradgradcheck(CONSTANT_IN_X, [x])
    # a graph rule whose first derivative is wrong (the array rule, which gradcheck checks,
    # is right): its own derivatives are consistent with it, so only comparing the
    # gradient it returns with central differences of f finds it
    with pytest.raises(GradcheckError, match="the gradient of input 0 from a create_graph"):
        gradgradcheck(lambda t: WRONG_SLOPE(t).sin(), [x])
    # and the engine's own second derivative agrees with PyTorch's where gradgradcheck does
    x_t = torch.tensor(x.data, requires_grad=True)
    (g_t,) = torch.autograd.grad((x_t * x_t).sum(), x_t, create_graph=True)
    (h_t,) = torch.autograd.grad(g_t.sum(), x_t)
    y = Tensor(x.data)
    (g,) = engine.grad(RIGHT(y).sum(), y, create_graph=True)
    (h,) = engine.grad(g.sum(), y)
    assert_close(h, h_t, "d2/dx2 sum x^2 = 2")


# -- a third derivative, by three nested calls -----------------------------------------


def test_third_derivative_of_x2_sin_x_by_three_nested_calls():
    a = 1.3
    x = Tensor(a)
    y = x * x * x.sin()
    (d1,) = engine.grad(y, x, create_graph=True)
    (d2,) = engine.grad(d1, x, create_graph=True)
    (d3,) = engine.grad(d2, x)
    s, c = math.sin(a), math.cos(a)
    exact = [2 * a * s + a * a * c,  # f' = 2x sin x + x^2 cos x
             2 * s + 4 * a * c - a * a * s,  # f'' = 2 sin x + 4x cos x - x^2 sin x
             6 * c - 6 * a * s - a * a * c]  # f''' = 6 cos x - 6x sin x - x^2 cos x
    for order, (d, e) in enumerate(zip([d1, d2, d3], exact), start=1):
        assert abs(float(d.data) - e) <= 1e-10 * max(1.0, abs(e)), (order, float(d.data), e)
    assert not d3.requires_grad  # the last call had no create_graph: a constant
    # x ** 2 spelled as a power gives the same numbers
    x = Tensor(a)
    (d1,) = engine.grad((x ** 2) * x.sin(), x, create_graph=True)
    (d2,) = engine.grad(d1, x, create_graph=True)
    (d3,) = engine.grad(d2, x)
    assert abs(float(d3.data) - exact[2]) <= 1e-10 * abs(exact[2])
    x_t = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    (t1,) = torch.autograd.grad(x_t ** 2 * x_t.sin(), x_t, create_graph=True)
    (t2,) = torch.autograd.grad(t1, x_t, create_graph=True)
    (t3,) = torch.autograd.grad(t2, x_t)
    assert_close(d3, t3, "f''' against PyTorch's", 1e-12)


def test_fourth_derivatives_of_every_smooth_unary_operation_match_pytorch():
    x0 = np.array([0.3, 0.7, 1.6])
    for name in ["exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt"]:
        x, x_t = Tensor(x0), torch.tensor(x0, requires_grad=True)
        g, g_t = getattr(x, name)(), getattr(x_t, name)()
        for order in range(1, 5):
            (g,) = engine.grad(g.sum(), x, create_graph=order < 4)
            (g_t,) = torch.autograd.grad(g_t.sum(), x_t, create_graph=order < 4)
            assert_close(g, g_t, f"derivative {order} of {name}")


# -- Jacobians, Hessians, HVP, JVP, VJP against torch.autograd.functional --------------


def scalar_function(lib):
    """A function of a (2, 3) tensor with one entry, for hessian and hvp."""
    lse = F.logsumexp if lib == "engine" else (lambda t, axis: torch.logsumexp(t, axis))

    def f(x):
        flat = x.reshape(-1)
        return ((flat ** 3).sum() * 0.1 + (flat[:-1] * flat[1:]).sin().sum()
                + lse(x, axis=1).sum() + (x @ x.T).tanh().mean())
    return f


def vector_function(lib):
    """A function from (2, 3) to (2, 2), for jacobian, jvp and vjp."""
    def f(x):
        return (x @ x.T).sin() + x[:, :2].exp() * x[:, 1:].sum()
    return f


X0 = np.array([[0.5, -1.2, 0.3], [1.1, 0.4, -0.7]])


def test_hessian_matches_pytorch():
    h = hessian(scalar_function("engine"), X0)
    h_t = torch.autograd.functional.hessian(scalar_function("torch"), torch.tensor(X0))
    assert h.shape == (2, 3, 2, 3) and not h.requires_grad
    assert_close(h, h_t, "hessian")
    np.testing.assert_allclose(h.data.reshape(6, 6), h.data.reshape(6, 6).T, atol=1e-13)


@pytest.mark.parametrize("by", ["rows", "columns"])
def test_jacobian_by_rows_and_by_columns_matches_pytorch(by):
    j = jacobian(vector_function("engine"), X0, by=by)
    j_t = torch.autograd.functional.jacobian(vector_function("torch"), torch.tensor(X0))
    assert j.shape == (2, 2, 2, 3)
    assert_close(j, j_t, f"jacobian by {by}", FIRST_RTOL)


def test_jacobian_of_a_0d_output_and_of_a_0d_input():
    for f, x in [(lambda t: (t * t).sum(), X0), (lambda t: t * t.sin(), np.array(0.7)),
                 (lambda t: (t * t.sin()).reshape(1, 1), np.array(0.7))]:
        j_t = torch.autograd.functional.jacobian(f, torch.tensor(x))
        for by in ["rows", "columns"]:
            assert_close(jacobian(f, x, by=by), j_t, f"jacobian by {by}", FIRST_RTOL)


def test_hvp_jvp_vjp_match_pytorch():
    rng = np.random.default_rng(1)
    v, u = rng.normal(size=X0.shape), rng.normal(size=(2, 2))
    fs, ft = scalar_function("engine"), scalar_function("torch")
    y, h_v = hvp(fs, X0, v)
    y_t, h_v_t = torch.autograd.functional.hvp(ft, torch.tensor(X0), torch.tensor(v))
    assert_close(y, y_t, "hvp's value", FIRST_RTOL)
    assert_close(h_v, h_v_t, "hvp")
    assert not y.requires_grad and not h_v.requires_grad
    fs, ft = vector_function("engine"), vector_function("torch")
    y, j_v = jvp(fs, X0, v)
    y_t, j_v_t = torch.autograd.functional.jvp(ft, torch.tensor(X0), torch.tensor(v))
    assert_close(y, y_t, "jvp's value", FIRST_RTOL)
    assert_close(j_v, j_v_t, "jvp")
    y, j_u = vjp(fs, X0, u)
    y_t, j_u_t = torch.autograd.functional.vjp(ft, torch.tensor(X0), torch.tensor(u))
    assert_close(j_u, j_u_t, "vjp", FIRST_RTOL)
    # a Tensor given as x is not touched: the functions work on a copy
    x = Tensor(X0)
    x_grad = x.grad
    hvp(scalar_function("engine"), x, v)
    assert x.grad is x_grad and np.array_equal(x.data, X0)


def test_functional_helpers_say_what_is_wrong_with_a_vector():
    with pytest.raises(ValueError, match=r"v of shape \(3,\) does not fit shape \(2, 3\)"):
        hvp(scalar_function("engine"), X0, np.ones(3))
    with pytest.raises(ValueError, match=r"u of shape \(2,\)"):
        vjp(vector_function("engine"), X0, np.ones(2))
    with pytest.raises(ValueError, match="by must be 'rows' or 'columns'"):
        jacobian(vector_function("engine"), X0, by="diagonal")


# -- backward(create_graph=True) and grad: PyTorch's semantics --------------------------


def both(values):
    return Tensor(values), torch.tensor(values, dtype=torch.float64, requires_grad=True)


def torch_backward_with_graph(y_t):
    """y_t.backward(create_graph=True), without PyTorch's warning about the reference cycle
    between a parameter and its grad (the engine's grads have none to warn about)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        y_t.backward(create_graph=True)


def test_backward_with_create_graph_accumulates_leaf_grads_as_pytorch():
    x, x_t = both([1.0, -2.0, 0.5])
    (x ** 3).sum().backward(create_graph=True)
    torch_backward_with_graph((x_t ** 3).sum())
    assert isinstance(x.grad, Tensor) and x.grad.requires_grad and x_t.grad.requires_grad
    assert_close(x.grad, x_t.grad, "3 x^2")
    first = x.grad
    (x.sin() * x).sum().backward(create_graph=True)  # a second backward adds, out of place
    torch_backward_with_graph((x_t.sin() * x_t).sum())
    assert_close(x.grad, x_t.grad, "3 x^2 + sin x + x cos x")
    assert_close(first, 3 * x.data ** 2, "the first grad tensor is not written into")
    # the accumulated grad has a graph through both terms
    (h,) = engine.grad(x.grad.sum(), x)
    (h_t,) = torch.autograd.grad(x_t.grad.sum(), x_t)
    assert_close(h, h_t, "6 x + 2 cos x - x sin x")


def test_a_backward_through_x_grad_adds_into_x_grad_as_pytorch():
    x, x_t = both([1.0, 2.0])
    (x ** 3).sum().backward(create_graph=True)
    torch_backward_with_graph((x_t ** 3).sum())
    x.grad.sum().backward()  # d/dx sum 3 x^2 = 6 x, added into x.grad = 3 x^2
    x_t.grad.sum().backward()
    assert_close(x.grad, x_t.grad, "3 x^2 + 6 x")
    np.testing.assert_array_equal(np.asarray(getattr(x.grad, "data", x.grad)), [9.0, 24.0])


@pytest.mark.chapter("memory")  # the chapter that frees a graph after its sweep
def test_retain_graph_defaults_to_create_graph():
    x, x_t = both([0.5, 1.5])
    y, y_t = (x.exp() * x).sum(), (x_t.exp() * x_t).sum()
    engine.grad(y, x, create_graph=True)  # retains: the graph can be swept again
    torch.autograd.grad(y_t, x_t, create_graph=True)
    (g,), (g_t,) = engine.grad(y, x), torch.autograd.grad(y_t, x_t)  # frees it
    assert_close(g, g_t, "a second sweep of a retained graph")
    with pytest.raises(RuntimeError):
        torch.autograd.grad(y_t, x_t)
    with pytest.raises(RuntimeError, match="freed|second time|released"):
        engine.grad(y, x)
    # retain_graph=False beats create_graph's default, in both
    y, y_t = (x.exp() * x).sum(), (x_t.exp() * x_t).sum()
    engine.grad(y, x, create_graph=True, retain_graph=False)
    torch.autograd.grad(y_t, x_t, create_graph=True, retain_graph=False)
    with pytest.raises(RuntimeError):
        torch.autograd.grad(y_t, x_t)
    with pytest.raises(RuntimeError):
        engine.grad(y, x)
    # and backward's create_graph retains too
    y = (x.exp() * x).sum()
    y.backward(create_graph=True)
    y.backward()
    (g,) = torch.autograd.grad((x_t.exp() * x_t).sum(), x_t)
    assert_close(x.grad, 2 * g, "two backward sweeps of one graph add")


def test_grad_leaves_every_grad_untouched():
    x, x_t = both([0.5, 1.5])
    w = Tensor([2.0, -1.0])
    w.grad = np.array([7.0, 7.0])
    x_grad = x.grad  # None since chapter `fast`, zeros before
    y = (x * w).tanh().sum()
    y_grad = y.grad
    gx, gw = engine.grad(y, [x, w], create_graph=True)
    assert x.grad is x_grad and np.array_equal(w.grad, [7.0, 7.0])
    engine.grad(gx.sum(), [x, w])
    assert x.grad is x_grad and np.array_equal(w.grad, [7.0, 7.0])
    assert y.grad is y_grad  # nor the grads of the results in between


def test_allow_unused_gives_none_as_pytorch():
    (x, x_t), (z, z_t) = both([1.0, 2.0]), both([3.0])
    y, y_t = (x * x).sum(), (x_t * x_t).sum()
    gx, gz = engine.grad(y, [x, z], allow_unused=True, retain_graph=True)
    gx_t, gz_t = torch.autograd.grad(y_t, [x_t, z_t], allow_unused=True, retain_graph=True)
    assert gz is None and gz_t is None
    assert_close(gx, gx_t, "2 x")
    # a second derivative that does not depend on x: None, in both (2 x -> 2, constant)
    (g,) = engine.grad(y, x, create_graph=True)
    (g_t,) = torch.autograd.grad(y_t, x_t, create_graph=True)
    (h,) = engine.grad(g.sum(), x, retain_graph=True)
    (h_t,) = torch.autograd.grad(g_t.sum(), x_t)
    assert_close(h, h_t, "2")
    (h, hz) = engine.grad(g.sum(), [x, z], allow_unused=True)
    assert hz is None
    with pytest.raises(RuntimeError, match="input 1 is not used.*allow_unused=True"):
        engine.grad((x * x).sum(), [x, z])
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        torch.autograd.grad((x_t * x_t).sum(), [x_t, z_t])


def test_grad_with_respect_to_an_intermediate_and_to_one_input_twice():
    x, x_t = both([0.3, -0.8])
    h, h_t = x.sin(), x_t.sin()
    y, y_t = (h * h * x).sum(), (h_t * h_t * x_t).sum()
    mine = engine.grad(y, [h, x, x], create_graph=True)
    theirs = torch.autograd.grad(y_t, [h_t, x_t, x_t], create_graph=True)
    for k, (g, g_t) in enumerate(zip(mine, theirs)):
        assert_close(g, g_t, f"gradient {k}")
    (s,), (s_t,) = engine.grad(mine[0].sum(), x), torch.autograd.grad(theirs[0].sum(), x_t)
    assert_close(s, s_t, "the intermediate's gradient, differentiated")


def test_grad_outputs_as_tensors_that_need_a_gradient_get_one():
    x, x_t = both([0.3, -0.8, 1.1])
    u, u_t = both([1.0, 2.0, -1.0])
    (g,) = engine.grad(x.tanh(), x, u, create_graph=True)
    (g_t,) = torch.autograd.grad(x_t.tanh(), x_t, u_t, create_graph=True)
    gu, gx = engine.grad((g * g).sum(), [u, x])
    gu_t, gx_t = torch.autograd.grad((g_t * g_t).sum(), [u_t, x_t])
    assert_close(gu, gu_t, "through the seed")
    assert_close(gx, gx_t, "through x")
    # several outputs, one seed each (None: ones, for a scalar), and an output also an input
    a, a_t = x.exp().sum(), x_t.exp().sum()
    b, b_t = x * 2.0, x_t * 2.0
    mine = engine.grad([a, b, x], x, [None, np.array([1.0, 0.0, 2.0]), np.ones(3)])
    (theirs,) = torch.autograd.grad([a_t, b_t, x_t], x_t,
                                    [None, torch.tensor([1.0, 0.0, 2.0], dtype=torch.float64),
                                     torch.ones(3, dtype=torch.float64)])
    assert_close(mine[0], theirs, "outputs summed")


# errors: bad input gives a clear error, never a silent wrong number

def test_an_input_that_does_not_require_grad_is_an_error():
    x = Tensor([1.0, 2.0], requires_grad=False)
    w = Tensor([1.0, 1.0])
    with pytest.raises(RuntimeError, match="input 0 does not require a gradient"):
        engine.grad((x * w).sum(), x)
    with pytest.raises(RuntimeError, match="does not require grad"):
        x_t = torch.tensor([1.0, 2.0])
        torch.autograd.grad((x_t * torch.ones(2, requires_grad=True)).sum(), x_t)


def test_an_output_that_does_not_require_grad_is_an_error():
    x = Tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="output 0 does not require a gradient"):
        engine.grad(Tensor(3.0, requires_grad=False), x)
    with pytest.raises(RuntimeError, match="output 1 does not require a gradient"):
        engine.grad([x.sum(), Tensor(3.0, requires_grad=False)], x)
    # the gradient of a gradient that is a constant: an error, as in PyTorch
    (g,) = engine.grad((x * 2.0).sum(), x, create_graph=True)
    assert not g.requires_grad
    with pytest.raises(RuntimeError, match="output 0 does not require a gradient"):
        engine.grad(g.sum(), x)
    x_t = torch.tensor([1.0, 2.0], requires_grad=True)
    (g_t,) = torch.autograd.grad((x_t * 2.0).sum(), x_t, create_graph=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.autograd.grad(g_t.sum(), x_t)


def test_grad_outputs_of_the_wrong_shape_or_count_are_errors():
    x = Tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=r"grad_outputs of shape \(3,\) for an output of "
                                         r"shape \(2,\)"):
        engine.grad(x * x, x, np.ones(3))
    with pytest.raises(ValueError, match=r"shape \(2, 1\)"):
        engine.grad(x * x, x, Tensor(np.ones((2, 1))), create_graph=True)
    with pytest.raises(ValueError, match="2 grad_outputs for 1 outputs"):
        engine.grad(x * x, x, [np.ones(2), np.ones(2)])
    with pytest.raises(ValueError, match="1 grad_outputs for 2 outputs"):
        engine.grad([x * x, x.sum()], x, [np.ones(2)])
    with pytest.raises(TypeError, match="inputs must be a Tensor"):
        engine.grad((x * x).sum(), x.data)
    with pytest.raises(TypeError, match="outputs must be a Tensor"):
        engine.grad(np.ones(2), x)
    # PyTorch refuses them too
    x_t = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        torch.autograd.grad(x_t * x_t, x_t, torch.ones(3, dtype=torch.float64))


def test_difference_grad_seeds_a_non_scalar_output_with_ones():
    # PyTorch refuses grad_outputs=None for an output with more than one entry; the engine
    # seeds it with ones, as its backward() does (chapter `tensors`), and says so
    x, x_t = both([1.0, 2.0])
    (g,) = engine.grad(x * x, x)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        torch.autograd.grad(x_t * x_t, x_t)
    (g_t,) = torch.autograd.grad(x_t * x_t, x_t, torch.ones(2, dtype=torch.float64))
    assert_close(g, g_t, "seeded with ones")


@pytest.mark.chapter("memory")
def test_no_grad_around_a_create_graph_call_records_as_pytorch():
    # PyTorch's create_graph=True records the sweep's operations inside no_grad() too (its
    # engine runs the sweep with grad mode set to create_graph): the gradient has a graph
    x, x_t = both([1.0, 2.0])
    y, y_t = (x ** 3).sum(), (x_t ** 3).sum()
    with engine.no_grad():
        (g,) = engine.grad(y, x, create_graph=True)
    with torch.no_grad():
        (g_t,) = torch.autograd.grad(y_t, x_t, create_graph=True)
    assert g_t.requires_grad
    assert g.requires_grad
    (h,), (h_t,) = engine.grad(g.sum(), x), torch.autograd.grad(g_t.sum(), x_t)
    assert_close(h, h_t, "6 x")
    assert engine.memory.is_grad_enabled()  # and no_grad's state is as it was, outside
    y = (x ** 3).sum()
    with engine.no_grad():
        engine.grad(y, x, create_graph=True)
        assert not engine.memory.is_grad_enabled()
        (g,) = engine.grad(y, x)  # without create_graph: no graph, in both
    assert not g.requires_grad


@pytest.mark.chapter("fast")
def test_cross_entropy_fast_path_has_second_derivatives_as_pytorch():
    rng = np.random.default_rng(3)
    logits, targets = rng.normal(size=(4, 3)), np.array([0, 2, 2, 1])
    assert F._every_row_counts(Tensor(logits), targets, -100)  # the fast path is taken
    targets_t = torch.from_numpy(targets)
    for wrap in [lambda f: f, lambda f: wrapped(f, (0,))]:
        compare_second(wrap(lambda t: F.cross_entropy(t, targets)),
                       wrap(lambda t: torch.nn.functional.cross_entropy(t, targets_t)),
                       [logits], rng)


# -- found while writing these tests ----------------------------------------------------


def test_an_int_an_ellipsis_and_an_array_index_a_2d_tensor():
    """Ints first (as PyTorch) with an Ellipsis kept whole: it read as one slice, so
    x[0, ..., [0, 0]] of a (2, 3) tensor indexed 3 axes and raised IndexError."""
    x = np.arange(6.0).reshape(2, 3)
    y = Tensor(x)[0, ..., np.array([0, 0])]
    np.testing.assert_array_equal(y.data, x[0, ..., [0, 0]])
