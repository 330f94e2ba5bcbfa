"""engine.Dual: every operation's tangent against central differences."""

import numpy as np
import pytest
from hypothesis import given

from engine import Dual, numerical_grad
from support.checks import RTOL
from support.strategies import SOME, scalars
from test_scalar import BINARY, UNARY, close, expected_slope

pytestmark = pytest.mark.chapter("forward-mode")


@pytest.mark.parametrize("name, fn, domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_tangent(name, fn, domain):
    @SOME
    @given(scalars(*domain))
    def check(x):
        y = fn(Dual(x, 1.0))
        assert close(y.value, fn(x), 1e-12)
        assert close(y.tangent, expected_slope(name, fn, x)), (x, y.tangent)

    check()


@pytest.mark.parametrize("name, fn, da, db", BINARY, ids=[b[0] for b in BINARY])
def test_binary_tangent(name, fn, da, db):
    @SOME
    @given(scalars(*da), scalars(*db), scalars(-2, 2), scalars(-2, 2))
    def check(a, b, ta, tb):
        y = fn(Dual(a, ta), Dual(b, tb))
        ga = numerical_grad(lambda t: fn(t, b), a)
        gb = numerical_grad(lambda t: fn(a, t), b)
        assert close(y.value, fn(a, b), 1e-12)
        # one sweep gives the directional derivative along (ta, tb)
        assert abs(y.tangent - (ga * ta + gb * tb)) <= RTOL * max(1.0, abs(ga), abs(gb))

    check()


def test_numbers_are_constants():
    y = 3.0 * Dual(2.0, 1.0) + 1.0
    assert y.value == 7.0 and y.tangent == 3.0


def test_vector_tangent_carries_several_directions():
    x1 = Dual(2.0, np.array([1.0, 0.0]))
    x2 = Dual(5.0, np.array([0.0, 1.0]))
    y = x1.log() + x1 * x2 - x2.sin()
    assert np.allclose(np.round(y.tangent, 3), [5.5, 1.716])


def test_deep_chain_is_cheap():
    y = Dual(0.5, 1.0)
    for _ in range(100_000):
        y = y * 1.0 + 0.0
    assert y.tangent == 1.0
