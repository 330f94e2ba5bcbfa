"""The four benchmark workloads, each written four ways: engine, NumPy by hand, PyTorch, HIPS autograd.

Every implementation is a function of NumPy arrays that runs the forward pass
and the backward pass and returns the gradients as NumPy arrays, so that
`run.py` can check that all four agree before it times any of them.

    running_small   y = ln x1 + x1 x2 - sin x2 on 3 entries: the fixed cost per operation
    running_large   the same program on 1,000,000 entries: memory bandwidth
    mlp             784-256-256-10, tanh, batch 64, mean cross-entropy: matrix products
    chain           y = sin(sin(...sin(x)...)), 100,000 operations on one entry: graph bookkeeping

PyTorch and autograd are imported only when asked for, so the engine and
NumPy columns run without them.
"""

import numpy as np

from engine import Tensor, functional

CHAIN_DEPTH = 100_000


# -- inputs -------------------------------------------------------------------------


def running_inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 2.0, n), rng.uniform(-3.0, 3.0, n)


def mlp_inputs(seed=0, batch=64, sizes=(784, 256, 256, 10)):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, sizes[0]))
    targets = rng.integers(0, sizes[-1], batch)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / np.sqrt(n_in)  # torch.nn.Linear's initialisation
        params += [rng.uniform(-bound, bound, (n_in, n_out)), rng.uniform(-bound, bound, n_out)]
    return x, targets, params


def chain_inputs(seed=0):
    return (np.random.default_rng(seed).uniform(0.5, 1.5, 1),)


# -- the engine ---------------------------------------------------------------------


def running_engine(a, b):
    x1, x2 = Tensor(a), Tensor(b)
    y = x1.log() + x1 * x2 - x2.sin()
    y.backward()
    return x1.grad, x2.grad


def mlp_engine(x, targets, params):
    w1, b1, w2, b2, w3, b3 = ps = [Tensor(p) for p in params]
    h = (Tensor(x, requires_grad=False) @ w1 + b1).tanh()
    h = (h @ w2 + b2).tanh()
    loss = functional.cross_entropy(h @ w3 + b3, targets)
    loss.backward()
    return [p.grad for p in ps]


def chain_engine(a):
    x = y = Tensor(a)
    for _ in range(CHAIN_DEPTH):
        y = y.sin()
    y.backward()
    return (x.grad,)


# -- NumPy by hand: the floor -------------------------------------------------------


def running_numpy(a, b):
    # y is computed (the forward pass) though only the gradients are returned
    y = np.log(a) + a * b - np.sin(b)  # noqa: F841
    return 1.0 / a + b, a - np.cos(b)


def mlp_numpy(x, targets, params):
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    logits = h2 @ w3 + b3
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    n = len(targets)
    d_logits = p
    d_logits[np.arange(n), targets] -= 1.0
    d_logits /= n
    d_z2 = (d_logits @ w3.T) * (1.0 - h2 * h2)
    d_z1 = (d_z2 @ w2.T) * (1.0 - h1 * h1)
    return [x.T @ d_z1, d_z1.sum(0), h1.T @ d_z2, d_z2.sum(0), h2.T @ d_logits, d_logits.sum(0)]


def chain_numpy(a):
    y, slopes = a.copy(), np.empty((CHAIN_DEPTH, a.size))
    for i in range(CHAIN_DEPTH):  # forward: keep each slope cos(y_i) for backward
        slopes[i] = np.cos(y)
        y = np.sin(y)
    grad = np.ones_like(a)
    for i in range(CHAIN_DEPTH - 1, -1, -1):
        grad = grad * slopes[i]
    return (grad,)


# -- PyTorch ------------------------------------------------------------------------


def running_torch(a, b):
    import torch

    x1 = torch.tensor(a, requires_grad=True)
    x2 = torch.tensor(b, requires_grad=True)
    y = x1.log() + x1 * x2 - x2.sin()
    y.backward(torch.ones_like(y))
    return x1.grad.numpy(), x2.grad.numpy()


def mlp_torch(x, targets, params):
    import torch

    ps = [torch.tensor(p, requires_grad=True) for p in params]
    w1, b1, w2, b2, w3, b3 = ps
    h = torch.tanh(torch.from_numpy(x) @ w1 + b1)
    h = torch.tanh(h @ w2 + b2)
    loss = torch.nn.functional.cross_entropy(h @ w3 + b3, torch.from_numpy(targets))
    loss.backward()
    return [p.grad.numpy() for p in ps]


def chain_torch(a):
    import torch

    x = y = torch.tensor(a, requires_grad=True)
    for _ in range(CHAIN_DEPTH):
        y = y.sin()
    y.backward(torch.ones_like(y))
    return (x.grad.numpy(),)


# -- HIPS autograd ------------------------------------------------------------------


def running_autograd(a, b):
    from autograd import grad
    import autograd.numpy as anp

    def program(x1, x2):
        return anp.sum(anp.log(x1) + x1 * x2 - anp.sin(x2))  # sum: a seed of ones

    return grad(program, (0, 1))(a, b)


def mlp_autograd(x, targets, params):
    from autograd import grad
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    def loss(ps):
        w1, b1, w2, b2, w3, b3 = ps
        h = anp.tanh(x @ w1 + b1)
        h = anp.tanh(h @ w2 + b2)
        logits = h @ w3 + b3
        log_p = logits - logsumexp(logits, axis=1, keepdims=True)
        return -anp.mean(log_p[np.arange(len(targets)), targets])

    return grad(loss)(list(params))


def chain_autograd(a):
    from autograd import grad
    import autograd.numpy as anp

    def program(x):
        for _ in range(CHAIN_DEPTH):
            x = anp.sin(x)
        return anp.sum(x)

    return (grad(program)(a),)


WORKLOADS = {
    "running_small": (lambda: running_inputs(3), "running"),
    "running_large": (lambda: running_inputs(1_000_000), "running"),
    "mlp": (lambda: mlp_inputs(), "mlp"),
    "chain": (lambda: chain_inputs(), "chain"),
}
IMPLEMENTATIONS = ("engine", "numpy", "torch", "autograd")


def function(workload, implementation):
    """The function that runs `workload` through `implementation`."""
    return globals()[f"{WORKLOADS[workload][1]}_{implementation}"]
