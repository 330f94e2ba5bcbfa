"""Chapter `shapes`: broadcasting, matrix products, reductions, reshape, transpose, indexing.

Every operation passes `engine.gradcheck` (so those tests need chapter `gradcheck`'s
checker as well) on shapes drawn by hypothesis, and the broadcasting error names both
shapes. On the engine as of `shapes` itself, broadcasting and matrix products are checked
against central differences of chapter `chain-rule`.
"""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from engine import Tensor, numerical_grad, unbroadcast
from support.checks import gradcheck  # engine.gradcheck (chapter `gradcheck`) at rtol 1e-7
from support.strategies import FEW as FAST, TIES, pairs, shapes

pytestmark = pytest.mark.chapter("shapes")


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "@"])
def test_the_shapes_engine_broadcasts_and_sums_gradients_back(op):
    rng = np.random.default_rng(3)
    shape_a, shape_b = ((2, 1, 3), (4, 3)) if op != "@" else ((2, 4, 3), (3, 5))
    a0, b0 = rng.uniform(0.5, 2.0, shape_a), rng.uniform(0.5, 2.0, shape_b)
    f = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "@": np.matmul}[op]
    a, b = Tensor(a0), Tensor(b0)
    y = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
         "@": lambda: a @ b}[op]()
    assert y.shape == f(a0, b0).shape
    y.backward()
    assert a.grad.shape == shape_a and b.grad.shape == shape_b
    np.testing.assert_allclose(a.grad, numerical_grad(lambda v: f(v, b0).sum(), a0), atol=1e-8)
    np.testing.assert_allclose(b.grad, numerical_grad(lambda v: f(a0, v).sum(), b0), atol=1e-8)


def tensor(shape, seed, low=-2.0, high=2.0, ties=True):
    """Entries drawn in [low, high]; with `ties`, about a third of them set to exact values
    of TIES in the range (equal entries, and 0 where the range holds it)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, size=shape)
    exact = [t for t in TIES if low <= t <= high]
    if ties and exact:
        x = np.where(rng.random(size=shape) < 0.35, rng.choice(exact, size=shape), x)
    return Tensor(x)


BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
}


@pytest.mark.parametrize("op", sorted(BINARY))
@FAST
@given(two=pairs(max_dims=4, empty=True), seed=st.integers(0, 2**16))
@pytest.mark.chapter("gradcheck")  # checked with engine.gradcheck
def test_binary_operations_broadcast_and_pass_gradcheck(op, two, seed):
    a = tensor(two.input_shapes[0], seed)
    b = tensor(two.input_shapes[1], seed + 1, low=0.5, high=2.0)  # keeps / away from 0
    y = BINARY[op](a, b)
    assert y.shape == two.result_shape == np.broadcast_shapes(a.shape, b.shape)
    assert gradcheck(BINARY[op], [a, b])


@FAST
@given(shape=shapes(empty=True), seed=st.integers(0, 2**16))
@pytest.mark.chapter("gradcheck")  # checked with engine.gradcheck
def test_numbers_broadcast_as_constants_on_both_sides(shape, seed):
    x = tensor(shape, seed, low=0.5, high=2.0)
    assert gradcheck(lambda x: 2.0 - x * 3 + 1 / x - x / 4.0 + 5 + x, [x])
    y = 1 / x
    assert y.parents[0].requires_grad is False and y.parents[0].shape == ()


def test_the_books_broadcast_example():
    a, b = Tensor(np.ones((5, 1, 4, 1))), Tensor(np.ones((3, 1, 1)))
    y = a * b
    assert y.shape == (5, 3, 4, 1)
    y.backward()
    assert a.grad.shape == (5, 1, 4, 1) and np.all(a.grad == 3)
    assert b.grad.shape == (3, 1, 1) and np.all(b.grad == 20)


@pytest.mark.parametrize("op", sorted(BINARY) + ["@"])
def test_shapes_that_do_not_broadcast_raise_naming_both(op):
    a, b = Tensor(np.ones((5, 1, 4, 2))), Tensor(np.ones((3, 1, 3)))
    with pytest.raises(ValueError, match=r"\(5, 1, 4, 2\).*\(3, 1, 3\)"):
        a @ b if op == "@" else BINARY[op](a, b)


@FAST
@given(two=pairs(max_dims=4, empty=True), seed=st.integers(0, 2**16))
def test_unbroadcast_is_the_adjoint_of_broadcasting(two, seed):
    # <broadcast(x), g> = <x, unbroadcast(g)> for every x and g: the definition of a VJP
    rng = np.random.default_rng(seed)
    x = rng.normal(size=two.input_shapes[0])
    g = rng.normal(size=two.result_shape)
    lhs = np.sum(np.broadcast_to(x, two.result_shape) * g)
    rhs = np.sum(x * unbroadcast(g, x.shape))
    assert np.isclose(lhs, rhs, rtol=1e-12, atol=1e-12)


def test_unbroadcast_refuses_a_gradient_it_cannot_sum():
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        unbroadcast(np.ones(3), (4,))


# -- matrix products ---------------------------------------------------------------

MATMUL_SHAPES = [
    ((3,), (3,)),            # dot product: a scalar
    ((3,), (3, 2)),          # row vector times matrix
    ((2, 3), (3,)),          # matrix times column vector
    ((2, 3), (3, 4)),        # matrix product
    ((4, 2, 3), (3, 2)),     # a batch of matrices times one matrix
    ((3,), (4, 3, 2)),       # a vector times a batch
    ((4, 2, 3), (3,)),       # a batch times a vector
    ((2, 1, 2, 3), (3, 3, 2)),  # batch axes broadcast: (2, 1) with (3,)
]


@pytest.mark.parametrize("shape_a, shape_b", MATMUL_SHAPES)
@pytest.mark.chapter("gradcheck")  # checked with engine.gradcheck
def test_matmul_matches_numpy_and_passes_gradcheck(shape_a, shape_b):
    a, b = tensor(shape_a, 1), tensor(shape_b, 2)
    np.testing.assert_array_equal((a @ b).data, a.data @ b.data)
    assert gradcheck(lambda a, b: a @ b, [a, b])


def test_matmul_vjps_are_the_transposes():
    rng = np.random.default_rng(0)
    a, b = Tensor(rng.normal(size=(2, 3))), Tensor(rng.normal(size=(3, 4)))
    c_bar = rng.normal(size=(2, 4))
    (a @ b).backward(c_bar)
    np.testing.assert_allclose(a.grad, c_bar @ b.data.T)
    np.testing.assert_allclose(b.grad, a.data.T @ c_bar)


def test_matmul_with_arrays_on_either_side_treats_them_as_constants():
    w = Tensor(np.eye(2))
    y = np.array([[1.0, 2.0]]) @ w @ np.array([[3.0], [4.0]])
    y.backward()
    np.testing.assert_allclose(w.grad, [[3.0, 4.0], [6.0, 8.0]])


def test_matmul_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 2\)"):
        Tensor(np.ones((2, 3))) @ Tensor(np.ones((4, 2)))


# -- reductions --------------------------------------------------------------------


@st.composite
def shape_and_axis(draw):
    shape = draw(shapes(min_dims=1, max_dims=4))
    ndim = len(shape)
    kind = draw(st.sampled_from(["none", "int", "negative", "tuple"]))
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(0, ndim - 1))
    elif kind == "negative":
        axis = draw(st.integers(-ndim, -1))
    else:
        axis = tuple(draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim,
                                   unique_by=lambda a: a % ndim)))
    return shape, axis, draw(st.booleans())


@pytest.mark.parametrize("reduction", ["sum", "mean", "max"])
@FAST
@given(case=shape_and_axis(), seed=st.integers(0, 2**16))
@pytest.mark.chapter("gradcheck")  # checked with engine.gradcheck
def test_reductions_match_numpy_and_pass_gradcheck(reduction, case, seed):
    """max without ties here: at a three-way tie central differences give 1/2 to an
    entry and the engine 1/3 (the even split of torch.amax); see the next test."""
    shape, axis, keepdims = case
    x = tensor(shape, seed, ties=reduction != "max")

    def f(x):
        return getattr(x, reduction)(axis=axis, keepdims=keepdims)

    np.testing.assert_allclose(f(x).data, getattr(np, reduction)(x.data, axis=axis,
                                                                   keepdims=keepdims))
    assert gradcheck(f, [x])


@FAST
@given(case=shape_and_axis(), seed=st.integers(0, 2**16))
def test_max_with_ties_splits_the_seed_evenly_among_the_largest(case, seed):
    shape, axis, keepdims = case
    x = tensor(shape, seed)
    seed_array = np.random.default_rng(seed).normal(size=np.shape(
        x.data.max(axis=axis, keepdims=keepdims)))
    x.max(axis=axis, keepdims=keepdims).backward(seed_array)
    largest = x.data == x.data.max(axis=axis, keepdims=True)
    share = largest / largest.sum(axis=axis, keepdims=True)
    axes = tuple(range(len(shape))) if axis is None else axis
    spread = seed_array if keepdims else np.expand_dims(seed_array, axes)
    np.testing.assert_allclose(x.grad, share * spread, rtol=1e-15, atol=0)


def test_max_splits_the_gradient_evenly_between_ties_like_torch_amax():
    x = Tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]])
    x.max(axis=1).backward()
    np.testing.assert_array_equal(x.grad, [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    x = Tensor([2.0, 2.0, 2.0, 1.0])
    x.max().backward()
    np.testing.assert_allclose(x.grad, [1 / 3, 1 / 3, 1 / 3, 0.0])


@pytest.mark.parametrize("call", ["sum", "mean", "max"])
@pytest.mark.parametrize("axis", [2, -3, (0, 0), 1.5])
def test_a_bad_axis_names_the_operation_and_the_shape(call, axis):
    with pytest.raises(ValueError, match=rf"^{call}: axis .* does not fit a tensor of shape \(2, 3\)"):
        getattr(Tensor(np.ones((2, 3))), call)(axis=axis)


# -- reshape, transpose, indexing, sqrt, abs -----------------------------------------


@FAST
@given(shape=shapes(min_dims=1, max_dims=4, empty=True), seed=st.integers(0, 2**16))
@pytest.mark.chapter("gradcheck")  # checked with engine.gradcheck
def test_reshape_and_transpose_pass_gradcheck(shape, seed):
    x = tensor(shape, seed)
    perm = tuple(np.random.default_rng(seed).permutation(len(shape)))
    assert gradcheck(lambda x: x.reshape(-1), [x])
    assert gradcheck(lambda x: x.reshape((x.data.size, 1)), [x])
    assert gradcheck(lambda x: x.transpose(perm) * np.arange(x.data.size).reshape(
        tuple(shape[i] for i in perm)), [x])
    assert gradcheck(lambda x: x.T, [x])
    np.testing.assert_array_equal(x.transpose(perm).data, np.transpose(x.data, perm))
    np.testing.assert_array_equal(x.T.data, x.data.T)


INDICES = [
    (slice(1, None),),
    (0,),
    (Ellipsis, 1),
    (slice(None), None, 0),                       # a new axis
    (np.array([0, 2, 0, 0]),),                    # repeated rows accumulate
    (np.array([0, 1, 1]), np.array([2, 0, 0])),   # pairs, one repeated
    (np.array([[True, False, True], [False, False, True], [True, True, True]]),),
]


@pytest.mark.parametrize("index", INDICES, ids=range(len(INDICES)))
@pytest.mark.chapter("gradcheck")  # checked with engine.gradcheck
def test_indexing_basic_and_advanced_passes_gradcheck(index):
    x = tensor((3, 3), 7)
    np.testing.assert_array_equal(x[index].data, x.data[index])
    assert gradcheck(lambda x: x[index] * 1.5, [x])


def test_repeated_indices_accumulate():
    x = Tensor([10.0, 20.0, 30.0])
    x[[0, 0, 2, 0]].sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 0.0, 1.0])


@FAST
@given(shape=shapes(empty=True), seed=st.integers(0, 2**16))
@pytest.mark.chapter("gradcheck")  # checked with engine.gradcheck
def test_sqrt_and_abs_pass_gradcheck(shape, seed):
    assert gradcheck(lambda x: x.sqrt(), [tensor(shape, seed, low=0.2, high=3.0)])
    # exact zeros included: abs's slope there is 0, as are central differences of |x|
    assert gradcheck(lambda x: x.abs(), [tensor(shape, seed)])


def test_abs_has_slope_zero_at_zero_like_torch_sign():
    x = Tensor([-2.0, 0.0, 3.0])
    x.abs().sum().backward()
    np.testing.assert_array_equal(x.grad, [-1.0, 0.0, 1.0])


def test_a_dense_layer_bias_grad_sums_rows_and_one_sample_weight_grad_has_rank_one():
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(4, 3)), Tensor(rng.normal(size=(3, 2))), Tensor(np.zeros(2))
    z_bar = rng.normal(size=(4, 2))
    (Tensor(x, requires_grad=False) @ w + b).backward(z_bar)
    np.testing.assert_allclose(b.grad, z_bar.sum(axis=0))
    np.testing.assert_allclose(w.grad, x.T @ z_bar)
    w.grad[...] = 0.0
    (Tensor(x[:1], requires_grad=False) @ w + b).backward(z_bar[:1])
    assert np.linalg.matrix_rank(w.grad) == 1


def test_transpose_with_negative_axes_has_the_inverse_permutation_as_its_vjp():
    # argsort of (0, -1, -2) is not the inverse of the permutation (0, 2, 1)
    rng = np.random.default_rng(3)
    x = Tensor(rng.normal(size=(2, 3, 4)))
    weights = rng.normal(size=(2, 4, 3))
    (x.transpose(0, -1, -2) * weights).sum().backward()
    np.testing.assert_array_equal(x.grad, weights.transpose(0, 2, 1))


@pytest.mark.parametrize("axes", [(2, 1), (0, 3), (1, 1), (0,)])
def test_transpose_refuses_an_order_that_is_not_one(axes):
    with pytest.raises(ValueError, match=r"^transpose: .* is not an order of the axes \(0, 1\)"):
        Tensor(np.ones((2, 3))).transpose(axes)


@pytest.mark.chapter("errors")  # the engine's own reshape messages
@pytest.mark.parametrize("shape, message", [
    ((4, 2), r"^reshape: a tensor of shape \(6,\) has 6 entries, which do not fill the shape \(4, 2\)$"),
    ((2.0, 3), r"^reshape: lengths must be integers, got \(2.0, 3\)$"),
])
def test_reshape_says_what_is_wrong(shape, message):
    with pytest.raises((ValueError, TypeError), match=message):
        Tensor(np.arange(6.0)).reshape(shape)
