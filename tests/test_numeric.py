"""engine.numeric: central differences agree with known derivatives."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from engine import numerical_grad, numerical_jacobian
from support.strategies import examples, scalars

pytestmark = pytest.mark.chapter("chain-rule")


def test_float_input_returns_float():
    d = numerical_grad(lambda x: (3 * x + 1) ** 2, 1.0)
    assert isinstance(d, float)
    assert abs(d - 24.0) < 1e-8


def test_array_input_keeps_shape():
    x = np.array([[1.0, 2.0], [3.0, -1.0]])
    g = numerical_grad(lambda a: np.sum(a**3), x)
    assert g.shape == x.shape
    assert np.allclose(g, 3 * x**2, atol=1e-8)


def test_does_not_modify_input():
    x = np.array([1.0, 2.0])
    numerical_grad(lambda a: a @ a, x)
    assert np.array_equal(x, [1.0, 2.0])


def test_jacobian_of_worked_example():
    f = lambda x: np.array([x[0] * x[1], x[0] + x[1], x[1] ** 2])
    J = numerical_jacobian(f, [1.0, 2.0])
    assert J.shape == (3, 2)
    assert np.allclose(J, [[2, 1], [1, 1], [0, 4]], atol=1e-8)


@examples(50)
@given(scalars(-3, 3))
def test_sin_derivative(x):
    assert abs(numerical_grad(math.sin, x) - math.cos(x)) < 1e-8


@examples(30)
@given(st.lists(scalars(-2, 2), min_size=1, max_size=5))
def test_jacobian_of_linear_map_is_the_matrix(xs):
    x = np.array(xs, dtype=float)
    W = np.arange(2 * x.size, dtype=float).reshape(2, x.size) - 1.5
    assert np.allclose(numerical_jacobian(lambda v: W @ v, x), W, atol=1e-8)
