#> losses
"""Stable softmax, log-softmax, logsumexp and cross-entropy.

Introduced in chapter `losses` (Stable softmax, cross-entropy and loss
reductions). `logsumexp`, `log_softmax` and `softmax` are built from Tensor
operations; `cross_entropy` is one fused operation whose backward is
softmax - onehot, with PyTorch's `reduction` and `ignore_index` semantics.
"""

#> errors
import warnings

#> losses
import numpy as np

from .tensor import Tensor
#> errors
from .tensor import _caller_level
#> losses


def logsumexp(x, axis=-1, keepdims=False):
    """log sum exp(x) over `axis`, as m + log sum exp(x - m), m the max."""
    #> errors
    if not isinstance(x, Tensor):
        raise TypeError(f"logsumexp, log_softmax and softmax take a Tensor, got "
                        f"{type(x).__name__}: wrap it, Tensor(x)")
    if not all(-x.ndim <= a < x.ndim for a in np.atleast_1d(axis)):
        raise ValueError(f"axis {axis} is out of range for a tensor of shape {x.shape}: "
                         "logsumexp, log_softmax and softmax reduce over an axis it has")
    #> losses
    m = np.max(x.data, axis=axis, keepdims=True)  # a constant (see chapter)
    #< losses, replaced in errors
    # out = (x - m).exp().sum(axis=axis, keepdims=True).log() + m
    #> errors
    if np.isinf(m).any():  # x - m is inf - inf, nan: say why, at the reader's line
        _warn_infinite_max(x, m, axis)
    with np.errstate(invalid="ignore"):  # ... and not again in NumPy's words
        out = (x - m).exp().sum(axis=axis, keepdims=True).log() + m
    #> losses
    return out if keepdims else out.reshape(np.squeeze(m, axis=axis).shape)


#> errors
def _warn_infinite_max(x, m, axis):
    """The values stay nan, as PyTorch's softmax gives; the warning says which entries made them."""
    n_inf, n_dead = int(np.isposinf(x.data).sum()), int(np.isneginf(m).sum())
    why = []
    if n_inf:
        why.append(f"{n_inf} of {x.data.size} entries of x are inf")
    if n_dead:
        why.append(f"{n_dead} of {m.size} slices along axis {axis} are all -inf")
    warnings.warn(
        f"logsumexp, log_softmax and softmax: {' and '.join(why)}, so x - max(x) is "
        f"inf - inf in {int(np.isinf(m).sum())} of {m.size} slices along axis {axis}: every "
        "result there is nan, and so is its gradient; PyTorch's softmax and log_softmax give "
        "the same nan without a warning (its logsumexp gives inf or -inf)",
        RuntimeWarning, stacklevel=_caller_level())


#> losses
def log_softmax(x, axis=-1):
    """x - logsumexp(x): log-probabilities that never overflow."""
    return x - logsumexp(x, axis=axis, keepdims=True)


def softmax(x, axis=-1):
    """exp(log_softmax(x)): entries in [0, 1] that sum to 1 over `axis`."""
    return log_softmax(x, axis=axis).exp()


def _check_targets(logits, targets, ignore_index):
    """Targets as an int array of shape (N,), and a mask of those kept."""
    #> errors
    if not isinstance(logits, Tensor):
        raise TypeError(f"logits must be a Tensor, got {type(logits).__name__}: "
                        "wrap them, Tensor(logits), to get their gradient")
    if isinstance(targets, Tensor):  # its data is float64, never class indices
        raise TypeError("targets must be class indices (integers), got a Tensor, "
                        "whose entries are floats: pass an integer array or a list")
    #> losses
    if logits.ndim != 2:
        raise ValueError(f"logits must have shape (N, C), got {logits.shape}")
    targets = np.asarray(targets)
    if targets.size and not np.issubdtype(targets.dtype, np.integer):
        raise TypeError(f"targets must be class indices (integers), "
                        f"got dtype {targets.dtype}")
    n, c = logits.shape
    if targets.shape != (n,):
        raise ValueError(f"targets of shape {targets.shape} for logits of "
                         f"shape {logits.shape}: expected shape ({n},), "
                         "one class per row")
    kept = np.ones(n, dtype=bool)
    if ignore_index is not None:
        kept = targets != ignore_index
    #> errors
    finite = np.isfinite(logits.data)
    if not finite.all():  # a nan here would only come back as a nan loss
        i, j = np.argwhere(~finite)[0]
        raise ValueError(f"logits contain {int((~finite).sum())} non-finite values, first "
                         f"{logits.data[i, j]} at row {i}, column {j}: a nan or inf made "
                         "earlier in the forward pass (log or sqrt of a negative number, "
                         "an overflow, a learning rate that is too large) reached the loss")
    #> losses
    bad = kept & ((targets < 0) | (targets >= c))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"target {int(targets[i])} at row {i} is out of "
                         f"range for {c} classes (valid: 0 to {c - 1})")
    return targets.astype(np.intp), kept


def _check_reduction(reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError("reduction must be 'mean', 'sum' or 'none', "
                         f"got {reduction!r}")


def cross_entropy(logits, targets, reduction="mean", ignore_index=-100):
    """-log softmax(logits)[i, targets[i]] per kept row, then reduced.

    A row whose target is `ignore_index` (-100 unless told, PyTorch's default)
    is not kept: loss 0, gradient 0, and not counted by the mean.
    """
    #> fast
    if reduction == "mean" and _every_row_counts(logits, targets, ignore_index):
        return _mean_over_every_row(logits, targets)  # Step 8: the usual case
    #> losses
    _check_reduction(reduction)
    targets, kept = _check_targets(logits, targets, ignore_index)
    rows = np.arange(len(targets))
    safe_targets = np.where(kept, targets, 0)  # ignored rows: any valid class
    shifted = logits.data - logits.data.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    losses = np.where(kept, -log_p[rows, safe_targets], 0.0)
    n_kept = int(kept.sum())
    if reduction == "none":
        loss = losses
    elif reduction == "sum":
        loss = losses.sum()
    else:  # a mean over no targets is 0 / 0: nan, as in PyTorch
        loss = losses.sum() / n_kept if n_kept else np.nan

    #< losses, replaced in higher-order
    # def backward_fn(y_bar):
    #> higher-order
    def backward_fn(y_bar, out=None):
        if out is not None:  # a create_graph sweep: softmax again, in engine operations
            onehot = np.zeros(log_p.shape)
            onehot[rows, safe_targets] = 1.0
            weight = y_bar * (kept / max(n_kept, 1) if reduction == "mean" else kept)
            p = log_softmax(out.parents[0], axis=1).exp()
            return ((p - onehot) * weight.reshape((-1, 1)),)
    #> losses
        weight = y_bar * kept  # ignored rows get no gradient
        if reduction == "mean":
            weight = weight / max(n_kept, 1)
        onehot = np.zeros_like(log_p)
        onehot[rows, safe_targets] = 1.0
        p = np.exp(log_p)
        return ((p - onehot) * weight[:, None],)  # softmax - onehot, per row

    return logits._result(np.asarray(loss), (logits,), "cross_entropy",
                          backward_fn)


#> fast
def _every_row_counts(logits, targets, ignore_index):
    """Whether every row of `logits` has a valid target and none is ignored:
    a training loop's case. Anything else goes the general way, whose checks
    say what is wrong. No target can equal an `ignore_index` outside 0..C-1,
    such as the default.
    """
    if not (isinstance(logits, Tensor) and logits.ndim == 2 and type(targets) is np.ndarray
            and targets.dtype.kind in "iu"):
        return False
    n, c = logits.shape
    if targets.shape != (n,) or n == 0 or ignore_index is not None and 0 <= ignore_index < c:
        return False
    #> errors
    if not np.isfinite(logits.data).all():
        return False  # the general way refuses non-finite logits, and says where they are
    #> fast
    return targets.min() >= 0 and targets.max() < c


def _mean_over_every_row(logits, targets):
    """`cross_entropy(logits, targets)` when every row counts: no masks."""
    n = len(targets)
    rows = np.arange(n)
    shifted = logits.data - logits.data.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = (-log_p[rows, targets]).sum() / n

    def backward_fn(y_bar, out=None):
        if out is not None:  # a create_graph sweep: softmax again, in engine operations
            onehot = np.zeros(log_p.shape)
            onehot[rows, targets] = 1.0
            return ((log_softmax(out.parents[0], axis=1).exp() - onehot) * (y_bar / n),)
        p = np.exp(log_p)  # a new array, so the closure may write into it
        p[rows, targets] -= 1.0  # softmax - onehot, without making the onehot
        p *= y_bar / n
        return (p,)

    return logits._result(np.asarray(loss), (logits,), "cross_entropy", backward_fn)


#> losses
def nll_loss(log_probs, targets, reduction="mean", ignore_index=-100):
    """The same loss from log-probabilities, by indexing: unfused."""
    _check_reduction(reduction)
    targets, kept = _check_targets(log_probs, targets, ignore_index)
    picked = log_probs[np.arange(len(targets)), np.where(kept, targets, 0)]
    losses = -picked * kept  # ignored rows: loss 0, gradient 0
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if not kept.any():
        return losses.sum() * 0.0 + np.nan  # nan, with a zero gradient
    return losses.sum() / int(kept.sum())


#> catalogue
def mse_loss(input, target, reduction="mean"):
    """(input - target)^2 per entry, then reduced: the mean (PyTorch's default), the sum,
    or none. The target may be a Tensor that needs a gradient, or a constant."""
    _check_reduction(reduction)
    if not isinstance(input, Tensor):
        raise TypeError(f"mse_loss: input must be a Tensor, got {type(input).__name__}: "
                        "wrap it, Tensor(input), to get its gradient")
    if not isinstance(target, Tensor):
        target = Tensor(target, requires_grad=False)
    if target.shape != input.shape:  # PyTorch broadcasts, with a warning
        raise ValueError(f"mse_loss: input of shape {input.shape} and target of shape "
                         f"{target.shape}: give them one shape")
    diff = input.data - target.data  # all the closure keeps, with two flags
    input_needs, target_needs = input.requires_grad, target.requires_grad
    scale = 1.0 / diff.size if reduction == "mean" and diff.size else 1.0
    if reduction == "none":
        loss = diff * diff
    elif reduction == "sum":
        loss = (diff * diff).sum()
    else:  # the mean of no entries is nan, as in PyTorch
        loss = (diff * diff).sum() * scale if diff.size else np.nan

    def backward_fn(y_bar, out=None):
        if out is not None:  # a create_graph sweep: the difference as engine operations
            d_bar = 2.0 * (out.parents[0] - out.parents[1]) * y_bar * scale
            return (d_bar if input_needs else None, -d_bar if target_needs else None)
        d_bar = 2.0 * diff * y_bar * scale  # d(d^2)/dd = 2 d, and the mean's 1/n
        return (d_bar if input_needs else None, -d_bar if target_needs else None)

    return input._result(np.asarray(loss), (input, target), "mse_loss", backward_fn)
