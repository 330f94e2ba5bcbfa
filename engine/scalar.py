#> scalar-engine
"""Var: a float together with a record of the operation that produced it.

Introduced in chapter `scalar-engine` (Computational graphs and reverse
accumulation). The same shape of code as `engine.tensor.Tensor`, one float at a
time: each operation computes its value, then records its parents and one
closure that maps the result's adjoint to one local vector-Jacobian product per
parent; the backward sweep adds those products into the parents' grads.
"""

import math


class Var:
    """A float with a grad, its parents and a backward closure."""

    def __init__(self, value, requires_grad=True):
        self.value = float(value)
        self.grad = 0.0
        self.requires_grad = requires_grad
        self.parents = ()        # the inputs of the operation that produced it
        self.op = ""             # the operation that made it; "" for a leaf
        self.backward_fn = None  # backward_fn(y_bar) returns one VJP per parent

    def __repr__(self):
        return f"Var(value={self.value:.6g}, grad={self.grad:.6g})"

    # -- recording -----------------------------------------------------------

    def _result(self, value, parents, op, backward_fn):
        """Wrap `value` as the output of `op`; record the graph if a parent needs grads."""
        out = Var(value, requires_grad=False)
        if any(p.requires_grad for p in parents):
            out.requires_grad = True
            out.parents = parents
            out.op = op
            out.backward_fn = backward_fn
        return out

    @staticmethod
    def _lift(other):
        """A Python number becomes a constant: a Var that needs no grad."""
        return other if isinstance(other, Var) else Var(other, requires_grad=False)

    # -- binary operations ---------------------------------------------------

    def __add__(self, other):
        other = self._lift(other)

        def backward_fn(y_bar):
            return y_bar, y_bar

        return self._result(self.value + other.value, (self, other), "+", backward_fn)

    def __sub__(self, other):
        other = self._lift(other)

        def backward_fn(y_bar):
            return y_bar, -y_bar

        return self._result(self.value - other.value, (self, other), "-", backward_fn)

    def __mul__(self, other):
        other = self._lift(other)

        def backward_fn(y_bar):
            return other.value * y_bar, self.value * y_bar

        return self._result(self.value * other.value, (self, other), "*", backward_fn)

    def __truediv__(self, other):
        other = self._lift(other)

        def backward_fn(y_bar):
            # d(a/b)/da = 1/b, d(a/b)/db = -a/b^2
            return y_bar / other.value, -self.value / other.value**2 * y_bar

        return self._result(self.value / other.value, (self, other), "/", backward_fn)

    def __pow__(self, exponent):
        if isinstance(exponent, Var):
            return (exponent * self.log()).exp()  # a^b = exp(b ln a), for a > 0
        p = float(exponent)

        def backward_fn(y_bar):
            return (p * self.value ** (p - 1) * y_bar,)

        return self._result(self.value**p, (self,), f"**{p:g}", backward_fn)

    def __radd__(self, other):
        return self + other

    def __rsub__(self, other):
        return self._lift(other) - self  # the number becomes the left operand

    def __rmul__(self, other):
        return self * other

    def __rtruediv__(self, other):
        return self._lift(other) / self

    def __rpow__(self, base):
        return self._lift(base) ** self

    # -- unary operations ----------------------------------------------------

    def __neg__(self):
        def backward_fn(y_bar):
            return (-y_bar,)

        return self._result(-self.value, (self,), "neg", backward_fn)

    def exp(self):
        y = math.exp(self.value)

        def backward_fn(y_bar):
            return (y * y_bar,)  # exp' = exp: reuse the output

        return self._result(y, (self,), "exp", backward_fn)

    def log(self):
        def backward_fn(y_bar):
            return (y_bar / self.value,)

        return self._result(math.log(self.value), (self,), "log", backward_fn)

    def sin(self):
        def backward_fn(y_bar):
            return (math.cos(self.value) * y_bar,)

        return self._result(math.sin(self.value), (self,), "sin", backward_fn)

    def cos(self):
        def backward_fn(y_bar):
            return (-math.sin(self.value) * y_bar,)

        return self._result(math.cos(self.value), (self,), "cos", backward_fn)

    def tanh(self):
        y = math.tanh(self.value)

        def backward_fn(y_bar):
            return ((1.0 - y * y) * y_bar,)  # tanh' = 1 - tanh^2

        return self._result(y, (self,), "tanh", backward_fn)

    def sigmoid(self):
        y = 1.0 / (1.0 + math.exp(-self.value))

        def backward_fn(y_bar):
            return (y * (1.0 - y) * y_bar,)  # sigmoid' = y (1 - y)

        return self._result(y, (self,), "sigmoid", backward_fn)

    def relu(self):
        def backward_fn(y_bar):
            return ((1.0 if self.value > 0 else 0.0) * y_bar,)  # slope 0 at 0, as in PyTorch

        return self._result(max(self.value, 0.0), (self,), "relu", backward_fn)

    # -- the backward sweep --------------------------------------------------

    def topo_order(self):
        """This Var and its ancestors that need a grad, once each, no node before its parents."""
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

    def backward(self):
        """Seed this Var's grad with 1 and run every closure in reverse topological order."""
        order = self.topo_order()
        for node in order:
            if node.parents:  # a result's grad is rebuilt by this sweep; a leaf's adds on
                node.grad = 0.0
        self.grad += 1.0
        for node in reversed(order):
            if node.backward_fn is None:
                continue  # a leaf: its grad is the answer
            parent_bars = node.backward_fn(node.grad)
            for parent, parent_bar in zip(node.parents, parent_bars):
                if parent.requires_grad:  # constants get no grad
                    parent.grad += parent_bar
