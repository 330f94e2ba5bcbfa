#> memory
"""Memory and in-place safety: what backward keeps, when it lets go, and who changed it.

Introduced in chapter `memory` (Saved values, memory and in-place safety).

    VersionedArray   the array behind every Tensor's `.data`: it counts its in-place changes
    no_grad()        a context in which operations record nothing (inference)
    record_versions  what `Tensor._result` notes for a closure: each saved array's version
    check_saved      the test `Tensor.backward` runs first: graph not freed, nothing changed
    release          what `Tensor.backward` does after the sweep unless `retain_graph=True`
    saved_arrays     the arrays a graph's closures keep alive for backward
    checkpoint       run a segment without keeping its graph; recompute it during backward

What a closure saves is read from the closure itself: Python keeps the
variables a nested function uses in its cells (`backward_fn.__closure__`), and
those cells are exactly what stays alive until backward runs.
"""

import contextlib
import weakref

import numpy as np

# -- the version counter ----------------------------------------------------------


class VersionedArray(np.ndarray):
    """A NumPy array that counts its in-place changes: the version of its memory.

    As in PyTorch, the count belongs to the memory, not to one array object: an
    array and every view of it (`a[1:3]`, `a.T`, `a.reshape(...)`) share it, so a
    write through a view is a write into `a`; new memory (a copy, the result of an
    operation) starts at version 0. A write counts when it goes through the array
    itself: `a[...] = v`, `a += v` and the other augmented assignments (`@=` too),
    `a.fill(v)`, `a.sort()`, `a.put(i, v)`, `a.partition(k)`. Writes by NumPy functions
    into an existing array are
    not seen (`np.multiply(a, 2, out=a)`, `np.add.at(a, i, v)`, `np.copyto(a, v)`,
    `a.flat[i] = v`): catching them would need a hook on every NumPy call.
    """

    #> fast
    __slots__ = ()  # no per-array __dict__: chapter `fast`, "Many small objects"

    #> memory
    @classmethod
    def of(cls, value):
        """`value` as a float64 VersionedArray: itself if it is one, else a view (no copy)."""
        if type(value) is cls:
            return value
        return np.asarray(value, dtype=np.float64).view(cls)

    @property
    def version(self):
        """How many times the memory of this array was changed in place."""
        return version_of(self)

    def bump(self):
        """Count one change of this array's memory."""
        #< memory, replaced in fast
        # _versions[_key(self)] = version_of(self) + 1
        #> fast
        key = _key(self)
        _versions[key] = version_of(self) + 1
        write_clock[0] += 1  # one more write in the process, into any memory
        ticks = _ticks.setdefault(key, [])
        ticks.append(write_clock[0])  # when this memory was written
        del ticks[:-KEPT_TICKS]  # the last few are enough for an exact message

    def __repr__(self):
        return repr(self.view(np.ndarray))  # prints as a plain array: array([...])

    #> fast
    def __array_wrap__(self, array, context=None, return_scalar=False):
        """What a ufunc computes from this array is new memory, returned as a plain ndarray:
        a VersionedArray would make every later NumPy call on it slower. A view of this
        memory (np.squeeze makes one) stays a VersionedArray, so that writes through it count."""
        if array.base is None and not return_scalar:
            return array
        return super().__array_wrap__(array, context, return_scalar)

    # Step 9: a plain array beside this one (a VJP, a seed) decides the result's
    # class, as ndarray's priority is 0.0: NumPy returns the plain result as it is,
    # without calling the hook above
    __array_priority__ = -1.0


# PyTorch keeps a tensor's version in a counter that the tensor shares with its views.
# A NumPy array has no room for one, and NumPy makes some views of a view point past it,
# at the array that owns the memory (the end of a view's chain of bases). So the
# versions live here, keyed by that array, for memory written at least once.
_versions = {}


def memory_of(array):
    """The array that owns `array`'s memory: the end of its chain of bases."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def version_of(array):
    """The version of the memory of `array` (any array): 0 until it is written."""
    return _versions.get(id(memory_of(array)), 0)


def _key(array):
    """The table's key for `array`'s memory; the entry goes when the memory does."""
    owner = memory_of(array)
    key = id(owner)
    if key not in _versions:  # forget it before the id can be reused
        #< memory, replaced in fast
        # weakref.finalize(owner, _versions.pop, key, None)
        #> fast
        weakref.finalize(owner, _forget, key)
    #> memory
    return key


#> fast
# The write clock (chapter `fast`, Step 5): the writes counted so far, into any memory. A
# result notes the clock when it is made; if the clock has not moved when backward reaches
# it, nothing it saved can have changed, and there is nothing to check.
write_clock = [0]
KEPT_TICKS = 8
_ticks = {}  # id(owner): the clock at each of that memory's last KEPT_TICKS writes
_replaced = weakref.WeakKeyDictionary()  # tensor: the clock when `x.data = new` replaced it


def _forget(key):
    _versions.pop(key, None)
    _ticks.pop(key, None)


def version_then(array, made):
    """The version `array`'s memory had when the clock read `made`: its version now less
    the writes since. With more writes since than are kept, a bound, such as "2 or earlier"."""
    now, ticks = version_of(array), _ticks.get(id(memory_of(array)), [])
    since = sum(tick > made for tick in ticks)
    if since == len(ticks) and len(ticks) < now:  # older writes are forgotten
        return f"{now - since} or earlier"
    return now - since


def saved_then(node):
    """(array, its version when `node` was made) for each array `node`'s closure saved."""
    made = node.saved_versions  # the write clock when the node was made
    for value in captured(node.backward_fn):
        if hasattr(value, "backward_fn") and _replaced.get(value, 0) > made:
            raise RuntimeError(
                f"a tensor of shape {value.shape} saved by '{node.op}' was given new data "
                "(x.data = ...) after the forward pass, so its gradient would belong to no "
                "forward pass. Run the forward pass again after the change.")
        array = _array_of(value)
        if array is not None:
            yield array, version_then(array, made)


#> memory
def _counted(name):
    """ndarray's method `name`, which also counts the write."""
    method = getattr(np.ndarray, name)

    def write(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        self.bump()
        return result

    write.__name__ = write.__qualname__ = name
    return write


for _name in ("__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
              "__ifloordiv__", "__imod__", "__ipow__", "__imatmul__", "fill", "sort", "put",
              "partition"):
    setattr(VersionedArray, _name, _counted(_name))


# -- recording or not -----------------------------------------------------------------

_grad_enabled = [True]


def is_grad_enabled():
    """False inside `with no_grad():`, where operations record no graph."""
    return _grad_enabled[0]


@contextlib.contextmanager
def no_grad():
    """Inside this block, results keep no parents and no closure: nothing is saved."""
    previous = _grad_enabled[0]
    _grad_enabled[0] = False
    try:
        yield
    finally:
        _grad_enabled[0] = previous


#> memory
# -- what a closure saves -----------------------------------------------------------


def captured(backward_fn):
    """The values a closure refers to (its cells), with tuples and lists opened one level."""
    values = []
    for cell in getattr(backward_fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # a cell whose variable was never assigned
            continue
        if isinstance(value, (tuple, list)):
            values.extend(value)
        else:
            values.append(value)
    return values


def _array_of(value):
    """The array a captured value keeps alive: a Tensor's data, an array itself, else None."""
    if isinstance(value, np.ndarray):
        return value
    data = getattr(value, "data", None)  # a Tensor's, or None for a number or a shape
    return data if isinstance(data, VersionedArray) else None


def saved_arrays(root):
    """Every array the closures of `root`'s graph keep for backward, each once."""
    arrays = {}
    for node in root.topo_order():
        for value in captured(node.backward_fn):
            array = _array_of(value)
            if array is not None:
                arrays[id(array)] = array
    return list(arrays.values())


def saved_nbytes(root):
    """Bytes held by the arrays that `root`'s graph keeps for backward."""
    return sum(array.nbytes for array in saved_arrays(root))


def record_versions(backward_fn):
    """(array, the version of its memory now) for every array the closure saved."""
    recorded = {}
    for value in captured(backward_fn):
        array = _array_of(value)
        if array is not None:
            recorded[id(array)] = (array, version_of(array))
    return tuple(recorded.values())


# -- the checks backward runs, and the release after it ------------------------------


def is_freed(node):
    """A result (it has an op) whose closure a previous backward released."""
    return bool(node.op) and node.backward_fn is None


def check_saved(node):
    """Raise if `node`'s graph was freed, or if an array its closure saved changed since."""
    if is_freed(node):
        raise RuntimeError(
            f"backward through a freed graph: the closure of '{node.op}' and the "
            "values it saved were released by an earlier backward() or engine.grad() to "
            "give their memory back. Pass retain_graph=True to the first sweep if you "
            "need a second one, or run the forward pass again."
        )
    #> fast
    if node.saved_versions == write_clock[0]:
        return  # no write anywhere since the node was made: nothing it saved changed
    #< memory, replaced in fast
    # for array, version in node.saved_versions:
    #> fast
    for array, version in saved_then(node):
        #> memory
        if version_of(array) != version:
            raise RuntimeError(
                f"an array of shape {array.shape} saved by '{node.op}' was changed in place "
                f"after the forward pass: it was at version {version} when '{node.op}' saved "
                f"it and is at version {version_of(array)} now, so its gradient would belong to "
                "no forward pass. Run the forward pass again after the change, or change a "
                "copy instead."
            )


def release(node):
    """Drop `node`'s closure, parents and records, so what they kept can be freed."""
    if node.backward_fn is not None:
        node.backward_fn = None
        node.parents = ()
        node.saved_versions = ()


# -- recomputation --------------------------------------------------------------------


def checkpoint(segment, x):
    """`segment(x)` with no graph inside the segment: backward recomputes it.

    `segment` is a Module (or anything with `parameters()`). Its output is
    one node whose closure runs the segment again, with recording on, from
    a copy of `x`, and backpropagates through that fresh graph: the
    parameters' grads are added there, `x`'s VJP is returned.
    """
    parameters = tuple(segment.parameters())
    with no_grad():
        y_data = segment(x).data  # no graph: only the output is kept

    def backward_fn(y_bar, out=None):
        if out is not None:
            raise NotImplementedError(
                "checkpoint: a create_graph sweep cannot go through a checkpoint, whose "
                "closure runs a backward of its own; differentiate twice without checkpoint")
        x_again = x.detach()
        x_again.requires_grad = x.requires_grad
        segment(x_again).backward(y_bar)  # recompute, sweep: adds parameter grads
        zeros = [np.zeros(p.shape) for p in parameters]  # added just above
        return (x_again.grad, *zeros)

    return x._result(y_data, (x, *parameters), "checkpoint", backward_fn)
