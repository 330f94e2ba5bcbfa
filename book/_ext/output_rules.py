"""The book's rules for a cell's executed outputs and the glued values its prose shows,
shared by the verifier and the build."""

import copy
import dataclasses

from book_config import ROOT
from myst_reader import CodeCell, GlueUse, glue_uses
from expect_match import (NOISY, ToleranceError, compare, has_marks, indent, parse_tolerance,
                        strip_ansi, unified_diff)


# the error outputs execution.execute writes into the cell where a run stopped
STOPPING_ERRORS = ("CellTimeoutError", "DeadKernelError")


@dataclasses.dataclass
class CellOutput:
    text: str  # stdout and the text of every rich output (shown_text), in order
    stderr: str
    error: str | None  # traceback, ANSI stripped
    error_line: str | None = None  # `ValueError: message`

    def with_error_as_text(self) -> "CellOutput":  # for a `raises-exception` cell
        if self.error is None:
            return self
        return dataclasses.replace(self, text=self.text + self.error_line + "\n", error=None)


def html_text(markup: str) -> str:
    """The text a browser shows for an HTML output, a line per block, spaces collapsed."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(markup, "html.parser")
    for hidden in soup(["script", "style"]):
        hidden.decompose()
    for block in soup(["br", "p", "div", "tr", "li", "h1", "h2", "h3", "h4", "table"]):
        block.insert_before("\n")
    for table_cell in soup(["td", "th"]):
        table_cell.append(" ")
    lines = (" ".join(line.split()) for line in soup.get_text().splitlines())
    return "\n".join(line for line in lines if line)


def joined(value):
    """A notebook's text field, which nbformat may hold as a list of lines."""
    return "".join(value) if isinstance(value, list) else value


def is_player(data: dict) -> bool:
    """An output bundle that is a player (matplotlib's JavaScript animation, the engine's)."""
    html = joined(data.get("text/html", ""))
    return 'class="animation"' in html or "engine-interactive" in html


def is_interactive(data: dict) -> bool:
    """A figure a reader acts on: a player, or an HTML widget with a control of its own."""
    html = joined(data.get("text/html", ""))
    return is_player(data) or any(c in html for c in ("<select", "<input", "<button"))


def shown_text(data: dict, kind: str = "display_data") -> str | None:
    """The text a rich output shows on the page: Markdown, else HTML's text, else plain
    text; None for a figure (its text/plain is a placeholder) but an `execute_result`'s."""
    if any(key.startswith("image/") for key in data):
        return data.get("text/plain") if kind == "execute_result" else None
    if data.get("text/markdown") is not None:
        return data["text/markdown"]
    if data.get("text/html") is not None:
        return html_text(data["text/html"])
    return data.get("text/plain")


def cell_output(outputs, raises=False) -> CellOutput:
    """What a cell printed and the text of every result and display, in order."""
    text, stderr, error, error_line = [], [], None, None
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            if output.get("name") == "stderr":
                stderr.append(output.get("text", ""))
            else:
                text.append(output.get("text", ""))
        elif kind in ("execute_result", "display_data"):
            shown = shown_text(output.get("data", {}), kind)
            if shown is not None:
                text.append(shown if shown.endswith("\n") else shown + "\n")
        elif kind == "error" and not (error_line or "").startswith(STOPPING_ERRORS):
            # the error stopping the run, not the interrupt that the kernel says after it
            error_line = strip_ansi(f"{output.get('ename')}: {output.get('evalue')}")
            error = strip_ansi("\n".join(output.get("traceback", []))) or error_line
    result = CellOutput("".join(text), "".join(stderr), error, error_line)
    return result.with_error_as_text() if raises else result


@dataclasses.dataclass
class Failure:
    line: int
    what: str  # one line
    detail: str = ""  # diff or traceback, several lines
    # "differs", "missing", "unexpected" (update mode rewrites these), "error" (the cell
    # raised, timed out or killed its kernel), "glue" or "other"
    kind: str = "other"


def check_cell(cell: CodeCell, output: CellOutput) -> list[Failure]:
    """Every way this cell's output breaks the book's rules."""
    if cell.raises:
        output = output.with_error_as_text()
    failures = []
    if output.stderr:
        first = (output.stderr.strip().splitlines() or [repr(output.stderr)])[0]
        failures.append(Failure(cell.line, "cell wrote to stderr: " + first,
                                indent(output.stderr.rstrip())))
    return failures + _result_failures(cell, output)


def _result_failures(cell: CodeCell, output: CellOutput) -> list[Failure]:
    """How the cell's error, or its text against its `expect:`, breaks the rules."""
    if output.error is not None:
        last = output.error_line or output.error.strip().splitlines()[-1]
        name, _, what = last.partition(": ")
        if name in STOPPING_ERRORS:
            return [Failure(cell.line, what, kind="error")]
        return [Failure(cell.line, "cell raised " + last, indent(output.error.rstrip()), "error")]
    expect = cell.expect
    if expect is not None and not isinstance(expect, str):
        # `expect: 1.` is the YAML float 1.0: comparing its str() would be wrong
        return [Failure(cell.line, f"expect: reads as YAML {type(expect).__name__} {expect!r}, "
                        "not text: write it as a block (`expect: |` and the text below) or "
                        "quote it", indent(unified_diff(str(expect), output.text)), "differs")]
    try:
        tolerance = parse_tolerance(cell.options.get("tolerance"))
    except ToleranceError as error:
        return [Failure(cell.line, str(error))]
    if tolerance is not None and not has_marks(expect or "") and _glue_marked(cell):
        tolerance = None  # the tolerance is for the marked numbers of its `glue:` texts
    if expect is None:
        failures = []
        if tolerance is not None:
            failures.append(Failure(cell.line, f"tolerance {tolerance} is declared but nothing "
                                    f"is marked noisy: write `{NOISY}` before each noisy number"))
        if output.text.strip():
            failures.append(Failure(cell.line, "cell prints text but has no expect: option",
                                    indent(unified_diff("", output.text)), "missing"))
        return failures
    if not output.text.strip():
        return [Failure(cell.line, "expect: is set but the cell printed nothing",
                        indent(unified_diff(expect, "")), "unexpected")]
    try:
        what = compare(expect, output.text, tolerance)
    except ToleranceError as error:  # `~` marks and the tolerance option disagree
        return [Failure(cell.line, str(error))]
    if what is None:
        return []
    return [Failure(cell.line, what, indent(unified_diff(expect, output.text)), "differs")]


# -- glued values: numbers in the prose ----------------------------------------------

def _glue_marked(cell: CodeCell) -> bool:
    declared = cell.options.get("glue")
    return isinstance(declared, dict) and any(
        isinstance(text, str) and has_marks(text) for text in declared.values())


def glued_values(cells) -> dict:
    """{name: mimebundle} of every `glue(...)` output, as myst-nb reads them (on a copy:
    myst-nb moves them out of the cell)."""
    from myst_nb.ext.glue import extract_glue_data_cell

    return {name: dict(output["data"]) for cell in copy.deepcopy(cells)
            for name, output in extract_glue_data_cell(cell)}


def glue_text(use: GlueUse, bundle: dict) -> str | None:
    """The text the page shows for this role, as myst-nb renders it, or None."""
    from myst_nb.core.variables import format_plain_text

    plain = joined(bundle.get("text/plain"))
    if use.kind == "md" and "text/markdown" in bundle:
        return bundle["text/markdown"]
    if plain is None:
        return None
    return format_plain_text(plain, use.spec or "s") if use.kind == "text" else plain


def check_glue(text: str, cells: list[CodeCell], glued: dict, root=ROOT) -> list[Failure]:
    """Every way the glued values the prose shows break the rules: each is declared by the
    cell that glues it (`glue:` then `  x1_bar: "5.5"`) and matches."""
    failures, declared = [], {}
    for cell in cells:
        spec = cell.options.get("glue")
        if spec is None:
            continue
        if not isinstance(spec, dict):
            failures.append(Failure(cell.line, "glue: must map each glued name to the text the "
                                    'page shows, as `glue:` then lines `  name: "5.5"`'))
            continue
        for name, expected in spec.items():
            if not isinstance(expected, str):
                failures.append(Failure(cell.line, f"glue: {name} reads as YAML "
                                        f"{type(expected).__name__} {expected!r}, not text: "
                                        f'quote it ({name}: "{expected}")'))
            elif name in declared:
                failures.append(Failure(cell.line, f"glue: {name} is declared twice, here and "
                                        f"at line {declared[name][0].line}"))
            else:
                declared[name] = (cell, expected)
    uses = [use for use in glue_uses(text, root) if "::" not in use.name]
    shown = {use.name for use in uses}
    for use in uses:
        bundle = glued.get(use.name)
        if bundle is None:
            failures.append(Failure(use.line, f"the page shows glued value {use.name!r}, which "
                                    "no cell glued"))
            continue
        got = glue_text(use, bundle)
        if use.name not in declared:
            failures.append(Failure(
                use.line, f"the page shows glued value {use.name!r} ({got!r}) and no check "
                f"covers it: declare it in the options of the cell that glues it, "
                f'`glue:` then `  {use.name}: "{got}"`'))
            continue
        cell, expected = declared[use.name]
        try:
            tolerance = cell.options.get("tolerance") if has_marks(expected) else None
            what = compare(expected, got or "", tolerance)
        except ToleranceError as error:
            failures.append(Failure(cell.line, f"glue: {use.name}: {error}"))
            continue
        if what is not None:
            failures.append(Failure(
                cell.line, f"glued value {use.name!r}, shown at line {use.line}, is {got!r}, "
                f"glue: says {expected!r} ({what})", kind="glue"))
    for name, (cell, _) in declared.items():
        if name not in shown:
            failures.append(Failure(cell.line, f"glue: declares {name!r}, which no role on the "
                                    "page shows"))
    return failures
