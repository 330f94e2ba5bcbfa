"""engine.Var: every operation against central differences, graph bookkeeping, a deep chain."""

import math

import pytest
from hypothesis import given

from engine import Var, numerical_grad
from support.checks import RTOL
from support.strategies import SOME, scalars

pytestmark = pytest.mark.chapter("scalar-engine")

# (name, function of a Var, a Dual or a float, domain of the input)
UNARY = [
    ("exp", lambda x: math.exp(x) if isinstance(x, float) else x.exp(), (-3, 3)),
    ("log", lambda x: math.log(x) if isinstance(x, float) else x.log(), (0.1, 5)),
    ("sin", lambda x: math.sin(x) if isinstance(x, float) else x.sin(), (-4, 4)),
    ("cos", lambda x: math.cos(x) if isinstance(x, float) else x.cos(), (-4, 4)),
    ("tanh", lambda x: math.tanh(x) if isinstance(x, float) else x.tanh(), (-3, 3)),
    ("sigmoid", lambda x: 1 / (1 + math.exp(-x)) if isinstance(x, float) else x.sigmoid(), (-5, 5)),
    ("relu", lambda x: max(x, 0.0) if isinstance(x, float) else x.relu(), (-3, 3)),
    ("neg", lambda x: -x, (-3, 3)),
    ("pow3", lambda x: x**3, (-2, 2)),
    ("pow-half", lambda x: x**-0.5, (0.2, 4)),
    ("rsub", lambda x: 2.5 - x, (-3, 3)),
    ("rtruediv", lambda x: 2.5 / x, (0.3, 4)),
    ("radd", lambda x: 2.5 + x, (-3, 3)),
    ("rmul", lambda x: 2.5 * x, (-3, 3)),
    ("rpow", lambda x: 2.5**x, (-2, 2)),
]

BINARY = [
    ("+", lambda a, b: a + b, (-3, 3), (-3, 3)),
    ("-", lambda a, b: a - b, (-3, 3), (-3, 3)),
    ("*", lambda a, b: a * b, (-3, 3), (-3, 3)),
    ("/", lambda a, b: a / b, (-3, 3), (0.3, 3)),
    ("Var**Var", lambda a, b: a**b, (0.2, 3), (-2, 2)),
]


def grad_of(fn, *values):
    xs = [Var(v) for v in values]
    y = fn(*xs)
    y.backward()
    return y.value, [x.grad for x in xs]


def close(a, b, tol=RTOL):
    """Within `tol` relative to the larger of |a|, |b| and 1 (float64 central differences
    are good to about 1e-10)."""
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def expected_slope(name, fn, x):
    """Central differences, except at and near relu's kink, where they straddle it: there
    the slope itself, 0 at 0 as in PyTorch."""
    if name == "relu" and abs(x) < 1e-4:
        return 1.0 if x > 0 else 0.0
    return numerical_grad(fn, x)


@pytest.mark.parametrize("name, fn, domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_against_central_differences(name, fn, domain):
    @SOME
    @given(scalars(*domain))
    def check(x):
        value, (grad,) = grad_of(fn, x)
        assert close(value, fn(x), 1e-12)
        assert close(grad, expected_slope(name, fn, x)), (x, grad)

    check()


@pytest.mark.parametrize("name, fn, da, db", BINARY, ids=[b[0] for b in BINARY])
def test_binary_against_central_differences(name, fn, da, db):
    @SOME
    @given(scalars(*da), scalars(*db))
    def check(a, b):
        value, (a_grad, b_grad) = grad_of(fn, a, b)
        assert close(value, fn(a, b), 1e-12)
        assert close(a_grad, numerical_grad(lambda t: fn(t, b), a))
        assert close(b_grad, numerical_grad(lambda t: fn(a, t), b))

    check()


def test_running_program():
    x1, x2 = Var(2.0), Var(5.0)
    y = x1.log() + x1 * x2 - x2.sin()
    y.backward()
    assert round(y.value, 3) == 11.652
    assert round(x1.grad, 3) == 5.5
    assert round(x2.grad, 3) == 1.716
    assert len(y.topo_order()) == 7


def test_shared_nodes_visited_once():
    x = Var(1.5)
    a = x * x          # x reached twice through one node
    b = a + a          # a reached twice
    y = b * a
    order = y.topo_order()
    assert len(order) == len({id(n) for n in order}) == 4
    for node in order:  # parents come first
        for p in node.parents:
            assert order.index(p) < order.index(node)
    y.backward()
    # y = 2 x^4, dy/dx = 8 x^3
    assert close(x.grad, 8 * 1.5**3, 1e-12)


def test_leaves_accumulate_results_reset():
    x = Var(3.0)
    h = x * x
    y = h + 1.0
    y.backward()
    assert x.grad == 6.0 and h.grad == 1.0
    y.backward()
    assert x.grad == 12.0  # leaves accumulate across calls
    assert h.grad == 1.0   # results start again from zero


def test_constants_are_not_nodes():
    x = Var(2.0)
    y = 3.0 * x + 1.0
    assert len(y.topo_order()) == 3  # x, the product, the sum
    y.backward()
    assert x.grad == 3.0


def test_no_grad_inputs_record_nothing():
    a = Var(1.0, requires_grad=False)
    y = a.exp() * 2.0
    assert y.parents == () and y.backward_fn is None


def test_deep_chain_100k():
    x = Var(0.5)
    y = x
    for _ in range(100_000):
        y = y * 1.0 + 0.0
    y.backward()
    assert x.grad == 1.0
    assert len(y.topo_order()) == 200_001
    del y  # freeing a deep graph must not overflow the C stack either


def test_works_with_draw_graph():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from engine.figures import draw_graph

    x1, x2 = Var(2.0), Var(5.0)
    y = x1.log() + x1 * x2 - x2.sin()
    y.backward()
    fig, ax = plt.subplots()
    position = draw_graph(ax, y, names={x1: "x1", x2: "x2"})
    assert len(position) == 7
    plt.close(fig)
