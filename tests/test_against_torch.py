"""Differential tests: the engine against PyTorch (float64, CPU).

The engine follows PyTorch wherever a reader would carry a habit over, so every
Tensor operation, the functional losses, `nn.Linear` and the optimizers are run
side by side on PyTorch and compared: values, and the gradients of every input
after a backward sweep seeded with a random `gradient=` of the output's shape.

Inputs are drawn by hypothesis (shapes with broadcasting, 0-d and 1-d cases;
values with ties and zeros, where the subgradients of relu, abs and max matter)
under one fixed, derandomized profile, so CI sees the same examples on every run;
the composite programs use explicit seeds.

Tolerance: rtol 1e-10, and an absolute floor of 1e-12 times the largest entry of
PyTorch's array (or 1). The two libraries sum in different orders (pairwise
summation in NumPy, blocked kernels in PyTorch) and use different but equivalent
formulas for some slopes (sigmoid's y (1 - y)); an entry that cancels to about 0
then differs by a few units in the last place of the largest entry, which no
relative tolerance can absorb. nan and inf must match in place and sign.

Where the engine deliberately differs from PyTorch (the book says so), the test
pins the engine's documented behaviour instead: see "Deliberate differences".
A mismatch found that is not deliberate gets a test marked `xfail(strict=True)`, with
the smallest program in the reason, until the engine is fixed; there is none today.
The ones found earlier are fixed, and pinned in "Former mismatches" so they stay so.
"""

import math
import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra.numpy import array_shapes, arrays, mutually_broadcastable_shapes

# PyTorch is the reference, required: without it this file fails to import (an error in
# the run), never a skip; tests/requirements.txt installs it
import torch
from engine import Tensor, functional as F, nn, no_grad, optim
from support.strategies import FEW, MANY, SOME, nonzero, pairs, positive, shapes, values
from support.strategies import classification, logits_and_axis
from support import programs
from support.programs import Program
from support.oracles import assert_same

# On valid inputs the engine warns about nothing: any warning fails the test, except
# where a test expects one (pytest.warns) or silences it on purpose (compare(quiet=True)).
pytestmark = pytest.mark.filterwarnings("error")



# -- helpers ------------------------------------------------------------------------------


def seed_like(shape, gseed):
    """A random `gradient=` seed of the output's shape (0-d included)."""
    return np.random.default_rng(gseed).normal(size=shape)


def compare(engine_fn, torch_fn, inputs, gseed=0, quiet=False):
    """Run both on the same inputs; compare the outputs, then every input's gradient.

    `quiet`: the engine warns where a value or slope is not finite and PyTorch does
    not (pinned in test_difference_engine_warns_where_pytorch_is_silent); silence it here.
    """
    leaves = [Tensor(a) for a in inputs]
    torch_leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore", RuntimeWarning)
        y = engine_fn(*leaves)
        y_t = torch_fn(*torch_leaves)
        assert isinstance(y, Tensor)
        assert_same(y.data, y_t, "value")
        seed = seed_like(y.shape, gseed)
        y.backward(gradient=seed)
    y_t.backward(gradient=torch.tensor(seed))
    assert_same_grads(leaves, torch_leaves)
    return leaves, torch_leaves


def assert_same_grads(leaves, torch_leaves, what=""):
    """Every input's gradient against PyTorch's (None there: zeros, as the engine keeps)."""
    for k, (leaf, leaf_t) in enumerate(zip(leaves, torch_leaves)):
        expected = leaf_t.grad if leaf_t.grad is not None else np.zeros(leaf.shape)
        assert_same(leaf.grad, expected, f"grad of input {k}{what}")


# the profile (derandomized), the values (ties, exact zeros) and the shapes (size-1 axes,
# and empty arrays: an operation on no entries gives no entries, in both) are the shared
# ones of tests/support/strategies.py
SHAPES = shapes(empty=True)
PAIRS = pairs(empty=True)
GSEED = st.integers(0, 2**31)


# -- binary operations, numbers on either side, ** -------------------------------------

BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


@pytest.mark.parametrize("op", sorted(BINARY))
@SOME
@given(shapes=PAIRS, data=st.data(), gseed=GSEED)
def test_binary_operations_broadcast_like_pytorch(op, shapes, data, gseed):
    shape_a, shape_b = shapes.input_shapes
    a = data.draw(values(shape_a), label="a")
    b = data.draw(nonzero(shape_b) if op == "/" else values(shape_b), label="b")
    compare(BINARY[op], BINARY[op], [a, b], gseed)


@SOME
@given(shapes=PAIRS, data=st.data(), gseed=GSEED)
def test_tensor_exponent_broadcasts_like_pytorch(shapes, data, gseed):
    shape_x, shape_p = shapes.input_shapes
    x = data.draw(positive(shape_x), label="x")
    p = data.draw(values(shape_p, -2.0, 2.0), label="p")  # 0 included: slope 0 there
    compare(operator.pow, operator.pow, [x, p], gseed)


@SOME
@given(shapes=PAIRS, data=st.data(), gseed=GSEED, op=st.sampled_from(sorted(BINARY)))
def test_a_tensor_with_an_array_constant_on_either_side(shapes, data, gseed, op):
    shape_x, shape_c = shapes.input_shapes
    x = data.draw(nonzero(shape_x) if op == "/" else values(shape_x), label="x")
    c = data.draw(nonzero(shape_c), label="constant")
    f = BINARY[op]
    compare(lambda t: f(t, c) + f(c, t), lambda t: f(t, torch.tensor(c)) + f(torch.tensor(c), t),
            [x], gseed)


NUMBERS = (0, 1, 2, -1, 0.5, -3.25, 2.5)


@SOME
@given(shape=SHAPES, data=st.data(), gseed=GSEED, number=st.sampled_from(NUMBERS))
def test_numbers_on_either_side_and_unary_minus(shape, data, gseed, number):
    x = data.draw(nonzero(shape), label="x")

    def program(t):
        parts = [t + number, number + t, t - number, number - t, t * number, number * t,
                 -t, number / t]
        if number != 0:
            parts.append(t / number)
        total = parts[0]
        for k, part in enumerate(parts[1:]):
            total = total + (k + 2) * part
        return total

    compare(program, program, [x], gseed)


@FEW
@given(shape=SHAPES, data=st.data(), gseed=GSEED)
def test_numpy_scalars_and_0d_arrays_on_either_side(shape, data, gseed):
    x = data.draw(nonzero(shape), label="x")

    def program(t, two, three):
        return (two * t + three - t * three + two / t - three / two * t + t ** two
                + two ** t + (three - t) * (t / three))

    compare(lambda t: program(t, np.float64(2.0), np.int64(3)) + program(t, np.array(2.0),
                                                                         np.array(3.0)),
            lambda t: 2 * program(t, 2.0, 3), [x], gseed)


@SOME
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), data=st.data(),
       gseed=GSEED)
def test_one_tensor_on_both_sides_of_an_operation(shape, data, gseed):
    x = data.draw(nonzero(shape), label="x")

    def program(t):
        m = t.reshape(-1, shape[-1])
        return ((t + t) * (t - t * t) / (t * t) + t.abs() ** t).sum() + (m @ m.T).sum(
            ) * (m.T @ m).mean()

    compare(program, program, [x], gseed)


def test_backward_of_a_leaf_itself():
    x, x_t = Tensor([1.0, -2.0]), torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    x.backward(gradient=np.array([0.5, 3.0]))
    x_t.backward(gradient=torch.tensor([0.5, 3.0], dtype=torch.float64))
    assert_same(x.grad, x_t.grad, "a leaf seeded directly")


@pytest.mark.parametrize("p", [0, 1, 2, 3, -1, -2, 0.5, -0.5, 1.5, 2.5])
@FEW
@given(shape=SHAPES, data=st.data(), gseed=GSEED)
def test_power_with_a_number_exponent(p, shape, data, gseed):
    # whole exponents take any base, 0 included when p >= 0; others a positive base
    if float(p).is_integer() and p >= 0:
        x = data.draw(values(shape), label="x")
    elif float(p).is_integer():
        x = data.draw(nonzero(shape), label="x")
    else:
        x = data.draw(positive(shape), label="x")
    compare(lambda t: t ** p, lambda t: t ** p, [x], gseed)


@pytest.mark.parametrize("base", [2, 0.5, math.e, 10.0])
@FEW
@given(shape=SHAPES, data=st.data(), gseed=GSEED)
def test_a_number_to_a_tensor_power(base, shape, data, gseed):
    x = data.draw(values(shape), label="x")
    compare(lambda t: base ** t, lambda t: base ** t, [x], gseed)


@pytest.mark.parametrize("p", [0, 1, 2, 3, 0.5, 1.5, -1, -2])
def test_power_of_zero_has_pytorchs_slope(p):
    # x ** 0 has slope 0 at 0; 0 ** 0.5 has an infinite slope; 0 ** -1 is inf
    x = np.array([0.0, -0.0, 1.5]) if p != 0.5 else np.array([0.0, 1.5])
    compare(lambda t: t ** p, lambda t: t ** p, [x], quiet=True)


def test_tensor_exponent_at_a_zero_base_with_a_nonnegative_exponent():
    x = np.array([0.0, 0.0, 0.0, 2.0])
    p = np.array([0.0, 2.0, 0.5, 0.0])
    compare(operator.pow, operator.pow, [x, p], quiet=True)


# -- unary operations ------------------------------------------------------------------

UNARY = {
    "neg": (operator.neg, torch.neg, values),
    "exp": (Tensor.exp, torch.exp, values),
    "log": (Tensor.log, torch.log, positive),
    "sin": (Tensor.sin, torch.sin, values),
    "tanh": (Tensor.tanh, torch.tanh, values),
    "sigmoid": (Tensor.sigmoid, torch.sigmoid, values),
    "relu": (Tensor.relu, torch.relu, values),  # 0 drawn often: slope 0 there
    "sqrt": (Tensor.sqrt, torch.sqrt, positive),
    "abs": (Tensor.abs, torch.abs, values),  # slope 0 at 0, sign elsewhere
}


@pytest.mark.parametrize("name", sorted(UNARY))
@SOME
@given(shape=SHAPES, data=st.data(), gseed=GSEED)
def test_unary_operations(name, shape, data, gseed):
    mine, theirs, domain = UNARY[name]
    x = data.draw(domain(shape), label="x")
    compare(mine, theirs, [x], gseed)


@pytest.mark.parametrize("name", ["relu", "abs"])
def test_relu_and_abs_have_slope_zero_at_zero(name):
    mine, theirs, _ = UNARY[name]
    x = np.array([-1.0, 0.0, -0.0, 2.0])
    compare(mine, theirs, [x], gseed=1)
    x_leaf = Tensor(x)
    mine(x_leaf).backward()
    assert x_leaf.grad[1] == 0.0 and x_leaf.grad[2] == 0.0


def test_slopes_at_the_edge_of_the_domain():
    # sqrt at 0 has slope inf, log at 0 is -inf with slope inf; sigmoid, tanh, exp far out
    compare(Tensor.sqrt, torch.sqrt, [np.array([0.0, 4.0])], quiet=True)
    compare(Tensor.log, torch.log, [np.array([0.0, 4.0])], quiet=True)
    far = np.array([-800.0, -40.0, 0.0, 40.0, 800.0])
    for mine, theirs in [(Tensor.sigmoid, torch.sigmoid), (Tensor.tanh, torch.tanh)]:
        compare(mine, theirs, [far], quiet=True)
    compare(Tensor.exp, torch.exp, [np.array([-800.0, 700.0])])


# -- reductions ------------------------------------------------------------------------


@st.composite
def axis_and_shape(draw, min_dims=0):
    """A shape and an axis for it: None, an int (negatives too) or a tuple of distinct axes."""
    shape = draw(array_shapes(min_dims=min_dims, max_dims=4, min_side=1, max_side=3))
    ndim = len(shape)
    if ndim == 0:
        return shape, None
    form = draw(st.sampled_from(["none", "int", "tuple"]))
    if form == "none":
        return shape, None
    def spell(a):  # an axis, written from the front or from the back
        return a - ndim if draw(st.booleans()) else a
    if form == "int":
        return shape, spell(draw(st.integers(0, ndim - 1)))
    chosen = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return shape, tuple(spell(a) for a in chosen)


def torch_dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis


REDUCTIONS = {
    "sum": lambda t, axis, keep: t.sum(dim=torch_dims(axis, t.ndim), keepdim=keep),
    "mean": lambda t, axis, keep: t.mean(dim=torch_dims(axis, t.ndim), keepdim=keep),
    # the engine's max is PyTorch's amax: values only, ties share the gradient evenly
    "max": lambda t, axis, keep: torch.amax(t, dim=torch_dims(axis, t.ndim), keepdim=keep),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@MANY
@given(shape_axis=axis_and_shape(), keepdims=st.booleans(), data=st.data(), gseed=GSEED)
def test_reductions_over_every_kind_of_axis(name, shape_axis, keepdims, data, gseed):
    shape, axis = shape_axis
    # few distinct values: max meets ties in most examples
    x = data.draw(values(shape, ties=(-1.0, 0.0, 2.0)), label="x")
    compare(lambda t: getattr(t, name)(axis=axis, keepdims=keepdims),
            lambda t: REDUCTIONS[name](t, axis, keepdims), [x], gseed)


def test_max_ties_split_evenly_like_amax():
    x = np.array([[1.0, 3.0, 3.0], [3.0, 0.0, -1.0]])
    for axis in [None, 0, 1, -1, (0, 1), (-1, 0)]:
        for keepdims in [False, True]:
            compare(lambda t: t.max(axis=axis, keepdims=keepdims),
                    lambda t: REDUCTIONS["max"](t, axis, keepdims), [x], gseed=3)
    t = Tensor(x)
    t.max().backward()
    assert_same(t.grad, [[0, 1 / 3, 1 / 3], [1 / 3, 0, 0]], "three-way tie")


# -- reshape, transpose, .T --------------------------------------------------------------


@st.composite
def reshape_target(draw, size):
    """A shape with `size` entries (0 included), from 0 to 4 axes, maybe one written -1."""
    factors, n, f = [], size, 2
    while n > 1:  # prime factors
        while n % f == 0:
            factors.append(f)
            n //= f
        f += 1
    ndim = draw(st.integers(0 if size == 1 else 1, 4))
    if ndim == 0:
        return ()
    lengths = [1] * ndim
    for factor in factors:
        lengths[draw(st.integers(0, ndim - 1))] *= factor
    empty_axis = draw(st.integers(0, ndim - 1))
    if size == 0:  # no entries: one axis of length 0 (only that one may be written -1)
        lengths[empty_axis] = 0
    if draw(st.booleans()):
        lengths[empty_axis if size == 0 else draw(st.integers(0, ndim - 1))] = -1
    return tuple(lengths)


@MANY
@given(shape=SHAPES, data=st.data(), gseed=GSEED, spread=st.booleans())
def test_reshape_including_minus_one(shape, data, gseed, spread):
    x = data.draw(values(shape), label="x")
    target = data.draw(reshape_target(int(np.prod(shape))), label="target")
    mine = (lambda t: t.reshape(*target)) if spread else (lambda t: t.reshape(target))
    compare(mine, lambda t: t.reshape(target), [x], gseed)


@st.composite
def permutation_of(draw, ndim):
    perm = draw(st.permutations(range(ndim)))
    return tuple(a - ndim if draw(st.booleans()) else a for a in perm)


@MANY
@given(shape=array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4), data=st.data(),
       gseed=GSEED, form=st.sampled_from(["spread", "tuple", "none", "T"]))
def test_transpose_with_negative_axes_and_T(shape, data, gseed, form):
    x = data.draw(values(shape), label="x")
    ndim = len(shape)
    perm = data.draw(permutation_of(ndim), label="perm")
    reverse = tuple(range(ndim))[::-1]
    mine = {"spread": lambda t: t.transpose(*perm), "tuple": lambda t: t.transpose(perm),
            "none": lambda t: t.transpose(), "T": lambda t: t.T}[form]
    order = perm if form in ("spread", "tuple") else reverse
    if form == "spread" and ndim == 2:  # two axes: swapped, as PyTorch's transpose(d0, d1)
        compare(mine, lambda t: t.transpose(*perm), [x], gseed)
        return
    # PyTorch's permute is NumPy's transpose (PyTorch's .T beyond 2-D is deprecated)
    compare(mine, lambda t: t.permute(order), [x], gseed)


# -- indexing ----------------------------------------------------------------------------


@st.composite
def index_for(draw, shape):
    """An index for `shape` mixing ints, slices (negative steps too), None, Ellipsis,
    integer arrays and lists (repeats, negative entries) and boolean masks.

    NumPy counts an int as an array when the index holds one, and PyTorch does not:
    the results differ when an int and an array are apart (test_an_int_apart_from...).
    So an index here holds ints or arrays, not both. One mask at most, alone.
    """
    ndim = len(shape)
    arrays_allowed = draw(st.booleans())
    parts, axis, used_ellipsis, array_length, masked = [], 0, False, None, False
    while axis < ndim or (len(parts) < 5 and draw(st.booleans())):
        kinds = ["none"] + ([] if used_ellipsis else ["ellipsis"])
        if axis < ndim:
            kinds += ["slice", "slice"]
            if not arrays_allowed:
                kinds.append("int")
            elif not masked:
                kinds += ["array", "list"] + (["mask"] if array_length is None else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "none":
            parts.append(None)
        elif kind == "ellipsis":
            parts.append(Ellipsis)
            used_ellipsis = True
            axis = ndim  # the ellipsis takes every axis left
        elif kind == "int":
            parts.append(draw(st.integers(-shape[axis], shape[axis] - 1)))
            axis += 1
        elif kind == "slice":
            n = shape[axis]
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            step = draw(st.sampled_from([None, 1, 2, 3, -1, -2]))
            parts.append(slice(start, stop, step))
            axis += 1
        elif kind in ("array", "list"):
            n = shape[axis]
            # arrays broadcast together: all of one length, or of length 1
            length = 1 if array_length and draw(st.booleans()) else array_length or draw(
                st.integers(1, 4))
            array_length = array_length or length
            entries = draw(st.lists(st.integers(-n, n - 1), min_size=length, max_size=length))
            parts.append(np.array(entries) if kind == "array" else entries)
            axis += 1
        else:  # a boolean mask over the next one or two axes, the only array
            span = draw(st.integers(1, min(2, ndim - axis)))
            parts.append(draw(arrays(np.bool_, shape[axis:axis + span])))
            masked = True
            axis += span
    index = tuple(parts)
    if len(index) == 1 and draw(st.booleans()):
        index = index[0]  # x[i] as well as x[(i,)]
    return index


def torch_index(index):
    """The same index in PyTorch's types; None if it has a negative slice step."""
    parts = index if isinstance(index, tuple) else (index,)
    converted = []
    for part in parts:
        if isinstance(part, slice) and part.step is not None and part.step < 0:
            return None
        if isinstance(part, np.ndarray):
            part = torch.from_numpy(part.copy())
        converted.append(part)
    return tuple(converted) if isinstance(index, tuple) else converted[0]


@MANY
@given(shape=array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4), data=st.data(),
       gseed=GSEED)
def test_indexing_like_pytorch(shape, data, gseed):
    x = data.draw(values(shape), label="x")
    index = data.draw(index_for(shape), label="index")
    index_t = torch_index(index)
    if index_t is None:
        # PyTorch slices with positive steps only; NumPy's rule (which the engine
        # follows) picks these entries, and PyTorch's gather gives their gradient
        flat = np.arange(x.size).reshape(shape)[index]
        reference = lambda t: t.reshape(-1)[torch.from_numpy(np.array(flat))]  # noqa: E731
    else:
        reference = lambda t: t[index_t]  # noqa: E731
    compare(lambda t: t[index], reference, [x], gseed)


def test_indexing_cases_a_reader_writes():
    x = np.arange(24.0).reshape(2, 3, 4)
    long = lambda v: torch.tensor(v)  # noqa: E731
    cases = [
        (1, 1), (-1, -1), ((0, -1), (0, -1)), ((0, 1, -2), (0, 1, -2)),
        (slice(1, None), slice(1, None)), ((Ellipsis, 0), (Ellipsis, 0)),
        ((slice(None), slice(None, None, 2)), (slice(None), slice(None, None, 2))),
        (np.array([1, 1, 0]), long([1, 1, 0])), ([0, 0, -1], [0, 0, -1]),
        ((np.array([0, 1, 1]), np.array([2, 2, 0])), (long([0, 1, 1]), long([2, 2, 0]))),
        ((slice(None), np.array([0, 0]), np.array([3, -1])),
         (slice(None), long([0, 0]), long([3, -1]))),
        ((np.array([[0], [1]]), slice(None), np.array([1, 3])),  # arrays split by a slice
         (long([[0], [1]]), slice(None), long([1, 3]))),
        (x > 10, torch.tensor(x > 10)),  # a mask over every axis
        ((slice(None), x[0] > 4), (slice(None), torch.tensor(x[0] > 4))),  # ... over the last two
        ((None, 1), (None, 1)), ((Ellipsis, None), (Ellipsis, None)),
        ((1, None, slice(None), None), (1, None, slice(None), None)),
    ]
    for k, (index, index_t) in enumerate(cases):
        compare(lambda t: t[index], lambda t: t[index_t], [x], gseed=k)
    scalar = np.array(2.5)
    for index in [(), None, Ellipsis]:
        compare(lambda t: t[index], lambda t: t[index], [scalar], gseed=7)


# -- matrix products -----------------------------------------------------------------------


@st.composite
def matmul_shapes(draw):
    n, k, m = (draw(st.integers(1, 4)) for _ in range(3))
    batch = draw(mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=3))
    ba, bb = batch.input_shapes
    forms = {
        "vector @ vector": ((k,), (k,)),
        "vector @ matrix": ((k,), (k, m)),
        "matrix @ vector": ((n, k), (k,)),
        "matrix @ matrix": ((n, k), (k, m)),
        "batched @ batched": (ba + (n, k), bb + (k, m)),
        "vector @ batched": ((k,), bb + (k, m)),
        "batched @ vector": (ba + (n, k), (k,)),
        "batched @ matrix": (ba + (n, k), (k, m)),
        "matrix @ batched": ((n, k), bb + (k, m)),
    }
    return forms[draw(st.sampled_from(sorted(forms)))]


@MANY
@given(shapes=matmul_shapes(), data=st.data(), gseed=GSEED)
def test_matmul_for_vectors_matrices_and_batches(shapes, data, gseed):
    a = data.draw(values(shapes[0]), label="a")
    b = data.draw(values(shapes[1]), label="b")
    compare(operator.matmul, operator.matmul, [a, b], gseed)


@FEW
@given(shapes=matmul_shapes(), data=st.data(), gseed=GSEED)
def test_matmul_with_an_array_constant_on_either_side(shapes, data, gseed):
    a = data.draw(values(shapes[0]), label="a")
    b = data.draw(values(shapes[1]), label="b")
    compare(lambda t: t @ b, lambda t: t @ torch.tensor(b), [a], gseed)
    compare(lambda t: a @ t, lambda t: torch.tensor(a) @ t, [b], gseed)


# -- backward: seeds, accumulation, retain_graph ---------------------------------------------


def program(x, w):
    """A small graph with fan-out, used by the backward tests below."""
    h = (x @ w).tanh()
    return h * h.sum(axis=0) + x.sum(axis=1, keepdims=True) * h


def program_t(x, w):
    h = (x @ w).tanh()
    return h * h.sum(dim=0) + x.sum(dim=1, keepdim=True) * h


XW = [np.array([[0.5, -1.0, 2.0], [0.0, 1.5, -0.5]]),
      np.array([[1.0, -2.0], [0.5, 0.0], [0.25, 1.0]])]


def test_backward_with_a_seed_given_as_an_array_a_tensor_or_a_number():
    compare(program, program_t, XW, gseed=5)  # an array of the output's shape
    seed = seed_like((2, 2), 5)
    x, w = Tensor(XW[0]), Tensor(XW[1])
    program(x, w).backward(gradient=Tensor(seed, requires_grad=False))
    x_t, w_t = (torch.tensor(a, requires_grad=True) for a in XW)
    program_t(x_t, w_t).backward(gradient=torch.tensor(seed))
    assert_same(x.grad, x_t.grad, "x.grad, seed a Tensor")
    assert_same(w.grad, w_t.grad, "w.grad, seed a Tensor")
    # a 0-d output with a seed of shape (): a number or a 0-d array
    for s in (2.5, np.array(2.5)):
        x = Tensor(XW[0])
        (x * x).sum().backward(gradient=s)
        x_t = torch.tensor(XW[0], requires_grad=True)
        (x_t * x_t).sum().backward(gradient=torch.tensor(2.5))
        assert_same(x.grad, x_t.grad, "0-d seed")


def test_leaves_accumulate_across_two_backward_calls_with_retain_graph():
    seeds = [seed_like((2, 2), 1), seed_like((2, 2), 2)]
    x, w = Tensor(XW[0]), Tensor(XW[1])
    x_t, w_t = (torch.tensor(a, requires_grad=True) for a in XW)
    y, y_t = program(x, w), program_t(x_t, w_t)
    y.backward(gradient=seeds[0], retain_graph=True)
    y_t.backward(gradient=torch.tensor(seeds[0]), retain_graph=True)
    y.backward(gradient=seeds[1])
    y_t.backward(gradient=torch.tensor(seeds[1]))
    assert_same(x.grad, x_t.grad, "x.grad after two sweeps")
    assert_same(w.grad, w_t.grad, "w.grad after two sweeps")
    # a second graph built from the same leaves adds on top, in both
    (x * w.sum()).sum().backward()
    (x_t * w_t.sum()).sum().backward()
    assert_same(x.grad, x_t.grad, "x.grad after a second graph")
    assert_same(w.grad, w_t.grad, "w.grad after a second graph")


def test_a_second_backward_without_retain_graph_raises_in_both():
    x, w = Tensor(XW[0]), Tensor(XW[1])
    y = program(x, w).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="freed graph"):
        y.backward()
    x_t, w_t = (torch.tensor(a, requires_grad=True) for a in XW)
    y_t = program_t(x_t, w_t).sum()
    y_t.backward()
    with pytest.raises(RuntimeError):
        y_t.backward()


def test_a_graph_that_saved_nothing_sweeps_twice_in_pytorch_but_not_in_the_engine():
    """Pinned difference (chapter memory, Step 4): PyTorch raises only when a second sweep
    reaches a saved tensor that was freed; the engine frees every node and always raises."""
    x_t = torch.tensor([1.0, 2.0], requires_grad=True)
    z_t = (x_t + 1.0).sum()
    z_t.backward()
    z_t.backward()  # no node saved a tensor: PyTorch runs it
    assert x_t.grad.tolist() == [2.0, 2.0]
    y_t = (x_t * x_t).sum()
    y_t.backward()
    with pytest.raises(RuntimeError):
        y_t.backward()  # `*` saved both operands, now freed
    x = Tensor([1.0, 2.0])
    z = (x + 1.0).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="freed graph"):
        z.backward()


def test_no_grad_and_detach_record_nothing_in_both():
    x, x_t = Tensor(XW[0]), torch.tensor(XW[0], requires_grad=True)
    with no_grad():
        y = x * 2
    with torch.no_grad():
        y_t = x_t * 2
    assert y.requires_grad is False and y_t.requires_grad is False
    z, z_t = (x.detach() * x).sum(), (x_t.detach() * x_t).sum()
    z.backward()
    z_t.backward()
    assert_same(x.grad, x_t.grad, "grad through detach")


# -- functional: logsumexp, log_softmax, softmax, losses --------------------------------------


@pytest.mark.parametrize("name", ["logsumexp", "log_softmax", "softmax"])
@SOME
@given(x_axis=logits_and_axis(), keepdims=st.booleans(), gseed=GSEED)
def test_softmax_family_over_any_axis(name, x_axis, keepdims, gseed):
    x, axis = x_axis
    if name == "logsumexp":
        mine = lambda t: F.logsumexp(t, axis=axis, keepdims=keepdims)  # noqa: E731
        theirs = lambda t: torch.logsumexp(t, dim=axis, keepdim=keepdims)  # noqa: E731
    else:
        mine = lambda t: getattr(F, name)(t, axis=axis)  # noqa: E731
        theirs = lambda t: getattr(torch, name)(t, dim=axis)  # noqa: E731
    compare(mine, theirs, [x], gseed)


@SOME
@given(shape_axis=axis_and_shape(min_dims=1), keepdims=st.booleans(), data=st.data(),
       gseed=GSEED)
def test_logsumexp_over_several_axes(shape_axis, keepdims, data, gseed):
    shape, axis = shape_axis
    x = data.draw(values(shape), label="x")
    dims = torch_dims(axis, len(shape))
    compare(lambda t: F.logsumexp(t, axis=axis if axis is not None else dims, keepdims=keepdims),
            lambda t: torch.logsumexp(t, dim=dims, keepdim=keepdims), [x], gseed)


def test_softmax_family_default_axis_is_the_last():
    x = np.array([[1.0, 2.0, 2.0], [0.0, -1.0, 3.0]])
    compare(F.logsumexp, lambda t: torch.logsumexp(t, dim=-1), [x], gseed=1)
    compare(F.log_softmax, lambda t: torch.log_softmax(t, dim=-1), [x], gseed=2)
    compare(F.softmax, lambda t: torch.softmax(t, dim=-1), [x], gseed=3)


def _nll_of_log_softmax(t, targets, reduction, ignore_index):
    return F.nll_loss(F.log_softmax(t, axis=1), targets, reduction=reduction,
                      ignore_index=ignore_index)


LOSSES = {
    "cross_entropy": (F.cross_entropy, torch.nn.functional.cross_entropy),
    "nll_loss": (F.nll_loss, torch.nn.functional.nll_loss),  # any numbers, not just log-probs
    "nll_loss(log_softmax)": (_nll_of_log_softmax,
                              lambda t, y, reduction, ignore_index: torch.nn.functional.nll_loss(
                                  torch.log_softmax(t, dim=1), y, reduction=reduction,
                                  ignore_index=ignore_index)),
}


@pytest.mark.parametrize("loss", sorted(LOSSES))
@SOME
@given(problem=classification(), reduction=st.sampled_from(["mean", "sum", "none"]),
       gseed=GSEED)
def test_losses_with_every_reduction_and_ignore_index(loss, problem, reduction, gseed):
    logits, targets, ignore_index = problem
    mine, theirs = LOSSES[loss]
    targets_t = torch.from_numpy(targets)
    # a mean over no kept rows is 0 / 0 = nan in both, with a zero gradient
    compare(lambda t: mine(t, targets, reduction=reduction, ignore_index=ignore_index),
            lambda t: theirs(t, targets_t, reduction=reduction, ignore_index=ignore_index),
            [logits], gseed, quiet=True)


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_without_ignored_rows_match_pytorchs_defaults(loss, reduction):
    logits = np.array([[2.0, 2.0, -1.0], [0.0, 1000.0, 0.0], [-3.0, 0.5, 0.5], [0.0, 0.0, 0.0]])
    targets = np.array([1, 1, 0, 2])
    mine, theirs = LOSSES[loss]
    compare(lambda t: mine(t, targets, reduction=reduction),
            lambda t: theirs(t, torch.from_numpy(targets), reduction=reduction), [logits], 4)


# -- nn.Linear and a small MLP ------------------------------------------------------------------


@pytest.mark.parametrize("bias", [True, False])
@FEW
@given(fans=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       batch=array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3),
       seed=st.integers(0, 2**16), gseed=GSEED)
def test_linear_is_pytorchs_with_the_weight_transposed(bias, fans, batch, seed, gseed):
    fan_in, fan_out = fans
    layer = nn.Linear(fan_in, fan_out, np.random.default_rng(seed), bias=bias)
    x = np.random.default_rng(seed + 1).normal(size=batch + (fan_in,))
    assert layer.weight.shape == (fan_in, fan_out)  # PyTorch stores (fan_out, fan_in)
    reference = torch.nn.Linear(fan_in, fan_out, bias=bias, dtype=torch.float64)
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(layer.weight.data.T))
        if bias:
            reference.bias.copy_(torch.tensor(layer.bias.data))
    compare(layer, reference, [x], gseed)
    assert_same(layer.weight.grad, reference.weight.grad.T, "weight.grad (transposed)")
    if bias:
        assert_same(layer.bias.grad, reference.bias.grad, "bias.grad")
    bound = 1 / math.sqrt(fan_in)  # PyTorch's default initialisation range
    assert np.all(np.abs(layer.weight.data) <= bound)


def test_mlp_matches_torch_sequential_with_the_same_parameter_order():
    rng = np.random.default_rng(3)
    model = nn.MLP([3, 5, 4, 2], rng, activation=nn.Tanh)
    reference = torch.nn.Sequential(
        torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 4), torch.nn.Tanh(),
        torch.nn.Linear(4, 2)).double()
    names = [name for name, _ in model.named_parameters()]
    names_t = [name for name, _ in reference.named_parameters()]
    assert names == ["layers." + name for name in names_t]
    with torch.no_grad():
        for p, p_t in zip(model.parameters(), reference.parameters()):
            p_t.copy_(torch.tensor(p.data.T if p.ndim == 2 else p.data))
    x = rng.normal(size=(6, 3))
    targets = np.array([0, 1, 1, 0, 1, 0])
    compare(lambda t: F.cross_entropy(model(t), targets),
            lambda t: torch.nn.functional.cross_entropy(reference(t), torch.from_numpy(targets)),
            [x])
    for p, p_t in zip(model.parameters(), reference.parameters()):
        assert_same(p.grad, p_t.grad.T if p.ndim == 2 else p_t.grad, "parameter grad")


# -- optimizers ---------------------------------------------------------------------------------


def run_optimizers(make_mine, make_theirs, n_steps, seed, zero_to_none=False):
    """Identical parameters and gradients through both optimizers, step by step."""
    rng = np.random.default_rng(seed)
    shapes = [(3, 2), (2,), ()]
    start = [rng.normal(size=s) for s in shapes]
    params = [Tensor(a) for a in start]
    params_t = [torch.tensor(a, requires_grad=True) for a in start]
    mine, theirs = make_mine(params), make_theirs(params_t)
    for step in range(n_steps):
        for p, p_t in zip(params, params_t):
            g = rng.normal(size=p.shape)
            if step % 3 == 1:
                g = np.round(g)  # zeros and ties in the gradient, too
            p.grad = g.copy()
            p_t.grad = torch.tensor(g)
        mine.step()
        theirs.step()
        for k, (p, p_t) in enumerate(zip(params, params_t)):
            assert_same(p.data, p_t, f"parameter {k} after step {step + 1}")


@SOME
@given(lr=st.sampled_from([0.01, 0.1, 0.5]), momentum=st.sampled_from([0.0, 0.5, 0.9]),
       dampening=st.sampled_from([0.0, 0.3]), weight_decay=st.sampled_from([0.0, 0.01, 0.2]),
       nesterov=st.booleans(), seed=st.integers(0, 2**16))
def test_sgd_matches_torch_optim(lr, momentum, dampening, weight_decay, nesterov, seed):
    if nesterov and (momentum == 0 or dampening != 0):
        nesterov = False  # both refuse this combination (test below)
    kwargs = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                  nesterov=nesterov)
    run_optimizers(lambda ps: optim.SGD(ps, **kwargs), lambda ps: torch.optim.SGD(ps, **kwargs),
                   n_steps=6, seed=seed)


def test_sgd_nesterov_needs_momentum_and_no_dampening_in_both():
    p, p_t = Tensor([1.0]), torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    for kwargs in [dict(momentum=0.0), dict(momentum=0.9, dampening=0.1)]:
        with pytest.raises(ValueError):
            optim.SGD([p], lr=0.1, nesterov=True, **kwargs)
        with pytest.raises(ValueError):
            torch.optim.SGD([p_t], lr=0.1, nesterov=True, **kwargs)


@SOME
@given(lr=st.sampled_from([1e-3, 0.01, 0.3]), betas=st.sampled_from([(0.9, 0.999), (0.5, 0.9)]),
       eps=st.sampled_from([1e-8, 1e-3]), weight_decay=st.sampled_from([0.0, 0.01, 0.3]),
       seed=st.integers(0, 2**16))
def test_adam_matches_torch_optim(lr, betas, eps, weight_decay, seed):
    kwargs = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    run_optimizers(lambda ps: optim.Adam(ps, **kwargs),
                   lambda ps: torch.optim.Adam(ps, foreach=False, **kwargs),
                   n_steps=6, seed=seed)


@pytest.mark.parametrize("which", ["SGD", "Adam"])
def test_a_training_loop_matches_pytorch(which):
    """zero_grad, forward, loss, backward, step: ten times, on a small MLP."""
    rng = np.random.default_rng(11)
    model = nn.MLP([4, 6, 3], rng)
    reference = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(),
                                    torch.nn.Linear(6, 3)).double()
    with torch.no_grad():
        for p, p_t in zip(model.parameters(), reference.parameters()):
            p_t.copy_(torch.tensor(p.data.T if p.ndim == 2 else p.data))
    if which == "SGD":
        kwargs = dict(lr=0.2, momentum=0.9, nesterov=True, weight_decay=1e-3)
    else:
        kwargs = dict(lr=0.05, weight_decay=1e-2)
    mine = getattr(optim, which)(model.parameters(), **kwargs)
    theirs = getattr(torch.optim, which)(reference.parameters(), **kwargs)
    x, targets = rng.normal(size=(8, 4)), rng.integers(0, 3, size=8)
    x_t, targets_t = torch.tensor(x), torch.from_numpy(targets)
    for step in range(10):
        mine.zero_grad()
        theirs.zero_grad()
        loss = F.cross_entropy(model(Tensor(x, requires_grad=False)), targets)
        loss_t = torch.nn.functional.cross_entropy(reference(x_t), targets_t)
        assert_same(loss.data, loss_t, f"loss at step {step}")
        loss.backward()
        loss_t.backward()
        mine.step()
        theirs.step()
    for p, p_t in zip(model.parameters(), reference.parameters()):
        assert_same(p.data, p_t.T if p.ndim == 2 else p_t, "parameter after 10 steps")


# -- deliberate differences, documented: the engine's behaviour pinned -----------------------


def test_difference_backward_of_a_non_scalar_seeds_ones():
    """Book, chapter tensors: the engine seeds ones, PyTorch asks for gradient=."""
    x, w = Tensor(XW[0]), Tensor(XW[1])
    program(x, w).backward()  # no seed: ones of the output's shape
    x_t, w_t = (torch.tensor(a, requires_grad=True) for a in XW)
    y_t = program_t(x_t, w_t)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        y_t.backward()
    y_t.backward(gradient=torch.ones_like(y_t))  # what the engine does
    assert_same(x.grad, x_t.grad, "x.grad, seed ones")
    assert_same(w.grad, w_t.grad, "w.grad, seed ones")


def test_difference_a_tensor_from_data_is_a_leaf_whose_grad_the_first_vjp_makes():
    """Conventions: requires_grad=True by default, where PyTorch's is False. The grad is
    None until a VJP reaches it, as in PyTorch, since chapter fast (chapter tensors starts
    it at zeros: tests/test_tensor.py checks that on its snapshot)."""
    x, x_t = Tensor([[1.0, 2.0]]), torch.tensor([[1.0, 2.0]])
    assert x.requires_grad is True and x_t.requires_grad is False
    assert x.grad is None and torch.tensor([1.0], requires_grad=True).grad is None
    unused = Tensor([3.0])  # a leaf no graph reached: None here and in PyTorch
    (x * 2).sum().backward()
    assert unused.grad is None and x.grad.tolist() == [[2.0, 2.0]]


def test_difference_integers_become_float64():
    """Chapter tensors: the engine has one dtype; torch.tensor keeps int64."""
    x = Tensor([1, 2, 3])
    assert x.data.dtype == np.float64 and torch.tensor([1, 2, 3]).dtype == torch.int64
    # true division in both
    assert_same((x / 2).data, torch.tensor([1, 2, 3], dtype=torch.float64) / 2, "int / 2")
    assert_same(Tensor(np.array(True), requires_grad=False).data, np.array(1.0), "bool constant")


def test_difference_a_result_keeps_its_grad():
    """Chapter tensors: a result's grad is its adjoint; PyTorch keeps it after retain_grad()."""
    x, x_t = Tensor(XW[0]), torch.tensor(XW[0], requires_grad=True)
    h, h_t = (x * x).sin(), (x_t * x_t).sin()
    h_t.retain_grad()
    (h * x).sum().backward()
    (h_t * x_t).sum().backward()
    assert_same(h.grad, h_t.grad, "a result's grad (PyTorch: after retain_grad)")
    y_t = (x_t * 2).sum()
    y_t.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "not a leaf Tensor" ... is None
        assert y_t.grad is None


def test_cross_entropy_ignores_minus_100_by_default_as_pytorch():
    """Chapter losses: ignore_index=-100 by default, as PyTorch; None ignores nothing."""
    logits, targets = np.array([[1.0, 2.0, 0.5], [0.0, 0.0, 1.0]]), np.array([1, -100])
    with pytest.raises(ValueError, match="target -100 at row 1 is out of range"):
        F.cross_entropy(Tensor(logits), targets, ignore_index=None)
    with pytest.raises(ValueError, match="target -100 at row 1 is out of range"):
        F.nll_loss(Tensor(logits), targets, ignore_index=None)
    compare(lambda t: F.cross_entropy(t, targets),
            lambda t: torch.nn.functional.cross_entropy(t, torch.from_numpy(targets)), [logits])


def test_difference_max_over_an_axis_is_amax_not_max_with_indices():
    """Chapter shapes: ties share the gradient, as torch.amax; torch.max(dim) picks one entry."""
    x = Tensor([[1.0, 3.0, 3.0]])
    x.max(axis=1).backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5]]
    x_t = torch.tensor([[1.0, 3.0, 3.0]], dtype=torch.float64, requires_grad=True)
    x_t.max(dim=1).values.sum().backward()
    assert x_t.grad.sum() == 1 and sorted(x_t.grad[0].tolist()) == [0.0, 0.0, 1.0]


@pytest.mark.parametrize("to_none", [True, False])
@pytest.mark.parametrize("kind, kwargs", [("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
                                          ("Adam", dict(lr=0.1, weight_decay=0.1))])
def test_zero_grad_is_pytorchs_with_and_without_set_to_none(to_none, kind, kwargs):
    """zero_grad() sets the grads to None, as PyTorch's default; set_to_none=False writes
    zeros. A parameter left out of a later loss is then skipped by step() (None), or still
    moves under momentum and weight decay (zeros), in both libraries."""
    a, b = Tensor([1.0, -2.0]), Tensor([0.5])
    a_t, b_t = (torch.tensor(v.data.copy(), requires_grad=True) for v in (a, b))
    mine = getattr(optim, kind)([a, b], **kwargs)
    theirs = getattr(torch.optim, kind)([a_t, b_t], **kwargs)
    for step in range(4):
        mine.zero_grad(set_to_none=to_none)
        theirs.zero_grad(set_to_none=to_none)
        if step == 0:  # b gets a gradient once, then is left out of the loss
            ((a * a).sum() + (b * 3.0).sum()).backward()
            ((a_t * a_t).sum() + (b_t * 3.0).sum()).backward()
        else:
            (a * a).sum().backward()
            (a_t * a_t).sum().backward()
        mine.step()
        theirs.step()
        assert_same(b.data, b_t, f"{kind}: unused parameter after step {step + 1}")
        assert_same(a.data, a_t, f"{kind}: used parameter after step {step + 1}")
    if to_none:
        assert b.grad is None and b_t.grad is None
    else:
        assert b.grad.tolist() == [0.0] and b_t.grad.tolist() == [0.0]


def test_difference_engine_warns_where_pytorch_is_silent():
    """Errors page: a nan or inf made by an operation or a slope is reported, with the values
    PyTorch gives; PyTorch returns them without a warning."""
    cases = [(Tensor.sqrt, torch.sqrt, [0.0, 4.0], "sqrt"),
             (Tensor.log, torch.log, [0.0, 1.0], "log"),
             (lambda t: t ** -1, lambda t: t ** -1, [0.0, 2.0], "\\*\\*-1"),
             (lambda t: 1.0 / t, lambda t: 1.0 / t, [0.0, 2.0], "/")]
    for mine, theirs, x, op in cases:
        with pytest.warns(RuntimeWarning, match=op):
            compare(mine, theirs, [np.array(x)])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y_t = theirs(torch.tensor(x, dtype=torch.float64, requires_grad=True))
            y_t.sum().backward()


def test_difference_logsumexp_of_an_infinite_slice_is_nan_with_a_warning():
    """The engine's warning says so: softmax and log_softmax give nan in both, but PyTorch's
    logsumexp gives -inf for a slice of -inf only (and inf for a slice holding inf)."""
    x = np.array([[-np.inf, -np.inf], [0.0, 1.0]])
    with pytest.warns(RuntimeWarning, match="are all -inf"):
        y = F.logsumexp(Tensor(x), axis=1)
    y_t = torch.logsumexp(torch.tensor(x), dim=1)
    assert np.isnan(y.data[0]) and y_t[0].item() == -np.inf
    assert_same(y.data[1], y_t[1], "the finite slice")
    for name in ["softmax", "log_softmax"]:
        with pytest.warns(RuntimeWarning):
            mine = getattr(F, name)(Tensor(x), axis=1)
        assert_same(mine.data, getattr(torch, name)(torch.tensor(x), dim=1), name)


# -- former mismatches: PyTorch habits the engine once broke, pinned now that it keeps them ---------


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4)])
def test_transpose_of_two_axes_swaps_them_as_in_pytorch(shape):
    """PyTorch's transpose(d0, d1) swaps two axes. NumPy reads two ints as a whole order,
    so on a matrix transpose(0, 1) would be the identity there; the engine swaps, as
    PyTorch does, and takes a whole order only as one tuple (or as many ints as axes)."""
    x = np.arange(float(np.prod(shape))).reshape(shape)
    ndim = len(shape)
    for axes in [(0, 1), (-2, -1), (0, -1), (1, 0)]:
        compare(lambda t: t.transpose(*axes), lambda t: t.transpose(*axes), [x], gseed=1)
    if ndim == 3:
        compare(lambda t: t.transpose((2, 0, 1)), lambda t: t.permute(2, 0, 1), [x], gseed=1)
    with pytest.raises(ValueError, match=r"^transpose: \(0, 1, 1\) is not an order of the "
                       r"axes \(0, 1, 2\) of a tensor of shape \(2, 3, 4\)$"):
        Tensor(np.ones((2, 3, 4))).transpose(0, 1, 1)


def test_an_int_apart_from_an_array_index_keeps_pytorchs_axis_order():
    """x[0, :, [1, 3]] on a (2, 3, 4) tensor: PyTorch applies the int first, then the array,
    whose axis stays in place: shape (3, 2). NumPy would count the int as an array too, so
    the two are apart and the array's axis moves to the front: (2, 3). The engine gives
    PyTorch's shape and gradients."""
    x = np.arange(24.0).reshape(2, 3, 4)
    long = torch.tensor
    for index, index_t in [((0, slice(None), np.array([1, 3])), (0, slice(None), long([1, 3]))),
                           ((np.array([1, 0]), slice(None), 2), (long([1, 0]), slice(None), 2)),
                           ((0, None, np.array([0, 0, 1])), (0, None, long([0, 0, 1])))]:
        compare(lambda t: t[index], lambda t: t[index_t], [x], gseed=2)


def test_a_tensor_as_an_index_is_refused_and_a_numpy_mask_is_a_mask():
    """A Tensor holds floats, so Tensor(mask) would be read as rows 1, 0, 1: the engine
    refuses a Tensor as an index, and a NumPy boolean array works as PyTorch's mask."""
    x, mask = np.array([1.0, 2.0, 3.0]), np.array([True, False, True])
    with pytest.raises(TypeError, match="^index: a Tensor holds floats"):
        Tensor(x)[Tensor(mask, requires_grad=False)]
    compare(lambda t: t[mask], lambda t: t[torch.from_numpy(mask)], [x])


def test_adam_counts_steps_per_parameter_as_pytorch():
    """PyTorch's Adam keeps a step count per parameter and skips a parameter whose grad is
    None, count included; so does the engine's (a single shared count would give a
    parameter skipped once the bias correction of one step too many ever after)."""
    a, b = Tensor([1.0, 2.0]), Tensor([3.0])
    a_t, b_t = (torch.tensor(v.data, requires_grad=True) for v in (a, b))
    mine, theirs = optim.Adam([a, b], lr=0.1), torch.optim.Adam([a_t, b_t], lr=0.1)
    for step, b_grad in enumerate([np.array([2.0]), None, np.array([2.0])]):
        a.grad, a_t.grad = np.array([0.5, -1.0]), torch.tensor(np.array([0.5, -1.0]))
        b.grad = None if b_grad is None else b_grad.copy()
        b_t.grad = None if b_grad is None else torch.tensor(b_grad)
        mine.step()
        theirs.step()
        assert_same(a.data, a_t, f"a after step {step + 1}")
        assert_same(b.data, b_t, f"b after step {step + 1}")


def test_tensor_exponent_slope_at_a_zero_base_with_a_negative_exponent():
    """d(x^p)/dp = x^p ln x. PyTorch takes 0 at x = 0 only for p >= 0; for p < 0 it gives
    inf * -inf: an infinite slope (its sign the seed's), as the engine does. The base's
    slope p x^(p-1) is infinite there too; the engine warns (compare(quiet=True))."""
    leaves, _ = compare(operator.pow, operator.pow,
                        [np.array([0.0, 0.0, 2.0]), np.array([-1.0, -0.5, -1.0])], quiet=True)
    assert np.isinf(leaves[1].grad[:2]).all() and np.isfinite(leaves[1].grad[2])  # not 0


# -- composite programs (the generator: tests/support/programs.py, shared with the autograd test) --

N_PROGRAMS = 400


def test_the_program_generator_covers_every_kind_of_step():
    labels = " ".join(str(label) for seed in range(N_PROGRAMS)
                      for label in Program(seed).labels())
    for word in ["tanh", "sin", "sigmoid", "exp_tanh", "log1", "sqrt1", "neg", "relu", "abs",
                 "max(", "+", "-", "*", "/", "number form", "** 0.5", "2 ** tanh", "** sin",
                 "@", "sum(", "mean(", "reshape", "transpose(", ".T", "index (slice",
                 "index (array", "index (Ellipsis", "index (array([ True", "logsumexp(",
                 "log_softmax(", "softmax("]:
        assert word in labels, word
    names = set().union(*(Program(seed).names() for seed in range(N_PROGRAMS)))
    assert names == programs.every_name() | {"input"}


@pytest.mark.parametrize("block", range(5))
def test_random_programs_match_pytorch(block):
    for seed in range(block * N_PROGRAMS // 5, (block + 1) * N_PROGRAMS // 5):
        program = Program(seed)
        leaves = [Tensor(a) for a in program.inputs]
        leaves_t = [torch.tensor(a, requires_grad=True) for a in program.inputs]
        y, y_t = program.run(leaves, programs.ENGINE), program.run(leaves_t, programs.TORCH)
        what = f"program {seed}: {program.labels()}"
        assert_same(y.data, y_t, f"value of {what}")
        seed_array = seed_like(y.shape, seed)
        y.backward(gradient=seed_array)
        y_t.backward(gradient=torch.tensor(seed_array))
        assert_same_grads(leaves, leaves_t, f", {what}")
