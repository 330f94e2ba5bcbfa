"""Memory and in-place safety: what backward keeps, when it lets go, and who changed it.

Introduced in chapter `memory` (Saved values, memory and in-place safety).

    VersionedArray   the array behind every Tensor's `.data`: it counts its in-place changes
    write_clock      the time on the clock that stamps every such change
    no_grad()        a context in which operations record nothing (inference)
    saved_arrays     the arrays a graph's closures keep alive for backward
    check_saved      the test `Tensor.backward` runs first: graph not freed, nothing changed
    release          what `Tensor.backward` does after the sweep unless `retain_graph=True`
    checkpoint       run a segment without keeping its graph; recompute it during backward

What a closure saves is read from the closure itself: Python keeps the
variables a nested function uses in its cells (`backward_fn.__closure__`), and
those cells are exactly what stays alive until backward runs.
"""

import contextlib
import gc
import weakref

import numpy as np

# -- the version counter ----------------------------------------------------------


class VersionedArray(np.ndarray):
    """A NumPy array whose in-place writes are counted, and timed on the engine's write clock.

    Every write made through the array's own methods and operators
    (`a[...] = v`, `a += v` and the other augmented assignments, `a.fill(v)`,
    `a.sort()`, `a.put(i, v)`) adds one to the version of the memory it
    changed and stamps that memory with the time of the write (`written_at`).
    A view and its base share their memory, so they share both numbers (a
    write through `a[1:3]` or `a.T` changes `a`); a copy has its own. Writes
    made by NumPy functions into an existing array are not seen:
    `np.multiply(a, 2, out=a)`, `np.add.at(a, i, v)`, `np.copyto(a, v)`,
    `a.flat[i] = v`. Catching those would need a hook on every NumPy call,
    which would run in every operation and every closure of the engine
    (chapter `memory` measures that price).
    """

    __slots__ = ()  # no per-array __dict__: chapter `memory`, "Many small objects"

    @property
    def version(self):
        return version_of(self)

    def __array_wrap__(self, result, context=None, return_scalar=False):
        """What a NumPy function of this array returns: new memory as a plain array.

        A result in new memory belongs to no tensor yet (`Tensor` versions it when
        it becomes a tensor's data). NumPy's default would wrap every such result in
        a second, versioned object, in every operation and every closure, and every
        later call on that object would take NumPy's slower path for subclasses.
        A view (`np.squeeze(a)`) stays versioned: writes through it are writes into a.
        """
        if return_scalar:
            return result[()]
        if type(result) is VersionedArray or result.base is None:
            return result  # an out= array, as `a += b` passes, or new memory
        return result.view(VersionedArray)

    def __repr__(self):
        return repr(self.view(np.ndarray))  # prints as a plain array: array([...])


def memory_of(array):
    """The array that owns `array`'s memory: the end of its chain of bases.

    NumPy makes a view's base the array it was taken from, or, for some views
    (`np.squeeze`, views of views), the array that owns the memory; a tensor's
    data is itself a view of a plain array. The end of the chain is the same
    for all of them.
    """
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


_write_clock = [0]  # how many writes the process has made through versioned arrays
_writes = {}  # id(memory) -> (version, clock at its last write), for memory written at all


def write_clock():
    """The write clock now: a write made later is stamped with a larger number."""
    return _write_clock[0]


def version_of(array):
    """How many writes the memory of `array` (any array) has had through versioned arrays."""
    return _writes.get(id(memory_of(array)), (0, 0))[0]


def written_at(array):
    """The clock's time at the last write into the memory of `array`; 0 if never written."""
    return _writes.get(id(memory_of(array)), (0, 0))[1]


def _stamp(array, version):
    """Record a write into the memory of `array`: its new version, and the time."""
    memory = memory_of(array)
    key = id(memory)
    if key not in _writes:  # forget the entry when the memory goes, before the id is reused
        weakref.finalize(memory, _writes.pop, key, None)
    _write_clock[0] += 1
    _writes[key] = (version, _write_clock[0])


def _counted(name):
    """ndarray's method `name`, which also counts and stamps the write."""
    method = getattr(np.ndarray, name)

    def write(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        _stamp(self, version_of(self) + 1)
        return result

    write.__name__ = write.__qualname__ = name
    return write


_WRITES = ("__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
           "__ifloordiv__", "__imod__", "__ipow__", "__imatmul__", "fill", "sort",
           "partition", "put", "itemset", "resize", "setfield")
for _name in _WRITES:
    if hasattr(np.ndarray, _name):
        setattr(VersionedArray, _name, _counted(_name))


def as_data(value, old=None):
    """`value` as a Tensor's float64 VersionedArray; a replacement counts as a change of `old`."""
    array = value if type(value) is VersionedArray else np.asanyarray(value, dtype=np.float64)
    if type(array) is not VersionedArray:
        array = array.view(VersionedArray)
    elif array.dtype != np.float64:
        array = array.astype(np.float64)
    if old is not None:  # `x.data = new`: the tensor changed, so its version must move on
        _stamp(array, max(version_of(array), version_of(old) + 1))
    return array


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


class collector_paused:
    """`with collector_paused():` pauses Python's cycle collector, then restores its state.

    `Tensor.backward` sweeps inside it. A graph holds no reference cycles (a
    node refers to its parents, never to its children), so reference counting
    frees it and the cycle collector finds nothing in it; but the sweep's
    allocations would trigger the collector again and again, and each time it
    would walk the whole graph (chapter `memory`, "Many small objects").
    """

    def __enter__(self):
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exception):
        if self.was_enabled:
            gc.enable()


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


# -- the checks backward runs, and the release after it ------------------------------


def is_freed(node):
    """A result (it has an op) whose closure a previous backward released."""
    return bool(node.op) and node.backward_fn is None


def check_saved(node):
    """Raise if `node`'s graph was freed, or if what its closure saved was written since."""
    if is_freed(node):
        raise RuntimeError(
            f"backward through a freed graph: the closure of '{node.op}' and the "
            "values it saved were released by an earlier backward() to give their "
            "memory back. Call backward(retain_graph=True) the first time if you "
            "need a second sweep, or run the forward pass again."
        )
    if node.recorded_at == write_clock():
        return  # no write at all since its operation ran: nothing to look at
    for value in captured(node.backward_fn):
        array = _array_of(value)
        if array is not None and written_at(array) > node.recorded_at:
            what = "an array" if isinstance(value, np.ndarray) else "a tensor"
            raise RuntimeError(
                f"{what} of shape {array.shape} saved by '{node.op}' was changed in "
                f"place after the forward pass (it is now at version {version_of(array)}, "
                f"written after '{node.op}' ran): its gradient would belong to no "
                "forward pass. Run the forward pass again after the change, or "
                "change a copy instead."
            )


def release(node):
    """Drop `node`'s closure and parents, so what they kept can be freed."""
    if node.backward_fn is not None:
        node.backward_fn = None
        node.parents = ()


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

    def backward_fn(y_bar):
        x_again = x.detach()
        x_again.requires_grad = x.requires_grad
        segment(x_again).backward(y_bar)  # recompute, sweep: adds parameter grads
        zeros = [np.zeros(p.shape) for p in parameters]  # added just above
        return (x_again.grad, *zeros)

    return x._result(y_data, (x, *parameters), "checkpoint", backward_fn)
