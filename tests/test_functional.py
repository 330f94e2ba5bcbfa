"""Chapter `losses`: stable logsumexp, softmax, log-softmax and cross-entropy (PyTorch semantics)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

from engine import Tensor
from engine.functional import cross_entropy, log_softmax, logsumexp, nll_loss, softmax
from support import strategies
from support.checks import gradcheck  # engine.gradcheck at rtol 1e-7

pytestmark = pytest.mark.chapter("losses")

FAST = strategies.examples(20)


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def logits_and_axis():
    """The shared logits (ties included) as a fresh Tensor, and an axis; not shifted far
    from 0, since the textbook formulas below overflow there."""
    return strategies.logits_and_axis(far=False).map(lambda case: (Tensor(case[0]), case[1]))


@pytest.mark.parametrize("name", ["logsumexp", "log_softmax", "softmax"])
@FAST
@given(case=logits_and_axis())
def test_softmax_family_passes_gradcheck_on_any_axis(name, case):
    x, axis = case
    f = {"logsumexp": logsumexp, "log_softmax": log_softmax, "softmax": softmax}[name]
    assert gradcheck(lambda x: f(x, axis=axis), [x])


@FAST
@given(case=logits_and_axis())
def test_values_match_the_textbook_formulas(case):
    x, axis = case
    lse = np.log(np.exp(x.data).sum(axis=axis))
    # atol: of one entry x, the textbook log(exp(x)) rounds a tiny x to 0; the engine keeps x
    np.testing.assert_allclose(logsumexp(x, axis=axis).data, lse, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(logsumexp(x, axis=axis, keepdims=True).data,
                               np.expand_dims(lse, axis), rtol=1e-12, atol=1e-15)
    p = softmax(x, axis=axis).data
    np.testing.assert_allclose(p, np.exp(x.data) / np.exp(x.data).sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(p.sum(axis=axis), 1.0)


def test_logits_of_1000_neither_overflow_nor_warn():
    x = Tensor([1000.0, 999.0, 990.0])
    p = softmax(x)
    assert np.all(np.isfinite(p.data))
    np.testing.assert_allclose(p.data, softmax(x - 1000.0).data)
    assert np.isclose(logsumexp(x).data, 1000.0 + np.log(1 + np.exp(-1) + np.exp(-10)))
    loss = cross_entropy(Tensor([[1000.0, 0.0, -1000.0]]), [1])
    loss.backward()
    assert np.isclose(loss.data, 1000.0)


def classification():
    """The shared logits (N, C) as a fresh Tensor, and targets (none ignored)."""
    return strategies.classification(ignore=False).map(lambda case: (Tensor(case[0]), case[1]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@FAST
@given(case=classification())
def test_cross_entropy_passes_gradcheck_and_equals_the_unfused_loss(reduction, case):
    logits, targets = case
    assert gradcheck(lambda z: cross_entropy(z, targets, reduction=reduction), [logits])
    fused = cross_entropy(logits, targets, reduction=reduction)
    unfused = nll_loss(log_softmax(logits, axis=1), targets, reduction=reduction)
    np.testing.assert_allclose(fused.data, unfused.data, rtol=1e-12, atol=1e-14)
    naive = -np.log(np.exp(logits.data) / np.exp(logits.data).sum(axis=1, keepdims=True))
    per_row = naive[np.arange(len(targets)), targets]
    expected = {"mean": per_row.mean(), "sum": per_row.sum(), "none": per_row}[reduction]
    np.testing.assert_allclose(fused.data, expected, rtol=1e-10)


@FAST
@given(case=classification())
def test_the_gradient_of_the_summed_loss_is_softmax_minus_onehot(case):
    logits, targets = case
    cross_entropy(logits, targets, reduction="sum").backward()
    onehot = np.eye(logits.shape[1])[targets]
    np.testing.assert_allclose(logits.grad, softmax(logits, axis=1).data - onehot, atol=1e-15)


def test_ignore_index_numbers_by_hand():
    # rows 0 and 2 are kept: losses log(2) and log(1 + e^-2 ... ) computed below
    logits = Tensor([[0.0, 0.0], [5.0, 1.0], [2.0, 0.0]])
    targets = np.array([1, -100, 0])
    row = np.array([np.log(2.0), 0.0, np.log(1.0 + np.exp(-2.0))])
    none = cross_entropy(logits, targets, reduction="none", ignore_index=-100)
    np.testing.assert_allclose(none.data, row)
    total = cross_entropy(logits, targets, reduction="sum", ignore_index=-100)
    np.testing.assert_allclose(total.data, row.sum())
    mean = cross_entropy(logits, targets, reduction="mean", ignore_index=-100)
    np.testing.assert_allclose(mean.data, row.sum() / 2)  # over the 2 kept targets, not 3
    mean.backward()
    np.testing.assert_array_equal(logits.grad[1], [0.0, 0.0])  # the ignored row
    np.testing.assert_allclose(logits.grad[0], [0.25, -0.25])  # (softmax - onehot) / 2
    assert gradcheck(lambda z: cross_entropy(z, targets, ignore_index=-100), [logits])


@pytest.mark.parametrize("loss", [cross_entropy, nll_loss])
def test_all_targets_ignored_gives_nan_mean_and_zero_gradient_like_torch(loss):
    logits = Tensor([[1.0, 2.0], [3.0, 4.0]])
    y = loss(logits, [-1, -1], ignore_index=-1)
    assert np.isnan(y.data)
    y.backward()
    np.testing.assert_array_equal(logits.grad, np.zeros((2, 2)))
    assert loss(logits, [-1, -1], reduction="sum", ignore_index=-1).data == 0.0


@pytest.mark.parametrize("loss", [cross_entropy, nll_loss])
def test_bad_targets_raise_naming_the_problem(loss):
    logits = Tensor(np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"target 4 at row 1 is out of range for 4 classes"):
        loss(logits, [0, 4, 1])
    with pytest.raises(ValueError, match=r"target -1 at row 2 is out of range"):
        loss(logits, [0, 1, -1])
    with pytest.raises(ValueError, match=r"targets of shape \(2,\) for logits of shape \(3, 4\)"):
        loss(logits, [0, 1])
    with pytest.raises(TypeError, match="class indices"):
        loss(logits, [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match=r"logits must have shape \(N, C\)"):
        loss(Tensor(np.zeros(4)), [1])
    with pytest.raises(ValueError, match="reduction must be"):
        loss(logits, [0, 1, 2], reduction="average")


@FAST
@given(case=classification(), mask_seed=st.integers(0, 2**16))
def test_ignored_rows_get_no_gradient_and_mean_counts_kept_rows_only(case, mask_seed):
    logits, targets = case
    ignored = np.random.default_rng(mask_seed).random(len(targets)) < 0.4
    marked = np.where(ignored, -100, targets)
    per_row = cross_entropy(logits, marked, reduction="none", ignore_index=-100).data
    assert np.all(per_row[ignored] == 0.0)
    mean = cross_entropy(logits, marked, ignore_index=-100)
    if ignored.all():
        assert np.isnan(mean.data)
    else:
        np.testing.assert_allclose(mean.data, per_row[~ignored].mean(), rtol=1e-12)
    mean.backward()
    assert np.all(logits.grad[ignored] == 0.0)
    if not ignored.all():
        assert gradcheck(lambda z: cross_entropy(z, marked, ignore_index=-100), [logits])


def _loss_and_grad(logits, targets, **options):
    x = Tensor(logits)
    loss = cross_entropy(x, targets, **options)
    loss.backward()
    return loss.data, x.grad


@FAST
@given(case=strategies.classification(ignore=False), scale=st.sampled_from([1e-3, 1.0, 300.0]))
@pytest.mark.chapter("fast")  # Step 8: the usual case in fewer calls, bit for bit the same
def test_the_loss_when_every_row_counts_is_the_general_loss_bit_for_bit(case, scale):
    from engine import functional

    logits, targets, _ = case
    fast = _loss_and_grad(logits * scale, targets)
    assert functional._every_row_counts(Tensor(logits), targets, -100)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(functional, "_every_row_counts", lambda *args: False)
        general = _loss_and_grad(logits * scale, targets)
    for a, b in zip(fast, general):
        assert a.tobytes() == b.tobytes()


@pytest.mark.chapter("fast")
def test_the_loss_goes_the_general_way_whenever_a_row_might_not_count():
    from engine.functional import _every_row_counts

    x = Tensor(np.zeros((2, 3)))
    assert _every_row_counts(x, np.array([0, 2]), -100)
    assert _every_row_counts(x, np.array([0, 2]), None)
    assert not _every_row_counts(x, np.array([0, 2]), 1)  # a class: rows could be ignored
    assert not _every_row_counts(x, [0, 2], -100)  # a list: the general checks convert it
    assert not _every_row_counts(x, np.array([0.0, 2.0]), -100)  # floats: an error there
    assert not _every_row_counts(x, np.array([0, 3]), -100)  # out of range: an error there
    assert not _every_row_counts(x, np.array([0]), -100)  # one target for two rows
    assert not _every_row_counts(Tensor(np.zeros((0, 3))), np.array([], int), -100)


@pytest.mark.chapter("errors")  # the general way refuses non-finite logits, naming them
def test_non_finite_logits_go_the_general_way():
    from engine.functional import _every_row_counts

    assert not _every_row_counts(Tensor([[0.0, np.inf, 1.0]]), np.array([0]), -100)
    with pytest.raises(ValueError, match="non-finite"):
        cross_entropy(Tensor([[0.0, np.nan, 1.0]]), np.array([0]))
