"""Tensor: a NumPy array that remembers how it was made.

Introduced in chapter `tensors` (From scalars to tensors). Each operation
computes its result with NumPy, then records its parents and one closure that
maps the result's adjoint to one vector-Jacobian product per parent; the
backward sweep adds those products into the parents' grads.
"""

import numpy as np


class Tensor:
    """A float64 array with a grad of the same shape, its parents and a backward closure."""

    def __init__(self, data, requires_grad=True, copy=True):
        # a copy, as torch.tensor makes; an operation's result is wrapped without one
        self.data = np.array(data, dtype=np.float64, copy=True if copy else None)
        self.grad = np.zeros_like(self.data)
        self.requires_grad = requires_grad
        self.parents = ()        # the tensors this one was computed from
        self.op = ""             # the operation that made it; "" for a leaf
        self.backward_fn = None  # backward_fn(y_bar) returns one VJP per parent

    @property
    def shape(self):
        return self.data.shape

    def __repr__(self):
        return f"Tensor({np.array2string(self.data, separator=', ')})"

    # -- recording -----------------------------------------------------------

    def _result(self, data, parents, op, backward_fn):
        """Wrap `data` as the output of `op`; record the graph if a parent needs grads."""
        out = Tensor(data, requires_grad=False, copy=False)
        if any(p.requires_grad for p in parents):
            out.requires_grad = True
            out.parents = parents
            out.op = op
            out.backward_fn = backward_fn
        return out

    def _pair(self, other, op):
        """Turn `other` into a Tensor and check that the two shapes agree."""
        if not isinstance(other, Tensor) and np.ndim(other) == 0:
            other = np.full(self.shape, float(other))  # a number acts on every entry
        if not isinstance(other, Tensor):
            other = Tensor(other, requires_grad=False)  # a constant, not a node
        if self.shape != other.shape:
            raise ValueError(
                f"{op}: shapes {self.shape} and {other.shape} differ; "
                "this engine has no broadcasting yet (chapter `shapes` adds it)"
            )
        return other

    # -- binary operations ---------------------------------------------------

    def __add__(self, other):
        other = self._pair(other, "+")

        def backward_fn(y_bar):
            return y_bar, y_bar

        return self._result(self.data + other.data, (self, other), "+", backward_fn)

    def __sub__(self, other):
        other = self._pair(other, "-")

        def backward_fn(y_bar):
            return y_bar, -y_bar

        return self._result(self.data - other.data, (self, other), "-", backward_fn)

    def __mul__(self, other):
        other = self._pair(other, "*")

        def backward_fn(y_bar):
            return other.data * y_bar, self.data * y_bar

        return self._result(self.data * other.data, (self, other), "*", backward_fn)

    def __radd__(self, other):
        return self + other

    def __rsub__(self, other):
        return self._pair(other, "-") - self  # the number becomes the left operand

    def __rmul__(self, other):
        return self * other

    # -- unary operations ----------------------------------------------------

    def __neg__(self):
        def backward_fn(y_bar):
            return (-y_bar,)

        return self._result(-self.data, (self,), "neg", backward_fn)

    def __pow__(self, exponent):
        if isinstance(exponent, Tensor):
            raise TypeError("Tensor ** Tensor is not supported: the exponent must be a number")
        p = float(exponent)

        def backward_fn(y_bar):
            return (p * self.data ** (p - 1) * y_bar,)

        return self._result(self.data**p, (self,), f"**{exponent:g}", backward_fn)

    def exp(self):
        y = np.exp(self.data)

        def backward_fn(y_bar):
            return (y * y_bar,)  # exp' = exp: reuse the output

        return self._result(y, (self,), "exp", backward_fn)

    def log(self):
        def backward_fn(y_bar):
            return (y_bar / self.data,)

        return self._result(np.log(self.data), (self,), "log", backward_fn)

    def sin(self):
        def backward_fn(y_bar):
            return (np.cos(self.data) * y_bar,)

        return self._result(np.sin(self.data), (self,), "sin", backward_fn)

    def tanh(self):
        y = np.tanh(self.data)

        def backward_fn(y_bar):
            return ((1.0 - y * y) * y_bar,)  # tanh' = 1 - tanh^2

        return self._result(y, (self,), "tanh", backward_fn)

    def sigmoid(self):
        y = 1.0 / (1.0 + np.exp(-self.data))

        def backward_fn(y_bar):
            return (y * (1.0 - y) * y_bar,)  # sigmoid' = y (1 - y)

        return self._result(y, (self,), "sigmoid", backward_fn)

    def relu(self):
        def backward_fn(y_bar):
            return ((self.data > 0) * y_bar,)  # slope 0 at 0, as in PyTorch

        return self._result(np.maximum(self.data, 0.0), (self,), "relu", backward_fn)

    # -- the backward sweep --------------------------------------------------

    def topo_order(self):
        """Every tensor this one depends on that needs a grad, parents first, each once."""
        order, visited = [], set()
        stack = [(self, False)]
        while stack:  # iterative depth-first search: no recursion limit
            node, parents_done = stack.pop()
            if parents_done:
                order.append(node)
                continue
            if id(node) in visited:
                continue
            visited.add(id(node))
            stack.append((node, True))
            for parent in node.parents:
                if parent.requires_grad and id(parent) not in visited:
                    stack.append((parent, False))
        return order

    def backward(self, gradient=None):
        """Seed this tensor's grad (ones by default) and run every closure in reverse order."""
        if gradient is None:
            gradient = np.ones_like(self.data)
        gradient = np.asarray(gradient, dtype=np.float64)
        if gradient.shape != self.shape:
            raise ValueError(
                f"backward: seed of shape {gradient.shape} for a tensor of shape {self.shape}"
            )
        order = self.topo_order()
        for node in order:
            if node.parents:  # results start from zero; leaves keep accumulating
                node.grad = np.zeros_like(node.data)
        self.grad += gradient
        for node in reversed(order):
            if node.backward_fn is None:
                continue  # a leaf: its grad is the answer
            parent_bars = node.backward_fn(node.grad)
            for parent, parent_bar in zip(node.parents, parent_bars):
                if parent.requires_grad:  # constants get no grad
                    parent.grad += parent_bar
