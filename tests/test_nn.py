"""engine.nn (chapter `training`): parameters, initialisation, modes, save and load."""

import numpy as np
import pytest

from engine import Tensor
from engine.functional import cross_entropy
from engine.nn import MLP, Linear, Module, Parameter, ReLU, Sequential, Standardize, Tanh

pytestmark = pytest.mark.chapter("training")


def test_parameters_are_found_recursively_in_a_stable_order():
    model = Sequential(Standardize([0.0, 0.0], [1.0, 1.0]),
                       MLP([2, 4, 3], np.random.default_rng(0)), Tanh())
    names = [name for name, _ in model.named_parameters()]
    assert names == ["layers.1.layers.0.weight", "layers.1.layers.0.bias",
                     "layers.1.layers.2.weight", "layers.1.layers.2.bias"]
    assert [p.shape for p in model.parameters()] == [(2, 4), (4,), (4, 3), (3,)]
    assert names == [name for name, _ in model.named_parameters()]  # same order every time


def test_own_parameters_come_before_sub_modules_as_in_pytorch():
    class Net(Module):
        def __init__(self):
            super().__init__()
            self.first = Parameter([1.0])
            self.inner = Linear(1, 1, np.random.default_rng(0))
            self.last = Parameter([2.0])

    names = [n for n, _ in Net().named_parameters()]
    assert names == ["first", "last", "inner.weight", "inner.bias"]  # torch's order too
    assert [n for n, _ in Net().named_modules()] == ["", "inner."]


def test_attributes_set_later_come_later_and_plain_tensors_are_not_parameters():
    class Net(Module):
        def __init__(self):
            super().__init__()
            self.scale = Tensor([2.0])  # a plain tensor: not trained
            self.b = Parameter([0.0])
            self.a = Parameter([1.0, 1.0])

    assert [n for n, _ in Net().named_parameters()] == ["b", "a"]


def test_linear_initialisation_is_pytorchs_bound_and_seeded():
    layer = Linear(400, 30, np.random.default_rng(3))
    bound = 1 / np.sqrt(400)
    assert layer.weight.shape == (400, 30) and layer.bias.shape == (30,)
    assert np.abs(layer.weight.data).max() <= bound
    assert np.abs(layer.weight.data).max() > 0.95 * bound  # uses the whole interval
    assert np.abs(layer.bias.data).max() <= bound
    again = Linear(400, 30, np.random.default_rng(3))
    assert np.array_equal(layer.weight.data, again.weight.data)
    rng = np.random.default_rng(3)
    assert np.array_equal(layer.weight.data, rng.uniform(-bound, bound, size=(400, 30)))


def test_linear_forward_is_x_w_plus_b_and_backward_reaches_both():
    layer = Linear(3, 2, np.random.default_rng(0))
    x = np.arange(6.0).reshape(2, 3)
    y = layer(Tensor(x, requires_grad=False))
    np.testing.assert_allclose(y.data, x @ layer.weight.data + layer.bias.data)
    y.sum().backward()
    np.testing.assert_allclose(layer.weight.grad, x.T @ np.ones((2, 2)))
    np.testing.assert_allclose(layer.bias.grad, [2.0, 2.0])


def test_zero_grad_and_train_eval_flags_reach_every_submodule():
    model = MLP([2, 3, 1], np.random.default_rng(0))
    model(Tensor(np.ones((4, 2)), requires_grad=False)).sum().backward()
    assert any(np.any(p.grad != 0) for p in model.parameters())
    model.zero_grad()  # None, as PyTorch's default
    assert all(p.grad is None for p in model.parameters())
    model.zero_grad(set_to_none=False)
    assert all(np.array_equal(p.grad, np.zeros(p.shape)) for p in model.parameters())
    model.eval()
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())


def test_save_and_load_round_trip_with_buffers(tmp_path):
    rng = np.random.default_rng(0)
    make = lambda seed: Sequential(Standardize([1.0, 2.0], [3.0, 4.0]),  # noqa: E731
                                   MLP([2, 5, 2], np.random.default_rng(seed)))
    model, other = make(0), make(1)
    other.layers[0].buffers["mean"] = np.zeros(2)
    path = tmp_path / "model.npz"
    model.save(path)
    other.load(path)
    for (n1, p1), (n2, p2) in zip(model.named_parameters(), other.named_parameters()):
        assert n1 == n2 and np.array_equal(p1.data, p2.data)
    assert other.layers[0].buffers["mean"].tolist() == [1.0, 2.0]
    x = Tensor(rng.normal(size=(3, 2)), requires_grad=False)
    assert np.array_equal(model(x).data, other(x).data)
    with np.load(path, allow_pickle=False) as f:
        assert sorted(f.files) == sorted(model.state_dict())
        assert "layers.0.mean" in f.files  # the buffer is saved with the parameters


def test_loading_a_mismatched_state_names_the_problem(tmp_path):
    model = MLP([2, 3, 1], np.random.default_rng(0))
    state = model.state_dict()
    state["layers.0.weight"] = np.zeros((3, 2))
    with pytest.raises(ValueError, match=r"layers.0.weight.*\(2, 3\).*\(3, 2\)"):
        model.load_state_dict(state)
    del state["layers.0.weight"]
    with pytest.raises(KeyError, match="missing"):
        model.load_state_dict(state)


def test_a_small_classifier_learns():
    """The loss's gradient of every parameter is right to float64 precision (Adam divides
    by the gradient's own size, so a gradient scaled by 2 would train just as well and
    only this check sees it), and training fits the data."""
    from engine.optim import Adam
    from support.checks import gradcheck

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 2))
    labels = (x[:, 0] * x[:, 1] > 0).astype(int)
    model = MLP([2, 16, 2], rng, activation=ReLU)
    inputs = Tensor(x, requires_grad=False)
    few = Tensor(x[:8], requires_grad=False)

    def loss_of(*parameters):  # the loss as a function of the parameters it is given
        return cross_entropy(model(few), labels[:8])

    assert gradcheck(loss_of, model.parameters())
    opt = Adam(model.parameters(), lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        cross_entropy(model(inputs), labels).backward()
        opt.step()
    accuracy = np.mean(model(inputs).data.argmax(axis=1) == labels)
    assert accuracy > 0.95
