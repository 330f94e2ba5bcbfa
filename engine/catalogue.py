#> catalogue
"""The catalogue's operations: what a PyTorch model asks for beyond the chapters' engine.

Introduced in appendix `catalogue` (A catalogue of vector-Jacobian products). Each
operation is built as those of engine/tensor.py are: NumPy computes the value, and
`_result` records the parents and one closure. Seven are methods of Tensor, as in
PyTorch (x.min(), x.clip(), ...): functions here, set on Tensor at the end of the
module. The other five are functions of the package (engine.maximum, engine.where, ...).
"""

import warnings

import numpy as np

from .shapes import broadcast_shape
from .tensor import Tensor, _axes, _caller_level, _spread, float64_array


def min(self, axis=None, keepdims=False):
    axes = _axes(axis, self.shape, "min")
    if 0 in [self.shape[i] for i in axes]:
        over = "all its axes" if axis is None else f"axis {axis}"
        raise ValueError(f"min: no entries to take the minimum of, over {over} of a "
                         f"tensor of shape {self.shape}")
    y = self.data.min(axis=axes, keepdims=True)

    def backward_fn(y_bar, out=None):
        if out is not None:  # a create_graph sweep: the rule in engine operations
            is_min = self.data == y
            return (y_bar.reshape(y.shape) * (is_min / is_min.sum(axis=axes, keepdims=True)),)
        if not keepdims:
            y_bar = np.expand_dims(y_bar, axes)
        is_min = self.data == y  # ties share y_bar evenly, as torch.amin
        return (is_min * y_bar / is_min.sum(axis=axes, keepdims=True),)

    data = y if keepdims else np.squeeze(y, axis=axes)
    return self._result(data, (self,), "min", backward_fn)

def clip(self, min=None, max=None):
    """Entries below `min` become `min`, entries above `max` become `max` (torch.clamp).

    The bounds are constants: numbers, or arrays that broadcast with the tensor.
    """
    if min is None and max is None:
        raise ValueError("clip: give a bound, min or max or both")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        raise TypeError("clip: the bounds are constants (numbers or arrays), got a Tensor; "
                        "for a bound that needs a gradient, use maximum(x, low) and "
                        "minimum(x, high)")
    low = -np.inf if min is None else float64_array(min, False, what="clip: min")
    high = np.inf if max is None else float64_array(max, False, what="clip: max")
    broadcast_shape(self.shape, np.broadcast_shapes(np.shape(low), np.shape(high)), "clip")
    inside = (self.data >= low) & (self.data <= high)  # a bound itself counts as inside

    def backward_fn(y_bar, out=None):
        return (inside * y_bar,)  # slope 1 inside, 0 where a bound was taken

    y = np.minimum(np.maximum(self.data, low), high)  # min > max gives max, as torch
    return self._result(y, (self,), "clip", backward_fn)

def squeeze(self, axis=None):
    """Drop the axes of length 1: all of them, or those named by `axis` (an int or a
    tuple). An axis named that has another length stays, as in PyTorch; NumPy raises."""
    axes = _axes(axis, self.shape, "squeeze")
    old_shape = self.shape

    def backward_fn(y_bar, out=None):
        return (y_bar.reshape(old_shape),)

    ones = tuple(i for i in axes if old_shape[i] == 1)
    return self._result(np.squeeze(self.data, axis=ones), (self,), "squeeze", backward_fn)

def unsqueeze(self, axis):
    """A new axis of length 1 at position `axis`, from -(ndim + 1) to ndim."""
    axis = _new_axis(axis, self.ndim, self.shape, "unsqueeze")
    old_shape = self.shape

    def backward_fn(y_bar, out=None):
        return (y_bar.reshape(old_shape),)

    return self._result(np.expand_dims(self.data, axis), (self,), "unsqueeze", backward_fn)

def var(self, axis=None, correction=1, keepdims=False):
    """The sum of (x - mean)^2 over `axis`, divided by n - correction.

    PyTorch's default, correction=1, divides by n - 1; NumPy's (ddof=0) by n.
    """
    axes = _axes(axis, self.shape, "var")
    n = int(np.prod([self.shape[i] for i in axes]))  # entries per variance
    dof = n - correction
    if dof <= 0:  # PyTorch warns too, and divides by max(0, dof)
        warnings.warn(f"var: {n} entries with correction={correction} leave {dof} degrees "
                      "of freedom: the result is nan or inf, as in PyTorch",
                      RuntimeWarning, stacklevel=_caller_level())
        dof = 0
    # the mean, as a constant; with no entries (n = 0) there is nothing to center
    centered = self.data - self.data.sum(axis=axes, keepdims=True) / max(n, 1)

    def backward_fn(y_bar, out=None):
        if out is not None:  # the centering too is differentiated: x's mean moves with x
            x = out.parents[0]
            c = x - x.sum(axis=axes, keepdims=True) / max(n, 1)
            return (2.0 * c * _spread(y_bar, axes, x.shape) / dof,)
        if not keepdims:
            y_bar = np.expand_dims(y_bar, axes)
        return (2.0 * centered * y_bar / dof,)  # the mean's own term sums to 0

    with np.errstate(divide="ignore", invalid="ignore"):  # dof 0: warned above
        y = (centered * centered).sum(axis=axes, keepdims=keepdims) / dof
    return self._result(y, (self,), "var", backward_fn)

def std(self, axis=None, correction=1, keepdims=False):
    """The square root of `var`, with its arguments and PyTorch's default correction=1."""
    v = self.var(axis=axis, correction=correction, keepdims=keepdims)
    y = np.sqrt(v.data)
    zero = y == 0  # all entries equal: PyTorch takes slope 0 there, not 0 / 0

    def backward_fn(y_bar, out=None):
        if out is not None:  # a create_graph sweep: the rule in engine operations
            return (y_bar * ~zero / (2.0 * (out + zero)),)
        return (np.where(zero, 0.0, y_bar / (2.0 * np.where(zero, 1.0, y))),)

    return v._result(y, (v,), "std", backward_fn)

def item(self):
    """The one entry of this tensor as a Python float: a number, outside the graph."""
    if self.data.size != 1:
        raise ValueError(f"item: a tensor of shape {self.shape} has {self.data.size} "
                         "entries, and item() needs exactly one: index it first, "
                         "such as x[0].item()")
    return float(self.data.reshape(()))


def _new_axis(axis, ndim, shape, op):
    """The position, 0 to ndim, of an axis that `op` inserts; negatives count from the end."""
    if not isinstance(axis, (int, np.integer)) or not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"{op}: axis {axis!r} does not fit a tensor of shape {shape}: the "
                         f"new axis goes at a position from {-ndim - 1} to {ndim}")
    return axis % (ndim + 1)


def _operands(a, b, op):
    """`a` and `b` as Tensors whose shapes broadcast; a number or an array is a constant."""
    if not isinstance(a, Tensor):
        a = Tensor(a, requires_grad=False)
    return a, a._pair(b, op)


def maximum(a, b):
    """The larger of `a` and `b`, entry by entry; a tie sends half of y_bar to each,
    as torch.maximum does."""
    a, b = _operands(a, b, "maximum")

    def backward_fn(y_bar, out=None):
        a_share = np.where(a.data == b.data, 0.5, a.data > b.data)
        return (a_share * y_bar if a.requires_grad else None,
                (1.0 - a_share) * y_bar if b.requires_grad else None)

    return a._result(np.maximum(a.data, b.data), (a, b), "maximum", backward_fn)


def minimum(a, b):
    """The smaller of `a` and `b`, entry by entry; a tie sends half of y_bar to each,
    as torch.minimum does."""
    a, b = _operands(a, b, "minimum")

    def backward_fn(y_bar, out=None):
        a_share = np.where(a.data == b.data, 0.5, a.data < b.data)
        return (a_share * y_bar if a.requires_grad else None,
                (1.0 - a_share) * y_bar if b.requires_grad else None)

    return a._result(np.minimum(a.data, b.data), (a, b), "minimum", backward_fn)


def where(condition, a, b):
    """Entries of `a` where `condition` is True and of `b` elsewhere; the three broadcast."""
    if isinstance(condition, Tensor):
        raise TypeError("where: the condition must be booleans, got a Tensor, whose entries "
                        "are floats: pass a NumPy mask, such as x.data > 0")
    condition = np.asarray(condition)
    if condition.dtype != bool:
        raise TypeError(f"where: the condition must be booleans, got dtype {condition.dtype}: "
                        "make it by a comparison, such as x.data > 0")
    a, b = _operands(a, b, "where")
    broadcast_shape(condition.shape, np.broadcast_shapes(a.shape, b.shape), "where")
    a_needs, b_needs = a.requires_grad, b.requires_grad  # flags: `where` saves only the mask

    def backward_fn(y_bar, out=None):
        if out is not None:  # a create_graph sweep: the rule in engine operations
            return (y_bar * condition if a_needs else None,
                    y_bar * ~condition if b_needs else None)
        return (np.where(condition, y_bar, 0.0) if a_needs else None,
                np.where(condition, 0.0, y_bar) if b_needs else None)

    return a._result(np.where(condition, a.data, b.data), (a, b), "where", backward_fn)


def _joined(tensors, op):
    """The tensors to join as a tuple of Tensors (arrays become constants), or an error."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op} takes a list or a tuple of tensors, got "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise ValueError(f"{op}: no tensors to join")
    return tuple(t if isinstance(t, Tensor) else Tensor(t, requires_grad=False)
                 for t in tensors)


def concatenate(tensors, axis=0):
    """The tensors joined along an existing axis (torch.cat); each gets its slice of y_bar."""
    tensors = _joined(tensors, "concatenate")
    first = tensors[0]
    if first.ndim == 0:
        raise ValueError("concatenate: a tensor of shape () has no axis to join along; "
                         "stack joins along a new one")
    (axis,) = _axes(axis, first.shape, "concatenate")
    for t in tensors:
        if t.ndim != first.ndim or any(m != n for i, (m, n) in
                                       enumerate(zip(t.shape, first.shape)) if i != axis):
            raise ValueError(f"concatenate: shapes {first.shape} and {t.shape} differ on an "
                             f"axis other than axis {axis}, the one they are joined along")
    ends = np.cumsum([t.shape[axis] for t in tensors])[:-1]  # where each slice ends

    def backward_fn(y_bar, out=None):
        if out is not None:  # a create_graph sweep: the rule in engine operations
            bounds = zip((0, *ends), (*ends, None))  # each tensor's slice, by indexing
            return tuple(y_bar[(slice(None),) * axis + (slice(start, stop),)]
                         for start, stop in bounds)
        return tuple(np.split(y_bar, ends, axis=axis))

    y = np.concatenate([t.data for t in tensors], axis=axis)
    return first._result(y, tensors, "concatenate", backward_fn)


def stack(tensors, axis=0):
    """Tensors of one shape joined along a new axis (torch.stack); each gets its slice."""
    tensors = _joined(tensors, "stack")
    shape = tensors[0].shape
    for t in tensors:
        if t.shape != shape:
            raise ValueError(f"stack: shapes {shape} and {t.shape} differ; stack needs "
                             "tensors of one shape")
    axis = _new_axis(axis, len(shape), shape, "stack")

    def backward_fn(y_bar, out=None):
        if out is not None:  # a create_graph sweep: the rule in engine operations
            return tuple(y_bar[(slice(None),) * axis + (k,)] for k in range(len(out.parents)))
        return tuple(np.moveaxis(y_bar, axis, 0))  # slice k along the new axis, for tensor k

    y = np.stack([t.data for t in tensors], axis=axis)
    return tensors[0]._result(y, tensors, "stack", backward_fn)


# The seven methods, set on Tensor here so that tensor.py holds only the chapters' engine
# (this module's `min` hides the builtin, which no line here uses)
Tensor.min = min
Tensor.clip = clip
Tensor.squeeze = squeeze
Tensor.unsqueeze = unsqueeze
Tensor.var = var
Tensor.std = std
Tensor.item = item
