"""Random programs, one generator for every reference: the engine, PyTorch and HIPS autograd.

A program is inputs and steps on a pool of values with known shapes. A step is
("input", k) or (name, argument positions in the pool, parameter, label); each backend
(ENGINE, TORCH, AUTOGRAD) maps a name to a function of the values and the parameter,
so the same program runs on engine Tensors, on torch tensors and on autograd's traced
NumPy. Steps mix broadcasting (size-1 axes, fewer and more axes), matrix products (1-D,
2-D, batched, either side), reductions over an int, a tuple or every axis, reshapes
with -1, transposes (a whole order, two axes swapped, .T), indexing (slices, repeated
arrays, Ellipsis, boolean masks), softmax and its kin, numbers on either side, powers.

Inputs are often multiples of 0.5 ("exact"): ties and zeros. Operations with a
subgradient (relu, abs, max) are applied only to values that are exact in every
library (touched only by +, -, *, @, sum, reshape, transpose and indexing): there a tie
is a tie everywhere. On a rounded value a near-tie could fall either way, by the order
of a sum, and the libraries would rightly differ.
"""

import numpy as np
import torch
import autograd.numpy as anp
from autograd.scipy.special import logsumexp as anp_logsumexp

from engine import Tensor, functional as F


def _torch_dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis


def _anp_log_softmax(t, axis):
    return t - anp_logsumexp(t, axis=axis, keepdims=True)


SMOOTH = ["tanh", "sin", "sigmoid", "exp_tanh", "log1", "sqrt1", "neg"]

ENGINE = {
    "tanh": lambda t, _: t.tanh(),
    "sin": lambda t, _: t.sin(),
    "sigmoid": lambda t, _: t.sigmoid(),
    "exp_tanh": lambda t, _: t.tanh().exp(),
    "log1": lambda t, _: (t * t + 1.0).log(),
    "sqrt1": lambda t, _: (1.0 + t * t).sqrt(),
    "neg": lambda t, _: -t,
    "relu": lambda t, _: t.relu(),
    "abs": lambda t, _: t.abs(),
    "max": lambda t, p: t.max(axis=p[0], keepdims=p[1]),
    "+": lambda a, b, _: a + b,
    "-": lambda a, b, _: a - b,
    "*": lambda a, b, _: a * b,
    "/": lambda a, b, _: a / (b * b + 1.0),  # a denominator away from 0
    "number": lambda t, p: [lambda c: c - t * c, lambda c: c + t, lambda c: t * c - c,
                            lambda c: c / (t * t + 1.0)][p[0]](p[1]),
    "pow": lambda t, p: (t * t + 0.5) ** p,
    "2**tanh": lambda t, _: 2.0 ** t.tanh(),
    "pow_sin": lambda a, b, _: (a * a + 0.5) ** b.sin(),
    "@": lambda a, b, _: a @ b,
    "sum": lambda t, p: t.sum(axis=p[0], keepdims=p[1]),
    "mean": lambda t, p: t.mean(axis=p[0], keepdims=p[1]),
    "reshape": lambda t, shape: t.reshape(shape),
    "transpose": lambda t, perm: t.transpose(perm),
    "swap": lambda t, axes: t.transpose(*axes),  # two ints: swap them, as in PyTorch
    ".T": lambda t, _: t.T,
    "index": lambda t, index: t[index],
    "logsumexp": lambda t, axis: F.logsumexp(t, axis=axis),
    "log_softmax": lambda t, axis: F.log_softmax(t, axis=axis),
    "softmax": lambda t, axis: F.softmax(t, axis=axis),
    "total": lambda t: t.sum(),
}


def _torch_index(index):
    return tuple(torch.from_numpy(i) if isinstance(i, np.ndarray) else i for i in index)


TORCH = {
    **{name: ENGINE[name] for name in ["tanh", "sin", "sigmoid", "exp_tanh", "log1", "sqrt1",
                                       "neg", "relu", "abs", "+", "-", "*", "/", "number",
                                       "pow", "2**tanh", "pow_sin", "@", "reshape", "swap"]},
    "max": lambda t, p: torch.amax(t, dim=_torch_dims(p[0], t.ndim), keepdim=p[1]),
    "sum": lambda t, p: t.sum(dim=_torch_dims(p[0], t.ndim), keepdim=p[1]),
    "mean": lambda t, p: t.mean(dim=_torch_dims(p[0], t.ndim), keepdim=p[1]),
    "transpose": lambda t, perm: t.permute(perm),
    ".T": lambda t, _: t.permute(tuple(range(t.ndim))[::-1]),
    "index": lambda t, index: t[_torch_index(index)],
    "logsumexp": lambda t, axis: torch.logsumexp(t, dim=axis),
    "log_softmax": lambda t, axis: torch.log_softmax(t, dim=axis),
    "softmax": lambda t, axis: torch.softmax(t, dim=axis),
    "total": lambda t: t.sum(),
}

AUTOGRAD = {
    "tanh": lambda t, _: anp.tanh(t),
    "sin": lambda t, _: anp.sin(t),
    "sigmoid": lambda t, _: 1.0 / (1.0 + anp.exp(-t)),
    "exp_tanh": lambda t, _: anp.exp(anp.tanh(t)),
    "log1": lambda t, _: anp.log(t * t + 1.0),
    "sqrt1": lambda t, _: anp.sqrt(1.0 + t * t),
    "neg": lambda t, _: -t,
    "relu": lambda t, _: anp.where(t > 0, t, 0.0),  # anp.maximum would split the slope at 0
    "abs": lambda t, _: anp.abs(t),
    "max": lambda t, p: anp.max(t, axis=p[0], keepdims=p[1]),  # ties share evenly, as amax
    "+": ENGINE["+"], "-": ENGINE["-"], "*": ENGINE["*"], "/": ENGINE["/"],
    "number": ENGINE["number"], "pow": ENGINE["pow"],
    "2**tanh": lambda t, _: 2.0 ** anp.tanh(t),
    "pow_sin": lambda a, b, _: (a * a + 0.5) ** anp.sin(b),
    "@": lambda a, b, _: anp.matmul(a, b),
    "sum": lambda t, p: anp.sum(t, axis=p[0], keepdims=p[1]),
    "mean": lambda t, p: anp.mean(t, axis=p[0], keepdims=p[1]),
    "reshape": lambda t, shape: anp.reshape(t, shape),
    # autograd's VJP of transpose inverts the order by argsort, wrong for negative axes
    "transpose": lambda t, perm: anp.transpose(t, tuple(a % anp.ndim(t) for a in perm)),
    "swap": lambda t, axes: anp.swapaxes(t, *(a % anp.ndim(t) for a in axes)),
    ".T": lambda t, _: anp.transpose(t),
    "index": lambda t, index: t[index],
    "logsumexp": lambda t, axis: anp_logsumexp(t, axis=axis),
    "log_softmax": lambda t, axis: _anp_log_softmax(t, axis),
    "softmax": lambda t, axis: anp.exp(_anp_log_softmax(t, axis)),
    "total": lambda t: anp.sum(t),
}

KINDS = ["smooth", "kink", "binary", "number", "pow", "matmul", "reduce", "reshape",
         "transpose", "index", "softmax"]


class Program:
    """A random program drawn from `seed` (see the module's docstring)."""

    def __init__(self, seed):
        self.rng = rng = np.random.default_rng(seed)
        self.inputs, self.steps, self.pool = [], [], []  # pool: (shape, exact)
        self.new_input(tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(1, 4))))
        for _ in range(int(rng.integers(4, 15))):
            i = int(rng.integers(0, len(self.pool)))
            getattr(self, str(rng.choice(KINDS)))(i, *self.pool[i])

    def new_input(self, shape):
        exact = bool(self.rng.random() < 0.6)
        x = self.rng.normal(size=shape)
        self.inputs.append(np.round(x * 2) / 2 if exact else x)  # ties and zeros
        self.steps.append(("input", len(self.inputs) - 1))
        self.pool.append((tuple(shape), exact))
        return len(self.pool) - 1

    def add(self, shape, exact, name, args, param=None, label=None):
        self.steps.append((name, args, param, label or name))
        self.pool.append((tuple(shape), exact))

    def labels(self):
        return [s[1] if s[0] == "input" else s[3] for s in self.steps]

    def names(self):
        return {s[0] for s in self.steps}

    # -- kinds of step; each takes the position, shape and exactness of its operand

    def smooth(self, i, shape, exact):
        name = str(self.rng.choice(SMOOTH))
        self.add(shape, exact and name == "neg", name, (i,))

    def _axis(self, shape, tuples=True):
        """None, an int (maybe negative) or a tuple of distinct axes of `shape`."""
        ndim, form = len(shape), int(self.rng.integers(0, 3 if tuples else 2))
        if ndim == 0 or form == 0:
            return None
        if form == 1:
            return int(self.rng.integers(-ndim, ndim))
        size = int(self.rng.integers(1, ndim + 1))
        return tuple(int(a) for a in self.rng.choice(ndim, size=size, replace=False))

    def kink(self, i, shape, exact):
        if not exact:
            return
        name = str(self.rng.choice(["relu", "abs", "max"]))
        if name == "max" and 0 not in shape:  # (a mask may have left no rows: max needs one)
            axis, keep = self._axis(shape), bool(self.rng.random() < 0.5)
            out = np.zeros(shape).max(axis=axis, keepdims=keep).shape
            self.add(out, True, "max", (i,), (axis, keep), f"max({axis}, {keep})")
        else:
            self.add(shape, True, name, (i,))

    def binary(self, i, shape, exact):
        partner = [1 if self.rng.random() < 0.4 else n for n in shape]
        if partner and self.rng.random() < 0.3:
            partner = partner[int(self.rng.integers(0, len(partner))):]  # fewer axes
        elif len(shape) < 3 and self.rng.random() < 0.2:  # more axes
            partner = [int(self.rng.integers(2, 4))] + [1] * (len(shape) - len(partner)) + partner
        j = self.new_input(tuple(partner))
        if self.rng.random() < 0.3:  # sometimes the partner is computed, not a leaf
            self.add(self.pool[j][0], False, "sin", (j,))
            j = len(self.pool) - 1
        first, second = (i, j) if self.rng.random() < 0.5 else (j, i)
        op = str(self.rng.choice(["+", "-", "*", "/"]))
        out = np.broadcast_shapes(shape, self.pool[j][0])
        self.add(out, exact and self.pool[j][1] and op != "/", op, (first, second))

    def number(self, i, shape, exact):
        c = float(self.rng.choice([2.0, -0.5, 3.0, 0.25]))
        form = int(self.rng.integers(0, 4))
        self.add(shape, exact and form < 3, "number", (i,), (form, c), f"number form {form}, {c}")

    def pow(self, i, shape, exact):
        form = int(self.rng.integers(0, 3))
        if form == 0:
            p = float(self.rng.choice([2, 3, 0.5, -1.5]))
            self.add(shape, False, "pow", (i,), p, f"(x*x + 0.5) ** {p}")
        elif form == 1:
            self.add(shape, False, "2**tanh", (i,), label="2 ** tanh(x)")
        else:
            j = self.new_input(tuple(1 if self.rng.random() < 0.4 else n for n in shape))
            self.add(np.broadcast_shapes(shape, self.pool[j][0]), False, "pow_sin", (i, j),
                     label="(x*x + 0.5) ** sin(p)")

    def matmul(self, i, shape, exact):
        if not shape:
            return
        k, rng = shape[-1], self.rng
        other = [(k,), (k, int(rng.integers(1, 4))),
                 (int(rng.integers(1, 3)), k, int(rng.integers(1, 4)))][int(rng.integers(0, 3))]
        right = len(shape) >= 2 and rng.random() < 0.5  # the value on the right of @
        if right:
            other = other[:-2] + (other[-1], shape[-2]) if len(other) >= 2 else (shape[-2],)
        pair = (other, shape) if right else (shape, other)
        try:
            out = np.matmul(np.zeros(pair[0]), np.zeros(pair[1])).shape
        except ValueError:  # batch axes that do not broadcast
            return
        j = self.new_input(other)
        self.add(out, exact and self.pool[j][1], "@", (j, i) if right else (i, j))

    def reduce(self, i, shape, exact):
        name = str(self.rng.choice(["sum", "mean"]))
        if 0 in shape:  # the mean of no entries is nan: sum them (to 0)
            name = "sum"
        axis, keep = self._axis(shape), bool(self.rng.random() < 0.5)
        out = np.zeros(shape).sum(axis=axis, keepdims=keep).shape
        self.add(out, exact and name == "sum", name, (i,), (axis, keep), f"{name}({axis}, {keep})")

    def reshape(self, i, shape, exact):
        size = int(np.prod(shape))
        targets = [(size,), (-1,), (1, -1), (size, 1)] + ([()] if size == 1 else [])
        target = targets[int(self.rng.integers(0, len(targets)))]
        out = np.zeros(shape).reshape(target).shape
        self.add(out, exact, "reshape", (i,), target, f"reshape{target}")

    def transpose(self, i, shape, exact):
        ndim, form = len(shape), float(self.rng.random())
        if form < 0.25:
            self.add(shape[::-1], exact, ".T", (i,))
        elif form < 0.5 and ndim >= 2:
            a, b = (int(v) - (ndim if self.rng.random() < 0.5 else 0)
                    for v in self.rng.choice(ndim, size=2, replace=False))
            out = list(shape)
            out[a], out[b] = out[b], out[a]
            self.add(tuple(out), exact, "swap", (i,), (a, b), f"transpose{(a, b)}")
        else:  # a whole order as one tuple
            perm = tuple(int(a) - (ndim if self.rng.random() < 0.5 else 0)
                         for a in self.rng.permutation(ndim))
            self.add(np.zeros(shape).transpose(perm).shape, exact, "transpose", (i,), perm,
                     f"transpose({perm})")

    def index(self, i, shape, exact):
        if not shape or 0 in shape:
            return
        n, rng = shape[0], self.rng
        form = int(rng.integers(0, 4))
        if form == 0:
            index = (slice(int(rng.integers(-n, n)), None, int(rng.integers(1, 3))),)
        elif form == 1:
            index = (rng.integers(-n, n, size=int(rng.integers(1, 5))),)  # repeats likely
        elif form == 2:
            index = (Ellipsis, rng.integers(0, shape[-1], size=3))
        else:
            index = (rng.random(size=shape[:1]) < 0.6,)  # a boolean mask
        self.add(np.zeros(shape)[index].shape, exact, "index", (i,), index, f"index {index}")

    def softmax(self, i, shape, exact):
        if not shape or 0 in shape:
            return
        axis = int(self.rng.integers(-len(shape), len(shape)))
        name = str(self.rng.choice(["logsumexp", "log_softmax", "softmax"]))
        out = np.zeros(shape).sum(axis=axis).shape if name == "logsumexp" else shape
        self.add(out, False, name, (i,), axis, f"{name}({axis})")

    def run(self, leaves, backend):
        """The output: the last value, plus 0.1 times the sum of every other (fan-out)."""
        values = []
        for step in self.steps:
            if step[0] == "input":
                values.append(leaves[step[1]])
            else:
                name, args, param, _ = step
                values.append(backend[name](*[values[a] for a in args], param))
        total = values[-1]
        for v in values[:-1]:
            total = total + 0.1 * backend["total"](v)
        return total


def every_name():
    """The step names a program can hold (the keys every backend must have)."""
    return set(ENGINE) - {"total"}
