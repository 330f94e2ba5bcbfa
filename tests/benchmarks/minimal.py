"""A minimal closure engine: the engine's design with none of its guarantees, as a yardstick.

The shape of micrograd, on NumPy arrays: each node holds its array, its grad,
its parents and a closure that returns one VJP per parent. Nothing else: no
checks of shapes or dtypes, no floating-point messages, no version counter, no
release of the graph, broadcasting only where the MLP's bias needs it. It is
written as fast as this design honestly goes (slots, arrays never copied, a
grad that adopts the first VJP), so that chapter `fast` can measure what the
book's engine pays for its guarantees (tests/benchmarks/safety.py removes them
one at a time).

Setup functions `<program>_minimal(*inputs)` follow tests/benchmarks/workloads.py:
leaves made once, `step()` zeroes, runs forward and backward and returns the
gradients in the order of `<program>_numpy`.
"""

import numpy as np

CHAIN_DEPTH = 100_000  # workloads.CHAIN_DEPTH, without importing the harness


class Tensor:
    """An array, its grad, its parents and the closure that maps y_bar to their VJPs."""

    __slots__ = ("data", "grad", "parents", "backward_fn")
    __array_ufunc__ = None  # `array @ w` calls w.__rmatmul__

    def __init__(self, data, parents=(), backward_fn=None):
        self.data = data
        self.grad = None
        self.parents = parents
        self.backward_fn = backward_fn

    def __add__(self, other):
        a, b = self.data, other.data
        bias = b.ndim < a.ndim  # x @ w + b: b's grad sums over the batch axis

        def backward_fn(y_bar):
            return y_bar, (y_bar.sum(0) if bias else y_bar)

        return Tensor(a + b, (self, other), backward_fn)

    def __sub__(self, other):
        def backward_fn(y_bar):
            return y_bar, -y_bar

        return Tensor(self.data - other.data, (self, other), backward_fn)

    def __mul__(self, other):
        a, b = self.data, other.data

        def backward_fn(y_bar):
            return b * y_bar, a * y_bar

        return Tensor(a * b, (self, other), backward_fn)

    def __matmul__(self, other):
        a, b = self.data, other.data

        def backward_fn(y_bar):
            return y_bar @ b.T, a.T @ y_bar

        return Tensor(a @ b, (self, other), backward_fn)

    def __rmatmul__(self, x):  # a constant array on the left: the MLP's input
        b = self.data

        def backward_fn(y_bar):
            return (x.T @ y_bar,)

        return Tensor(x @ b, (self,), backward_fn)

    def log(self):
        x = self.data

        def backward_fn(y_bar):
            return (y_bar / x,)

        return Tensor(np.log(x), (self,), backward_fn)

    def sin(self):
        x = self.data

        def backward_fn(y_bar):
            return (np.cos(x) * y_bar,)

        return Tensor(np.sin(x), (self,), backward_fn)

    def tanh(self):
        y = np.tanh(self.data)

        def backward_fn(y_bar):
            return ((1.0 - y * y) * y_bar,)

        return Tensor(y, (self,), backward_fn)

    def cross_entropy(self, targets):
        """The mean over rows of -log softmax(logits)[row, target], from a log-softmax."""
        logits = self.data
        rows = np.arange(len(targets))
        shifted = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(shifted)
        sums = p.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(sums[:, 0]) - shifted[rows, targets])

        def backward_fn(y_bar):
            d = p / sums  # softmax minus one-hot, over the batch size
            d[rows, targets] -= 1.0
            d *= y_bar / len(targets)
            return (d,)

        return Tensor(np.asarray(loss), (self,), backward_fn)

    def backward(self):
        order, visited, stack = [], {self}, [self]  # iterative: the chain is 100,000 deep
        while stack:
            node = stack[-1]
            for parent in node.parents:
                if parent not in visited:
                    visited.add(parent)
                    stack.append(parent)
                    break
            else:
                order.append(stack.pop())
        self.grad = np.ones(self.data.shape)
        for node in reversed(order):
            if node.backward_fn is None:
                continue  # a leaf
            for parent, vjp in zip(node.parents, node.backward_fn(node.grad)):
                # no grad is ever written in place, so a shared VJP can be adopted as it is
                parent.grad = vjp if parent.grad is None else parent.grad + vjp


def _zero(leaves):
    def zero():
        for leaf in leaves:
            leaf.grad = None

    return zero


def running_minimal(a, b):
    x1, x2 = Tensor(np.array(a)), Tensor(np.array(b))
    zero = _zero((x1, x2))

    def step():
        zero()
        y = x1.log() + x1 * x2 - x2.sin()
        y.backward()
        return x1.grad, x2.grad

    return step


def mlp_minimal(x, targets, params):
    ps = [Tensor(np.array(p)) for p in params]
    w1, b1, w2, b2, w3, b3 = ps
    zero = _zero(ps)

    def step():
        zero()
        h = (x @ w1 + b1).tanh()
        h = (h @ w2 + b2).tanh()
        loss = (h @ w3 + b3).cross_entropy(targets)
        loss.backward()
        return [p.grad for p in ps]

    return step


def chain_minimal(a):
    x = Tensor(np.array(a))
    zero = _zero((x,))

    def step():
        zero()
        y = x
        for _ in range(CHAIN_DEPTH):
            y = y.sin()
        y.backward()
        return (x.grad,)

    return step


def leaf_minimal(w):
    return lambda: (Tensor(np.array(w, dtype=np.float64)).data,)


def cheap_minimal(a, b):
    x1, x2 = Tensor(np.array(a)), Tensor(np.array(b))
    zero = _zero((x1, x2))

    def step():
        zero()
        y = x1 * x2 + x1 - x2
        y.backward()
        return x1.grad, x2.grad

    return step
