"""engine.Tensor (chapter `tensors`): every VJP against central differences, the sweep, accumulation."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from engine import Tensor
from support.checks import RTOL, ATOL, central_differences
from support.strategies import SOME, shapes, values

pytestmark = pytest.mark.chapter("tensors")


def engine_grad(op, x):
    t = Tensor(x)
    op(t).backward()
    return t.grad


def vectors(lo, hi):
    """1-d arrays of 0 to 5 entries in [lo, hi], ties and exact zeros included."""
    return values(shapes(min_dims=1, max_dims=1, max_side=5, empty=True), lo, hi)


# (name, engine op, the same op in NumPy, its domain)
UNARY = [
    ("neg", lambda t: -t, lambda x: -x, (-5, 5)),
    ("exp", lambda t: t.exp(), np.exp, (-5, 5)),
    ("log", lambda t: t.log(), np.log, (0.1, 10)),
    ("sin", lambda t: t.sin(), np.sin, (-5, 5)),
    ("tanh", lambda t: t.tanh(), np.tanh, (-4, 4)),
    ("sigmoid", lambda t: t.sigmoid(), lambda x: 1 / (1 + np.exp(-x)), (-6, 6)),
    ("pow3", lambda t: t**3, lambda x: x**3, (-3, 3)),
    ("pow-half", lambda t: t**0.5, np.sqrt, (0.1, 10)),
    ("pow-neg", lambda t: t**-2, lambda x: x**-2.0, (0.5, 4)),
    ("number-minus", lambda t: 2.0 - t, lambda x: 2.0 - x, (-5, 5)),
    ("number-times", lambda t: 3 * t + 1, lambda x: 3 * x + 1, (-5, 5)),
]


@pytest.mark.parametrize("name, op, np_op, domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_vjp_matches_central_differences(name, op, np_op, domain):
    @SOME
    @given(vectors(*domain))
    def check(x):
        np.testing.assert_allclose(op(Tensor(x)).data, np_op(x), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            engine_grad(op, x), central_differences(np_op, x), rtol=RTOL, atol=ATOL
        )

    check()


@SOME
@given(vectors(-4, 4))
def test_relu_vjp_everywhere_including_its_kink(x):
    """The slope is 1 above 0 and 0 below and at 0 (PyTorch's choice); central
    differences agree wherever they do not straddle the kink."""
    grad = engine_grad(lambda t: t.relu(), x)
    np.testing.assert_array_equal(grad, (x > 0).astype(float))
    away = np.abs(x) > 1e-5
    np.testing.assert_allclose(
        grad[away], central_differences(lambda v: np.maximum(v, 0), x)[away], atol=ATOL)


def test_relu_slope_is_zero_at_zero_like_pytorch():
    x = Tensor([-1.0, 0.0, 2.0])
    x.relu().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]


BINARY = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
]


@pytest.mark.parametrize("name, op", BINARY, ids=[b[0] for b in BINARY])
def test_binary_vjps_match_central_differences(name, op):
    @SOME
    @given(st.integers(0, 5).flatmap(lambda n: st.tuples(values(n, -5, 5), values(n, -5, 5))))
    def check(pair):
        a, b = pair
        ta, tb = Tensor(a), Tensor(b)
        op(ta, tb).backward()
        np.testing.assert_allclose(ta.grad, central_differences(lambda v: op(v, b), a),
                                   rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(tb.grad, central_differences(lambda v: op(a, v), b),
                                   rtol=RTOL, atol=ATOL)

    check()


def running_program():
    x1 = Tensor([2.0, 1.0, 0.5])
    x2 = Tensor([5.0, 0.0, 2.0])
    y = x1.log() + x1 * x2 - x2.sin()
    return x1, x2, y


def test_running_program_numbers_of_the_book():
    x1, x2, y = running_program()
    assert len(y.topo_order()) == 7  # counted before backward frees the graph
    y.backward()
    assert np.round(y.data, 3).tolist() == [11.652, 0.0, -0.602]
    assert np.round(x1.grad, 3).tolist() == [5.5, 1.0, 4.0]
    assert np.round(x2.grad, 3).tolist() == [1.716, 0.0, 0.916]


def test_topo_order_puts_parents_first_and_visits_shared_nodes_once():
    x = Tensor([1.0])
    a = x * x  # x is a parent twice
    b = a.exp()
    y = a + b  # a is shared by two paths
    order = y.topo_order()
    assert len(order) == len({id(n) for n in order}) == 4
    position = {id(n): i for i, n in enumerate(order)}
    for node in order:
        for parent in node.parents:
            assert position[id(parent)] < position[id(node)]
    y.backward()
    assert x.grad[0] == pytest.approx(2 * (1 + np.e))  # the book's 7.44


def test_a_chain_100000_operations_deep_needs_no_recursion():
    x = Tensor([1.0])
    y = x
    for _ in range(100_000):
        y = y * 1.0
    assert len(y.topo_order()) == 100_001
    y.backward()
    assert x.grad[0] == 1.0


@pytest.mark.chapter("tensors", only=True)
def test_leaves_accumulate_across_backward_calls_and_the_graph_stays():
    x = Tensor([1.0, -2.0, 0.5])
    y = x**3
    y.backward()  # the engine as of `tensors` keeps its graph (chapter `memory` frees it)
    y.backward()
    np.testing.assert_allclose(x.grad, [6.0, 24.0, 1.5])


@pytest.mark.chapter("tensors", only=True)
def test_two_different_shapes_raise_before_broadcasting_exists():
    # chapter `tensors` says so, and chapter `shapes` lifts it; a number is still fine
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(3,\) differ"):
        Tensor(np.ones((2, 3))) * Tensor(np.ones(3))
    assert (Tensor(np.ones((2, 3))) * 2.0).data.tolist() == [[2.0] * 3] * 2


@pytest.mark.chapter("memory")  # retain_graph
def test_leaves_accumulate_across_backward_calls():
    x = Tensor([1.0, -2.0, 0.5])
    y = x**3
    y.backward(retain_graph=True)  # keep the graph for a second sweep, as in PyTorch
    np.testing.assert_allclose(x.grad, [3.0, 12.0, 0.75])
    y.backward()  # results are reset, leaves are not
    np.testing.assert_allclose(x.grad, [6.0, 24.0, 1.5])


def test_seeding_with_ones_gives_the_gradient_of_the_sum():
    """backward() seeds ones: the sum of the unit seeds e_j, each of which gives row j of
    the Jacobian of every input. The program is elementwise, so each row is one entry."""
    x1, x2, y = running_program()
    y.backward()
    rows = {0: [], 1: []}
    for j in range(3):
        a1, a2, z = running_program()
        seed = np.zeros(3)
        seed[j] = 1.0
        z.backward(gradient=seed)
        rows[0].append(a1.grad.copy())
        rows[1].append(a2.grad.copy())
    for k, ones_grad in enumerate([x1.grad, x2.grad]):
        jacobian = np.array(rows[k])
        np.testing.assert_array_equal(jacobian, np.diag(np.diag(jacobian)),
                                      err_msg=f"input {k}: an elementwise program's rows")
        np.testing.assert_array_equal(jacobian.sum(axis=0), ones_grad, err_msg=f"input {k}")
    np.testing.assert_allclose(x2.grad, [1.716, 0.0, 0.916], atol=5e-4)  # x1 - cos x2


def test_numbers_are_constants_not_nodes():
    x = Tensor([1.0, 2.0])
    y = 2 * x - 1
    assert len(y.topo_order()) == 3  # x, x*2, -1
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_an_array_on_the_left_gives_a_tensor_not_an_array_of_tensors():
    """`array * x` must reach Tensor.__rmul__ (chapter `tensors` sets __array_ufunc__ = None);
    without it NumPy loops over the array and returns an object array of tensors."""
    x = Tensor([1.0, 2.0])
    y = np.array([2.0, 3.0]) * x
    assert isinstance(y, Tensor), type(y)
    assert y.data.tolist() == [2.0, 6.0]
    y.backward()
    assert x.grad.tolist() == [2.0, 3.0]


def test_shapes_numpy_cannot_broadcast_raise_a_value_error_naming_both():
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        Tensor([1.0, 2.0, 3.0]) + Tensor([1.0, 2.0])


@pytest.mark.chapter("errors")  # backward checks its seed
def test_a_seed_of_the_wrong_shape_is_refused():
    y = Tensor([1.0, 2.0]) * 2
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        y.backward(gradient=np.ones(3))


@pytest.mark.chapter("tensors", only=True)  # chapter fast makes it at the first VJP
def test_a_leaf_grad_starts_at_zeros_in_chapter_tensors():
    x = Tensor([1.0, 2.0])
    assert x.grad.tolist() == [0.0, 0.0]


@pytest.mark.chapter("fast")  # grads are made by the first VJP, as in PyTorch
def test_a_result_has_no_grad_until_backward_makes_one():
    x = Tensor([1.0, 2.0])
    y = x * 3.0
    assert y.grad is None and x.grad is None
    z = y + y  # `+` hands the same y_bar to both of its parents
    z.backward(retain_graph=True)
    assert y.grad.tolist() == [2.0, 2.0] and x.grad.tolist() == [6.0, 6.0]
    a, b = Tensor([1.0]), Tensor([2.0])
    s = a * 1.0 + b * 1.0
    s.backward()
    a.grad[0] = 100.0  # grads never share memory, so this changes a alone
    assert b.grad.tolist() == [1.0]


@pytest.mark.chapter("fast")  # Step 7: the seed takes no memory
def test_the_seed_of_ones_takes_no_memory_and_a_leaf_root_gets_its_own_grad():
    import tracemalloc

    from engine.tensor import seed_ones

    tracemalloc.start()
    seed = seed_ones((100_000,))
    seeded = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seeded < 1_000, f"the seed allocated {seeded} bytes"
    assert seed.tolist() == [1.0] * 100_000 and not seed.flags.writeable
    x = Tensor(np.arange(1.0, 100_001.0))
    y = x * 2.0
    y.backward()
    assert y.grad.strides == (0,) and not y.grad.flags.writeable  # the root keeps the seed
    assert x.grad.tolist() == [2.0] * 100_000
    x.grad += 1.0  # a leaf's grad is its own, writable array
    leaf = Tensor([1.0, 2.0])
    leaf.backward()  # the root is a leaf: the seed is copied into a grad of its own
    assert leaf.grad.tolist() == [1.0, 1.0] and leaf.grad.flags.writeable
    leaf.grad[0] = 5.0
    other = Tensor([3.0])
    other.backward()
    assert other.grad.tolist() == [1.0], "two leaves' seeds must not share memory"


@pytest.mark.chapter("training")  # zero_grad() sets None
def test_a_leaf_whose_grad_was_set_to_none_starts_again():
    x = Tensor([1.0, 2.0])
    x.grad = None
    (x * x).backward()
    assert x.grad.tolist() == [2.0, 4.0]
    x.grad[:] = 0.0  # a writable array of its own, not a view of a VJP
