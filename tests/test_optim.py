"""engine.optim (chapter `training`): SGD and Adam against hand-written NumPy references."""

import numpy as np
import pytest

from engine import Tensor
from engine.optim import SGD, Adam

pytestmark = pytest.mark.chapter("training")


def quadratic_grads(rng, steps, shape=(3, 2)):
    """A fixed sequence of gradients, so engine and reference see the same ones."""
    return [rng.normal(size=shape) for _ in range(steps)]


def run_engine(optimizer_class, start, grads, **options):
    p = Tensor(start.copy())
    opt = optimizer_class([p], **options)
    for g in grads:
        opt.zero_grad()  # None: the grad below stands for what a backward would make
        p.grad = g.copy()
        opt.step()
    return np.array(p.data)


def sgd_reference(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    p = p.copy()
    buf = None
    for g in grads:
        d = g + weight_decay * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
    return p


def adam_reference(p, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    p = p.copy()
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g**2
        m_hat = m / (1 - betas[0] ** t)
        v_hat = v / (1 - betas[1] ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, weight_decay=0.01),
    dict(lr=0.05, momentum=0.9, weight_decay=0.01, nesterov=True),
    dict(lr=0.05, momentum=0.5, dampening=0.3),
]


@pytest.mark.parametrize("options", SGD_CASES, ids=[str(c) for c in SGD_CASES])
def test_sgd_matches_the_numpy_reference(options):
    rng = np.random.default_rng(0)
    start, grads = rng.normal(size=(3, 2)), quadratic_grads(rng, 7)
    np.testing.assert_allclose(run_engine(SGD, start, grads, **options),
                               sgd_reference(start, grads, **options), rtol=0, atol=1e-12)


ADAM_CASES = [
    dict(lr=0.01),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.003, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05),
]


@pytest.mark.parametrize("options", ADAM_CASES, ids=[str(c) for c in ADAM_CASES])
def test_adam_matches_the_numpy_reference(options):
    rng = np.random.default_rng(1)
    start, grads = rng.normal(size=(3, 2)), quadratic_grads(rng, 9)
    np.testing.assert_allclose(run_engine(Adam, start, grads, **options),
                               adam_reference(start, grads, **options), rtol=0, atol=1e-12)


def test_adam_first_step_moves_every_entry_by_about_lr():
    p = Tensor([1.0, -2.0, 3.0])
    opt = Adam([p], lr=0.1)
    p.grad = np.array([5.0, -0.01, 100.0])  # as a backward would leave it
    opt.step()
    np.testing.assert_allclose(p.data, [0.9, -1.9, 2.9], atol=1e-6)  # bias correction at t=1


def test_zero_grad_zeroes_and_a_step_uses_only_the_current_grad():
    p = Tensor([1.0, 1.0])
    opt = SGD([p], lr=1.0)
    p.grad = np.full(2, 3.0)  # as a backward would leave it
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()  # PyTorch's default: None, and the sweep makes the grad afresh
    assert p.grad is None
    (p * p).sum().backward()
    opt.step()
    assert p.data.tolist() == [-1.0, -1.0]


def test_nesterov_needs_momentum():
    with pytest.raises(ValueError, match="Nesterov"):
        SGD([Tensor([1.0])], lr=0.1, nesterov=True)


def test_sgd_with_momentum_minimizes_a_quadratic():
    target = np.array([1.0, -2.0, 0.5])
    p = Tensor(np.zeros(3))
    opt = SGD([p], lr=0.1, momentum=0.9)
    for _ in range(500):
        opt.zero_grad()
        ((p - target) ** 2).sum().backward()
        opt.step()
    np.testing.assert_allclose(p.data, target, atol=1e-6)
