"""Perturbed arithmetic: every floating-point result of the engine, one or two ulps off.

Test-only. It stands in for the CPUs and libraries no machine here has (Apple's
Accelerate, ARM's kernels, another libm), which round differently in the last bits.
`install(seed)` patches the engine's classes from outside, so the engine's code, as
the book shows it, is unchanged:

- every result an operation records (`Tensor._result`, `Var._result`, each operation
  of `Dual`) is nudged by -2, -1, +1 or +2 units in the last place, entry by entry,
  the step picked by a seeded hash of the entry's bits (so the same operation on
  the same inputs always gives the same result, as on a real machine);
- every value written into a `.grad` (a VJP adopted or added) is nudged the same way.

Some values and operations stay as they are, because every machine computes them
exactly: whole numbers (0, 1, 20: a faithfully rounded library returns a result that
is exactly representable exactly, as cos 0 = 1 and 2 + 1 = 3), non-finite values,
and the operations that only move or pick values (negation, relu, abs, max, reshape,
transpose, indexing). A result that is a view of its input keeps sharing its memory. A number a chapter prints that moves under this was resting on last-bit
rounding. The chapter verifier runs every chapter with this installed in its kernel
(tests/numerics.py starts the kernel with an IPython startup file that calls it).
"""

import math
import struct

import numpy as np

EXACT_OPS = {"neg", "relu", "abs", "max", "min", "maximum", "minimum", "where", "clip",
             "reshape", "transpose", "index", "squeeze", "unsqueeze", "concatenate", "stack",
             "expand", "sign", "detach", "copy"}


MIXER = 0xBF58476D1CE4E5B9  # the multiplier of splitmix64: spreads the bits to the top two
TOP = 2.0**1023  # the top binade: left as it is
STEPS = (-2.0, -1.0, 1.0, 2.0)  # in ulps


class Nudger:
    """Nudges values by -2, -1, +1 or +2 ulps, chosen by a seeded hash of their bits.

    The step is a function of the value (and the seed), not a draw: like a real
    library that rounds differently, the same operation on the same inputs gives
    the same result every time, so a program run twice still agrees with itself.
    """

    STEP_ARRAY = np.array(STEPS)

    def __init__(self, seed):
        self.int_key = (0x9E3779B97F4A7C15 * (seed + 1)) % 2**64
        self.key = np.uint64(self.int_key)
        self.count = 0  # values nudged, for the runner's report

    def steps(self, array):
        bits = np.ascontiguousarray(array, dtype=np.float64).view(np.uint64)
        with np.errstate(over="ignore"):
            mixed = (bits ^ self.key) * np.uint64(MIXER)
        return self.STEP_ARRAY[(mixed >> np.uint64(62)).astype(np.intp)].reshape(np.shape(array))

    def array(self, data, in_place):
        """`data` nudged: in place when it is a fresh array the caller owns."""
        if isinstance(data, float) and not isinstance(data, np.floating):
            return self.scalar(data)
        array = np.asarray(data)
        if array.dtype != np.float64 or array.size == 0:
            return data
        with np.errstate(invalid="ignore", over="ignore"):  # spacing(max float) is inf
            size = np.abs(array)
            steady = ~np.isfinite(array) | (array == np.round(array)) & (size <= 2**53)
            steady |= size >= TOP  # a nudge there could reach inf, which no library returns
            delta = np.where(steady, 0.0, self.steps(array) * np.spacing(size))
        self.count += array.size
        if not delta.any():  # every entry exact (the seed of ones): the very same array
            return data
        if in_place and isinstance(data, np.ndarray) and data.ndim and data.flags.writeable:
            plain = data.view(np.ndarray)  # a plain view: no version counter sees the nudge
            plain += delta
            return data
        return (array + delta)[()] if array.ndim == 0 else array + delta

    def scalar(self, value):
        """The step `steps` takes for this value's bits, computed in Python: NumPy calls on a
        single float cost more than the engine's own scalar operation (Var, Dual)."""
        if (not math.isfinite(value) or (value == round(value) and abs(value) <= 2**53)
                or abs(value) >= TOP):
            return value
        self.count += 1
        bits = int.from_bytes(struct.pack("<d", value), "little")
        mixed = ((bits ^ self.int_key) * MIXER) & 0xFFFF_FFFF_FFFF_FFFF  # uint64 wraps
        return value + STEPS[mixed >> 62] * math.ulp(value)


def _shares_memory_with_parents(data, parents):
    for parent in parents:
        other = getattr(parent, "data", None)
        if isinstance(other, np.ndarray) and isinstance(data, np.ndarray):
            if np.may_share_memory(data, other):
                return True
    return False


def _patch_result(cls, nudger):
    """Nudge what `cls._result(data, parents, op, backward_fn)` records."""
    original = cls._result

    def _result(self, data, parents, op, backward_fn):
        if op not in EXACT_OPS and not _shares_memory_with_parents(data, parents):
            data = nudger.array(data, in_place=True)
        return original(self, data, parents, op, backward_fn)

    cls._result = _result


def _patch_grad(cls, nudger):
    """Nudge every value written into `.grad`, whether a slot or an instance attribute."""
    slot = cls.__dict__.get("grad")  # a member descriptor when the class has __slots__

    if slot is not None:
        def get(self):
            return slot.__get__(self, cls)

        def put(self, value):
            slot.__set__(self, _nudged_grad(nudger, value, get(self) if _has(self) else None))

        def _has(self):
            try:
                slot.__get__(self, cls)
                return True
            except AttributeError:
                return False
    else:
        def get(self):
            return self.__dict__["grad"]

        def put(self, value):
            self.__dict__["grad"] = _nudged_grad(nudger, value, self.__dict__.get("grad"))

    cls.grad = property(get, put)


def _nudged_grad(nudger, value, current):
    if value is None:
        return None
    # `x.grad += vjp` hands back the array x already owns: nudge it in place; any
    # other array may be shared (an adopted y_bar), so it is nudged as a copy
    return nudger.array(value, in_place=value is current)


def _patch_methods(cls, nudger, fields):
    """Wrap every operation of `cls` that returns a `cls`: nudge its `fields`."""
    skip = {"__init__", "__repr__", "__new__", "__neg__", "relu"}
    for name, function in list(vars(cls).items()):
        if name in skip or not callable(function) or isinstance(function, (staticmethod,
                                                                            classmethod)):
            continue
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue

        def wrapper(*args, _function=function, **kwargs):
            out = _function(*args, **kwargs)
            if isinstance(out, cls):
                for field in fields:
                    setattr(out, field, nudger.array(getattr(out, field), in_place=False))
            return out

        wrapper.__name__ = name
        setattr(cls, name, wrapper)


def _engine_class(module, name):
    """`engine.<module>.<name>`, or None when this snapshot of the engine has no such module."""
    import importlib

    try:
        return getattr(importlib.import_module(f"engine.{module}"), name)
    except ImportError:
        return None


def install(seed):
    """Patch every engine type that this snapshot of the engine has; return the nudger."""
    nudger = Nudger(seed)
    for module, name in (("tensor", "Tensor"), ("scalar", "Var")):
        cls = _engine_class(module, name)
        if cls is not None:
            _patch_result(cls, nudger)
            _patch_grad(cls, nudger)
    dual = _engine_class("dual", "Dual")
    if dual is not None:
        _patch_methods(dual, nudger, ("value", "tangent"))
    return nudger
