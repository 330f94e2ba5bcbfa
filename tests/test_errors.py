"""The engine under bad input: every case of book/error_cases.py says exactly what the table says.

For each case: the exact exception type and message (or none), the exact warnings
in order, and the exact printed text (a memory address, which changes from run to
run, is compared as `0x...`: `error_cases.stable`). An error must point at the reader's line
(the snippet's frame is in the traceback, at the right line) and be raised by
the engine or by that line itself, never from inside NumPy; a warning must be
attributed to the reader's line. Cases marked `defect` pin the engine's current
words and are exempt from the location checks: the engine's owner has them as a
to-do list (see the `defect` field), and any change of their message fails here.

The `**` with a Tensor exponent is checked against PyTorch (when installed) and
HIPS autograd (always, tests/requirements.txt).
"""

import re
import warnings

import numpy as np
import pytest

import error_cases as E
from engine import Tensor

pytestmark = pytest.mark.chapter("errors")

CASES = E.CASES


def _ids(cases):
    return [case.id for case in cases]


def _report(outcome):
    """What the snippet did, for a failure message."""
    lines = [f"printed: {outcome.printed!r}"]
    lines += [f"warned at {E.where(w)}: {w.category.__name__}: {w.message}"
              for w in outcome.warnings]
    if outcome.error is not None:
        lines.append(f"raised at {E.where(outcome.raising_frame)}: {E.error_line(outcome.error)}")
    return "\n".join(lines)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_the_engine_says_exactly_what_the_table_says(case):
    outcome = E.run(case)
    got = (type(outcome.error), E.stable(str(outcome.error))) if outcome.error is not None else None
    assert got == case.raises, _report(outcome)
    warned = [(w.category, E.stable(str(w.message))) for w in outcome.warnings]
    assert warned == list(case.warns), _report(outcome)
    assert outcome.printed == case.prints, _report(outcome)


RAISING = [case for case in CASES if case.raises]


@pytest.mark.parametrize("case", RAISING, ids=_ids(RAISING))
def test_an_error_shows_the_reader_line_in_its_traceback(case):
    outcome = E.run(case)
    reader_frames = [f for f in outcome.frames if f.filename == case.filename]
    assert reader_frames, _report(outcome)
    assert reader_frames[-1].lineno == case.reader_line, _report(outcome)


CLEAN_RAISING = [case for case in RAISING if not case.defect]


@pytest.mark.parametrize("case", CLEAN_RAISING, ids=_ids(CLEAN_RAISING))
def test_an_error_is_raised_by_the_engine_or_the_reader_line_never_inside_numpy(case):
    frame = E.run(case).raising_frame
    assert frame.filename == case.filename or E.is_engine_file(frame.filename), (
        f"{case.id}: raised at {frame.filename}:{frame.lineno}, outside the engine")


CLEAN_WARNING = [case for case in CASES if case.warns and not case.defect]


@pytest.mark.parametrize("case", CLEAN_WARNING, ids=_ids(CLEAN_WARNING))
def test_a_warning_points_at_the_reader_line(case):
    outcome = E.run(case)
    assert outcome.warnings
    for w in outcome.warnings:
        assert (w.filename, w.lineno) == (case.filename, case.warning_line), _report(outcome)


def test_the_table_is_well_formed():
    ids = _ids(CASES)
    assert len(ids) == len(set(ids)), "case ids must be unique"
    sections = {key for key, _ in E.SECTIONS}
    for case in CASES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", case.id), case.id
        assert case.section in sections, case.id
        assert case.advice.strip() and case.title.strip(), case.id
        for line in (case.reader_line, case.warning_line):
            assert 1 <= line <= len(case.source.splitlines()), case.id
        assert case.raises or case.warns or case.prints, f"{case.id} shows nothing"
    assert {case.section for case in CASES} == sections, "a section without cases"


# -- ** with a Tensor exponent -------------------------------------------------------

BASES = np.array([[0.5, 2.0, 3.0], [0.0, -2.0, 1.0]])
EXPONENTS = np.array([[1.5, 3.0, 0.5], [2.0, 2.0, -1.0]])


def _engine_power(x_values, p_values):
    x, p = Tensor(x_values), Tensor(p_values)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = x ** p
        (y * Tensor(np.arange(1.0, 1.0 + y.data.size).reshape(y.shape),
                    requires_grad=False)).sum().backward()
    # the values are all finite; only the slope in p at a negative base, x^p ln x, is nan
    # (in PyTorch too), and backward says so once
    expected = ["backward: the gradient is not finite: NumPy met invalid value in the "
                "backward of '**'"] if (np.asarray(x_values) < 0).any() else []
    assert [str(w.message).split(" (")[0] for w in caught] == expected
    return y.data, x.grad, p.grad


def test_tensor_exponent_matches_pytorch_for_the_base_and_the_exponent():
    import torch  # required, not skipped: tests/requirements.txt installs it
    x = torch.tensor(BASES, requires_grad=True)
    p = torch.tensor(EXPONENTS, requires_grad=True)
    y = x ** p
    (y * torch.arange(1.0, 1.0 + y.numel(), dtype=torch.float64).reshape(y.shape)).sum().backward()
    ours = _engine_power(BASES, EXPONENTS)
    theirs = (y.detach().numpy(), x.grad.numpy(), p.grad.numpy())
    for name, a, b in zip(["x ** p", "x.grad", "p.grad"], ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0, equal_nan=True, err_msg=name)
    assert np.isnan(ours[2][1, 1])  # d(x^p)/dp = x^p ln x at x = -2: nan in both
    assert ours[2][1, 0] == 0.0  # ... and 0 at x = 0, PyTorch's convention


def test_tensor_exponent_broadcasts_and_a_number_base_gets_no_gradient_like_pytorch():
    import torch  # required, not skipped: tests/requirements.txt installs it
    x_values, p_values = np.array([[1.5, 2.0, 0.7], [3.0, 0.2, 1.1]]), np.array([2.0, -0.5, 1.3])
    x, p = Tensor(x_values), Tensor(p_values)
    ((x ** p).sum() + (2.0 ** p).sum()).backward()
    tx = torch.tensor(x_values, requires_grad=True)
    tp = torch.tensor(p_values, requires_grad=True)
    ((tx ** tp).sum() + (2.0 ** tp).sum()).backward()
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(p.grad, tp.grad.numpy(), rtol=1e-12)
    assert p.grad.shape == (3,)


def test_tensor_exponent_matches_autograd_for_positive_bases():
    import autograd  # required, not skipped: tests/requirements.txt installs it
    import autograd.numpy as anp
    x_values, p_values = np.array([0.5, 2.0, 3.0, 1.0]), np.array([1.5, 3.0, -0.5, 2.0])
    weights = np.array([1.0, 2.0, 3.0, 4.0])

    def f(x, p):
        return anp.sum(weights * x ** p)

    x, p = Tensor(x_values), Tensor(p_values)
    (x ** p * Tensor(weights, requires_grad=False)).sum().backward()
    np.testing.assert_allclose(x.grad, autograd.grad(f, 0)(x_values, p_values), rtol=1e-12)
    np.testing.assert_allclose(p.grad, autograd.grad(f, 1)(x_values, p_values), rtol=1e-12)


# -- the collector of a sweep's floating-point trouble, shared by every backward --------

def _warnings_of(run):
    """The warnings `run()` gives, as (first part of the message, file it points at)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [(str(w.message).split(" (")[0], w.filename) for w in caught]


def test_a_clean_backward_after_a_troubled_one_warns_of_nothing():
    x = Tensor([0.0, 1.0])
    assert _warnings_of(lambda: x.sqrt().sum().backward()) == [
        ("backward: the gradient is not finite: NumPy met divide by zero in the backward "
         "of 'sqrt'", __file__)]
    assert _warnings_of(lambda: Tensor([4.0]).sqrt().sum().backward()) == []


def test_a_backward_inside_a_sweep_warns_of_its_own_trouble_and_the_outer_of_its_own():
    from engine import nn
    from engine.memory import checkpoint

    class Root(nn.Module):
        def __init__(self):
            self.w = Tensor([1.0, 1.0])

        def __call__(self, x):
            return (x * self.w).sqrt()

        def parameters(self):
            return [self.w]

    x = Tensor([0.0, 4.0])
    made = []  # log 0 = -inf, warned of forward; log's closure divides by 0
    assert _warnings_of(lambda: made.append(checkpoint(Root(), x).log())) == [
        ("log: 1 of 2 entries are not finite", __file__)]
    y = made[0]
    # the outer sweep meets log's trouble first, then runs the checkpoint's backward,
    # whose closures meet their own: each sweep warns of its own, at this file's line
    assert _warnings_of(lambda: y.sum().backward()) == [
        ("backward: the gradient is not finite: NumPy met invalid value in the backward "
         "of '*'", __file__),  # the checkpoint's sweep: inf * 0 for the grad of w
        ("backward: the gradient is not finite: NumPy met divide by zero in the backward "
         "of 'log'", __file__)]  # the outer sweep's, kept aside while the inner one ran
