"""The benchmark workloads, each written five ways: engine, NumPy by hand, PyTorch, HIPS autograd,
and the minimal engine (tests/benchmarks/minimal.py, imported only when asked for).

    running_small   y = ln x1 + x1 x2 - sin x2 on 3 entries: the fixed cost per operation
    running_large   the same program on 1,000,000 entries: memory bandwidth
    mlp             784-256-256-10, tanh, batch 64, mean cross-entropy: matrix products
    chain           y = sin(sin(...sin(x)...)), 100,000 operations on one entry: graph bookkeeping
    leaf            a leaf made from a 784x256 array (a first layer's weights): one copy
    cheap_large     y = x1 x2 + x1 - x2 on 1,000,000 entries: only *, + and -, memory bandwidth

The engine runs twice: as the book finishes it (`engine`) and as chapter
`memory` leaves it, before chapter `fast` (`engine_memory`: run.py puts that
snapshot first on the worker's PYTHONPATH); `ablate` undoes steps of chapter
`fast` in the finished engine (one, to measure what that step earns; or steps
k+1..9, to add the steps one at a time in order, `CUMULATIVE`), so that one run
measures what each step earns.

Every implementation is a setup function `<program>_<implementation>(*inputs)`.
It makes the inputs and parameters into the library's own leaves ONCE and
returns `step`, a function of no arguments that runs ONE iteration: zero the
leaves' gradients the library's own way (the engine's `Optimizer.zero_grad`
line, `p.grad = None` for PyTorch; NumPy and autograd keep no gradients
between calls), the forward pass, the backward pass. `step()` returns the
gradients as NumPy arrays, so that `run.py` can check all four against the
NumPy floor before it times any of them.

PyTorch and autograd are imported only when asked for, so the engine and
NumPy columns run without them. Everything is float64.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np

CHAIN_DEPTH = 100_000
RUNNING_SMALL = 3
RUNNING_LARGE = 1_000_000
MLP_SIZES = (784, 256, 256, 10)
MLP_BATCH = 64
LEAF_SHAPE = (784, 256)

# name: its title, the program it runs, what it measures, its size and the sentence the page shows
WORKLOADS = {
    "running_small": {
        "title": "running program, 3 entries",
        "program": "running",
        "measures": "fixed cost per operation",
        "size": f"{RUNNING_SMALL} entries",
        "description": "The book's running program y = ln x1 + x1 x2 - sin x2 on 3 entries: "
                       "the arithmetic is nothing, so this is the fixed cost of each operation "
                       "(a Python call, a node, a closure) forward and backward.",
    },
    "running_large": {
        "title": "running program, 1,000,000 entries",
        "program": "running",
        "measures": "memory bandwidth",
        "size": f"{RUNNING_LARGE:,} entries",
        "description": "The same program on 1,000,000 entries: every operation streams "
                       "8 MB arrays, so the time is memory traffic, and a library can only "
                       "lose by making extra temporaries.",
    },
    "mlp": {
        "title": "MLP 784-256-256-10, batch 64",
        "program": "mlp",
        "measures": "matrix products",
        "size": "-".join(map(str, MLP_SIZES)) + f", batch {MLP_BATCH}",
        "description": "A two-hidden-layer perceptron 784-256-256-10 with tanh, a batch of 64 "
                       "and the mean cross-entropy loss: the time goes into eight matrix "
                       "products, so the BLAS library decides it.",
    },
    "chain": {
        "title": "chain of 100,000 operations",
        "program": "chain",
        "measures": "graph bookkeeping",
        "size": f"{CHAIN_DEPTH:,} operations, 1 entry",
        "description": "y = sin(sin(...sin(x)...)) nested 100,000 deep on one entry: a graph "
                       "as deep as it gets, so the time is recording nodes, sorting them "
                       "topologically and walking them back.",
    },
    "cheap_large": {
        "title": "cheap operations, 1,000,000 entries",
        "program": "cheap",
        "measures": "memory bandwidth, no transcendental function",
        "size": f"{RUNNING_LARGE:,} entries",
        "description": "y = x1 x2 + x1 - x2 on 1,000,000 entries, seeded with ones as the "
                       "running program is: only *, + and -, each a pass over 8 MB arrays "
                       "that costs about what a copy does, so every extra temporary or pass "
                       "of a library shows, where log and sin would hide it.",
    },
    "leaf": {
        "title": "a leaf from a 784x256 array",
        "program": "leaf",
        "measures": "making a leaf",
        "size": "784x256, 1.6 MB",
        "description": "Tensor(W) for W of shape 784x256, the weights of a first layer: one "
                       "copy of 1.6 MB, against np.array(W), the same copy (autograd's leaves "
                       "are NumPy arrays, so its column is np.array too; PyTorch's is "
                       "torch.tensor(W, requires_grad=True)). Nothing is differentiated.",
    },
}
IMPLEMENTATIONS = ("engine", "engine_memory", "numpy", "torch", "autograd")
ENGINES = ("engine", "engine_memory")  # both run the engine's setup functions
# the finished engine again, in a worker of its own: what it shows against `engine` is the
# noise of the run (run.py, the band)
NULL = "engine_null"
MINIMAL = "minimal"  # the minimal engine: tests/benchmarks/minimal.py, `<program>_minimal`
# glibc's malloc with its thresholds fixed (run.py sets these in the worker's environment for an
# implementation named `<name>_pinned`): the trim threshold and the mmap threshold no longer
# move with the sizes freed, so freed memory stays in the heap and no page is handed over again
# at every iteration. 32 MiB is the largest mmap threshold glibc accepts on 64 bits. These two
# take the MLP, running_large and cheap_large to 0 faults per iteration; MALLOC_TOP_PAD_ changed
# nothing more, so it stays at its default.
PINNED_ENV = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}


def variant(implementation):
    """What an implementation's name asks for: {"base": the setup functions' suffix,
    "engine": the engine it imports ("finished", "memory" or None), "undo": the steps of chapter
    fast undone, "experiment": a change tried, "pinned": glibc's thresholds fixed}."""
    name = implementation
    pinned = name.endswith("_pinned")
    name = name.removesuffix("_pinned")
    found = {"base": name, "engine": None, "undo": (), "experiment": None, "pinned": pinned}
    if name == "engine_memory":
        found.update(base="engine", engine="memory")
    elif name.startswith("engine"):
        found.update(base="engine", engine="finished")
        if name.startswith("engine_without_"):
            found["undo"] = (name.removeprefix("engine_without_"),)
        elif name.startswith("engine_through_"):
            found["undo"] = undone_after(name.removeprefix("engine_through_"))
        elif name.startswith("engine_with_"):
            found["experiment"] = name.removeprefix("engine_with_")
        elif name not in ("engine", NULL):
            raise ValueError(f"no implementation {implementation!r}")
    return found


# -- inputs -------------------------------------------------------------------------


def running_inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 2.0, n), rng.uniform(-3.0, 3.0, n)


def mlp_inputs(seed=0, batch=MLP_BATCH, sizes=MLP_SIZES):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, sizes[0]))
    targets = rng.integers(0, sizes[-1], batch)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / np.sqrt(n_in)  # torch.nn.Linear's initialisation
        params += [rng.uniform(-bound, bound, (n_in, n_out)), rng.uniform(-bound, bound, n_out)]
    return x, targets, params


def chain_inputs(seed=0):
    return (np.random.default_rng(seed).uniform(0.5, 1.5, 1),)


def leaf_inputs(seed=0):
    return (np.random.default_rng(seed).normal(size=LEAF_SHAPE),)


def inputs(workload):
    """The NumPy inputs of `workload` (the same arrays for every implementation)."""
    return {
        "running_small": lambda: running_inputs(RUNNING_SMALL),
        "running_large": lambda: running_inputs(RUNNING_LARGE),
        "mlp": mlp_inputs,
        "chain": chain_inputs,
        "leaf": leaf_inputs,
        "cheap_large": lambda: running_inputs(RUNNING_LARGE),
    }[workload]()


# -- the engine ---------------------------------------------------------------------


def _engine_zero(leaves):
    from engine import optim

    return optim.SGD(leaves, lr=0.0).zero_grad  # the engine's own: grads to None


def running_engine(a, b):
    from engine import Tensor

    x1, x2 = Tensor(a), Tensor(b)
    zero = _engine_zero((x1, x2))

    def step():
        zero()
        y = x1.log() + x1 * x2 - x2.sin()
        y.backward()
        return x1.grad, x2.grad

    return step


def mlp_engine(x, targets, params):
    from engine import Tensor, functional

    ps = [Tensor(p) for p in params]
    w1, b1, w2, b2, w3, b3 = ps
    x = Tensor(x, requires_grad=False)
    zero = _engine_zero(ps)

    def step():
        zero()
        h = (x @ w1 + b1).tanh()
        h = (h @ w2 + b2).tanh()
        loss = functional.cross_entropy(h @ w3 + b3, targets)
        loss.backward()
        return [p.grad for p in ps]

    return step


def chain_engine(a):
    from engine import Tensor

    x = Tensor(a)
    zero = _engine_zero((x,))

    def step():
        zero()
        y = x
        for _ in range(CHAIN_DEPTH):
            y = y.sin()
        y.backward()
        return (x.grad,)

    return step


def cheap_engine(a, b):
    from engine import Tensor

    x1, x2 = Tensor(a), Tensor(b)
    zero = _engine_zero((x1, x2))

    def step():
        zero()
        y = x1 * x2 + x1 - x2
        y.backward()
        return x1.grad, x2.grad

    return step


def leaf_engine(w):
    from engine import Tensor

    def step():
        return (Tensor(w).data,)  # the leaf's values, checked against np.array(w)

    return step


# -- NumPy by hand: the floor -------------------------------------------------------


def running_numpy(a, b):
    def step():
        # y is computed (the forward pass) though only the gradients are returned
        y = np.log(a) + a * b - np.sin(b)  # noqa: F841
        return 1.0 / a + b, a - np.cos(b)

    return step


def mlp_numpy(x, targets, params):
    w1, b1, w2, b2, w3, b3 = params
    rows = np.arange(len(targets))

    def step():
        h1 = np.tanh(x @ w1 + b1)
        h2 = np.tanh(h1 @ w2 + b2)
        logits = h2 @ w3 + b3
        shifted = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(shifted)
        sums = p.sum(axis=1, keepdims=True)
        # the loss is computed (the forward pass, as in every other column) though only the
        # gradients are returned: log-softmax at the targets, from the same exponentials
        loss = np.mean(np.log(sums[:, 0]) - shifted[rows, targets])  # noqa: F841
        p /= sums
        d_logits = p  # softmax minus one-hot, over the batch size
        d_logits[rows, targets] -= 1.0
        d_logits /= len(targets)
        d_z2 = (d_logits @ w3.T) * (1.0 - h2 * h2)
        d_z1 = (d_z2 @ w2.T) * (1.0 - h1 * h1)
        return [x.T @ d_z1, d_z1.sum(0), h1.T @ d_z2, d_z2.sum(0), h2.T @ d_logits,
                d_logits.sum(0)]

    return step


def chain_numpy(a):
    def step():
        y, slopes = a.copy(), np.empty((CHAIN_DEPTH, a.size))
        for i in range(CHAIN_DEPTH):  # forward: keep each slope cos(y_i) for backward
            slopes[i] = np.cos(y)
            y = np.sin(y)
        grad = np.ones_like(a)
        for i in range(CHAIN_DEPTH - 1, -1, -1):
            grad = grad * slopes[i]
        return (grad,)

    return step


def cheap_numpy(a, b):
    def step():
        y = a * b + a - b  # noqa: F841  (the forward pass, as in every other column)
        return b + 1.0, a - 1.0

    return step


def leaf_numpy(w):
    return lambda: (np.array(w),)


# -- PyTorch ------------------------------------------------------------------------


def running_torch(a, b):
    import torch

    x1 = torch.tensor(a, requires_grad=True)
    x2 = torch.tensor(b, requires_grad=True)

    def step():
        x1.grad = x2.grad = None  # torch.optim's zero_grad (set_to_none)
        y = x1.log() + x1 * x2 - x2.sin()
        y.backward(torch.ones_like(y))
        return x1.grad.numpy(), x2.grad.numpy()

    return step


def mlp_torch(x, targets, params):
    import torch

    ps = [torch.tensor(p, requires_grad=True) for p in params]
    w1, b1, w2, b2, w3, b3 = ps
    x, targets = torch.from_numpy(x), torch.from_numpy(targets)

    def step():
        for p in ps:
            p.grad = None
        h = torch.tanh(x @ w1 + b1)
        h = torch.tanh(h @ w2 + b2)
        loss = torch.nn.functional.cross_entropy(h @ w3 + b3, targets)
        loss.backward()
        return [p.grad.numpy() for p in ps]

    return step


def chain_torch(a):
    import torch

    x = torch.tensor(a, requires_grad=True)

    def step():
        x.grad = None
        y = x
        for _ in range(CHAIN_DEPTH):
            y = y.sin()
        y.backward(torch.ones_like(y))
        return (x.grad.numpy(),)

    return step


def cheap_torch(a, b):
    import torch

    x1 = torch.tensor(a, requires_grad=True)
    x2 = torch.tensor(b, requires_grad=True)

    def step():
        x1.grad = x2.grad = None
        y = x1 * x2 + x1 - x2
        y.backward(torch.ones_like(y))
        return x1.grad.numpy(), x2.grad.numpy()

    return step


def leaf_torch(w):
    import torch

    return lambda: (torch.tensor(w, requires_grad=True).detach().numpy(),)


# -- HIPS autograd ------------------------------------------------------------------


def running_autograd(a, b):
    from autograd import grad
    import autograd.numpy as anp

    def program(x1, x2):
        return anp.sum(anp.log(x1) + x1 * x2 - anp.sin(x2))  # sum: a seed of ones

    gradient = grad(program, (0, 1))
    return lambda: gradient(a, b)


def mlp_autograd(x, targets, params):
    from autograd import grad
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    rows = np.arange(len(targets))

    def loss(ps):
        w1, b1, w2, b2, w3, b3 = ps
        h = anp.tanh(x @ w1 + b1)
        h = anp.tanh(h @ w2 + b2)
        logits = h @ w3 + b3
        log_p = logits - logsumexp(logits, axis=1, keepdims=True)
        return -anp.mean(log_p[rows, targets])

    gradient = grad(loss)
    params = list(params)
    return lambda: gradient(params)


def chain_autograd(a):
    from autograd import grad
    import autograd.numpy as anp

    def program(x):
        for _ in range(CHAIN_DEPTH):
            x = anp.sin(x)
        return anp.sum(x)

    gradient = grad(program)
    return lambda: (gradient(a),)


def cheap_autograd(a, b):
    from autograd import grad
    import autograd.numpy as anp

    gradient = grad(lambda x1, x2: anp.sum(x1 * x2 + x1 - x2), (0, 1))  # sum: a seed of ones
    return lambda: gradient(a, b)


def leaf_autograd(w):
    return lambda: (np.array(w),)  # autograd differentiates functions of NumPy arrays


# -- ablations: the finished engine with steps of chapter `fast` undone ---------------------

UNDOS = {  # the step of chapter `fast` each undoes, and how, in the chapter's order
    "wrap": "Step 1: each result made by Tensor(...)",
    "adopt": "Step 2: every first VJP copied",
    "slots": "Step 3: a __dict__ in every tensor instead of slots",
    "plain": "Step 4: NumPy's results left versioned",
    "clock": "Step 5: every operation notes its saved arrays' versions",
    "sweep": "Step 6: the sweep of chapter memory",
    "seed": "Step 7: a seed of ones written out",
    "loss": "Step 8: the loss with its masks when every row counts",
    "priority": "Step 9: a VersionedArray beside a plain array wrapped by its hook",
}
# the steps undone by patching a running engine, as before Step 3 could be undone: the set
# tests/benchmarks/profiles.py profiles (it asserts it has a profile for each)
ABLATIONS = {step: what for step, what in UNDOS.items() if step != "slots"}
STEPS = tuple(UNDOS)
# the steps added one at a time: CUMULATIVE[k] keeps Steps 1..k and undoes the rest ("none":
# every step undone); Steps 1..9 all kept is the finished engine, and Steps 1..8 is the engine
# without Step 9, so those two are not timed twice
CUMULATIVE = ("none",) + STEPS[:-2]


def undone_after(kept):
    """The steps `engine_through_<kept>` undoes: every step after `kept` ("none": all)."""
    return STEPS if kept == "none" else STEPS[STEPS.index(kept) + 1:]


def _without_slots():
    """Step 3 undone: the Tensor class made again from its own namespace without `__slots__`,
    as the class statement would make it without that line (a __dict__ and a __weakref__ per
    object, the attributes in the dict), and bound wherever the engine's modules name it. A
    subclass would not do: the slots' descriptors would still hold the attributes."""
    import sys

    import engine.tensor as T

    old = T.Tensor
    slots = set(old.__slots__)
    namespace = {k: v for k, v in vars(old).items()
                 if k not in slots and k not in ("__slots__", "__dict__", "__weakref__")}
    new = type(old.__name__, old.__bases__, namespace)
    new.__qualname__, new.__module__ = old.__qualname__, old.__module__
    for module in list(sys.modules.values()):  # engine.tensor, engine, engine.nn, ...
        if getattr(module, "__name__", "").partition(".")[0] == "engine" \
                and getattr(module, "Tensor", None) is old:
            module.Tensor = new
    assert not hasattr(new, "__slots__") and hasattr(new(np.zeros(1)), "__dict__")


def ablate(steps):
    """Undo `steps` of chapter `fast` (a name of UNDOS, or several) in the imported,
    finished engine, by patching it. Undos that replace the same function are combined:
    Steps 1 and 5 both replace `_result`."""
    steps = {steps} if isinstance(steps, str) else set(steps)
    unknown = steps - set(UNDOS)
    if unknown:
        raise ValueError(f"no step {sorted(unknown)!r} to undo: {', '.join(UNDOS)}")
    import engine.tensor as T

    if "slots" in steps:  # first: the patches below go onto the class it makes
        _without_slots()
    if "plain" in steps:
        import engine.memory as M

        del M.VersionedArray.__array_wrap__  # back to ndarray's: results of the subclass
    if "adopt" in steps:
        def copying_adopt(self, vjp, y_bar):
            self.grad = np.array(vjp, dtype=np.float64)

        T.Tensor._adopt = copying_adopt
    if "wrap" in steps and "clock" in steps:  # chapter memory's _result, as it was
        def constructed_noting_result(self, data, parents, op, backward_fn):
            out = T.Tensor(data, requires_grad=False, copy=False)
            if T.is_grad_enabled() and any(parent.requires_grad for parent in parents):
                out.requires_grad = True
                out.parents = parents
                out.op = op
                out.backward_fn = backward_fn
                out.saved_versions = T.record_versions(backward_fn)
            return out

        T.Tensor._result = constructed_noting_result
    elif "wrap" in steps:
        def constructed_result(self, data, parents, op, backward_fn):
            out = T.Tensor(data, requires_grad=False, copy=False)
            if T.is_grad_enabled() and any(parent.requires_grad for parent in parents):
                out.requires_grad = True
                out.parents = parents
                out.op = op
                out.backward_fn = backward_fn
                out.saved_versions = T.write_clock[0]
            return out

        T.Tensor._result = constructed_result
    elif "clock" in steps:
        def noting_result(self, data, parents, op, backward_fn):  # Step 1's, noting versions
            out = T.Tensor.__new__(T.Tensor)
            out._data = T.VersionedArray.of(data)
            out.grad = None
            if T.is_grad_enabled() and T._needs_grad(parents):
                out.requires_grad = True
                out.parents = parents
                out.op = op
                out.backward_fn = backward_fn
                out.saved_versions = T.record_versions(backward_fn)  # chapter memory's note
            else:
                out.requires_grad, out.parents, out.op = False, (), ""
                out.backward_fn, out.saved_versions = None, ()
            return out

        T.Tensor._result = noting_result
    if "clock" in steps:
        import engine.memory as M

        def check_every_pair(node):  # chapter memory's check_saved
            if M.is_freed(node):
                return M.check_saved(node)  # raises: the graph was freed
            for array, version in node.saved_versions:
                if M.version_of(array) != version:
                    raise RuntimeError(f"an array of shape {array.shape} saved by "
                                       f"'{node.op}' was changed in place")

        T.check_saved = check_every_pair  # a tuple is never the clock: every node checked
    if "sweep" in steps:
        from engine.shapes import unbroadcast

        def backward(self, gradient=None, retain_graph=False):  # before Step 6
            if not self.requires_grad:
                raise RuntimeError("backward: this tensor does not require a gradient")
            order = self.topo_order()
            for node in order:
                T.check_saved(node)
                if node.parents:
                    node.grad = None
            self._add_grad(self._seed(gradient))
            def sweep():
                for node in reversed(order):
                    T.TROUBLE.op = node.op
                    node._run_closure()

            met = T.TROUBLE.watch(sweep)
            if not retain_graph:
                for node in order:
                    T.release(node)
            T.TROUBLE.warn(met)

        def run_closure(self):
            if self.backward_fn is None:
                return
            for parent, vjp in zip(self.parents, self.backward_fn(self.grad)):
                if parent.requires_grad:
                    parent._add_grad(unbroadcast(vjp, parent.shape), self.grad)

        T.Tensor.backward, T.Tensor._run_closure = backward, run_closure
    if "seed" in steps:
        T.seed_ones = np.ones  # backward's `_seed` looks it up at each call
    if "priority" in steps:
        import engine.memory as M

        del M.VersionedArray.__array_priority__  # back to ndarray's 0.0: the hook is called
    if "loss" in steps:
        import engine.functional as F

        F._every_row_counts = lambda logits, targets, ignore_index: False  # the general way


# -- a step tried and not kept: measured beside the others, applied by patching ---------

EXPERIMENTS = {
    "inplace": "VJPs of sin and tanh computed into their first temporary",
    "unchecked": "the floating-point checks of appendix errors left out",
    "shapes": "broadcast shapes in Python instead of np.broadcast_shapes",
}


def beside(name):
    """The module tests/benchmarks/<name>.py (another helper's: `minimal`, `safety`), loaded
    from beside this file and not from wherever sys.path finds that name; None if missing."""
    path = Path(__file__).with_name(f"{name}.py")
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return sys.modules[name]
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def experiments():
    """{name: description} of every change timed as `engine_with_<name>`: chapter fast's and
    those of tests/benchmarks/safety.py, where it exists."""
    safety = beside("safety")
    return {**EXPERIMENTS, **(safety.EXPERIMENTS if safety else {})}


def experiment(name):
    """Apply the change `name`, which chapter `fast` tried and did not keep (or
    tests/benchmarks/safety.py describes), to the engine."""
    import engine.tensor as T

    if name not in EXPERIMENTS and name in experiments():
        beside("safety").apply(name)
        return

    if name == "unchecked":  # what the checks cost: no errstate around log, sqrt, exp, /, **
        # and none around the sweep; the values are NumPy's either way
        T.checked = lambda ufunc, *arrays, op: ufunc(*arrays)
        T.TROUBLE.watch = lambda sweep, *args: sweep(*args) or {}  # nothing met
        return
    if name == "shapes":
        _shapes_in_python()
        return
    if name != "inplace":
        raise ValueError(f"no experiment {name!r}: {', '.join(EXPERIMENTS)}")

    def sin(self):
        def backward_fn(y_bar):
            x_bar = np.cos(self.data)  # a new array: the product goes into it
            x_bar *= y_bar
            return (x_bar,)

        return self._result(np.sin(self.data), (self,), "sin", backward_fn)

    def tanh(self):
        y = np.tanh(self.data)

        def backward_fn(y_bar):
            x_bar = 1.0 - y * y
            x_bar *= y_bar
            return (x_bar,)

        return self._result(y, (self,), "tanh", backward_fn)

    T.Tensor.sin, T.Tensor.tanh = sin, tanh


def _shapes_in_python():
    """`broadcast_shape` applies NumPy's rule to the two tuples in Python instead of asking
    `np.broadcast_shapes`, which makes an empty array of each shape and a `np.broadcast`; a pair
    that does not fit still goes the old way, which raises. The same shapes; alone, no faster.
    """
    import engine.tensor as T

    asked = T.broadcast_shape

    def broadcast_shape(shape_a, shape_b, op):
        if shape_a == shape_b:
            return shape_a
        width = max(len(shape_a), len(shape_b))
        a = (1,) * (width - len(shape_a)) + tuple(shape_a)
        b = (1,) * (width - len(shape_b)) + tuple(shape_b)
        if all(m == n or m == 1 or n == 1 for m, n in zip(a, b)):
            return tuple(n if m == 1 else m for m, n in zip(a, b))
        return asked(shape_a, shape_b, op)  # raises, naming both shapes

    T.broadcast_shape = broadcast_shape


def setup(workload, implementation, data=None):
    """`step` for `workload` through `implementation`, on `data` (default: `inputs(workload)`)."""
    data = inputs(workload) if data is None else data
    base = variant(implementation)["base"]
    if base == MINIMAL:  # tests/benchmarks/minimal.py, imported only when asked for
        return getattr(beside("minimal"), f"{WORKLOADS[workload]['program']}_minimal")(*data)
    return globals()[f"{WORKLOADS[workload]['program']}_{base}"](*data)
