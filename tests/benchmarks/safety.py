"""The finished engine with one of its guarantees removed, to attribute its distance to a
minimal engine (tests/benchmarks/minimal.py); chapter fast, "The cost of safety".

    apply(name)    patch the imported finished engine; run.py times it as `engine_with_<name>`
    LADDER         `bare` (all off), then what else separates it from the minimal engine, one
                   group at a time, each rung keeping the removals of those before
    ONLY_ON        {name: the workloads run.py times it on}, for the rungs past `bare`

Each experiment changes the engine in this process only, before any tensor is made. None of
them is kept: they measure what a guarantee costs, or try a cheaper way to keep it
(`storage_versions`).
"""

import gc

import numpy as np

EXPERIMENTS = {
    "unversioned": "no version counter: plain arrays, nothing noted, nothing checked",
    "paused": "the cycle collector paused from the first recorded operation to the end of "
              "backward",
    "thresholds": "the cycle collector's first threshold raised to 100,000 at import",
    "bare": "no version counter, no floating-point checks, the collector paused",
    "storage_versions": "versions kept per storage by the engine, without an ndarray subclass",
    # the rest of the distance to the minimal engine, one group at a time, each on top of the
    # one before (LADDER): the last keeps the engine's design and no guarantee of its sweep
    "bare_sweep": "all off, and a backward that only sorts, seeds and runs the closures: no "
                  "checks before the sweep, no release as it goes",
    "bare_sweep_grads": "all off, that backward, and grads added as the minimal engine adds "
                        "them: no broadcasting's sum, no in-place sum into a leaf's own grad",
    "bare_sweep_grads_operands": "all off, that backward, those grads, and operations that "
                                 "record every result unchecked: no shape check, no grad mode, "
                                 "no constants",
}
# the cumulative ladder from `bare` to the minimal engine: each adds one group of removals
LADDER = ("bare", "bare_sweep", "bare_sweep_grads", "bare_sweep_grads_operands")
# the workloads where the ladder past `bare` runs (run.py): where bookkeeping is all there is,
# chapter fast's goal; from `bare_sweep_grads` on, a parent that was broadcast (the MLP's
# bias) gets a grad of the wrong shape
LADDER_WORKLOADS = ("running_small", "chain")
ONLY_ON = {name: LADDER_WORKLOADS for name in LADDER[1:]}

THRESHOLD = 100_000  # objects allocated between two collections of the youngest generation


def apply(name):
    """Remove the guarantee `name` (see EXPERIMENTS) from the imported engine."""
    if name == "unversioned":
        _plain_arrays(counted=False)
    elif name == "paused":
        _pause_collector()
    elif name == "thresholds":
        gc.set_threshold(THRESHOLD, *gc.get_threshold()[1:])
    elif name == "bare":
        import workloads

        workloads.experiment("unchecked")
        _plain_arrays(counted=False)
        _pause_collector()
    elif name == "storage_versions":
        _plain_arrays(counted=True)
    elif name in LADDER:
        # the ladder's own removals first: `bare` wraps whatever backward it finds, to end
        # the collector's pause
        rung = LADDER.index(name)
        if rung >= 3:
            _operands_unchecked()
        if rung >= 2:
            _grads_as_minimal()
        _sweep_only()
        apply("bare")
    else:
        raise ValueError(f"no experiment {name!r}: {', '.join(EXPERIMENTS)}")


def _sweep_only():
    """`backward` as the minimal engine's: sort, seed, run each closure in reverse order. Gone:
    the refusal of a tensor that needs no grad, `create_graph`, the check of saved values (no
    version counter is left to check under `bare`), the reset of the results' grads for a
    second sweep, the seed's check, and the release of each node as its closure has run: the
    graph lives as long as its result, as in the minimal engine."""
    import engine.tensor as T

    seed_ones = T.seed_ones

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        order = self.topo_order()
        self._add_grad(seed_ones(self._data.shape) if gradient is None else gradient)
        for node in reversed(order):
            if node.backward_fn is not None:
                node._run_closure()

    T.Tensor.backward = backward


def _grads_as_minimal():
    """`_run_closure` as the minimal engine's: the first VJP becomes the grad, later ones are
    added into a new array. Gone: broadcasting's VJP (unbroadcast: a parent that was
    broadcast gets a grad of the wrong shape) and a leaf's grad of its own, summed in place
    (a leaf may now hold the seed or a VJP it shares with another tensor). A parent that
    needs no grad still gets none: the engine's closures return None for it."""
    import engine.tensor as T

    def run_closure(self):
        for parent, vjp in zip(self.parents, self.backward_fn(self.grad)):
            if vjp is not None:
                parent.grad = vjp if parent.grad is None else parent.grad + vjp

    T.Tensor._run_closure = run_closure


def _operands_unchecked():
    """Operations that take Tensors as they are and record every result. Gone: the check
    that the operands' shapes broadcast (`_pair` returns its operand: a number operand now
    fails, as it is no longer made a constant), the grad mode (`no_grad` records anyway) and
    constants (a result of constants is recorded too); the result's array is taken as it
    is, not made float64. The node keeps the engine's seven slots."""
    import engine.tensor as T

    def _pair(self, other, op):
        return other

    T.Tensor._pair = _pair
    T.Tensor._result = _make_result(plain=True, pause=False, unchecked=True)


def _plain_arrays(counted):
    """Tensors hold plain ndarrays. With `counted`, the engine still keeps a version per
    storage (memory._versions, keyed by the array that owns the memory, as PyTorch keeps one
    per storage) and the write clock of Step 5, but only its own writes count: giving a
    tensor new data, and an augmented assignment through the tensor (`x.data += v`, which
    Python ends with a call of the setter on the same array, as SGD's `p.data -= ...`
    does). Backward checks saved arrays as before. Writes straight into the array
    (`x.data[1] = 5.0`, `a = x.data; a += 1`) are not seen."""
    import engine.memory as M
    import engine.tensor as T

    Tensor, write_clock = T.Tensor, T.write_clock

    def set_data(self, value):
        old = getattr(self, "_data", None)
        if value is old:  # `x.data op= v`: the array was written in place
            if counted:
                bump(old)
            return
        self._data = np.asarray(value, dtype=np.float64)
        if counted and old is not None:  # new values: the old storage's readers must know
            bump(old)
            M._replaced[self] = write_clock[0]

    Tensor._result = _make_result(plain=True, pause=getattr(Tensor._result, "pauses", False),
                                  unchecked=getattr(Tensor._result, "unchecked", False))
    Tensor.data = property(Tensor.data.fget, set_data)
    if counted:
        bump = M.VersionedArray.bump  # a function of any array: the storage's entry

        def array_of(value):  # a Tensor's data is a plain array now
            if isinstance(value, np.ndarray):
                return value
            data = getattr(value, "data", None)
            return data if isinstance(data, np.ndarray) else None

        M._array_of = array_of


def _pause_collector():
    """An automatic `engine.fast.collector_paused`: the first operation that records a node
    while the collector runs pauses it, and the end of `backward` restores it. A forward pass
    whose backward never runs leaves it paused: the engine would need a rule for that too."""
    import engine.tensor as T

    plain = getattr(T.Tensor._result, "plain", False)
    unchecked = getattr(T.Tensor._result, "unchecked", False)
    T.Tensor._result = _make_result(plain=plain, pause=True, unchecked=unchecked)
    paused = _PAUSED

    swept = T.Tensor.backward

    def backward(self, *args, **kwargs):
        try:
            return swept(self, *args, **kwargs)
        finally:
            if paused[0]:
                paused[0] = False
                gc.enable()

    T.Tensor.backward = backward


_PAUSED = [False]  # whether `_result` paused the collector and backward must restore it


def _make_result(plain, pause, unchecked=False):
    """The finished engine's `Tensor._result` (Steps 1 and 5), with `plain` arrays instead of
    a VersionedArray view, with `pause` pausing the collector, and with `unchecked` (plain
    arrays too) taking the array as it is and recording every result: written out, not
    wrapped, so that none of them costs an extra call per operation."""
    import engine.tensor as T

    Tensor, FLOAT64, VersionedArray = T.Tensor, T.FLOAT64, T.VersionedArray
    grad_enabled, needs_grad, write_clock = T.grad_enabled, T._needs_grad, T.write_clock
    paused, disable, isenabled = _PAUSED, gc.disable, gc.isenabled

    if unchecked:
        def _result(self, data, parents, op, backward_fn):
            if pause and not paused[0] and isenabled():
                disable()
                paused[0] = True
            out = Tensor.__new__(Tensor)
            out._data = data
            out.grad = None
            out.requires_grad = True
            out.parents = parents
            out.op = op
            out.backward_fn = backward_fn
            out.saved_versions = ()
            return out

        _result.plain, _result.pauses, _result.unchecked = True, pause, True
        return _result

    def _result(self, data, parents, op, backward_fn):
        if pause and not paused[0] and isenabled():
            disable()
            paused[0] = True
        out = Tensor.__new__(Tensor)
        if type(data) is np.ndarray and data.dtype is FLOAT64:
            out._data = data if plain else data.view(VersionedArray)
        else:
            out._data = np.asarray(data, dtype=np.float64) if plain else VersionedArray.of(data)
        out.grad = None
        if grad_enabled[0] and needs_grad(parents):
            out.requires_grad = True
            out.parents = parents
            out.op = op
            out.backward_fn = backward_fn
            out.saved_versions = write_clock[0]
        else:
            out.requires_grad, out.parents, out.op = False, (), ""
            out.backward_fn, out.saved_versions = None, ()
        return out

    _result.plain, _result.pauses, _result.unchecked = plain, pause, False
    return _result


# -- which of chapter memory's writes each way of keeping versions catches ----------------

WRITES = {  # chapter memory's writes between forward and backward, on x = Tensor([1, 2, 3])
    "x.data[1] = 5.0": lambda x: x.data.__setitem__(1, 5.0),
    "x.data += 1": "x.data += 1",  # through the tensor: Python calls the setter at the end
    "a = x.data; a += 1": lambda x: x.data.__iadd__(1.0),
    "x.data[1:][0] = 7 (a view)": lambda x: x.data[1:].__setitem__(0, 7.0),
    "x.data.fill(0.0)": lambda x: x.data.fill(0.0),
    "x.data = new": "x.data = np.array([7.0, 8.0, 9.0])",
    "SGD(...).step()": "optim.SGD([x], lr=0.1).step()",
    "np.multiply(x.data, 2, out=x.data)": lambda x: np.multiply(x.data, 2, out=x.data),
}


def caught():
    """{write: what backward does after it}: "refused" (a RuntimeError naming the write) or
    "silent" (a gradient from values no forward pass saw), for y = (x * x).sum() and each
    write of WRITES, in the engine as this process has it (patched by `apply` or not)."""
    from engine import Tensor, optim

    verdicts = {}
    for label, write in WRITES.items():
        x = Tensor([1.0, 2.0, 3.0])
        y = (x * x).sum()
        x.grad = np.ones(3)  # what SGD's step reads; backward adds to it after
        if isinstance(write, str):
            exec(write, {"np": np, "optim": optim, "x": x})
        else:
            write(x)
        x.grad = None
        try:
            y.backward()
            verdicts[label] = "silent"
        except RuntimeError:
            verdicts[label] = "refused"
    return verdicts
