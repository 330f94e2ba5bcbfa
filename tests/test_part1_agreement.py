"""Var, Dual and Tensor agree on the running program f(x1, x2) = ln x1 + x1 x2 - sin x2."""

import numpy as np
from hypothesis import given

from engine import Dual, Tensor, Var, numerical_grad
from support.checks import ATOL, RTOL
from support.strategies import examples, scalars


def f(x1, x2):
    return x1.log() + x1 * x2 - x2.sin()


def f_numpy(x):
    return np.log(x[0]) + x[0] * x[1] - np.sin(x[1])


def test_running_program_at_2_5():
    v1, v2 = Var(2.0), Var(5.0)
    yv = f(v1, v2)
    yv.backward()

    t1, t2 = Tensor([2.0]), Tensor([5.0])
    yt = f(t1, t2)
    yt.backward()

    d_x1 = f(Dual(2.0, 1.0), Dual(5.0, 0.0))
    d_x2 = f(Dual(2.0, 0.0), Dual(5.0, 1.0))

    for value in (yv.value, yt.data[0], d_x1.value, d_x2.value):
        assert round(float(value), 3) == 11.652
    for g in (v1.grad, t1.grad[0], d_x1.tangent):
        assert round(float(g), 3) == 5.5
    for g in (v2.grad, t2.grad[0], d_x2.tangent):
        assert round(float(g), 3) == 1.716


@examples(50)
@given(scalars(0.2, 5), scalars(-5, 5))
def test_three_engines_agree_everywhere(a, b):
    v1, v2 = Var(a), Var(b)
    yv = f(v1, v2)
    yv.backward()
    t = Tensor([a]), Tensor([b])
    yt = f(*t)
    yt.backward()
    dual = [f(Dual(a, 1.0), Dual(b, 0.0)).tangent, f(Dual(a, 0.0), Dual(b, 1.0)).tangent]
    num = numerical_grad(f_numpy, np.array([a, b]))
    grads = np.array([[v1.grad, v2.grad], [t[0].grad[0], t[1].grad[0]], dual])
    assert np.allclose(grads, grads[0], rtol=1e-12, atol=1e-12)
    assert np.allclose(grads[0], num, rtol=RTOL, atol=ATOL)
