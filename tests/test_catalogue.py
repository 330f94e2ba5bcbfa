"""The operations of the appendix `catalogue` against PyTorch (float64, CPU), and the
default `ignore_index=-100` of chapter `losses`' cross_entropy and nll_loss.

For each operation: values and the gradients of every input after a backward sweep
seeded with a random `gradient=` of the output's shape, compared with PyTorch at
rtol 1e-10 (with an absolute floor of 1e-12 times the largest entry, as in
tests/test_against_torch.py: the two libraries sum in different orders). Inputs are
drawn by hypothesis under a derandomized profile, with ties and exact zeros (where
min, maximum, minimum and clip choose a subgradient), size-1 axes and empty arrays
where PyTorch accepts them. Away from the kinks, `engine.gradcheck` runs at rtol 1e-7.
The last part runs random programs that mix the new operations with the old ones,
on the engine and on PyTorch, and compares every gradient.
"""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra.numpy import array_shapes, arrays, mutually_broadcastable_shapes

import torch  # required, not skipped: PyTorch is the reference (tests/requirements.txt)

import engine
from engine import Tensor, gradcheck
from engine import functional as F
from support.oracles import assert_same
from support.strategies import SOME, TIES, values

pytestmark = [pytest.mark.chapter("catalogue"), pytest.mark.filterwarnings("error")]



# -- helpers ------------------------------------------------------------------------------


def compare(engine_fn, torch_fn, inputs, gseed=0, needs=None):
    """Both functions on the same inputs: the value, then the grad of every input.

    `needs`: which inputs require a gradient (all by default)."""
    needs = needs or [True] * len(inputs)
    leaves = [Tensor(a, requires_grad=n) for a, n in zip(inputs, needs)]
    torch_leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=n)
                    for a, n in zip(inputs, needs)]
    y, y_t = engine_fn(*leaves), torch_fn(*torch_leaves)
    assert isinstance(y, Tensor)
    assert_same(y.data, y_t, "value")
    if not any(needs):
        return
    seed = np.random.default_rng(gseed).normal(size=y.shape)
    y.backward(gradient=seed)
    y_t.backward(gradient=torch.tensor(seed))
    for k, (leaf, leaf_t) in enumerate(zip(leaves, torch_leaves)):
        if needs[k]:
            expected = leaf_t.grad if leaf_t.grad is not None else np.zeros(leaf.shape)
            assert_same(leaf.grad, expected, f"grad of input {k}")


SHAPES = array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)  # empty axes too
NONEMPTY = array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)
PAIRS = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)
TRIPLES = mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3)
GSEED = st.integers(0, 2**31)


def axis_choice(data, ndim):
    """None, one axis (negative too) or a tuple of distinct axes of a tensor with `ndim` axes."""
    if ndim == 0:
        return None
    single = st.integers(-ndim, ndim - 1)
    several = st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)
    return data.draw(st.one_of(st.none(), single, several.map(tuple)))


def smooth(rng, shape, gap=1e-2):
    """Random entries at least `gap` apart from each other and from 0 and +-0.5: no kink of
    min, maximum or clip(-0.5, 0.5) is within a central difference's step of them."""
    n = int(np.prod(shape))
    grid = np.arange(-3.0, 3.0, 2 * gap)
    grid = grid[(np.abs(grid) > gap) & (np.abs(np.abs(grid) - 0.5) > gap)]
    return rng.permutation(grid)[:n].reshape(shape) + rng.uniform(-gap / 4, gap / 4, shape)


def tight_gradcheck(f, inputs):
    return gradcheck(f, inputs, atol=1e-9, rtol=1e-7)


# -- cross_entropy and nll_loss: PyTorch's ignore_index=-100 by default --------------------


@pytest.mark.chapter("losses")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("seed", range(12))
def test_cross_entropy_ignores_minus_100_by_default_like_pytorch(reduction, seed):
    rng = np.random.default_rng(seed)
    n, c = int(rng.integers(1, 6)), int(rng.integers(1, 5))
    targets = rng.integers(0, c, size=n)
    targets[rng.random(n) < 0.4] = -100
    logits = rng.normal(size=(n, c)) * 3
    target_t = torch.tensor(targets)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all ignored: a mean of nothing
        compare(lambda z: F.cross_entropy(z, targets, reduction=reduction),
                lambda z: torch.nn.functional.cross_entropy(z, target_t, reduction=reduction),
                [logits], seed)
        compare(lambda z: F.nll_loss(F.log_softmax(z, axis=1), targets, reduction=reduction),
                lambda z: torch.nn.functional.nll_loss(torch.log_softmax(z, 1), target_t,
                                                       reduction=reduction),
                [logits], seed)


@pytest.mark.chapter("losses")
def test_all_targets_minus_100_give_a_nan_mean_and_zero_gradient_like_pytorch():
    logits = Tensor(np.zeros((3, 2)))
    loss = F.cross_entropy(logits, [-100, -100, -100])
    expected = torch.nn.functional.cross_entropy(torch.zeros(3, 2, dtype=torch.float64),
                                                 torch.tensor([-100, -100, -100]))
    assert np.isnan(loss.data) and torch.isnan(expected)
    loss.backward()
    np.testing.assert_array_equal(logits.grad, np.zeros((3, 2)))


@pytest.mark.chapter("losses")
def test_other_negative_targets_are_still_out_of_range_as_in_pytorch():
    with pytest.raises(ValueError, match=r"target -1 at row 1 is out of range for 3 classes"):
        F.cross_entropy(Tensor(np.zeros((2, 3))), [0, -1])
    with pytest.raises((IndexError, RuntimeError)):
        torch.nn.functional.cross_entropy(torch.zeros(2, 3), torch.tensor([0, -1]))
    assert F.cross_entropy(Tensor(np.zeros((2, 3))), [0, -1], ignore_index=-1).data > 0


@pytest.mark.chapter("losses")
def test_ignore_index_none_keeps_every_row():
    with pytest.raises(ValueError, match=r"target -100 at row 0 is out of range"):
        F.cross_entropy(Tensor(np.zeros((1, 3))), [-100], ignore_index=None)


# -- elementwise: cos ---------------------------------------------------------------------


@SOME
@given(data=st.data(), shape=SHAPES, gseed=GSEED)
def test_cos_matches_pytorch(data, shape, gseed):
    x = data.draw(values(shape, -4.0, 4.0))
    compare(lambda t: t.cos(), torch.cos, [x], gseed)


# -- min ----------------------------------------------------------------------------------


@SOME
@given(data=st.data(), shape=NONEMPTY, keepdims=st.booleans(), gseed=GSEED)
def test_min_matches_amin_with_ties_split_evenly(data, shape, keepdims, gseed):
    x = data.draw(values(shape))
    axis = axis_choice(data, len(shape))
    if axis is None:  # torch.min() of everything splits ties evenly, like amin
        torch_fn = (lambda t: torch.amin(t, dim=tuple(range(t.ndim)), keepdim=True)) \
            if keepdims else torch.min
    else:
        torch_fn = lambda t: torch.amin(t, dim=axis, keepdim=keepdims)  # noqa: E731
    compare(lambda t: t.min(axis=axis, keepdims=keepdims), torch_fn, [x], gseed)


def test_min_of_a_zero_dim_tensor_and_over_a_nonempty_axis_of_an_empty_one():
    compare(lambda t: t.min(), torch.min, [np.array(1.5)])
    compare(lambda t: t.min(axis=1), lambda t: torch.amin(t, dim=1), [np.zeros((0, 3))])


def test_min_names_an_empty_reduction():
    with pytest.raises(ValueError, match=r"min: no entries to take the minimum of, over axis 0"):
        Tensor(np.zeros((0, 3))).min(axis=0)
    with pytest.raises(IndexError):  # PyTorch refuses too
        torch.amin(torch.zeros(0, 3), dim=0)


# -- maximum, minimum, where --------------------------------------------------------------


@pytest.mark.parametrize("name", ["maximum", "minimum"])
@SOME
@given(data=st.data(), shapes=PAIRS, gseed=GSEED)
def test_maximum_and_minimum_split_ties_in_half_like_pytorch(name, data, shapes, gseed):
    a, b = (data.draw(values(s)) for s in shapes.input_shapes)
    compare(getattr(engine, name), getattr(torch, name), [a, b], gseed)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_and_minimum_with_a_number_or_a_constant(name):
    x = np.array([[-1.0, 0.0, 2.0], [0.0, 0.5, -0.5]])
    compare(lambda t: getattr(engine, name)(t, 0.0),
            lambda t: getattr(torch, name)(t, torch.tensor(0.0, dtype=torch.float64)), [x])
    compare(lambda t: getattr(engine, name)(0.5, t),
            lambda t: getattr(torch, name)(torch.tensor(0.5, dtype=torch.float64), t), [x])
    compare(getattr(engine, name), getattr(torch, name), [x, x[0]], needs=[False, True])
    compare(getattr(engine, name), getattr(torch, name), [np.zeros((0, 3)), np.zeros(3)])


@SOME
@given(data=st.data(), shapes=TRIPLES, gseed=GSEED)
def test_where_matches_pytorch_with_broadcasting(data, shapes, gseed):
    shape_c, shape_a, shape_b = shapes.input_shapes
    condition = data.draw(arrays(np.bool_, shape_c))
    a, b = data.draw(values(shape_a)), data.draw(values(shape_b))
    condition_t = torch.tensor(condition)
    compare(lambda x, y: engine.where(condition, x, y),
            lambda x, y: torch.where(condition_t, x, y), [a, b], gseed)


def test_where_with_a_number_for_one_branch_and_empty_arrays():
    x = np.array([-1.0, 0.0, 2.0])
    mask = x > 0
    compare(lambda t: engine.where(mask, t, 0.0),
            lambda t: torch.where(torch.tensor(mask), t, 0.0), [x])
    compare(lambda t: engine.where(mask, 1.0, t.sin()),
            lambda t: torch.where(torch.tensor(mask), 1.0, t.sin()), [x])
    empty = np.zeros((0, 2))
    compare(lambda t: engine.where(empty > 0, t, -t),
            lambda t: torch.where(torch.tensor(empty > 0), t, -t), [empty])


def test_where_at_log_zero_gives_nan_as_pytorch_does():
    x, x_t = Tensor([0.0, 1.0]), torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log 0 and then 0 / 0: warned
        engine.where(x.data > 0, x.log(), 0.0).sum().backward()
    torch.where(x_t > 0, x_t.log(), 0.0).sum().backward()
    assert_same(x.grad, x_t.grad, "grad")
    assert np.isnan(x.grad[0])


# -- clip ---------------------------------------------------------------------------------


BOUND = st.one_of(st.none(), st.sampled_from(TIES), st.floats(-2, 2, allow_subnormal=False))


@SOME
@given(data=st.data(), shape=SHAPES, low=BOUND, high=BOUND, gseed=GSEED)
def test_clip_matches_clamp_at_the_bounds_and_with_min_above_max(data, shape, low, high, gseed):
    assume(low is not None or high is not None)
    x = data.draw(values(shape))
    compare(lambda t: t.clip(low, high), lambda t: torch.clamp(t, low, high), [x], gseed)


def test_clip_with_array_bounds_that_broadcast():
    rng = np.random.default_rng(3)
    x, low = rng.normal(size=(2, 3)), np.array([-0.5, 0.0, 0.5])
    compare(lambda t: t.clip(min=low), lambda t: torch.clamp(t, min=torch.tensor(low)), [x])
    compare(lambda t: t.clip(max=low[:, None, None]),
            lambda t: torch.clamp(t, max=torch.tensor(low[:, None, None])), [x])


# -- squeeze, unsqueeze, concatenate, stack -----------------------------------------------


SQUEEZABLE = array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=2)


@SOME
@given(data=st.data(), shape=SQUEEZABLE, gseed=GSEED)
def test_squeeze_leaves_other_axes_like_pytorch(data, shape, gseed):
    x = data.draw(values(shape))
    axis = axis_choice(data, len(shape))
    torch_fn = (lambda t: t.squeeze()) if axis is None else (lambda t: t.squeeze(axis))
    compare(lambda t: t.squeeze(axis), torch_fn, [x], gseed)


@SOME
@given(data=st.data(), shape=SHAPES, gseed=GSEED)
def test_unsqueeze_at_every_position_like_pytorch(data, shape, gseed):
    x = data.draw(values(shape))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    compare(lambda t: t.unsqueeze(axis), lambda t: t.unsqueeze(axis), [x], gseed)


@SOME
@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3),
       gseed=GSEED)
def test_concatenate_matches_cat_with_empty_parts(data, shape, gseed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    lengths = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    parts = []
    for n in lengths:
        part_shape = list(shape)
        part_shape[axis] = n
        parts.append(data.draw(values(tuple(part_shape))))
    needs = data.draw(st.lists(st.booleans(), min_size=len(parts), max_size=len(parts)))
    assume(any(needs))
    compare(lambda *ts: engine.concatenate(list(ts), axis=axis),
            lambda *ts: torch.cat(ts, dim=axis), parts, gseed, needs)


@SOME
@given(data=st.data(), shape=SHAPES, k=st.integers(1, 4), gseed=GSEED)
def test_stack_along_every_new_axis_like_pytorch(data, shape, k, gseed):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    parts = [data.draw(values(shape)) for _ in range(k)]
    compare(lambda *ts: engine.stack(ts, axis=axis), lambda *ts: torch.stack(ts, dim=axis),
            parts, gseed)


def test_concatenate_and_stack_take_constants_beside_tensors():
    a = np.arange(6.0).reshape(2, 3)
    compare(lambda t: engine.concatenate([t, np.ones((2, 1))], axis=1),
            lambda t: torch.cat([t, torch.ones(2, 1, dtype=torch.float64)], dim=1), [a])
    compare(lambda t: engine.stack([np.ones(3), t[0], t[1]], axis=1),
            lambda t: torch.stack([torch.ones(3, dtype=torch.float64), t[0], t[1]], dim=1),
            [a])


# -- var and std --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["var", "std"])
@SOME
@given(data=st.data(), shape=NONEMPTY, keepdims=st.booleans(), gseed=GSEED)
def test_var_and_std_match_pytorch_with_its_corrections(name, data, shape, keepdims, gseed):
    x = data.draw(values(shape))
    axis = axis_choice(data, len(shape))
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
    n = int(np.prod([shape[i] for i in axes]))
    correction = data.draw(st.sampled_from([0, 1, 2]))
    assume(n - correction > 0)  # dof <= 0 warns: the next test
    if name == "std":
        # a constant slice has std 0 and slope 0 (both libraries); a nearly constant one,
        # a slope like 1 / sqrt(1e-32), which two summation orders cannot agree on
        centered = x - x.mean(axis=tuple(axes), keepdims=True)
        spread = (centered ** 2).sum(axis=tuple(axes))
        assume(np.all((spread == 0) | (spread > 1e-6)))
    compare(lambda t: getattr(t, name)(axis=axis, correction=correction, keepdims=keepdims),
            lambda t: getattr(torch, name)(t, dim=axis, correction=correction, keepdim=keepdims),
            [x], gseed)


def test_var_and_std_default_to_correction_one():
    x = np.array([1.0, 2.0, 3.0, 6.0])
    assert np.isclose(Tensor(x).var().data, np.var(x, ddof=1))
    assert np.isclose(Tensor(x).std().data, np.std(x, ddof=1))
    compare(lambda t: t.std(), torch.std, [np.array([5.0, 5.0, 5.0])])  # slope 0 at std 0


@pytest.mark.parametrize("x, axis, correction", [
    (np.array([3.0]), None, 1),  # one entry: 0 / 0
    (np.array([1.0, 2.0]), None, 2),  # dof 0, deviations not 0: inf
    (np.array([1.0, 2.0]), None, 3),  # dof -1: PyTorch divides by max(0, dof)
    (np.zeros((0, 3)), 0, 1),  # no entries at all
])
def test_var_without_degrees_of_freedom_warns_and_matches_pytorch(x, axis, correction):
    with pytest.warns(RuntimeWarning, match=r"var: .* degrees of freedom"):
        y = Tensor(x).var(axis=axis, correction=correction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyTorch warns too
        y_t = torch.var(torch.tensor(x), dim=axis, correction=correction)
    assert_same(y.data, y_t, "value")


# -- mse_loss -----------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@SOME
@given(data=st.data(), shape=SHAPES, target_needs=st.booleans(), gseed=GSEED)
def test_mse_loss_matches_pytorch(reduction, data, shape, target_needs, gseed):
    x, t = data.draw(values(shape)), data.draw(values(shape))
    compare(lambda a, b: F.mse_loss(a, b, reduction=reduction),
            lambda a, b: torch.nn.functional.mse_loss(a, b, reduction=reduction),
            [x, t], gseed, [True, target_needs])


def test_mse_loss_takes_an_array_target():
    x, t = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 0.0])
    compare(lambda a: F.mse_loss(a, t), lambda a: torch.nn.functional.mse_loss(
        a, torch.tensor(t)), [x])


# -- item ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1)])
def test_item_gives_a_python_float_like_pytorch(shape):
    x = np.full(shape, 2.5)
    value = Tensor(x).item()
    assert type(value) is float and value == torch.tensor(x).item() == 2.5


# -- gradcheck, tight, away from the kinks ------------------------------------------------


def _programs():
    return {
        "cos": (lambda x: x.cos(), [(3, 4)]),
        "min, axis": (lambda x: x.min(axis=1, keepdims=True), [(3, 4)]),
        "min, all": (lambda x: x.min(), [(3, 4)]),
        "maximum": (lambda x, y: engine.maximum(x, y), [(3, 4), (4,)]),
        "minimum": (lambda x, y: engine.minimum(x, y), [(2, 1, 3), (4, 1)]),
        "where": (lambda x, y: engine.where(x.data > 0, x * y, y.exp()), [(3, 4), (3, 1)]),
        "clip": (lambda x: x.clip(-0.5, 0.5), [(4, 5)]),
        "squeeze": (lambda x: x.squeeze() * x.squeeze(0), [(1, 3, 1)]),
        "unsqueeze": (lambda x: x.unsqueeze(1) * x.unsqueeze(-1), [(2, 3)]),
        "concatenate": (lambda x, y: engine.concatenate([x, y, x], axis=0), [(1, 3), (2, 3)]),
        "stack": (lambda x, y: engine.stack([x, y], axis=-1).tanh(), [(2, 3), (2, 3)]),
        "var": (lambda x: x.var(axis=0, keepdims=True), [(4, 3)]),
        "std": (lambda x: x.std(axis=(0, 2)), [(2, 3, 2)]),
        "mse_loss": (lambda x, t: F.mse_loss(x, t), [(3, 2), (3, 2)]),
        "mse_loss, none": (lambda x, t: F.mse_loss(x, t, reduction="none"), [(3, 2), (3, 2)]),
    }


@pytest.mark.parametrize("name", sorted(_programs()))
def test_gradcheck_at_rtol_1e_7(name):
    f, shapes = _programs()[name]
    rng = np.random.default_rng(len(name))
    assert tight_gradcheck(f, [Tensor(smooth(rng, s)) for s in shapes])


# -- the engine's machinery holds for the new operations ----------------------------------


def _each_new_op(x):
    """Each new operation on x, a (2, 3) Tensor, as a (name, result) pair."""
    return [("cos", x.cos()), ("min", x.min(axis=0)), ("clip", x.clip(-0.5, 0.5)),
            ("squeeze", x.unsqueeze(0).squeeze(0)), ("unsqueeze", x.unsqueeze(1)),
            ("var", x.var()), ("std", x.std(axis=1)), ("maximum", engine.maximum(x, 0.1)),
            ("minimum", engine.minimum(0.1, x)), ("where", engine.where(x.data > 0, x, 0.0)),
            ("concatenate", engine.concatenate([x, x])), ("stack", engine.stack([x, x])),
            ("mse_loss", F.mse_loss(x, np.zeros((2, 3))))]


def test_new_operations_record_nothing_under_no_grad():
    x = Tensor(np.linspace(-1, 1, 6).reshape(2, 3))
    with engine.no_grad():
        for name, y in _each_new_op(x):
            assert not y.requires_grad and y.parents == () and y.backward_fn is None, name
            assert y.data.dtype == np.float64, name


@pytest.mark.parametrize("index", range(13))
def test_an_in_place_change_after_the_forward_pass_is_refused_or_harmless(index):
    """An operation whose closure keeps the input refuses the sweep; one whose closure keeps
    only what it computed in the forward pass (clip's mask, var's deviations, mse_loss's
    differences) or only shapes gives the gradient of the forward pass, unchanged."""
    start = np.linspace(-1, 1, 6).reshape(2, 3) + 0.05
    reference = Tensor(start)
    name, y = _each_new_op(reference)[index]
    y.sum().backward()
    x = Tensor(start)
    name, y = _each_new_op(x)[index]
    x.data[0, 0] = 3.0  # in place, after the forward pass
    if name in ("clip", "var", "std", "squeeze", "unsqueeze", "concatenate", "stack", "where",
                "mse_loss"):
        y.sum().backward()
        np.testing.assert_array_equal(x.grad, reference.grad)
    else:
        with pytest.raises(RuntimeError, match=f"saved by '{name}' was changed in place"):
            y.sum().backward()


def test_a_second_backward_through_a_new_operation_names_the_freed_graph():
    x = Tensor([0.5, 1.0])
    y = x.cos().sum()
    y.backward()
    with pytest.raises(RuntimeError, match="freed graph"):
        y.backward()


# -- bad input gets a clear error --------------------------------------------------------


@pytest.mark.parametrize("call, error, words", [
    (lambda: Tensor([1.0, 2.0]).item(), ValueError, r"item: a tensor of shape \(2,\) has 2"),
    (lambda: Tensor(np.zeros((2, 0))).item(), ValueError, r"has 0 entries"),
    (lambda: engine.where(Tensor([1.0]), 1.0, 2.0), TypeError, "condition must be booleans, "
     "got a Tensor"),
    (lambda: engine.where(np.array([1, 0]), Tensor([1.0, 2.0]), 0.0), TypeError,
     "got dtype int64"),
    (lambda: engine.where(np.ones(3, bool), Tensor(np.ones(2)), 0.0), ValueError,
     r"where: shapes \(3,\) and \(2,\) cannot be broadcast"),
    (lambda: Tensor([1.0]).clip(), ValueError, "clip: give a bound"),
    (lambda: Tensor([1.0]).clip(Tensor([0.0])), TypeError, "the bounds are constants"),
    (lambda: Tensor(np.ones(3)).clip(np.zeros(2)), ValueError,
     r"clip: shapes \(3,\) and \(2,\) cannot be broadcast"),
    (lambda: Tensor(np.ones((2, 3))).squeeze(2), ValueError,
     r"squeeze: axis 2 does not fit a tensor of shape \(2, 3\)"),
    (lambda: Tensor(np.ones((2, 3))).unsqueeze(3), ValueError,
     r"unsqueeze: axis 3 does not fit a tensor of shape \(2, 3\): the new axis goes at a "
     r"position from -3 to 2"),
    (lambda: engine.concatenate([Tensor(np.ones((2, 3))), Tensor(np.ones((3, 2)))]),
     ValueError, r"concatenate: shapes \(2, 3\) and \(3, 2\) differ on an axis other than "
     "axis 0"),
    (lambda: engine.concatenate([Tensor(np.ones(2)), Tensor(np.ones((1, 2)))]), ValueError,
     r"shapes \(2,\) and \(1, 2\)"),
    (lambda: engine.concatenate([Tensor(1.0)]), ValueError, r"shape \(\) has no axis"),
    (lambda: engine.concatenate(Tensor(np.ones(2))), TypeError, "a list or a tuple of tensors, "
     "got Tensor"),
    (lambda: engine.stack([]), ValueError, "stack: no tensors to join"),
    (lambda: engine.stack([Tensor(np.ones(2)), Tensor(np.ones(3))]), ValueError,
     r"stack: shapes \(2,\) and \(3,\) differ"),
    (lambda: engine.stack([Tensor(np.ones(2))], axis=2), ValueError, "from -2 to 1"),
    (lambda: F.mse_loss(Tensor(np.ones((4, 1))), np.ones(4)), ValueError,
     r"input of shape \(4, 1\) and target of shape \(4,\)"),
    (lambda: F.mse_loss(np.ones(2), np.ones(2)), TypeError, "input must be a Tensor"),
    (lambda: F.mse_loss(Tensor(np.ones(2)), np.ones(2), reduction="avg"), ValueError,
     "reduction must be"),
    (lambda: Tensor(np.ones(2)).var(axis=1), ValueError, "var: axis 1 does not fit"),
])
def test_bad_input_gets_a_message_naming_the_problem(call, error, words):
    with pytest.raises(error, match=words):
        call()


@pytest.mark.parametrize("name, call", [
    ("concatenate", lambda t: np.concatenate([t, t])),
    ("stack", lambda t: np.stack([t, t])),
    ("where", lambda t: np.where(t.data > 0, t, 0.0)),
])
def test_numpys_own_function_names_the_engines(name, call):
    with pytest.raises(TypeError, match=rf"np.{name} does not take a Tensor: .* Use "
                                        rf"engine.{name}, which records it"):
        call(Tensor([1.0, -1.0]))


# -- random programs with the new operations ----------------------------------------------


UNARY = ["cos", "tanh", "sin", "clip", "squeeze-unsqueeze", "min", "var", "std"]
BINARY = ["maximum", "minimum", "where", "concatenate", "stack", "mul", "add", "mse"]


def make_program(seed):
    """A random program on three inputs of shape (2, 3), as a list of steps; each step
    reads earlier values (by index) and makes one new value of shape (2, 3)."""
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(int(rng.integers(3, 8))):
        kind = rng.choice(["unary", "binary"])
        op = str(rng.choice(UNARY if kind == "unary" else BINARY))
        n = 3 + len(steps)  # values so far
        args = [int(i) for i in rng.integers(0, n, size=1 if kind == "unary" else 2)]
        mask = rng.random((2, 3)) > 0.5
        steps.append((op, args, mask))
    return steps


def run(steps, inputs, lib):
    """The program on `lib` ("engine" or "torch"): returns the scalar loss."""
    values = list(inputs)
    E = lib == "engine"
    for op, args, mask in steps:
        x = values[args[0]]
        y = values[args[-1]]
        if op in ("cos", "tanh", "sin"):
            z = getattr(x, op)()
        elif op == "clip":
            z = x.clip(-0.6, 0.7) if E else torch.clamp(x, -0.6, 0.7)
        elif op == "squeeze-unsqueeze":
            z = x.unsqueeze(1).squeeze(1) * 0.9
        elif op == "min":  # min over axis 1, broadcast back
            z = x - (x.min(axis=1, keepdims=True) if E else torch.amin(x, dim=1, keepdim=True))
        elif op in ("var", "std"):
            z = x * (getattr(x, op)(axis=0, keepdims=True) if E else
                     getattr(torch, op)(x, dim=0, keepdim=True)) * 0.5
        elif op in ("maximum", "minimum"):
            z = (getattr(engine, op) if E else getattr(torch, op))(x, y)
        elif op == "where":
            z = engine.where(mask, x, y) if E else torch.where(torch.tensor(mask), x, y)
        elif op == "concatenate":
            z = (engine.concatenate([x, y], axis=1) if E else torch.cat([x, y], dim=1))
            z = z[:, 1:4] + z[:, 2:5]
        elif op == "stack":
            z = engine.stack([x, y], axis=2).sum(axis=2) if E else \
                torch.stack([x, y], dim=2).sum(dim=2)
        elif op == "mul":
            z = x * y
        elif op == "add":
            z = x + y
        else:  # "mse": a scalar, broadcast back
            loss = F.mse_loss(x, y) if E else torch.nn.functional.mse_loss(x, y)
            z = x * loss
        values.append(z)
    return (values[-1] * values[-1]).sum()


def test_the_generator_uses_every_new_operation():
    used = {op for seed in range(200) for op, _, _ in make_program(seed)}
    assert used == set(UNARY) | set(BINARY)


@pytest.mark.parametrize("block", range(4))
def test_engine_matches_pytorch_on_random_programs_with_the_new_operations(block):
    for seed in range(50 * block, 50 * block + 50):
        steps = make_program(seed)
        rng = np.random.default_rng(10_000 + seed)
        inputs = [rng.normal(size=(2, 3)) for _ in range(3)]
        mine = [Tensor(a) for a in inputs]
        theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
        y, y_t = run(steps, mine, "engine"), run(steps, theirs, "torch")
        assert_same(y.data, y_t, f"program {seed}: value")
        y.backward()
        y_t.backward()
        for k, (leaf, leaf_t) in enumerate(zip(mine, theirs)):
            if leaf_t.grad is None:  # no VJP reached it: None in both (chapter fast)
                assert leaf.grad is None, f"program {seed}: grad of input {k}"
            else:
                assert_same(leaf.grad, leaf_t.grad, f"program {seed}: grad of input {k}")
