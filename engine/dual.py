#> forward-mode
"""Dual: a value and a tangent, carried forward together.

Introduced in chapter `forward-mode` (Forward mode, reverse mode and what each
costs). Each operation returns the value and, by the chain rule, the tangent
y_dot = f'(x) x_dot: one sweep computes one Jacobian-vector product, with no
graph to record and nothing to run backward. The tangent is normally a float;
a NumPy vector of tangents works too and carries several directions at once.
"""

import math


class Dual:
    """A float `value` with a tangent `tangent` (its derivative along one direction)."""

    def __init__(self, value, tangent=0.0):
        self.value = float(value)
        self.tangent = tangent

    def __repr__(self):
        return f"Dual(value={self.value:.6g}, tangent={self.tangent})"

    @staticmethod
    def _lift(other):
        """A Python number becomes a constant: its tangent is zero."""
        return other if isinstance(other, Dual) else Dual(other, 0.0)

    # -- binary operations ---------------------------------------------------

    def __add__(self, other):
        other = self._lift(other)
        return Dual(self.value + other.value, self.tangent + other.tangent)

    def __sub__(self, other):
        other = self._lift(other)
        return Dual(self.value - other.value, self.tangent - other.tangent)

    def __mul__(self, other):
        other = self._lift(other)
        # the product rule: (a b)' = a' b + a b'
        return Dual(self.value * other.value,
                    self.tangent * other.value + self.value * other.tangent)

    def __truediv__(self, other):
        other = self._lift(other)
        # the quotient rule: (a / b)' = a' / b - a b' / b^2
        return Dual(self.value / other.value,
                    self.tangent / other.value - self.value * other.tangent / other.value**2)

    def __pow__(self, exponent):
        if isinstance(exponent, Dual):
            return (exponent * self.log()).exp()  # a^b = exp(b ln a), for a > 0
        p = float(exponent)
        return Dual(self.value**p, p * self.value ** (p - 1) * self.tangent)

    def __radd__(self, other):
        return self + other

    def __rsub__(self, other):
        return self._lift(other) - self

    def __rmul__(self, other):
        return self * other

    def __rtruediv__(self, other):
        return self._lift(other) / self

    def __rpow__(self, base):
        return self._lift(base) ** self

    # -- unary operations ----------------------------------------------------

    def __neg__(self):
        return Dual(-self.value, -self.tangent)

    def exp(self):
        y = math.exp(self.value)
        return Dual(y, y * self.tangent)

    def log(self):
        return Dual(math.log(self.value), self.tangent / self.value)

    def sin(self):
        return Dual(math.sin(self.value), math.cos(self.value) * self.tangent)

    def cos(self):
        return Dual(math.cos(self.value), -math.sin(self.value) * self.tangent)

    def tanh(self):
        y = math.tanh(self.value)
        return Dual(y, (1.0 - y * y) * self.tangent)

    def sigmoid(self):
        y = 1.0 / (1.0 + math.exp(-self.value))
        return Dual(y, y * (1.0 - y) * self.tangent)

    def relu(self):
        slope = 1.0 if self.value > 0 else 0.0  # slope 0 at 0, as in PyTorch
        return Dual(max(self.value, 0.0), slope * self.tangent)
