"""Chapter `gradcheck`: engine.gradcheck compares full Jacobians with central differences."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from engine import GradcheckError, Tensor, gradcheck
from engine.gradcheck import analytic_jacobians, numerical_jacobians
from support.strategies import examples, shapes

pytestmark = pytest.mark.chapter("gradcheck")


def test_defaults_are_torchs():
    defaults = gradcheck.__defaults__
    assert defaults == (1e-6, 1e-5, 1e-3)  # eps, atol, rtol
    assert issubclass(GradcheckError, RuntimeError)


def test_full_jacobians_of_a_linear_map_are_the_matrix():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4))
    x = Tensor(rng.normal(size=4))
    (j_analytic,) = analytic_jacobians(lambda x: Tensor(a, requires_grad=False) @ x, [x])
    (j_numeric,) = numerical_jacobians(lambda x: Tensor(a, requires_grad=False) @ x, [x])
    np.testing.assert_allclose(j_analytic, a, rtol=0, atol=0)
    np.testing.assert_allclose(j_numeric, a, atol=1e-9)


@examples(20)
@given(shape=shapes(empty=True), seed=st.integers(0, 2**16))
def test_a_correct_gradient_passes_and_the_inputs_are_left_as_they_were(shape, seed):
    x = Tensor(np.random.default_rng(seed).normal(size=shape))
    data, x.grad = x.data.copy(), np.full(shape, 7.0)
    assert gradcheck(lambda x: (x * x).tanh().sum(axis=0) if x.ndim else x.sin(), [x]) is True
    np.testing.assert_array_equal(x.data, data)
    np.testing.assert_array_equal(x.grad, np.full(shape, 7.0))


def wrong_square(x):
    """x * x with a backward that drops half of one path's product on entry 1."""
    y = x * x
    factor = np.ones(x.shape)
    factor.flat[1] = 0.5
    y.backward_fn = lambda y_bar: (x.data * y_bar * factor, x.data * y_bar)
    return y


def test_a_wrong_gradient_raises_naming_the_worst_entry():
    x = Tensor([1.0, 2.0, 3.0])
    with pytest.raises(GradcheckError) as info:
        gradcheck(wrong_square, [x])
    message = str(info.value)
    assert "input 0 at entry (1,) and output (1,)" in message
    assert "analytic 3," in message and "numerical 4" in message


def test_the_worst_entry_is_found_across_several_inputs():
    a, b = Tensor([1.0, 2.0]), Tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(GradcheckError, match=r"input 1 at entry \(0, 1\)"):
        gradcheck(lambda a, b: a + wrong_square(b), [a, b])


def test_relu_fails_at_its_kink_and_passes_away_from_it():
    with pytest.raises(GradcheckError, match="analytic 0, numerical 0.5"):
        gradcheck(lambda x: x.relu(), [Tensor([0.0, 1.0])])
    assert gradcheck(lambda x: x.relu(), [Tensor([-0.5, 1.0])])


def test_a_single_tensor_may_be_passed_without_a_list():
    assert gradcheck(lambda x: x.exp(), Tensor([0.1, 0.2]))


@pytest.mark.chapter("training")  # zero_grad() leaves grads at None
def test_gradcheck_after_zero_grad_keeps_the_grads_as_it_found_them():
    from engine.nn import Linear

    layer = Linear(2, 2, np.random.default_rng(0))
    layer.zero_grad()
    x = Tensor(np.ones((3, 2)), requires_grad=False)
    assert gradcheck(lambda w, b: (x @ w + b).tanh(), [layer.weight, layer.bias])
    assert layer.weight.grad is None and layer.bias.grad is None


def test_a_function_with_no_output_entries_has_nothing_to_check():
    """An empty output (x[:0], a sum over no rows kept as (0,)) has a 0-row Jacobian."""
    x = Tensor([1.0, 2.0, 3.0])
    assert gradcheck(lambda x: x[:0], [x]) is True
    assert gradcheck(lambda x: (x * 2.0)[np.array([], dtype=int)], x) is True


def test_pytorchs_defaults_pass_a_slope_off_by_a_twentieth_percent_and_float64_does_not():
    """Why the engine's own tests check at rtol 1e-7 (tests/support/checks.py): central
    differences are good to about 1e-10 in float64, the defaults allow 1e-3."""
    from support.checks import gradcheck as tight

    def off(x):
        y = x * x
        y.backward_fn = lambda y_bar: (x.data * y_bar * 1.0005, x.data * y_bar)
        return y

    x = Tensor([0.5, 1.0, 2.0])
    assert gradcheck(off, [x])
    with pytest.raises(GradcheckError, match="input 0"):
        tight(off, [x])
    assert tight(lambda x: x * x, [x])
