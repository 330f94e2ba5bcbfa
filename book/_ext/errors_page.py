"""The page "Errors you may meet": the directive ```{errors-you-may-meet}``` becomes what
every case of book/error_cases.py does when run on the installed engine (tests/test_errors.py
pins what it says)."""

import importlib.util
import sys
import textwrap
from pathlib import Path

from report import MarkdownDirective

WIDTH = 76  # output lines are wrapped to this many characters, so nothing scrolls
NOT_IN_REF = str.maketrans("", "", "`<>")  # a {ref}'s text holds no backticks or brackets


def load_cases(root):
    """book/error_cases.py, beside the page it fills (tests/test_errors.py imports it too)."""
    spec = importlib.util.spec_from_file_location("error_cases",
                                                  Path(root) / "book" / "error_cases.py")
    module = sys.modules["error_cases"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wrap(line):
    return "\n".join(textwrap.wrap(line, WIDTH, subsequent_indent="    ",
                                   break_long_words=False, break_on_hyphens=False)) or line


def _fence(text, info):
    """A fenced block whose fence is longer than any backtick run inside."""
    fence = "`" * max(3, max((len(r) for r in text.split() if set(r) == {"`"}), default=0) + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _result(outcome):
    """One word for the overview table: the exception's or warning's type, or 'runs'."""
    if outcome.error is not None:
        return f"`{type(outcome.error).__name__}`"
    if outcome.warnings:
        return f"`{outcome.warnings[0].category.__name__}`"
    return "runs"


def _place(where):
    return where if where.startswith("your line") else f"`{where}`"


def _origin(E, case, outcome):
    """Where the error and the warnings came from, in words."""
    parts = []
    if outcome.warnings:
        places = " and ".join(_place(p) for p in sorted({E.where(w) for w in outcome.warnings}))
        noun = "The warning points" if len(outcome.warnings) == 1 else "The warnings point"
        parts.append(f"{noun} at {places}.")
    if outcome.error is not None:
        frame, place = outcome.raising_frame, _place(E.where(outcome.raising_frame))
        reader = [f for f in outcome.frames if f.filename == case.filename]
        if frame.filename == case.filename:
            parts.append(f"Python raises it at {place}.")
        else:
            called = f", called from your line {reader[-1].lineno}" if reader else ""
            parts.append(f"Raised in {place}{called}.")
    return " ".join(parts)


def case_markdown(E, case, outcome):
    shown = [_wrap(f"{w.category.__name__}: {w.message}") for w in outcome.warnings]
    shown += [outcome.printed.rstrip("\n")] if outcome.printed else []
    shown += [_wrap(E.error_line(outcome.error))] if outcome.error is not None else []
    lines = [f"({label(case)})=", f"### {case.title}", "", _fence(case.source, "python"), "",
             _fence("\n".join(shown), "text"), ""]
    origin = _origin(E, case, outcome)
    lines += [origin, ""] if origin else []
    said = outcome.error is not None or outcome.warnings
    if case.defect:
        lines += ["The engine does not check this case yet: " + (
            "what you see comes from the code underneath it, not from a check that names the "
            "engine's operation." if said else "it runs, but not as you meant."), ""]
    lines += [f"**{'What to do.' if said else 'Note.'}** {case.advice}", ""]
    return "\n".join(lines)


def label(case):
    return f"errors-{case.id}"


def page_markdown(root):
    """Per section, a table of its cases, then each case."""
    E = load_cases(root)
    outcomes = {case.id: E.run(case) for case in E.CASES}
    body = []
    for key, title in E.SECTIONS:
        cases = [case for case in E.CASES if case.section == key]
        body += [f"(errors-section-{key})=", f"## {title}", ""]
        if len(cases) > 1:
            body += ["| What you tried | What you get |", "| --- | --- |"]
            body += [f"| {{ref}}`{case.title.translate(NOT_IN_REF)} "
                     f"<{label(case)}>` | {_result(outcomes[case.id])} |" for case in cases]
            body.append("")
        body += [case_markdown(E, case, outcomes[case.id]) for case in cases]
    return "\n".join(body)


class ErrorsYouMayMeet(MarkdownDirective):
    def markdown(self):
        self.env.note_reread()  # the engine may change while the page does not
        return page_markdown(Path(self.env.srcdir))


def setup(app):
    app.add_directive("errors-you-may-meet", ErrorsYouMayMeet)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
