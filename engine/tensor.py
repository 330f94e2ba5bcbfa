#> tensors
"""Tensor: NumPy data together with a record of the operation that produced it.

Introduced in chapter `tensors` (From scalars to tensors). Each operation
computes its result with NumPy, then records its parents and one closure that
maps the result's adjoint to one vector-Jacobian product per parent; the
backward sweep adds those products into the parents' grads.
"""

#> errors
import os
import sys
import warnings

#> tensors
import numpy as np

#> shapes
from .shapes import broadcast_shape, unbroadcast
#> memory
from .memory import (VersionedArray, check_saved, is_grad_enabled,
                     record_versions, release)
#> fast
from .memory import _grad_enabled as grad_enabled
from .memory import _replaced, write_clock

FLOAT64 = np.dtype(np.float64)
_ONE = np.ones(1)
_ONE.flags.writeable = False  # the one entry behind every seed of backward (Step 7)


def seed_ones(shape):
    """Ones of `shape` that take no memory: every entry is the same read-only 1.0 (Step 7)."""
    return np.ndarray(shape, FLOAT64, _ONE, 0, (0,) * len(shape))


#> tensors
class Tensor:
    """A float64 array with a grad of the same shape, its parents and a backward closure."""

    #> fast
    # Named slots instead of a per-object __dict__: fewer bytes per node (chapter
    # `fast`, "Many small objects").
    __slots__ = ("_data", "grad", "requires_grad", "parents", "op", "backward_fn",
                 "saved_versions", "__weakref__")

    #> tensors
    def __init__(self, data, requires_grad=True, copy=True):
        #> errors
        if not isinstance(requires_grad, (bool, np.bool_)):
            hint = ""
            if isinstance(data, int) and isinstance(requires_grad, int):  # Tensor(2, 3)
                hint = (f"; Tensor({data}, {requires_grad}) is not a shape: for a tensor of "
                        f"shape ({data}, {requires_grad}), pass its values, such as "
                        f"Tensor(np.zeros(({data}, {requires_grad})))")
            raise TypeError(f"Tensor: requires_grad must be True or False, got "
                            f"{requires_grad!r}{hint}")
        #> tensors
        # a copy, as torch.tensor makes; an operation's result is wrapped without one
        #< tensors, replaced in errors
        # self.data = np.array(data, dtype=np.float64, copy=True if copy else None)
        #> errors
        self.data = float64_array(data, requires_grad, copy)
        #< tensors, replaced in fast
        # self.grad = np.zeros(self.data.shape)  # a leaf's grad starts at 0
        #> fast
        self.grad = None  # made by the first VJP that reaches it, as in PyTorch
        #> tensors
        self.requires_grad = requires_grad
        self.parents = ()        # the inputs of the operation that produced it
        self.op = ""             # the operation that made it; "" for a leaf
        self.backward_fn = None  # backward_fn(y_bar) returns one VJP per parent
        #> memory
        self.saved_versions = ()  # (array, version) for each array its closure saved

    #> memory
    @property
    def data(self):
        """The values: a VersionedArray, which counts its in-place changes (chapter `memory`)."""
        return self._data

    @data.setter
    def data(self, value):
        old = getattr(self, "_data", None)
        if value is old:
            return  # `x.data += 1` changed the array in place, and the array counted it
        self._data = VersionedArray.of(value)
        if old is not None:  # a tensor given new values has changed: its old array says so
            old.bump()
            #> fast
            _replaced[self] = write_clock[0]  # and the closures that saved it must know

    #> tensors
    @property
    def shape(self):
        return self.data.shape

    def __repr__(self):
        return f"Tensor({np.array2string(self.data, separator=', ')})"

    # -- recording -----------------------------------------------------------

    #< tensors, replaced in fast
    # def _result(self, data, parents, op, backward_fn):
    #     """Wrap `data` as the output of `op`; record the graph if a parent needs grads."""
    #     out = Tensor(data, requires_grad=False, copy=False)
    #< tensors, replaced in memory
    #     if any(parent.requires_grad for parent in parents):
    #< memory, replaced in fast
    #     if is_grad_enabled() and any(parent.requires_grad for parent in parents):
    #< tensors, replaced in fast
    #         out.requires_grad = True
    #         out.parents = parents
    #         out.op = op
    #         out.backward_fn = backward_fn
    #< memory, replaced in fast
    #         out.saved_versions = record_versions(backward_fn)  # checked by backward
    #< tensors, replaced in fast
    #     return out
    #> fast
    def _result(self, data, parents, op, backward_fn):
        """Wrap `data` as the output of `op`; record the graph if a parent needs grads."""
        out = Tensor.__new__(Tensor)  # not __init__: no copy, no checks
        if type(data) is np.ndarray and data.dtype is FLOAT64:  # the usual case: a view
            out._data = data.view(VersionedArray)  # of the fresh array the operation computed
        else:
            out._data = VersionedArray.of(data)  # a scalar, an int array, a view of a view
        out.grad = None  # made by backward, from the first VJP that reaches it
        if grad_enabled[0] and _needs_grad(parents):  # is_grad_enabled(), without the call
            out.requires_grad = True
            out.parents = parents
            out.op = op
            out.backward_fn = backward_fn
            out.saved_versions = write_clock[0]  # Step 5: the clock, not the versions
        else:  # a constant: nothing to differentiate, nothing kept
            out.requires_grad, out.parents, out.op = False, (), ""
            out.backward_fn, out.saved_versions = None, ()
        return out

    #> tensors
    def _pair(self, other, op):
        """Make `other` a Tensor: a number or an array becomes a constant, not a node."""
        if not isinstance(other, Tensor):
            #< tensors, replaced in shapes
            # if np.ndim(other) == 0:  # a number: a constant of this tensor's shape
            #     other = np.full(self.shape, other)
            # other = Tensor(other, requires_grad=False)
            #> shapes
            other = Tensor(other, requires_grad=False)
        #< tensors, replaced in shapes
        # if other.shape != self.shape:  # chapter `shapes` lets them differ: broadcasting
        #     raise ValueError(f"{op}: shapes {self.shape} and {other.shape} differ")
        #< shapes, replaced in fast
        # broadcast_shape(self.shape, other.shape, op)  # or a ValueError naming both
        #> fast
        if other._data.shape != self._data.shape:  # equal shapes need no call (Step 6)
            broadcast_shape(self._data.shape, other._data.shape, op)  # or a ValueError
        #> tensors
        return other

    # -- binary operations ---------------------------------------------------

    def __add__(self, other):
        other = self._pair(other, "+")

        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
        #> tensors
            return y_bar, y_bar

        return self._result(self.data + other.data, (self, other), "+", backward_fn)

    def __sub__(self, other):
        other = self._pair(other, "-")
        negate = other.requires_grad  # a flag, not the tensor: `-` saves nothing

        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
        #> tensors
            return y_bar, (-y_bar if negate else None)

        return self._result(self.data - other.data, (self, other), "-", backward_fn)

    def __mul__(self, other):
        other = self._pair(other, "*")

        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (y_bar * other if self.requires_grad else None,
                        y_bar * self if other.requires_grad else None)
        #> tensors
            # None for a parent that needs no grad (a constant): never computed
            return (other.data * y_bar if self.requires_grad else None,
                    self.data * y_bar if other.requires_grad else None)

        return self._result(self.data * other.data, (self, other), "*", backward_fn)

    def __radd__(self, other):
        return self + other

    def __rsub__(self, other):
        return self._pair(other, "-") - self  # the number becomes the left operand

    def __rmul__(self, other):
        return self * other

    # NumPy's operators step aside: `array * x` calls x.__rmul__(array), not a loop over entries
    __array_ufunc__ = None

    #> shapes
    def __truediv__(self, other):
        other = self._pair(other, "/")

        #< shapes, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (y_bar / other if self.requires_grad else None,
                        -(y_bar * self) / (other * other) if other.requires_grad else None)
        #> shapes
            return (y_bar / other.data if self.requires_grad else None,
                    -y_bar * self.data / other.data**2 if other.requires_grad else None)

        #< shapes, replaced in errors
        # y = self.data / other.data
        #> errors
        y = checked(np.divide, self.data, other.data, op="/")
        #> shapes
        return self._result(y, (self, other), "/", backward_fn)

    def __rtruediv__(self, other):
        return self._pair(other, "/") / self  # the number becomes the numerator

    def __matmul__(self, other):
        if not isinstance(other, Tensor):
            other = Tensor(other, requires_grad=False)
        a, b = self.data, other.data
        fits = a.ndim > 0 and b.ndim > 0  # then the inner lengths must agree
        fits = fits and a.shape[-1] == b.shape[-2 if b.ndim > 1 else 0]
        if not fits:
            raise ValueError(
                f"@: shapes {a.shape} and {b.shape} do not fit: the last axis of "
                "the left must equal the second-to-last (or only) axis of the right"
            )
        broadcast_shape(a.shape[:-2], b.shape[:-2], "@ (batch axes)")
        a_needs, b_needs = self.requires_grad, other.requires_grad  # flags: `@` saves a, b

        #< shapes, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the same products of tensors
                return _matmul_vjps(y_bar, *out.parents, a_needs, b_needs)
        #> shapes
            # NumPy reads a 1-D left operand as a row (1, d),
            # and a 1-D right operand as a column (d, 1)
            a2 = a[None, :] if a.ndim == 1 else a
            b2 = b[:, None] if b.ndim == 1 else b
            y_bar2 = y_bar[..., None] if b.ndim == 1 else y_bar
            y_bar2 = y_bar2[..., None, :] if a.ndim == 1 else y_bar2
            a_bar = b_bar = None  # for a parent that needs no grad, such as the input
            if a_needs:
                a_bar = y_bar2 @ b2.mT  # Y = X W gives X_bar = Y_bar W^T
                a_bar = a_bar[..., 0, :] if a.ndim == 1 else a_bar
            if b_needs:
                b_bar = a2.mT @ y_bar2  # and W_bar = X^T Y_bar
                b_bar = b_bar[..., 0] if b.ndim == 1 else b_bar
            return a_bar, b_bar

        return self._result(a @ b, (self, other), "@", backward_fn)

    def __rmatmul__(self, other):
        return Tensor(other, requires_grad=False) @ self

    #> errors
    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions (np.sum, np.mean, ...) would see no graph: say what to call instead."""
        name = func.__name__
        #> catalogue
        if name in ("concatenate", "stack", "where"):  # the engine has its own
            raise TypeError(f"np.{name} does not take a Tensor: NumPy would see no graph. Use "
                            f"engine.{name}, which records it, or pass x.data for a constant")
        #> errors
        raise TypeError(f"np.{name} does not take a Tensor: NumPy would see no graph. Use the "
                        "Tensor's own methods and operators, or pass x.data for a constant")

    #> tensors
    # -- unary operations ----------------------------------------------------

    def __neg__(self):
        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
        #> tensors
            return (-y_bar,)

        return self._result(-self.data, (self,), "neg", backward_fn)

    def __pow__(self, exponent):
        #> shapes
        if isinstance(exponent, Tensor) or np.ndim(exponent) > 0:
            return self._pow_tensor(exponent)
        #> tensors
        p = float(exponent)  # a number: the exponent needs no gradient

        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (y_bar * (p * self ** (p - 1)) if p != 0 else y_bar * 0.0,)
        #> tensors
            if p == 0:  # x ** 0 = 1 is constant, at x = 0 too (PyTorch agrees)
                return (np.zeros(self.shape),)
            return (p * self.data ** (p - 1) * y_bar,)

        #< tensors, replaced in errors
        # y = self.data ** p
        #> errors
        y = checked(np.power, self.data, p, op=f"**{p:g}")
        #> tensors
        return self._result(y, (self,), f"**{p:g}", backward_fn)

    #> shapes
    def _pow_tensor(self, exponent):
        """x ** p with p a tensor or an array: p gets the gradient y ln x too."""
        p = self._pair(exponent, "**")
        #< shapes, replaced in errors
        # y = self.data ** p.data
        #> errors
        y = checked(np.power, self.data, p.data, op="**")
        #> shapes

        #< shapes, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return _pow_tensor_vjps(y_bar, self, p, out)
        #> shapes
            x, q = self.data, p.data
            constant = q == 0  # x ** 0 = 1: slope 0, at x = 0 too (PyTorch agrees)
            x_bar = np.where(constant, 0.0, q * np.where(constant, 1.0, x) ** (q - 1)) * y_bar
            if not p.requires_grad:
                return x_bar, None
            # d(x^p)/dp = x^p ln x; at x = 0 with p >= 0 PyTorch takes 0, and so do we
            zero = (x == 0) & (q >= 0)
            p_bar = np.where(zero, 0.0, y * np.log(np.where(zero, 1.0, x))) * y_bar
            return x_bar, p_bar

        return self._result(y, (self, p), "**", backward_fn)

    def __rpow__(self, base):
        return self._pair(base, "**") ** self  # 2 ** x: the number becomes the base

    #> tensors
    def exp(self):
        #< tensors, replaced in errors
        # y = np.exp(self.data)
        #> errors
        y = checked(np.exp, self.data, op="exp")
        #> tensors

        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (y_bar * out,)
        #> tensors
            return (y * y_bar,)  # exp' = exp: reuse the output

        return self._result(y, (self,), "exp", backward_fn)

    def log(self):
        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (y_bar / self,)
        #> tensors
            return (y_bar / self.data,)

        #< tensors, replaced in errors
        # return self._result(np.log(self.data), (self,), "log", backward_fn)
        #> errors
        return self._result(checked(np.log, self.data, op="log"), (self,), "log", backward_fn)

    #> tensors
    def sin(self):
        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (y_bar * self.cos(),)
        #> tensors
            return (np.cos(self.data) * y_bar,)

        return self._result(np.sin(self.data), (self,), "sin", backward_fn)

    def tanh(self):
        y = np.tanh(self.data)

        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (y_bar * (1.0 - out * out),)
        #> tensors
            return ((1.0 - y * y) * y_bar,)  # tanh' = 1 - tanh^2

        return self._result(y, (self,), "tanh", backward_fn)

    def sigmoid(self):
        with np.errstate(over="ignore"):  # exp(800) = inf gives 1 / inf = 0: right
            y = 1.0 / (1.0 + np.exp(-self.data))

        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (y_bar * (out * (1.0 - out)),)
        #> tensors
            return (y * (1.0 - y) * y_bar,)  # sigmoid' = y (1 - y)

        return self._result(y, (self,), "sigmoid", backward_fn)

    def relu(self):
        #< tensors, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
        #> tensors
            return ((self.data > 0) * y_bar,)  # slope 0 at 0, as in PyTorch

        return self._result(np.maximum(self.data, 0.0), (self,), "relu", backward_fn)

    #> shapes
    def sqrt(self):
        #< shapes, replaced in errors
        # y = np.sqrt(self.data)
        #> errors
        y = checked(np.sqrt, self.data, op="sqrt")
        #> shapes

        #< shapes, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (y_bar / (2.0 * out),)
        #> shapes
            return (y_bar / (2.0 * y),)  # sqrt' = 1 / (2 sqrt): reuse the output

        return self._result(y, (self,), "sqrt", backward_fn)

    def abs(self):
        #< shapes, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
        #> shapes
            return (np.sign(self.data) * y_bar,)  # slope 0 at 0, as torch.sign

        return self._result(np.abs(self.data), (self,), "abs", backward_fn)

    # -- reductions ------------------------------------------------------------

    def sum(self, axis=None, keepdims=False):
        axes = _axes(axis, self.shape, "sum")
        shape = self.shape  # all the closure needs: no data is kept alive

        #< shapes, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (_spread(y_bar, axes, shape),)
        #> shapes
            if not keepdims:
                y_bar = np.expand_dims(y_bar, axes)  # summed axes back, length 1
            return (np.broadcast_to(y_bar, shape),)  # every entry counted once

        y = self.data.sum(axis=axes, keepdims=keepdims)
        return self._result(y, (self,), "sum", backward_fn)

    def mean(self, axis=None, keepdims=False):
        axes = _axes(axis, self.shape, "mean")
        count = int(np.prod([self.shape[i] for i in axes]))  # entries per mean
        return self.sum(axis=axes, keepdims=keepdims) / count

    def max(self, axis=None, keepdims=False):
        axes = _axes(axis, self.shape, "max")
        #> errors
        if 0 in [self.shape[i] for i in axes]:
            over = "all its axes" if axis is None else f"axis {axis}"
            raise ValueError(f"max: no entries to take the maximum of, over {over} of a "
                             f"tensor of shape {self.shape}")
        #> shapes
        y = self.data.max(axis=axes, keepdims=True)

        #< shapes, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                is_max = self.data == y
                return (y_bar.reshape(y.shape) * (is_max / is_max.sum(axis=axes, keepdims=True)),)
        #> shapes
            if not keepdims:
                y_bar = np.expand_dims(y_bar, axes)
            is_max = self.data == y  # ties share y_bar evenly, as torch.amax
            return (is_max * y_bar / is_max.sum(axis=axes, keepdims=True),)

        data = y if keepdims else np.squeeze(y, axis=axes)
        return self._result(data, (self,), "max", backward_fn)

    # -- shapes ----------------------------------------------------------------

    @property
    def ndim(self):
        return self.data.ndim

    def reshape(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]  # reshape((2, 3)) as well as reshape(2, 3)
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        #> errors
        if not all(isinstance(n, (int, np.integer)) for n in shape):
            raise TypeError(f"reshape: lengths must be integers, got {shape}")
        #> shapes
        old_shape = self.shape

        #< shapes, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
        #> shapes
            return (y_bar.reshape(old_shape),)

        #< shapes, replaced in errors
        # y = self.data.reshape(shape)
        #> errors
        try:
            y = self.data.reshape(shape)
        except ValueError:
            raise ValueError(f"reshape: a tensor of shape {old_shape} has {self.data.size} "
                             f"entries, which do not fill the shape {shape}") from None
        #> shapes
        return self._result(y, (self,), "reshape", backward_fn)

    def transpose(self, *axes):
        """transpose(i, j) swaps two axes, as in PyTorch; transpose(order) with a tuple, or
        with three or more axes, puts every axis in a new order, as in NumPy; no axes
        reverse them all, like .T."""
        n = self.ndim
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]  # transpose((1, 0)) as well as transpose(1, 0)
        elif len(axes) == 2:  # two axes to swap
            i, j = (a % n if -n <= a < n else n for a in axes)
            if n in (i, j):
                raise ValueError(f"transpose: {axes} are not two axes of a tensor of shape "
                                 f"{self.shape}")
            order = list(range(n))
            order[i], order[j] = j, i
            axes = order
        if axes in ((), None):
            axes = tuple(range(n))[::-1]  # reverse, like .T
        if sorted(a % n if -n <= a < n else a for a in axes) != list(range(n)):
            raise ValueError(f"transpose: {tuple(axes)} is not an order of the axes "
                             f"{tuple(range(n))} of a tensor of shape {self.shape}")
        axes = tuple(a % n for a in axes)  # -1 is the last axis: argsort needs 0 to n - 1

        #< shapes, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (y_bar.transpose(tuple(int(i) for i in np.argsort(axes))),)
        #> shapes
            return (y_bar.transpose(np.argsort(axes)),)  # the inverse permutation

        y = self.data.transpose(axes)
        return self._result(y, (self,), "transpose", backward_fn)

    @property
    def T(self):
        return self.transpose()

    def __getitem__(self, index):
        parts = index if isinstance(index, tuple) else (index,)
        #> errors
        if any(isinstance(part, Tensor) for part in parts):
            raise TypeError("index: a Tensor holds floats, so it cannot tell positions from a "
                            "mask: index with a NumPy array, of integers (positions) or of "
                            "booleans (a mask), such as x[idx.data.astype(int)]")
        #> shapes
        ints = [isinstance(p, (int, np.integer)) for p in parts]
        if any(ints) and not all(ints) and any(_is_array_index(p) for p in parts):
            # PyTorch applies the ints first, x[0, :, [1, 3]] = x[0][:, [1, 3]];
            # NumPy would move the array's axis to the front
            # an Ellipsis stays one: it stands for as many axes as the rest leaves
            first = tuple(p if is_int or p is Ellipsis else slice(None)
                          for p, is_int in zip(parts, ints) if p is not None)
            return self[first][tuple(p for p, is_int in zip(parts, ints) if not is_int)]
        shape = self.shape
        #< shapes, replaced in errors
        # y = self.data[index]
        #> errors
        try:
            y = self.data[index]
        except IndexError as error:
            raise IndexError(f"{error}, indexing a tensor of shape {shape}") from None
        #> shapes

        #< shapes, replaced in higher-order
        # def backward_fn(y_bar):
        #> higher-order
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (_index_add(y_bar, index, shape),)
        #> shapes
            x_bar = np.zeros(shape)
            np.add.at(x_bar, index, y_bar)  # repeated indices accumulate
            return (x_bar,)

        return self._result(y, (self,), "index", backward_fn)

    #> tensors
    # -- the backward sweep --------------------------------------------------

    def topo_order(self):
        """This tensor and its ancestors that need a grad, once each, no node before its parents."""
        #< tensors, replaced in fast
        # order, visited, stack = [], {id(self)}, [self]
        #> fast
        order, visited, stack = [], {self}, [self]  # Step 6: a Tensor hashes by identity
        #> tensors
        while stack:  # iterative depth-first search: no recursion limit
            node = stack[-1]
            for parent in node.parents:  # go down to the first parent not yet placed
                #< tensors, replaced in fast
                # if parent.requires_grad and id(parent) not in visited:
                #     visited.add(id(parent))
                #> fast
                if parent.requires_grad and parent not in visited:
                    visited.add(parent)
                #> tensors
                    stack.append(parent)
                    break
            else:  # all its parents are placed: place the node
                order.append(stack.pop())
        return order

    #> memory
    def backward(self, gradient=None, retain_graph=None, create_graph=False):
    #< tensors, replaced in higher-order
    # def backward(self, gradient=None):
    #     """Seed this tensor's grad (ones by default) and run every closure in reverse order."""
    #< higher-order, replaced in memory
    # def backward(self, gradient=None, create_graph=False):
    #     """Seed this tensor's grad (ones by default) and run every closure in reverse order;
    #     with `create_graph`, the leaves' grads are tensors with a graph (chapter
    #     `higher-order`)."""
    #> memory
        """Seed this tensor's grad (ones by default), run every closure in reverse order,
        then free the graph (closures and saved values) unless `retain_graph` (which
        defaults to `create_graph`); with `create_graph`, the leaves' grads are tensors
        with a graph of their own (chapter `higher-order`)."""
        #> errors
        if not self.requires_grad:
            raise RuntimeError(
                "backward: this tensor does not require a gradient: none of the tensors "
                "it was computed from has requires_grad=True, or it was computed inside "
                "no_grad()"
            )
        #> higher-order
        if create_graph:  # a sweep of engine operations, in higher.py: grads with a graph
            from .higher import backward_with_graph
        #< higher-order, replaced in memory
        #     return backward_with_graph(self, gradient)
        #> memory
            return backward_with_graph(self, gradient, retain_graph)
        #> fast
        clock = write_clock[0]  # Step 5: a node made since the last write needs no check
        #> tensors
        order = self.topo_order()
        for node in order:
            #< memory, replaced in fast
            # check_saved(node)  # raises if the graph was freed or a saved value changed
            #> fast
            if node.saved_versions != clock and node.op:  # a leaf saved nothing
                check_saved(node)  # raises if the graph was freed or a saved value changed
            #> tensors
            if node.parents:  # a result's grad is rebuilt by this sweep; a leaf's adds on
                #< tensors, replaced in fast
                # node.grad = np.zeros(node.shape)
                #> fast
                node.grad = None  # made from the first VJP that reaches it
        #< tensors, replaced in fast
        # self._add_grad(np.ones(self.shape) if gradient is None else gradient)
        #< fast, replaced in errors
        # self._add_grad(seed_ones(self.shape) if gradient is None else gradient)
        #> errors
        self._add_grad(self._seed(gradient))
        #< tensors, replaced in fast
        # for node in reversed(order):
        #     node._run_closure()
        #< fast, replaced in errors
        # while order:  # Step 6: each node leaves the list, so that it can go
        #     node = order.pop()
        #     if node.op:  # a leaf has no closure to run and nothing to release
        #         node._run_closure()
        #         if not retain_graph:
        #             release(node)  # its closure has run: what it saved can go now
        #> errors
        met = TROUBLE.watch(_sweep, order, retain_graph)  # what the closures met
        #< memory, replaced in fast
        # if not retain_graph:
        #     for node in order:
        #         release(node)  # drop closures and parents: saved arrays can be freed
        #> errors
        TROUBLE.warn(met)  # once, at the reader's line

    #> tensors
    def _run_closure(self):
        """Add the VJPs of this node's closure into its parents' grads."""
        if self.backward_fn is None:
            return  # a leaf: its grad is the answer
        #< tensors, replaced in fast
        # for parent, vjp in zip(self.parents, self.backward_fn(self.grad)):
        #     if parent.requires_grad:  # constants get no grad
        #< tensors, replaced in shapes
        #         parent._add_grad(vjp)
        #< shapes, replaced in fast
        #         parent._add_grad(unbroadcast(vjp, parent.shape))
        #> fast
        y_bar = self.grad  # Step 6: each attribute read once, into a local
        for parent, vjp in zip(self.parents, self.backward_fn(y_bar)):
            if parent.requires_grad:  # constants get no grad
                shape = parent._data.shape
                if getattr(vjp, "shape", None) != shape:  # no call when nothing was broadcast
                    vjp = unbroadcast(vjp, shape)
                if parent.grad is None and parent.parents:
                    parent.grad = vjp  # a result's first VJP, adopted as it is (Step 2)
                else:
                    parent._add_grad(vjp, y_bar)

    #> errors
    def _seed(self, gradient):
        """The seed of backward: ones of this tensor's shape, or `gradient`, checked."""
        if gradient is None:
            return seed_ones(self.shape)  # read-only ones (chapter `fast`, Step 7)
        gradient = float64_array(gradient, requires_grad=False, copy=True,
                                 what="backward: the seed")
        if gradient.shape != self.shape:
            raise ValueError(
                f"backward: seed of shape {gradient.shape} for a tensor of shape {self.shape}"
            )
        return gradient

    #< tensors, replaced in fast
    # def _add_grad(self, vjp):
    #> fast
    def _add_grad(self, vjp, y_bar=None):
        #> tensors
        """Add one VJP into this tensor's grad."""
        #> training
        if self.grad is None:  # after zero_grad(): the first VJP becomes the grad
            #< training, replaced in fast
            # self.grad = np.array(vjp, dtype=np.float64)  # a copy: the leaf's own
            # return
            #> fast
            self._adopt(vjp, y_bar)
            return
        #> fast
        if self.parents:  # a result never writes into its grad, which may be shared
            self.grad = self.grad + vjp
            return
        #> tensors
        self.grad += vjp  # in place: a leaf accumulates, as in PyTorch

    #> fast
    def _adopt(self, vjp, y_bar):
        """The first VJP into an empty grad becomes the grad, without a copy when it can.

        A result adopts it as it is: `+` returns `y_bar` to both parents, so that
        array may be shared, and a result never writes into its grad. A leaf adds
        into its grad in place, so it keeps the array only if the closure made it
        for this leaf alone (a new, writable array, not `y_bar` or a view of it),
        as PyTorch's AccumulateGrad "steals" it; otherwise it copies.
        """
        if self.parents:
            self.grad = vjp
        elif (isinstance(vjp, np.ndarray) and vjp.flags.writeable
              and (vjp.base is None and vjp is not y_bar  # new memory of its own, or
                   or not np.may_share_memory(vjp, y_bar))):  # at least not y_bar's
            self.grad = vjp.view(np.ndarray)
        else:
            self.grad = np.array(vjp, dtype=np.float64)

    #> memory
    def detach(self):
        """The same data (shared, with its version counter) as a leaf that needs no grad."""
        return Tensor(self.data, requires_grad=False, copy=False)

    #> higher-order
    def cos(self):
        """cos, here because sin's VJP, cos(x) y_bar, must be an engine operation too."""
        def backward_fn(y_bar, out=None):
            if out is not None:  # a create_graph sweep: the rule in engine operations
                return (-(y_bar * self.sin()),)
            return (-np.sin(self.data) * y_bar,)  # cos' = -sin

        return self._result(np.cos(self.data), (self,), "cos", backward_fn)


#> fast
def _needs_grad(parents):
    """Whether any parent requires a gradient; a plain loop, as it runs in every operation
    and any() over a generator costs five times as much."""
    for parent in parents:
        if parent.requires_grad:
            return True
    return False


#> higher-order
def _spread(y_bar, axes, shape):
    """The VJP of a sum over `axes` of a tensor of `shape`, in engine operations: y_bar with
    the summed axes put back (length 1), then broadcast, by adding zeros, to `shape`."""
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    return y_bar.reshape(kept) + np.zeros(shape)


def _index_add(y_bar, index, shape):
    """Zeros of `shape` with y_bar added at `index` (repeats accumulate): indexing's VJP as an
    engine operation, whose own VJP indexes again, so that a second sweep can go through it."""
    def backward_fn(g, out=None):
        return (g[index],)

    data = np.zeros(shape)
    np.add.at(data, index, y_bar.data)
    return y_bar._result(data, (y_bar,), "index_add", backward_fn)


def _matmul_vjps(y_bar, a, b, a_needs, b_needs):
    """The VJPs of a @ b in engine operations: Y_bar B^T and A^T Y_bar, with a 1-D
    operand read as a row (left) or a column (right), as NumPy reads it."""
    g = y_bar.reshape(y_bar.shape + (1,)) if b.ndim == 1 else y_bar
    g = g.reshape(g.shape[:-1] + (1,) + g.shape[-1:]) if a.ndim == 1 else g
    a2 = a.reshape((1,) + a.shape) if a.ndim == 1 else a
    b2 = b.reshape(b.shape + (1,)) if b.ndim == 1 else b
    a_bar = b_bar = None
    if a_needs:
        a_bar = g @ b2.transpose(-1, -2)
        a_bar = a_bar.reshape(a_bar.shape[:-2] + a_bar.shape[-1:]) if a.ndim == 1 else a_bar
    if b_needs:
        b_bar = a2.transpose(-1, -2) @ g
        b_bar = b_bar.reshape(b_bar.shape[:-1]) if b.ndim == 1 else b_bar
    return a_bar, b_bar


def _pow_tensor_vjps(y_bar, x, p, out):
    """The VJPs of x ** p (p a tensor) in engine operations, with the same conventions as
    the array rule: slope 0 where p = 0, and p's slope 0 where x = 0 and p >= 0. The masks
    are constants; multiplying by them, not `where`, keeps this chapter's operations."""
    constant = p.data == 0
    base = x * ~constant + constant  # x, or 1 where p = 0 (no 0 ** -1 to multiply by 0)
    x_bar = y_bar * (p * ~constant) * base ** (p - 1.0)
    if not p.requires_grad:
        return x_bar, None
    zero = (x.data == 0) & (p.data >= 0)
    return x_bar, y_bar * out * (x * ~zero + zero).log() * ~zero


#> shapes
def _axes(axis, shape, op):
    """`axis` (None, an int or a tuple; negatives allowed) as sorted axes of `shape`."""
    ndim = len(shape)
    if axis is None:
        return tuple(range(ndim))
    try:
        return tuple(sorted(np.lib.array_utils.normalize_axis_tuple(axis, ndim)))
    except (ValueError, TypeError):  # NumPy's AxisError is a ValueError
        raise ValueError(f"{op}: axis {axis!r} does not fit a tensor of shape {shape}: an axis "
                         f"is an int from {-ndim} to {ndim - 1}, each axis at most once") from None


def _is_array_index(part):
    """An index part that NumPy reads as advanced indexing: a list or an array."""
    return isinstance(part, (list, np.ndarray))


#> errors
def float64_array(data, requires_grad=True, copy=True, what="Tensor: the data"):
    """`data` as a float64 array, or an error that says what is wrong with it.

    Integers become floats, as the engine has one dtype. Booleans are fine for a
    constant (a mask) but cannot need a gradient; complex numbers would lose their
    imaginary part, and strings or objects are not numbers at all.
    """
    if isinstance(data, Tensor):
        data = data.data
    if not isinstance(data, np.ndarray):
        try:
            data = np.asarray(data)
        except ValueError as error:  # ragged nested lists
            raise ValueError(f"{what} is not a rectangular array of numbers: {error}") from None
    kind = data.dtype.kind
    if kind == "b" and requires_grad:
        raise TypeError(f"{what} is boolean, and a boolean tensor cannot require a gradient; "
                        "use a mask as the NumPy array it is (x * mask, x[mask]), or "
                        "convert it with .astype(float)")
    if kind not in "biuf":
        raise TypeError(f"{what} must be real numbers, got dtype {data.dtype} "
                        f"({_describe(data)}); the engine computes in float64 only")
    return np.array(data, dtype=np.float64, copy=True if copy else None, subok=True)


def _describe(data):
    """A short picture of an array for an error message."""
    text = np.array2string(data.ravel()[:3], separator=", ", threshold=3)
    return f"shape {data.shape}, first entries {text}"


def _caller_level():
    """The `stacklevel` of the first frame outside the engine: the reader's line.

    The wrapper frame of a function that np.errstate decorates (`_watching`, around
    the sweep) lives in NumPy's file but is the engine's: a checkpoint runs a
    backward inside it.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(_ENGINE_DIR)
                                 or frame.f_code is _watching.__code__):
        frame, level = frame.f_back, level + 1
    return level


_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__))
_FIXES = {  # what each operation gives on bad input, and what PyTorch gives
    "log": "log of a negative number is nan and log 0 is -inf",
    "sqrt": "sqrt of a negative number is nan",
    "exp": "exp overflows to inf above about 709.78",
    "/": "division by 0 gives inf, and 0 / 0 gives nan",
}


class FloatingPointTrouble:
    """NumPy's floating-point errors in the closures of a sweep, by operation.

    NumPy would warn from inside this file, where the reader cannot place it;
    `backward` collects them instead and warns once, at the reader's line. One
    collector, TROUBLE, serves every sweep, so that NumPy's error state that calls
    it is made once, at import (`_watching`), not at every backward.
    """

    def __init__(self):
        self.op, self.seen = "", {}

    def watch(self, sweep, *args):
        """Run `sweep(*args)`, NumPy calling this collector on a floating-point
        error; return what it met, by operation. A backward inside a sweep (a
        checkpoint's closure runs one) sets aside what the outer sweep has met,
        and gives it back."""
        outer = self.op, self.seen
        self.seen = {}
        try:
            _watching(sweep, *args)
            return self.seen
        finally:
            self.op, self.seen = outer

    def __call__(self, kind, flag):  # NumPy's callback: kind is "divide by zero" and so on
        kinds = self.seen.setdefault(self.op, [])
        if kind not in kinds:
            kinds.append(kind)

    def warn(self, met):
        if met:
            what = ", ".join(f"{' and '.join(kinds)} in the backward of '{op}'"
                             for op, kinds in met.items())
            warnings.warn(
                f"backward: the gradient is not finite: NumPy met {what} (a slope that is "
                "infinite somewhere, as sqrt's at 0, or a nan or inf from the forward pass); "
                "PyTorch returns the same values without a warning",
                RuntimeWarning, stacklevel=_caller_level(),
            )


TROUBLE = FloatingPointTrouble()


# NumPy's error states, each made once: as a decorator, np.errstate sets its state
# at each call of the function, without the object and the `with` block that cost
# about 1 us per use
@np.errstate(divide="call", over="call", invalid="call", call=TROUBLE)
def _watching(run, *args):
    return run(*args)


@np.errstate(divide="raise", invalid="raise", over="raise")
def _raising(ufunc, *arrays):
    return ufunc(*arrays)


def _sweep(order, retain_graph):
    """Backward's loop: each node's closure, from the last node to the first."""
    while order:  # each node leaves the list, so that it can go (chapter `fast`)
        node = order.pop()
        if node.op:  # a leaf has no closure to run and nothing to release
            TROUBLE.op = node.op
            node._run_closure()
            if not retain_graph:
                release(node)  # its closure has run: what it saved can go now


def checked(ufunc, *arrays, op):
    """`ufunc(*arrays)`, with NumPy's floating-point warning turned into one that names
    the engine's operation and points at the reader's line, not at this file.

    The values are NumPy's (and PyTorch's): nan and inf are returned, not raised.
    """
    try:
        return _raising(ufunc, *arrays)  # nan, inf or overflow raise
    except FloatingPointError as error:
        with np.errstate(all="ignore"):
            y = ufunc(*arrays)
        rule = _FIXES.get(op, "x ** p is nan for x < 0 and a fractional p, inf for x = 0 and p < 0")
        bad = int(np.size(y) - np.count_nonzero(np.isfinite(y)))
        warnings.warn(
            f"{op}: {bad} of {np.size(y)} entries are not finite ({error}; {rule}); "
            "PyTorch gives the same values without a warning, and their gradients "
            "will not be finite either",
            RuntimeWarning, stacklevel=_caller_level(),
        )
        return y
