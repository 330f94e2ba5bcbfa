"""The page "Errors you may meet", written at build time from book/error_cases.py.

`book/errors.md` holds the page's prose and one ```{errors-you-may-meet}```
block. When Sphinx reads the page, this extension replaces that block with
MyST Markdown made by RUNNING every case of the table against the engine that
is installed: a section per group of cases with a table of them, and for each case its code, what
it printed, warned and raised (type and message, as Python shows them), where
that came from (your line, a file of the engine, or NumPy), and the advice. So
the page shows what the engine says today, and `tests/test_errors.py` fails
when that differs from what the table pins.

The page is re-read on every build (the engine may change while the page does
not), like the execution report.
"""

import importlib.util
import sys
import textwrap
from pathlib import Path

MARKER = "```{errors-you-may-meet}\n```"
WIDTH = 76  # output lines are wrapped to this many characters, so nothing scrolls
ENV_KEY = "engine_errors_docs"


def load_cases(root):
    """The module book/error_cases.py, beside the page it fills (tests/test_errors.py
    imports it too)."""
    path = Path(root) / "book" / "error_cases.py"
    spec = importlib.util.spec_from_file_location("error_cases", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["error_cases"] = module
    spec.loader.exec_module(module)
    return module


def _wrap(line):
    return "\n".join(textwrap.wrap(line, WIDTH, subsequent_indent="    ",
                                   break_long_words=False, break_on_hyphens=False)) or line


def _fence(text, info):
    """A fenced block whose fence is longer than any backtick run inside."""
    fence = "`" * max(3, max((len(run) for run in text.split() if set(run) == {"`"}),
                             default=0) + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _result(E, outcome):
    """One word for the overview table: the exception's or warning's type, or 'runs'."""
    if outcome.error is not None:
        return f"`{type(outcome.error).__name__}`"
    if outcome.warnings:
        return f"`{outcome.warnings[0].category.__name__}`"
    return "runs"


def _origin(E, case, outcome):
    """Where the error and the warnings came from, in words."""
    parts = []
    if outcome.warnings:
        places = sorted({E.where(w) for w in outcome.warnings})
        noun = "The warning points" if len(outcome.warnings) == 1 else "The warnings point"
        parts.append(f"{noun} at {' and '.join(_place(p) for p in places)}.")
    if outcome.error is not None:
        frame = outcome.raising_frame
        reader = [f for f in outcome.frames if f.filename == case.filename]
        place = _place(E.where(frame))
        if frame.filename == case.filename:
            parts.append(f"Python raises it at {place}.")
        else:
            called = f", called from your line {reader[-1].lineno}" if reader else ""
            parts.append(f"Raised in {place}{called}.")
    return " ".join(parts)


def _place(where):
    return where if where.startswith("your line") else f"`{where}`"


def case_markdown(E, case, outcome):
    shown = [_wrap(f"{w.category.__name__}: {w.message}") for w in outcome.warnings]
    if outcome.printed:
        shown.append(outcome.printed.rstrip("\n"))
    if outcome.error is not None:
        shown.append(_wrap(E.error_line(outcome.error)))
    lines = [f"({label(case)})=", f"### {case.title}", "", _fence(case.source, "python"), ""]
    lines += [_fence("\n".join(shown), "text"), ""]
    origin = _origin(E, case, outcome)
    if origin:
        lines += [origin, ""]
    said = outcome.error is not None or outcome.warnings
    if case.defect and said:
        lines += ["The engine does not check this case yet: what you see comes from the code "
                  "underneath it, not from a check that names the engine's operation.", ""]
    elif case.defect:
        lines += ["The engine does not check this case yet: it runs, but not as you meant.", ""]
    heading = "What to do." if said else "Note."
    lines += [f"**{heading}** {case.advice}", ""]
    return "\n".join(lines)


def label(case):
    return f"errors-{case.id}"


def page_markdown(root):
    """The Markdown that replaces the marker: per section, a table of its cases, then each case."""
    E = load_cases(root)
    outcomes = {case.id: E.run(case) for case in E.CASES}
    body = []
    for key, title in E.SECTIONS:
        cases = [case for case in E.CASES if case.section == key]
        body += [f"(errors-section-{key})=", f"## {title}", ""]
        if len(cases) > 1:
            body += ["| What you tried | What you get |", "| --- | --- |"]
            body += [f"| {{ref}}`{_escape(case.title)} <{label(case)}>` "
                     f"| {_result(E, outcomes[case.id])} |" for case in cases]
            body.append("")
        body += [case_markdown(E, case, outcomes[case.id]) for case in cases]
    return "\n".join(body)


def _escape(title):
    """A title inside {ref}`...`: no backticks or angle brackets there."""
    return title.replace("`", "").replace("<", "").replace(">", "")


def fill_page(app, docname, source):
    if MARKER not in source[0]:
        return
    env = app.env
    if not hasattr(env, ENV_KEY):
        setattr(env, ENV_KEY, set())
    getattr(env, ENV_KEY).add(docname)
    source[0] = source[0].replace(MARKER, page_markdown(Path(app.srcdir)))


def always_reread(app, env, added, changed, removed):
    return sorted(d for d in getattr(env, ENV_KEY, set()) if d in env.found_docs and d not in removed)


def purge(app, env, docname):
    getattr(env, ENV_KEY, set()).discard(docname)


def merge(app, env, docnames, other):
    setattr(env, ENV_KEY, getattr(env, ENV_KEY, set()) | getattr(other, ENV_KEY, set()))


def setup(app):
    app.connect("source-read", fill_page)
    app.connect("env-get-outdated", always_reread)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
