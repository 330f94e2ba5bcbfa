"""Errors you may meet: inputs a reader will try, and exactly what the engine says.

One table, read twice. `tests/test_errors.py` runs every case and checks the
exact type and message of what it raises and warns, and that the error points
at the reader's line. `book/_ext/errors_page.py` runs the same cases when the
book is built and fills the `{errors-you-may-meet}` block of the appendix page
`book/errors.md` with what the engine really said, the code and the advice.

A case is a snippet of reader code. It runs with `np`, `Tensor`, `functional`,
`nn`, `optim` and `no_grad` defined, compiled under the file name `<case id>`,
so a traceback or a warning that points at the reader's line names that file.
Its `line` (default: the last line) is the line the error or the warnings must
point at (`warn_line` for the warnings of a case that also raises). `defect` is
set when the engine does not yet say what it should (a bare NumPy message from
inside the engine, or its own message that is wrong for the case): it holds the message it should give, and the table pins the
current behaviour until the engine changes. `checks` asserts what the advice says the
engine does beyond the snippet (another call's result or error): `run` executes it after
the snippet, in a fresh namespace, and an AssertionError there fails the page's build and
the tests alike, so the advice cannot go stale silently. A memory address in a message
(`0x7f...`, from Python's description of an object) changes from run to run:
the table writes it `0x...` (see `stable`), and every other character is exact.
"""

import contextlib
import io
import re
import textwrap
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import engine

ENGINE_DIR = str(Path(engine.__file__).resolve().parent)  # the engine these cases run against


@dataclass(frozen=True)
class Case:
    id: str
    section: str
    title: str          # what the reader tried, in words
    code: str           # what the reader tried, in code
    advice: str         # what to do instead (MyST Markdown, one or two sentences)
    raises: tuple = None  # (exception type, exact str(exception)), or None: it runs
    warns: tuple = ()   # ((warning category, exact message), ...) in the order they come
    prints: str = ""    # exact stdout
    line: int = 0       # the snippet line the error or the warnings point at; 0: the last
    warn_line: int = 0  # the line the warnings point at, when it differs from `line`
    defect: str = ""    # for the engine's owner: what it should say instead
    checks: str = ""    # asserts the advice's claims about the engine (see the docstring)

    @property
    def source(self):
        return textwrap.dedent(self.code).strip("\n")

    @property
    def filename(self):
        return f"<{self.id}>"

    @property
    def reader_line(self):
        return self.line or len(self.source.splitlines())

    @property
    def warning_line(self):
        return self.warn_line or self.reader_line


@dataclass
class Outcome:
    printed: str
    warnings: list   # warnings.WarningMessage, in order
    error: BaseException | None
    frames: list     # traceback.FrameSummary of the error, outermost first

    @property
    def raising_frame(self):
        return self.frames[-1] if self.frames else None


def namespace():
    """What every snippet may use, as a notebook cell would after its imports."""
    from engine import Tensor, functional, nn, no_grad, optim

    return {"np": np, "Tensor": Tensor, "functional": functional, "nn": nn,
            "optim": optim, "no_grad": no_grad, "__name__": "__reader__"}


def run(case):
    """Run the snippet; collect what it printed, warned and raised. Then run its checks."""
    code = compile(case.source, case.filename, "exec")
    stdout = io.StringIO()
    error, frames = None, []
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(stdout):
        warnings.simplefilter("always")
        try:
            exec(code, namespace())
        except Exception as e:  # the case is the exception
            error, frames = e, traceback.extract_tb(e.__traceback__)[1:]  # from the snippet on
    if case.checks:
        check_advice(case)
    return Outcome(stdout.getvalue(), list(caught), error, frames)


def raised(call):
    """`(type, message)` of what `call()` raises, or None: for the checks of the advice."""
    try:
        call()
    except Exception as e:
        return type(e), str(e)
    return None


def check_advice(case):
    """Run `case.checks`: an AssertionError names the case, and the claim that no longer holds."""
    scope = namespace() | {"raised": raised}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            exec(compile(textwrap.dedent(case.checks), f"<{case.id} checks>", "exec"), scope)
        except AssertionError as e:
            raise AssertionError(f"{case.id}: the advice says more than the engine does: "
                                 f"{e}") from e


def is_engine_file(filename):
    return str(Path(filename).resolve()).startswith(ENGINE_DIR)


def stable(message):
    """`message` with each memory address written `0x...`, the one part that changes."""
    return re.sub(r"\b0x[0-9a-fA-F]{6,}\b", "0x...", message)


def error_line(error):
    """The last line of the traceback Python would print: `ValueError: ...`."""
    return traceback.format_exception_only(error)[-1].rstrip("\n")


def where(frame_or_warning):
    """`engine/tensor.py`, `numpy/...` or `your line 2`, for a frame or a warning."""
    filename = frame_or_warning.filename
    if filename.startswith("<"):
        return f"your line {frame_or_warning.lineno}"
    path = Path(filename).resolve()
    if is_engine_file(filename):
        return f"engine/{path.relative_to(ENGINE_DIR).as_posix()}"
    parts = path.parts
    return "/".join(parts[parts.index("numpy"):]) if "numpy" in parts else path.name


SECTIONS = [
    ("data", "Making a tensor"),
    ("shapes", "Shapes"),
    ("backward", "Backward"),
    ("nonfinite", "Numbers that are not finite"),
    ("losses", "Losses"),
    ("training", "Modules and optimizers"),
    ("python", "A Tensor is not a NumPy array"),
    ("deep", "A very deep graph"),
]

_SOFTMAX_AXES = "logsumexp, log_softmax and softmax reduce over an axis it has"

CASES = [
    # -- making a tensor -------------------------------------------------------------
    Case(
        id="string-data", section="data", title="A string as data",
        code='Tensor("a")',
        raises=(TypeError, "Tensor: the data must be real numbers, got dtype <U1 (shape (), "
                           "first entries ['a']); the engine computes in float64 only"),
        advice="Pass numbers. Text read from a file becomes numbers with `float(text)` or "
               "`np.loadtxt`.",
    ),
    Case(
        id="object-array", section="data", title="An object array (numbers mixed with text)",
        code='Tensor(np.array([1, "a"], dtype=object))',
        raises=(TypeError, "Tensor: the data must be real numbers, got dtype object (shape (2,), "
                           "first entries [1, 'a']); the engine computes in float64 only"),
        advice="An object array usually comes from a column that mixes numbers with text or "
               "`None`. Clean it, then convert it with `.astype(float)`.",
    ),
    Case(
        id="none-data", section="data", title="None as data",
        code="Tensor(None)",
        raises=(TypeError, "Tensor: the data must be real numbers, got dtype object (shape (), "
                           "first entries [None]); the engine computes in float64 only"),
        advice="A variable you meant to fill is still `None`, often a function that forgot "
               "to `return`.",
    ),
    Case(
        id="complex-data", section="data", title="Complex numbers",
        code="Tensor([1 + 2j])",
        raises=(TypeError, "Tensor: the data must be real numbers, got dtype complex128 "
                           "(shape (1,), first entries [1.+2.j]); the engine computes in "
                           "float64 only"),
        advice="The engine differentiates real functions only. Carry the real and the "
               "imaginary parts as two real tensors.",
    ),
    Case(
        id="ragged-list", section="data", title="Rows of different lengths",
        code="Tensor([[1.0, 2.0], [3.0]])",
        raises=(ValueError, "Tensor: the data is not a rectangular array of numbers: setting "
                            "an array element with a sequence. The requested array has an "
                            "inhomogeneous shape after 1 dimensions. The detected shape was "
                            "(2,) + inhomogeneous part."),
        advice="Every row needs the same length. Pad the short rows, or keep them as "
               "separate tensors.",
    ),
    Case(
        id="list-of-tensors", section="data", title="A list of tensors",
        code="""\
            a, b = Tensor(1.0), Tensor(2.0)
            Tensor([a, b])""",
        raises=(TypeError, "Tensor: the data must be real numbers, got dtype object (shape (2,), "
                           "first entries [Tensor(1.), Tensor(2.)]); the engine computes in "
                           "float64 only"),
        advice="`Tensor()` takes numbers. To join tensors so that gradients reach them, use "
               "`engine.stack([a, b])` ({doc}`catalogue`) or combine them with operations "
               "(`a * w + b`); build the array from their `.data` if you want a constant.",
        checks="""\
            import engine  # stack comes with the catalogue appendix (catalogue.md)
            a, b = Tensor(1.0), Tensor(2.0)
            if hasattr(engine, "stack"):
                joined = engine.stack([a, b])
                (joined * np.array([3.0, 4.0])).sum().backward()
                assert (a.grad, b.grad) == (3.0, 4.0), (a.grad, b.grad)
            assert np.array_equal(Tensor(np.array([a.data, b.data])).data, [1.0, 2.0])
            """,
    ),
    Case(
        id="tensor-of-tensor", section="data", title="A Tensor made from a Tensor",
        code="""\
            x = Tensor([1.0, 2.0])
            y = Tensor(x)
            (y * y).sum().backward()
            print("x.grad =", x.grad, " y.grad =", y.grad)""",
        prints="x.grad = None  y.grad = [2. 4.]\n",
        advice="It works, but `Tensor(x)` copies the values into a new leaf with no link to "
               "`x`'s graph, so `x` gets no gradient. `torch.tensor(x)` does the same and warns. "
               "Use `x` itself to keep the graph, or `x.detach()` to say you want a constant.",
    ),
    Case(
        id="integer-data", section="data", title="Integers, then backward",
        code="""\
            x = Tensor([1, 2, 3])
            (x * x).sum().backward()
            print(x.data.dtype, x.grad)""",
        prints="float64 [2. 4. 6.]\n",
        advice="It works: the engine has one dtype, so integers become float64 and get "
               "gradients. PyTorch refuses: `torch.tensor([1, 2, 3], requires_grad=True)` "
               "raises `RuntimeError: Only Tensors of floating point and complex dtype can "
               "require gradients`.",
    ),
    Case(
        id="boolean-leaf", section="data", title="Booleans that need a gradient",
        code="Tensor([True, False])",
        raises=(TypeError, "Tensor: the data is boolean, and a boolean tensor cannot require a "
                           "gradient; use a mask as the NumPy array it is (x * mask, x[mask]), "
                           "or convert it with .astype(float)"),
        advice="A mask is a constant: multiply by the NumPy array itself, `x * mask`, or "
               "index with it, `x[mask]`. (`Tensor(mask, requires_grad=False)` holds 0.0 and "
               "1.0: fine in arithmetic, refused as an index.)",
        checks="""\
            mask = np.array([True, False])
            x = Tensor([3.0, 4.0])
            assert np.array_equal((x * mask).data, [3.0, 0.0]), "x * mask"
            assert np.array_equal(x[mask].data, [3.0]), "x[mask]"
            as_tensor = Tensor(mask, requires_grad=False)
            assert np.array_equal(as_tensor.data, [1.0, 0.0]), "Tensor(mask) holds 0.0 and 1.0"
            assert raised(lambda: x[as_tensor])[0] is TypeError, "refused as an index"
            """,
    ),
    Case(
        id="shape-as-arguments", section="data", title="A shape instead of data",
        code="Tensor(2, 3)",
        raises=(TypeError, "Tensor: requires_grad must be True or False, got 3; Tensor(2, 3) "
                           "is not a shape: for a tensor of shape (2, 3), pass its values, "
                           "such as Tensor(np.zeros((2, 3)))"),
        advice="`Tensor()` takes values, and its second argument is `requires_grad`: "
               "`Tensor(2, 3)` asked for the number 2 with `requires_grad=3`. "
               "(`torch.Tensor(2, 3)` makes an uninitialised 2 by 3 tensor; the engine has "
               "no such form.) Pass the values: `Tensor(np.zeros((2, 3)))`.",
    ),
    Case(
        id="requires-grad-string", section="data", title="`requires_grad` as a string",
        code="Tensor([1.0, 2.0], requires_grad='yes')",
        raises=(TypeError, "Tensor: requires_grad must be True or False, got 'yes'"),
        advice="Pass `True` (the default) or `False`; a flag read from a config file is "
               "text, so compare it, `requires_grad=(flag == 'yes')`.",
    ),
    # -- shapes ----------------------------------------------------------------------
    Case(
        id="broadcast-mismatch", section="shapes", title="Shapes that do not broadcast",
        code="Tensor(np.ones((2, 3))) + Tensor(np.ones((3, 2)))",
        raises=(ValueError, "+: shapes (2, 3) and (3, 2) cannot be broadcast together "
                            "(aligned from the right, each pair of lengths must be equal or "
                            "contain a 1)"),
        advice="Line the shapes up from the right: each pair of lengths must match or one "
               "of them must be 1. Here one operand is probably the other's transpose "
               "(`.T`). {doc}`shapes` gives the rule.",
    ),
    Case(
        id="matmul-inner-sizes", section="shapes", title="`@` with mismatched inner sizes",
        code="""\
            a = Tensor(np.ones((2, 3)))
            b = Tensor(np.ones((2, 3)))
            a @ b""",
        raises=(ValueError, "@: shapes (2, 3) and (2, 3) do not fit: the last axis of the "
                            "left must equal the second-to-last (or only) axis of the right"),
        advice="`(n, k) @ (k, m)` gives `(n, m)`: the two inner lengths must agree. "
               "`a @ b.T` fits here.",
    ),
    Case(
        id="matmul-batch-axes", section="shapes", title="`@` on stacks that do not broadcast",
        code="Tensor(np.ones((2, 2, 3))) @ Tensor(np.ones((3, 3, 4)))",
        raises=(ValueError, "@ (batch axes): shapes (2,) and (3,) cannot be broadcast together "
                            "(aligned from the right, each pair of lengths must be equal or "
                            "contain a 1)"),
        advice="The axes before the last two are a stack of matrices, and they broadcast "
               "like any other operation: here 2 matrices cannot pair with 3.",
    ),
    Case(
        id="linear-wrong-features", section="shapes",
        title="A layer given the wrong number of features",
        code="""\
            layer = nn.Linear(2, 3, np.random.default_rng(0))
            layer(Tensor(np.ones((4, 3))))""",
        raises=(ValueError, "@: shapes (4, 3) and (2, 3) do not fit: the last axis of the "
                            "left must equal the second-to-last (or only) axis of the right"),
        advice="`nn.Linear(fan_in, fan_out)` takes inputs of shape `(batch, fan_in)`: here 2 "
               "features, and the batch has 3. The engine stores the weight `(fan_in, "
               "fan_out)`, the transpose of PyTorch's.",
        checks="""\
            layer = nn.Linear(2, 3, np.random.default_rng(0))
            assert layer.weight.shape == (2, 3), layer.weight.shape
            """,
    ),
    Case(
        id="reshape-wrong-size", section="shapes", title="`reshape` to a size that differs",
        code="Tensor(np.ones(6)).reshape(4, 2)",
        raises=(ValueError, "reshape: a tensor of shape (6,) has 6 entries, which do not "
                            "fill the shape (4, 2)"),
        advice="A reshape keeps every entry: the new lengths must multiply to the old size, "
               "and `(4, 2)` holds 8. One length may be `-1`, worked out from the others: "
               "`reshape(-1, 2)` gives `(3, 2)`.",
        checks="""\
            assert Tensor(np.ones(6)).reshape(-1, 2).shape == (3, 2)
            """,
    ),
    Case(
        id="reshape-float-length", section="shapes", title="`reshape` with a float length",
        code="""\
            x = Tensor(np.ones(6))
            rows = len(x.data) / 3
            x.reshape(rows, 3)""",
        raises=(TypeError, "reshape: lengths must be integers, got (2.0, 3)"),
        advice="Lengths are whole numbers, and `/` always gives a float: divide with `//`, "
               "`rows = len(x.data) // 3`.",
    ),
    Case(
        id="sum-missing-axis", section="shapes", title="A sum over an axis that does not exist",
        code="Tensor(np.ones((2, 3))).sum(axis=2)",
        raises=(ValueError, "sum: axis 2 does not fit a tensor of shape (2, 3): an axis is an "
                            "int from -2 to 1, each axis at most once"),
        advice="Axes count from 0: a `(2, 3)` tensor has axes 0 and 1 (or -2 and -1). The "
               "same holds for `mean` and `max`.",
        checks="""\
            x = Tensor(np.ones((2, 3)))
            for name in ("mean", "max"):
                error = raised(lambda: getattr(x, name)(axis=2))
                assert error and error[0] is ValueError and "axis 2" in error[1], (name, error)
                assert getattr(x, name)(axis=-2).shape == (3,), name
            """,
    ),
    Case(
        id="sum-repeated-axis", section="shapes", title="A sum over the same axis twice",
        code="Tensor(np.ones((2, 3))).sum(axis=(0, 0))",
        raises=(ValueError, "sum: axis (0, 0) does not fit a tensor of shape (2, 3): an axis "
                            "is an int from -2 to 1, each axis at most once"),
        advice="Name each axis once: `sum(axis=(0, 1))` sums over both, as `sum()` does. "
               "`(0, -2)` names axis 0 twice too.",
        checks="""\
            x = Tensor(np.arange(6.0).reshape(2, 3))
            assert x.sum(axis=(0, 1)).data == x.sum().data == 15.0
            assert raised(lambda: x.sum(axis=(0, -2)))[0] is ValueError
            """,
    ),
    Case(
        id="transpose-wrong-axes", section="shapes",
        title="`transpose` with an axis that does not exist",
        code="Tensor(np.ones((2, 3))).transpose(0, 2)",
        raises=(ValueError, "transpose: (0, 2) are not two axes of a tensor of shape (2, 3)"),
        advice="Two axes are swapped, as in PyTorch: a `(2, 3)` tensor has axes 0 and 1 "
               "(or -2 and -1), so `transpose(0, 1)`, or `.T`. A tuple, or three axes or "
               "more, is a whole new order, as in NumPy: `transpose((2, 0, 1))`.",
        checks="""\
            assert Tensor(np.ones((2, 3))).transpose(0, 1).shape == (3, 2)
            assert Tensor(np.ones((2, 3, 4))).transpose((2, 0, 1)).shape == (4, 2, 3)
            assert Tensor(np.ones((2, 3, 4))).transpose(2, 0, 1).shape == (4, 2, 3)
            """,
    ),
    Case(
        id="transpose-counted-from-one", section="shapes",
        title="`transpose` with axes counted from 1",
        code="Tensor(np.ones((2, 3))).transpose(2, 1)",
        raises=(ValueError, "transpose: (2, 1) are not two axes of a tensor of shape (2, 3)"),
        advice="Axes count from 0: the axes of a `(2, 3)` tensor are `(0, 1)`, so swap them "
               "with `transpose(1, 0)`, or `.T`.",
    ),
    Case(
        id="index-out-of-range", section="shapes", title="An index out of range",
        code="""\
            x = Tensor([1.0, 2.0, 3.0])
            x[3]""",
        raises=(IndexError, "index 3 is out of bounds for axis 0 with size 3, indexing a "
                            "tensor of shape (3,)"),
        advice="Indices of a length-3 axis run from 0 to 2 (or -3 to -1): the last entry "
               "is `x[2]`, or `x[-1]`.",
    ),
    Case(
        id="index-tensor-fraction", section="shapes",
        title="A Tensor as an index",
        code="""\
            x = Tensor([1.0, 2.0, 3.0])
            keep = Tensor([True, False, True], requires_grad=False)
            x[keep]""",
        raises=(TypeError, "index: a Tensor holds floats, so it cannot tell positions from a "
                           "mask: index with a NumPy array, of integers (positions) or of "
                           "booleans (a mask), such as x[idx.data.astype(int)]"),
        advice="A Tensor stores `[True, False, True]` as `[1.0, 0.0, 1.0]`, which would read "
               "as rows 1, 0 and 1, so the engine refuses it (PyTorch's boolean tensors stay "
               "boolean). Index with the NumPy array itself: `x[np.array([True, False, "
               "True])]`, or positions, `x[np.array([0, 2])]`. An index gets no gradient.",
    ),
    Case(
        id="max-of-empty", section="shapes", title="The maximum of an empty tensor",
        code="""\
            scores = Tensor([0.2, 0.7, 0.4])
            high = scores[scores.data > 0.9]
            high.max()""",
        raises=(ValueError, "max: no entries to take the maximum of, over all its axes of a "
                            "tensor of shape (0,)"),
        advice="A mask that selects nothing leaves an empty tensor. Its `sum()` is 0, but "
               "it has no maximum: check `high.data.size` first, or take the maximum before "
               "masking.",
        checks="""\
            scores = Tensor([0.2, 0.7, 0.4])
            assert scores[scores.data > 0.9].sum().data == 0.0
            """,
    ),
    Case(
        id="softmax-missing-axis", section="shapes",
        title="`softmax` over an axis that does not exist",
        code="functional.softmax(Tensor([1.0, 2.0, 3.0]), axis=1)",
        raises=(ValueError, "axis 1 is out of range for a tensor of shape (3,): "
                            + _SOFTMAX_AXES),
        advice="A vector has one axis: `axis=0`, or the default `axis=-1`. For a batch, make "
               "it `(batch, classes)` and use `axis=1`.",
    ),
    # -- backward --------------------------------------------------------------------
    Case(
        id="backward-boolean-mask", section="backward", title="`backward()` on a boolean mask",
        code="""\
            mask = Tensor([True, False], requires_grad=False)
            mask.backward()""",
        raises=(RuntimeError, "backward: this tensor does not require a gradient: none of the "
                              "tensors it was computed from has requires_grad=True, or it was "
                              "computed inside no_grad()"),
        advice="A mask is a constant, and there is nothing to differentiate. Call `backward()` "
               "on the loss, a result of the tensors you want gradients for.",
    ),
    Case(
        id="backward-constant", section="backward", title="`backward()` on constants only",
        code="""\
            x = Tensor([1.0, 2.0], requires_grad=False)
            (x * 2).sum().backward()""",
        raises=(RuntimeError, "backward: this tensor does not require a gradient: none of the "
                              "tensors it was computed from has requires_grad=True, or it was "
                              "computed inside no_grad()"),
        advice="Make the tensors you want a gradient for with `requires_grad=True` (the "
               "default).",
    ),
    Case(
        id="backward-after-no-grad", section="backward",
        title="`backward()` on a result computed inside `no_grad()`",
        code="""\
            x = Tensor([1.0, 2.0])
            with no_grad():
                y = (x * x).sum()
            y.backward()""",
        raises=(RuntimeError, "backward: this tensor does not require a gradient: none of the "
                              "tensors it was computed from has requires_grad=True, or it was "
                              "computed inside no_grad()"),
        advice="`no_grad()` records nothing, which is what evaluation wants. Compute the loss "
               "you train on outside it ({doc}`memory`).",
    ),
    Case(
        id="seed-wrong-shape", section="backward", title="`backward(seed)` with a seed of the wrong shape",
        code="""\
            x = Tensor([1.0, 2.0])
            y = x * x
            y.backward(np.ones(3))""",
        raises=(ValueError, "backward: seed of shape (3,) for a tensor of shape (2,)"),
        advice="The seed is the adjoint of `y`: one entry per entry of `y`, so of `y`'s shape.",
    ),
    Case(
        id="seed-number-for-vector", section="backward", title="A number as the seed of a vector",
        code="""\
            x = Tensor([1.0, 2.0])
            (x * x).backward(1.0)""",
        raises=(ValueError, "backward: seed of shape () for a tensor of shape (2,)"),
        advice="A number seeds a scalar only. For a vector `y`, pass `np.ones(y.shape)`, or "
               "call `y.sum().backward()`.",
    ),
    Case(
        id="non-scalar-backward", section="backward", title="`backward()` on a vector",
        code="""\
            x = Tensor([1.0, 2.0])
            y = x * x
            y.backward()
            print("x.grad =", x.grad)""",
        prints="x.grad = [2. 4.]\n",
        advice="It works: with no seed the engine seeds ones of `y`'s shape, which is the "
               "gradient of `y.sum()`. PyTorch refuses: `RuntimeError: grad can be implicitly "
               "created only for scalar outputs`.",
    ),
    Case(
        id="backward-twice", section="backward", title="`backward()` twice",
        code="""\
            x = Tensor([1.0, 2.0])
            loss = (x * x).sum()
            loss.backward()
            loss.backward()""",
        raises=(RuntimeError, "backward through a freed graph: the closure of 'sum' and the "
                              "values it saved were released by an earlier backward() or "
                              "engine.grad() to give their memory back. Pass "
                              "retain_graph=True to the first sweep if you need a second "
                              "one, or run the forward pass again."),
        advice="Run the forward pass again for each backward, as a training loop does, or "
               "pass `retain_graph=True` to the first `backward` ({doc}`memory`).",
        checks="""\
            x = Tensor([1.0, 2.0])
            loss = (x * x).sum()
            loss.backward(retain_graph=True)
            loss.backward()
            assert np.array_equal(x.grad, [4.0, 8.0]), x.grad
            """,
    ),
    Case(
        id="changed-in-place", section="backward",
        title="A saved value changed in place before `backward()`",
        code="""\
            x = Tensor([1.0, 2.0])
            loss = x.sin().sum()
            x.data += 1.0
            loss.backward()""",
        raises=(RuntimeError, "an array of shape (2,) saved by 'sin' was changed in place "
                              "after the forward pass: it was at version 0 when 'sin' saved it "
                              "and is at version 1 now, so its gradient would belong to no "
                              "forward pass. Run the forward pass again after the change, or "
                              "change a copy instead."),
        advice="Change parameters after `backward`, as an optimizer's `step()` does, or "
               "change a copy ({doc}`memory`).",
    ),
    Case(
        id="tensor-exponent", section="backward", title="`**` with a Tensor exponent",
        code="""\
            x = Tensor([2.0, 3.0])
            p = Tensor([3.0, 0.5])
            (x ** p).sum().backward()
            print("x.grad =", np.round(x.grad, 4), " p.grad =", np.round(p.grad, 4))""",
        prints="x.grad = [12.      0.2887]  p.grad = [5.5452 1.9029]\n",
        advice="It works, and both gradients are PyTorch's: `p * x ** (p - 1)` for the base "
               "and `x ** p * log(x)` for the exponent (0 where `x` is 0).",
        checks="""\
            x, p = Tensor([0.0, 2.0]), Tensor([2.0, 2.0])
            (x ** p).sum().backward()
            assert p.grad[0] == 0.0, p.grad  # "0 where x is 0"
            """,
    ),
    Case(
        id="pow-zero-at-zero", section="backward", title="The gradient of `x ** 0` at 0",
        code="""\
            x = Tensor([0.0, 2.0])
            (x ** 0).sum().backward()
            print("x.grad =", x.grad)""",
        prints="x.grad = [0. 0.]\n",
        advice="It works: $x^0 = 1$ everywhere, so the gradient is 0, at 0 too, where the "
               "power rule, $0 \\cdot x^{-1}$, would be $0 \\cdot \\infty$, nan. The engine "
               "gives 0 where the exponent is 0, as PyTorch does.",
    ),
    # -- numbers that are not finite -------------------------------------------------
    Case(
        id="log-negative", section="nonfinite", title="`log` of a negative number, and of 0",
        code="""\
            y = Tensor([-1.0, 0.0, 1.0]).log()
            print(y.data)""",
        line=1,
        warns=((RuntimeWarning, "log: 2 of 3 entries are not finite (divide by zero encountered "
                                "in log; log of a negative number is nan and log 0 is -inf); "
                                "PyTorch gives the same values without a warning, and their "
                                "gradients will not be finite either"),),
        prints="[ nan -inf   0.]\n",
        advice="The values are nan and -inf, as in PyTorch; the warning points at your line. "
               "Keep the argument positive, e.g. `(x + 1e-12).log()` for probabilities, or "
               "work with logits and `functional.log_softmax`.",
    ),
    Case(
        id="sqrt-negative", section="nonfinite", title="`sqrt` of a negative number",
        code="Tensor([4.0, -4.0]).sqrt()",
        warns=((RuntimeWarning, "sqrt: 1 of 2 entries are not finite (invalid value encountered "
                                "in sqrt; sqrt of a negative number is nan); PyTorch gives the "
                                "same values without a warning, and their gradients will not "
                                "be finite either"),),
        advice="A variance or a squared length that came out negative is usually rounding: "
               "clip it, `(v.relu() + 1e-12).sqrt()`.",
    ),
    Case(
        id="divide-by-zero", section="nonfinite", title="Division by zero",
        code="Tensor([1.0, 0.0]) / Tensor([0.0, 0.0])",
        warns=((RuntimeWarning, "/: 2 of 2 entries are not finite (divide by zero encountered in "
                                "divide; division by 0 gives inf, and 0 / 0 gives nan); PyTorch "
                                "gives the same values without a warning, and their gradients "
                                "will not be finite either"),),
        advice="Add a small constant to the denominator, `x / (n + 1e-12)`, or skip the "
               "entries where it is 0.",
    ),
    Case(
        id="exp-overflow", section="nonfinite", title="`exp` of a large number",
        code="Tensor([1000.0]).exp()",
        warns=((RuntimeWarning, "exp: 1 of 1 entries are not finite (overflow encountered in "
                                "exp; exp overflows to inf above about 709.78); PyTorch gives "
                                "the same values without a warning, and their gradients will "
                                "not be finite either"),),
        advice="Exponentials of logits belong in `functional.softmax`, `log_softmax` or "
               "`cross_entropy`, which subtract the maximum first ({doc}`losses`).",
        checks="""\
            p = functional.softmax(Tensor([1000.0, 0.0]))
            assert np.all(np.isfinite(p.data)) and p.data[0] == 1.0, p.data
            """,
    ),
    Case(
        id="fractional-power-of-negative", section="nonfinite",
        title="A fractional power of a negative number",
        code="Tensor([-8.0]) ** (1 / 3)",
        warns=((RuntimeWarning, "**0.333333: 1 of 1 entries are not finite (invalid value "
                                "encountered in power; x ** p is nan for x < 0 and a fractional "
                                "p, inf for x = 0 and p < 0); PyTorch gives the same values "
                                "without a warning, and their gradients will not be finite "
                                "either"),),
        advice="Real powers are defined for $x > 0$ only. For a cube root with a sign, use "
               "`x.abs() ** (1 / 3)` times the sign of `x.data`.",
        checks="""\
            x = Tensor([-8.0, 8.0])
            assert np.allclose((x.abs() ** (1 / 3) * np.sign(x.data)).data, [-2.0, 2.0])
            """,
    ),
    Case(
        id="norm-at-zero", section="nonfinite", title="The gradient of a length at 0",
        code="""\
            x = Tensor([0.0, 0.0])
            length = (x * x).sum().sqrt()
            length.backward()
            print("x.grad =", x.grad)""",
        line=3,
        warns=((RuntimeWarning, "backward: the gradient is not finite: NumPy met divide by "
                                "zero in the backward of 'sqrt', invalid value in the backward "
                                "of '*' (a slope that is infinite somewhere, as sqrt's at 0, or "
                                "a nan or inf from the forward pass); PyTorch returns the same "
                                "values without a warning"),),
        prints="x.grad = [nan nan]\n",
        advice="$\\sqrt{\\cdot}$ has an infinite slope at 0, so the backward of `sqrt` makes "
               "inf, and the backward of `x * x` turns it into nan ($0 \\cdot \\infty$), in "
               "PyTorch too. The warning names both, in the order backward ran them. Use the "
               "squared length, or `((x * x).sum() + 1e-12).sqrt()`.",
        checks="""\
            x = Tensor([0.0, 0.0])
            ((x * x).sum() + 1e-12).sqrt().backward()
            assert np.array_equal(x.grad, [0.0, 0.0]), x.grad
            """,
    ),
    Case(
        id="nan-reaching-cross-entropy", section="nonfinite", title="A nan that reaches the loss",
        code="""\
            scale = Tensor([[1.0], [-1.0]]).log()
            logits = Tensor(np.ones((2, 3))) * scale
            functional.cross_entropy(logits, [0, 1])""",
        warn_line=1,
        warns=((RuntimeWarning, "log: 1 of 2 entries are not finite (invalid value encountered in "
                                "log; log of a negative number is nan and log 0 is -inf); PyTorch "
                                "gives the same values without a warning, and their gradients "
                                "will not be finite either"),),
        raises=(ValueError, "logits contain 3 non-finite values, first nan at row 1, column 0: "
                            "a nan or inf made earlier in the forward pass (log or sqrt of a "
                            "negative number, an overflow, a learning rate that is too large) "
                            "reached the loss"),
        advice="The warning names the operation that made the nan (here line 1); the loss "
               "refuses to hide it in a nan loss. Fix the operation the warning names.",
    ),
    Case(
        id="nan-in-squared-error", section="nonfinite", title="A nan that reaches a squared error",
        code="""\
            prediction = Tensor([1.0, np.nan])
            loss = ((prediction - 1.0) ** 2).mean()
            print("loss =", loss.data)""",
        prints="loss = nan\n",
        advice="No warning: arithmetic on a nan that is already there is silent, in NumPy and "
               "PyTorch alike; only the operation that makes one warns. Check "
               "`np.isfinite(loss.data)` in a training loop, and look for the first warning.",
    ),
    Case(
        id="softmax-of-inf", section="nonfinite", title="`softmax` of an infinite logit",
        code="""\
            p = functional.softmax(Tensor([1.0, np.inf]))
            print("p =", p.data)""",
        line=1,
        warns=((RuntimeWarning, "logsumexp, log_softmax and softmax: 1 of 2 entries of x are "
                                "inf, so x - max(x) is inf - inf in 1 of 1 slices along axis "
                                "-1: every result there is nan, and so is its gradient; "
                                "PyTorch's softmax and log_softmax give the same nan without a "
                                "warning (its logsumexp gives inf or -inf)"),),
        prints="p = [nan nan]\n",
        advice="The values are PyTorch's, nan. An infinite logit was made earlier: find the "
               "warning that made it. (A logit of `-np.inf` is fine: it masks its class, "
               "unless every logit of the row is `-np.inf`.)",
        checks="""\
            import warnings
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                p = functional.softmax(Tensor([0.0, -np.inf]))
            assert np.array_equal(p.data, [1.0, 0.0]) and not caught, (p.data, caught)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                p = functional.softmax(Tensor([-np.inf, -np.inf]))
            assert np.isnan(p.data).all() and caught, (p.data, caught)
            """,
    ),
    Case(
        id="multiply-overflow", section="nonfinite", title="A product too large for float64",
        code="""\
            x = Tensor([1e200])
            y = x * x""",
        warns=((RuntimeWarning, "overflow encountered in multiply"),),
        advice="float64 stops near $1.8 \\times 10^{308}$, and beyond that a product is inf, "
               "in PyTorch too. Numbers this large usually mean a step that diverged (a "
               "learning rate too large): look at the first step whose values grow.",
        defect="*: 1 of 1 entries are not finite (overflow encountered in multiply; ...), "
               "at the reader's line; today Tensor's + - * do not go through `checked`, so "
               "an overflow, inf - inf or 0 * inf warns in NumPy's words from "
               "engine/tensor.py",
    ),
    # -- losses ----------------------------------------------------------------------
    Case(
        id="target-out-of-range", section="losses",
        title="`cross_entropy` with a target out of range",
        code="functional.cross_entropy(Tensor(np.zeros((2, 3))), [0, 3])",
        raises=(ValueError, "target 3 at row 1 is out of range for 3 classes (valid: 0 to 2)"),
        advice="Classes are numbered from 0: with 3 columns of logits, targets are 0, 1 or 2. "
               "Labels numbered from 1 need `targets - 1`.",
    ),
    Case(
        id="target-minus-one", section="losses", title="Padding marked -1 instead of -100",
        code="functional.cross_entropy(Tensor(np.zeros((2, 3))), [0, -1])",
        raises=(ValueError, "target -1 at row 1 is out of range for 3 classes (valid: 0 "
                            "to 2)"),
        advice="As in PyTorch, only targets equal to `ignore_index` are skipped, and it is "
               "-100 unless you pass another: `ignore_index=-1` here.",
        checks="""\
            loss = functional.cross_entropy(Tensor(np.zeros((2, 3))), [0, -1], ignore_index=-1)
            assert np.isclose(loss.data, np.log(3.0)), loss.data
            """,
    ),
    Case(
        id="float-targets", section="losses", title="Targets as floats",
        code="functional.cross_entropy(Tensor(np.zeros((2, 3))), np.array([0.0, 2.0]))",
        raises=(TypeError, "targets must be class indices (integers), got dtype float64"),
        advice="Targets are class numbers: `targets.astype(int)`. (PyTorch reads float "
               "targets as class probabilities; the engine has no such form.)",
    ),
    Case(
        id="tensor-targets", section="losses", title="Targets as a Tensor",
        code="functional.cross_entropy(Tensor(np.zeros((2, 3))), Tensor([0, 2]))",
        raises=(TypeError, "targets must be class indices (integers), got a Tensor, whose "
                           "entries are floats: pass an integer array or a list"),
        advice="Pass `[0, 2]` or `np.array([0, 2])`: targets get no gradient, so they need "
               "not be a Tensor.",
    ),
    Case(
        id="logits-as-array", section="losses", title="Logits as a NumPy array",
        code="functional.cross_entropy(np.zeros((2, 3)), [0, 2])",
        raises=(TypeError, "logits must be a Tensor, got ndarray: wrap them, Tensor(logits), "
                           "to get their gradient"),
        advice="The loss is recorded on the graph of its logits: pass the Tensor your model "
               "returned, not its `.data`.",
    ),
    Case(
        id="softmax-of-an-array", section="losses", title="`softmax` of a NumPy array",
        code="functional.softmax(np.array([1.0, 2.0, 3.0]))",
        raises=(TypeError, "logsumexp, log_softmax and softmax take a Tensor, got ndarray: "
                           "wrap it, Tensor(x)"),
        advice="These functions record a graph, so they take a Tensor: `softmax(Tensor(a))`. "
               "For plain arrays, `scipy.special.softmax` does the same without a graph.",
    ),
    Case(
        id="one-row-of-logits", section="losses", title="One example's logits as a vector",
        code="functional.cross_entropy(Tensor([1.0, 2.0, 3.0]), [2])",
        raises=(ValueError, "logits must have shape (N, C), got (3,)"),
        advice="The loss takes a batch: one row per example. Make one example a batch of "
               "one with `logits.reshape(1, -1)`.",
        checks="""\
            logits = Tensor([1.0, 2.0, 3.0])
            assert functional.cross_entropy(logits.reshape(1, -1), [2]).shape == ()
            """,
    ),
    Case(
        id="unknown-reduction", section="losses", title="A reduction that does not exist",
        code="functional.cross_entropy(Tensor(np.zeros((2, 3))), [0, 2], reduction='avg')",
        raises=(ValueError, "reduction must be 'mean', 'sum' or 'none', got 'avg'"),
        advice="Use `'mean'` (the default), `'sum'` or `'none'`.",
    ),
    # -- modules and optimizers ------------------------------------------------------
    Case(
        id="layers-in-a-dict", section="training",
        title="An optimizer given no parameters (layers kept in a dict)",
        code="""\
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = {"first": nn.Linear(2, 1, np.random.default_rng(0))}
            optim.SGD(Net().parameters(), lr=0.1)""",
        raises=(ValueError, "SGD got an empty list of parameters: a Module finds the "
                            "parameters and layers kept in its attributes, and layers in lists "
                            "or tuples, but not parameters in a list, nor anything in a dict"),
        advice="Keep the layers in a list, or one attribute per layer.",
        checks="""\
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = [nn.Linear(2, 1, np.random.default_rng(0))]
            assert len(Net().parameters()) == 2, "a list of layers: weight and bias found"
            """,
    ),
    Case(
        id="optimizer-given-method", section="training",
        title="An optimizer given `model.parameters` without brackets",
        code="""\
            model = nn.Linear(2, 1, np.random.default_rng(0))
            optim.SGD(model.parameters, lr=0.1)""",
        raises=(TypeError, "SGD: params must be a list of tensors, such as model.parameters() "
                           "with the brackets; got the method Module.parameters, not its "
                           "result"),
        advice="Call it: `model.parameters()`.",
    ),
    Case(
        id="optimizer-given-model", section="training", title="An optimizer given the model",
        code="""\
            model = nn.Linear(2, 1, np.random.default_rng(0))
            optim.Adam(model, lr=0.1)""",
        raises=(TypeError, "Adam: params must be a list of tensors, such as model.parameters() "
                           "with the brackets; got a Linear module"),
        advice="Optimizers take the parameters: `optim.Adam(model.parameters(), lr=0.1)`.",
    ),
    Case(
        id="lr-as-string", section="training", title="A learning rate as a string",
        code="""\
            model = nn.Linear(2, 1, np.random.default_rng(0))
            optim.SGD(model.parameters(), lr="0.1")""",
        raises=(TypeError, "SGD: lr must be a number, got '0.1'"),
        advice="A learning rate read from a config file or the command line is text: "
               "convert it, `lr=float(text)`. The same holds for `momentum`, `betas`, `eps` "
               "and `weight_decay`.",
    ),
    Case(
        id="grad-set-to-none", section="training", title="`step()` after setting grads to None",
        code="""\
            model = nn.Linear(2, 1, np.random.default_rng(0))
            opt = optim.SGD(model.parameters(), lr=0.1)
            before = model.weight.data.copy()
            for p in model.parameters():
                p.grad = None
            opt.step()
            print("weight changed:", not np.array_equal(model.weight.data, before))""",
        prints="weight changed: False\n",
        advice="It runs and changes nothing: as in PyTorch, `step()` skips a parameter whose "
               "grad is None, since no gradient reached it. `opt.zero_grad()` and "
               "`model.zero_grad()` leave the grads in the same state, None, as PyTorch's do "
               "(`set_to_none=False` gives zeros instead), and the next `backward()` makes "
               "them again: call `step()` after `backward()`.",
        checks="""\
            model = nn.Linear(2, 1, np.random.default_rng(0))
            opt = optim.SGD(model.parameters(), lr=0.1)
            model(Tensor(np.ones((1, 2)))).sum().backward()
            opt.zero_grad()
            assert all(p.grad is None for p in model.parameters()), "zero_grad: None"
            model.zero_grad(set_to_none=False)
            assert all(not p.grad.any() for p in model.parameters()), "zeros on request"
            model(Tensor(np.ones((1, 2)))).sum().backward()
            assert all(p.grad is not None for p in model.parameters()), "backward makes them"
            """,
    ),
    Case(
        id="state-dict-wrong-shape", section="training",
        title="Loading a state dict with a wrong shape",
        code="""\
            model = nn.Linear(2, 3, np.random.default_rng(0))
            state = model.state_dict()
            state["weight"] = np.zeros((3, 2))
            model.load_state_dict(state)""",
        raises=(ValueError, "load_state_dict: 'weight' has shape (2, 3) in the model and (3, 2) "
                            "in the file"),
        advice="A weight saved by PyTorch is stored `(fan_out, fan_in)`: load its transpose, "
               "`state['weight'] = state['weight'].T`.",
    ),
    Case(
        id="state-dict-missing-key", section="training",
        title="Loading a state dict with a name missing",
        code="""\
            model = nn.Linear(2, 3, np.random.default_rng(0))
            model.load_state_dict({"weight": np.zeros((2, 3))})""",
        raises=(KeyError, "\"load_state_dict: missing ['bias'], unexpected []\""),
        advice="Every parameter and buffer needs its array, under the names "
               "`model.state_dict()` uses.",
    ),
    Case(
        id="seed-instead-of-rng", section="training", title="A seed where a generator goes",
        code="nn.MLP([2, 3, 1], 0)",
        raises=(TypeError, "Linear: rng must be a NumPy Generator, such as "
                           "np.random.default_rng(0); got int"),
        advice="Layers draw their weights from a NumPy Generator, made once from the seed: "
               "`nn.MLP([2, 3, 1], np.random.default_rng(0))`. The message names `Linear`, "
               "the layer inside the MLP that draws them.",
    ),
    Case(
        id="forward-misspelt", section="training", title="A module whose `forward` is misspelt",
        code="""\
            class Net(nn.Module):
                def foward(self, x):
                    return x * 2
            Net()(Tensor([1.0]))""",
        raises=(NotImplementedError, "Net must define forward(x)"),
        advice="Calling a module calls its `forward`: check the spelling.",
    ),
    # -- not a NumPy array -----------------------------------------------------------
    Case(
        id="numpy-ufunc-on-tensor", section="python", title="A NumPy function on a Tensor",
        code="np.exp(Tensor([1.0]))",
        raises=(TypeError, "operand 'Tensor' does not support ufuncs (__array_ufunc__=None)"),
        advice="NumPy's functions would not record a graph. Use the Tensor's method, "
               "`x.exp()`, or `np.exp(x.data)` for a constant.",
    ),
    Case(
        id="numpy-sum-on-tensor", section="python", title="`np.sum` of a Tensor",
        code="np.sum(Tensor([1.0, 2.0]))",
        raises=(TypeError, "np.sum does not take a Tensor: NumPy would see no graph. Use the "
                           "Tensor's own methods and operators, or pass x.data for a constant"),
        advice="Use the method, `x.sum()`, which records the graph, or `np.sum(x.data)` for "
               "a constant. Other NumPy functions (`np.mean`, `np.var`, ...) say the same. "
               "For `np.concatenate`, `np.stack` and `np.where` the message names the "
               "engine's own function ({doc}`catalogue`), `engine.concatenate` "
               "and so on.",
        checks="""\
            x = Tensor([1.0, 2.0])
            for name in ("mean", "var"):
                error = raised(lambda: getattr(np, name)(x))
                assert error and f"np.{name} does not take a Tensor" in error[1], error
            import engine  # the engine's own functions come with the catalogue appendix
            for name, call in [("concatenate", lambda: np.concatenate([x, x])),
                               ("stack", lambda: np.stack([x, x])),
                               ("where", lambda: np.where([True, False], x, 0.0))]:
                assert f"engine.{name}" in raised(call)[1] or not hasattr(engine, name), name
            """,
    ),
    Case(
        id="compare-tensors", section="python", title="Comparing a Tensor with a number",
        code="""\
            loss = Tensor(0.5)
            if loss < 1.0:
                print("small")""",
        line=2,
        raises=(TypeError, "'<' not supported between instances of 'Tensor' and 'float'"),
        advice="Compare the values: `loss.data < 1.0`, or `float(loss.data)`.",
    ),
    Case(
        id="tensor-equality", section="python", title="`==` between tensors",
        code="print(Tensor([1.0]) == Tensor([1.0]))",
        prints="False\n",
        advice="`==` asks whether they are the same object (PyTorch compares entries). "
               "Compare values with `np.array_equal(a.data, b.data)`.",
        checks="""\
            a = Tensor([1.0])
            assert (a == a) is True, "a tensor equals itself"
            """,
    ),
    Case(
        id="format-a-tensor", section="python", title="Formatting a loss with `:.3f`",
        code="""\
            loss = Tensor(0.5)
            print(f"loss {loss:.3f}")""",
        raises=(TypeError, "unsupported format string passed to Tensor.__format__"),
        advice="Format the number: `f\"loss {float(loss.data):.3f}\"`.",
    ),
    # -- a very deep graph -----------------------------------------------------------
    Case(
        id="deep-graph", section="deep", title="A graph 100,000 operations deep",
        code="""\
            x = Tensor(1.0)
            c = Tensor(1.000001, requires_grad=False)
            y = x
            for _ in range(100_000):
                y = y * c
            y.backward()
            print("x.grad =", round(float(x.grad), 6), " 1.000001 ** 100000 =",
                  round(1.000001 ** 100_000, 6))""",
        prints="x.grad = 1.105171  1.000001 ** 100000 = 1.105171\n",
        advice="It works: the topological sort is a loop, not a recursion, so no depth limit "
               "applies. `tests/test_deep_graph.py` runs 1,000,000 operations and measures "
               "the memory per node.",
    ),
]
