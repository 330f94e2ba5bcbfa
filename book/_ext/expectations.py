"""Read a chapter's code cells and their `expect:` options; compare and rewrite them.

The pure core of the chapter verifier (tests/verifier.py runs the cells). Nothing
here starts a kernel or imports pytest, so Sphinx extensions and tests can both
import it (put `book/_ext` on sys.path).

- Chapters are the MyST notebooks listed in `_toc.yml`, read with myst-nb's own
  reader and the book's own MyST configuration, so the notebook (and its
  jupyter-cache hash) is the one the site build executes.
- `compare(expected, got, tolerance)` is strict after `normalize`: whitespace
  runs become one space and spaces just inside brackets go, so NumPy's padding
  never matters but every printed digit does. A per-cell `tolerance:` option
  (`rel R`, `abs A` or `magnitude`) relaxes only the numbers the expectation
  marks with `~` (`gap: ~3e-10`); every other number and all text stay exact.
- `rewrite_expectations` replaces only the lines of the `expect:` blocks it is
  asked to change and leaves every other byte of the chapter alone.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import html.parser
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# -- the book's configuration, as jupyter-book hands it to Sphinx ---------------


@functools.lru_cache(maxsize=None)
def _final_config(root: Path) -> dict:
    from jupyter_book.config import get_final_config

    config, _ = get_final_config(
        user_yaml=Path(root) / "_config.yml",
        sourcedir=Path(root),
        cli_config={"latex_individualpages": False},
    )
    return config


def book_config(root=ROOT) -> dict:
    """The Sphinx configuration jupyter-book derives from `<root>/_config.yml`."""
    return _final_config(Path(root).resolve())


def md_parser_config(root=ROOT):
    """The MdParserConfig myst-parser builds from the book's `myst_*` settings."""
    from myst_parser.config.main import MdParserConfig

    config = book_config(root)
    names = {name for name, _, _ in MdParserConfig().as_triple()}
    values = {k[5:]: v for k, v in config.items() if k.startswith("myst_") and k[5:] in names}
    return MdParserConfig(**values)


def default_timeout(root=ROOT):
    """`execute: timeout:` of `_config.yml` (seconds; None or -1 means no limit)."""
    return book_config(root).get("nb_execution_timeout", 30)


# -- chapters --------------------------------------------------------------------


def is_notebook(text: str) -> bool:
    """A MyST notebook as myst-nb sees it, with a kernelspec to run it."""
    from myst_nb.core.read import is_myst_markdown_notebook

    if not is_myst_markdown_notebook(text):
        return False
    import yaml

    front = text.split("\n---", 1)[0].lstrip("-\n")
    meta = yaml.safe_load(front) or {}
    return isinstance(meta, dict) and "kernelspec" in meta


def chapter_paths(root=ROOT) -> list[Path]:
    """Every MyST notebook `_toc.yml` lists, in table-of-contents order."""
    from sphinx_external_toc.parsing import parse_toc_yaml

    root = Path(root)
    paths = []
    for docname in parse_toc_yaml(str(root / "_toc.yml")):
        for suffix in (".md",):
            path = root / f"{docname}{suffix}"
            if path.is_file() and is_notebook(path.read_text(encoding="utf8")):
                paths.append(path)
    return paths


def pages_missing_from_toc(root=ROOT) -> list[Path]:
    """Pages in the chapters' folder (the root page's, `book/`) that `_toc.yml` does not list.

    With `only_build_toc_files: true` the build leaves them out without a word, and
    the chapter tests (one per chapter of the toc) never see them. Files the
    configuration excludes are not pages.
    """
    from sphinx.util.matching import Matcher
    from sphinx_external_toc.parsing import parse_toc_yaml

    root = Path(root).resolve()
    site_map = parse_toc_yaml(str(root / "_toc.yml"))
    listed = set(site_map)
    folder = root / Path(site_map.root.docname).parent
    excluded = Matcher(book_config(root).get("exclude_patterns", []))
    missing = []
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".md", ".ipynb") or not path.is_file():
            continue
        relative = path.relative_to(root).as_posix()
        parts = relative.split("/")
        if any(excluded("/".join(parts[: i + 1])) for i in range(len(parts))):
            continue
        if relative[: -len(path.suffix)] not in listed and relative not in listed:
            missing.append(path)
    return missing


def book_root(path) -> Path | None:
    """The nearest folder above `path` holding a `_toc.yml` (the book it belongs to)."""
    for folder in Path(path).resolve().parents:
        if (folder / "_toc.yml").is_file():
            return folder
    return None


def slug(path, root=ROOT) -> str:
    """`book/tensors.md` -> `tensors` (the chapter's name in test ids)."""
    path = Path(path).resolve()
    for base in (Path(root).resolve() / "book", Path(root).resolve(), path.parent):
        try:
            return path.relative_to(base).with_suffix("").as_posix()
        except ValueError:
            continue
    return path.stem


def display_path(path, root=ROOT) -> str:
    """The path a reader types: relative to the repository when inside it."""
    path = Path(path).resolve()
    try:
        return path.relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(path)


@dataclasses.dataclass
class CodeCell:
    index: int  # position among all the notebook's cells
    line: int  # 1-based line of the ```{code-cell} fence in the .md
    source: str
    options: dict  # the cell's metadata: its YAML options

    @property
    def expect(self):
        return self.options.get("expect")

    @property
    def tolerance(self):
        return self.options.get("tolerance")

    @property
    def timeout(self):
        return self.options.get("timeout")

    @property
    def raises(self):
        """Tagged `raises-exception`: an error is expected, and checked as text."""
        return "raises-exception" in (self.options.get("tags") or [])


@dataclasses.dataclass
class Chapter:
    path: Path
    text: str
    nb: object  # nbformat.NotebookNode, exactly as myst-nb reads it
    cells: list  # CodeCell, in order

    def cell_at(self, index):
        return next(cell for cell in self.cells if cell.index == index)


class ChapterError(ValueError):
    """A chapter that cannot be read at all; names the file and the line to fix."""

    def __init__(self, path, line: int, what: str, root=ROOT):
        self.path, self.line, self.what = Path(path), line, what
        super().__init__(f"{display_path(path, root)}:{line}: {what}")


_CODE_CELL_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*\{code-cell\}")


def _cell_end(lines: list[str], fence: int) -> int:
    """0-based index of the line closing the fenced cell that opens at `fence`."""
    mark = _CODE_CELL_FENCE.match(lines[fence]).group(1)
    for i in range(fence + 1, len(lines)):
        stripped = lines[i].strip()
        if stripped and set(stripped) == {mark[0]} and len(stripped) >= len(mark):
            return i
    return len(lines)


def options_problem(text: str, fence_line: int):
    """(line, what) when the options of the code cell fenced at `fence_line` do not read.

    myst-nb says only "Code cell 2 at line 17 could not be read: ... (bad YAML)";
    this names the line of the options to fix and YAML's own words. None when the
    options read (as a mapping) after all.
    """
    import textwrap

    import yaml

    lines = text.splitlines()
    fence = fence_line - 1
    end = _cell_end(lines, fence)
    if fence + 1 < end and lines[fence + 1].startswith("---"):
        close = next((i for i in range(fence + 2, end) if re.match(r"^-{3,}", lines[i])), None)
        if close is None:
            return fence_line + 1, (
                "the cell's options block opened by `---` here is never closed: end it "
                "with a `---` line before the code")
        first, body = fence + 2, lines[fence + 2 : close]  # first: 0-based line of the YAML
        body = textwrap.dedent("\n".join(body))
    else:
        count = 0
        while fence + 1 + count < end and lines[fence + 1 + count].lstrip().startswith(":"):
            count += 1
        if not count:
            return None
        first = fence + 1
        body = "\n".join(line.lstrip()[1:] for line in lines[first : first + count])
    try:
        value = yaml.safe_load(body)
    except yaml.YAMLError as error:
        problem_mark = getattr(error, "problem_mark", None)
        context_mark = getattr(error, "context_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        context = getattr(error, "context", None)
        what = "the cell's options are not valid YAML: " + problem
        where = first + 1 + (problem_mark.line if problem_mark else 0)
        if problem_mark:
            what += f" (line {where})"
        if context and context_mark:
            start = first + 1 + context_mark.line
            what += f", {context} that starts at line {start}"
            if "quoted" in context or "flow" in context:
                where = start  # an unclosed quote or bracket: the line that opens it
        return where, what + " (`expect: |` then the text indented by two spaces is the safe form)"
    if value is not None and not isinstance(value, dict):
        return first + 1, (
            f"the cell's options read as a YAML {type(value).__name__}, not as "
            "`key: value` lines")
    return None


def options_problems(text: str):
    """[(line, what)] for every code cell whose options do not read, in order."""
    problems = []
    for i, line in enumerate(text.splitlines()):
        if _CODE_CELL_FENCE.match(line):
            problem = options_problem(text, i + 1)
            if problem is not None:
                problems.append(problem)
    return problems


def comment_out_options(text: str, line: int) -> str:
    """`text` with the options lines of the cell whose problem is at `line` made YAML
    comments (so the cell reads with no options), every line number unchanged.

    The build uses it after warning, so one bad cell does not stop the whole build
    (and hide the other problems `--keep-going` should list)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines()
    fence = max(i for i in range(min(line, len(lines))) if _CODE_CELL_FENCE.match(lines[i]))
    end = _cell_end(lines, fence)
    if lines[fence + 1].startswith("---"):
        close = next((i for i in range(fence + 2, end) if re.match(r"^-{3,}", lines[i])), end)
        # no closing `---`: myst reads the whole cell as options, so it all becomes comments
        lines[fence + 2 : close] = ["# " + ln for ln in lines[fence + 2 : close]]
    else:
        i = fence + 1
        while i < end and lines[i].lstrip().startswith(":"):
            lines[i] = ":# " + lines[i].lstrip()[1:]
            i += 1
    result = newline.join(lines)
    return result + newline if text.endswith(("\n", "\r")) else result


def read_notebook(text: str, path, root=ROOT):
    """The notebook myst-nb builds from `text` (source_map included).

    A cell whose options do not read raises ChapterError naming its line."""
    import yaml
    from myst_nb.core.read import MystMetadataParsingError, read_myst_markdown_notebook

    try:
        return read_myst_markdown_notebook(
            text, config=md_parser_config(root), add_source_map=True, path=str(path)
        )
    except (MystMetadataParsingError, yaml.YAMLError) as error:
        problems = options_problems(text)
        if not problems:
            raise
        line, what = problems[0]
        raise ChapterError(path, line, what, root) from error


def read_chapter(path, root=ROOT, text=None) -> Chapter:
    path = Path(path).resolve()
    if text is None:
        text = path.read_text(encoding="utf8")
    nb = read_notebook(text, path, root)
    source_map = nb.metadata["source_map"]
    lines = text.splitlines()
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        line = source_map[index]  # myst-nb stores token.map[0] + 1: the fence, 1-based
        if not lines[line - 1].lstrip().startswith(("```", "~~~")):
            raise ValueError(f"{path}:{line}: source_map does not point at a code-cell fence")
        cells.append(CodeCell(index, line, cell.source, dict(cell.metadata)))
    return Chapter(path, text, nb, cells)


def open_cache(build_dir):
    """The build's jupyter-cache (engine_cache.open_cache)."""
    import engine_cache

    return engine_cache.open_cache(build_dir)


def cached_notebook(path, build_dir, root=ROOT):
    """The executed notebook the build's cache holds for this chapter as it is now, or None.

    Read outputs from here, not from `<build>/jupyter_execute/<doc>.ipynb`: on a
    cache hit myst-nb 1.4.0 writes that file from the unexecuted input (its
    `merge_match_into_notebook` returns a new notebook and sphinx_.py writes the
    old one), so it has no outputs and no language_info.
    """
    import engine_cache

    return engine_cache.cached(read_chapter(path, root), build_dir, root)[0]


# -- normalizing and comparing ----------------------------------------------------

_SPACE = re.compile(r"\s+")
_AFTER_OPEN = re.compile(r"([\[(]) ")
_BEFORE_CLOSE = re.compile(r" ([\])])")


def normalize(text: str) -> str:
    """Strip, collapse whitespace runs to one space, drop spaces just inside brackets.

    `[5.5 1.  4. ]` -> `[5.5 1. 4.]`; `[ 1. -2.]` -> `[1. -2.]`. Digits are never touched.
    """
    text = _SPACE.sub(" ", text.strip())
    return _BEFORE_CLOSE.sub(r"\1", _AFTER_OPEN.sub(r"\1", text))


# A number: optional sign, digits with an optional point (`1.`, `.5`, `2.50`), an
# optional exponent; or nan / inf. Not when glued to a name (`x1`, `float64`).
NUMBER = re.compile(
    r"(?<![\w.])"
    r"(?P<num>[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf(?:inity)?|nan))"
    r"(?![\w])",
    re.IGNORECASE,
)


def tokenize(text: str):
    """Split normalized text into (texts, numbers): len(texts) == len(numbers) + 1."""
    text = normalize(text)
    texts, numbers, start = [], [], 0
    for match in NUMBER.finditer(text):
        texts.append(text[start : match.start()])
        numbers.append(match.group("num"))
        start = match.end()
    texts.append(text[start:])
    return texts, numbers


NOISY = "~"  # in an expectation, `~3e-10`: this number is noisy, compare it within the tolerance


def tokenize_expected(text: str):
    """Like tokenize, for an expectation: (texts, numbers, noisy flags), `~` marks removed."""
    texts, numbers = tokenize(text)
    noisy = [before.endswith(NOISY) for before in texts[:-1]]
    texts = [t[:-1] if t.endswith(NOISY) and i < len(noisy) and noisy[i] else t
             for i, t in enumerate(texts)]
    return texts, numbers, noisy


def carry_marks(old_expected: str, new_text: str) -> str:
    """`new_text` with a `~` before each number whose counterpart in `old_expected` had one.

    Update mode keeps the author's marks of noisy numbers when only values move;
    if the count of numbers changed, the marks cannot be matched and are dropped.
    """
    _, old_numbers, noisy = tokenize_expected(old_expected)
    matches = list(NUMBER.finditer(new_text))
    if not any(noisy) or len(matches) != len(old_numbers):
        return new_text
    for match, mark in reversed(list(zip(matches, noisy))):
        if mark:
            new_text = new_text[: match.start()] + NOISY + new_text[match.start():]
    return new_text


class ToleranceError(ValueError):
    pass


TOLERANCE_HELP = "write `tolerance: rel R`, `tolerance: abs A` or `tolerance: magnitude`"


@dataclasses.dataclass(frozen=True)
class Tolerance:
    kind: str  # "rel", "abs" or "magnitude"
    amount: float = 0.0

    def __str__(self):
        return self.kind if self.kind == "magnitude" else f"{self.kind} {self.amount:g}"

    def close(self, expected: float, got: float) -> bool:
        if math.isnan(expected) or math.isnan(got):
            return math.isnan(expected) and math.isnan(got)
        if math.isinf(expected) or math.isinf(got):
            return expected == got
        if self.kind == "abs":
            return abs(got - expected) <= self.amount
        if self.kind == "rel":
            return abs(got - expected) <= self.amount * abs(expected)
        # magnitude: same sign, within a factor of 10; 0 only matches 0
        if expected == 0 or got == 0:
            return expected == got
        return (expected > 0) == (got > 0) and 0.1 <= got / expected <= 10


def parse_tolerance(spec) -> Tolerance | None:
    """`rel 0.5`, `abs 1e-9`, `magnitude` -> Tolerance; None -> None; else ToleranceError."""
    if spec is None:
        return None
    words = str(spec).split()
    if words == ["magnitude"]:
        return Tolerance("magnitude")
    if len(words) == 2 and words[0] in ("rel", "abs"):
        try:
            amount = float(words[1])
        except ValueError:
            amount = float("nan")
        if amount >= 0:
            return Tolerance(words[0], amount)
    raise ToleranceError(f"unknown tolerance {spec!r}: {TOLERANCE_HELP}")


def compare(expected: str, got: str, tolerance=None) -> str | None:
    """None when `got` matches `expected`; otherwise what differs, in one line.

    With a tolerance, only the numbers marked `~` in `expected` are compared within
    it; the others must be printed exactly as written.
    """
    if isinstance(tolerance, (str, type(None))):
        tolerance = parse_tolerance(tolerance)
    exp_texts, exp_numbers, noisy = tokenize_expected(expected)
    if tolerance is None:
        if any(noisy):
            raise ToleranceError(f"`{NOISY}` marks a noisy number but the cell declares no "
                                 f"tolerance: {TOLERANCE_HELP}")
        if normalize(expected) == normalize(got):
            return None
        return "printed text differs from expect:"
    if not any(noisy):
        raise ToleranceError(f"tolerance {tolerance} is declared but no number of expect: "
                             f"is marked noisy: write `{NOISY}` before each noisy number")
    got_texts, got_numbers = tokenize(got)
    if len(exp_numbers) != len(got_numbers):
        return (
            f"printed {len(got_numbers)} numbers, expect: has {len(exp_numbers)} "
            f"(tolerance {tolerance})"
        )
    for a, b in zip(exp_texts, got_texts):
        if a != b:
            return f"text between numbers differs: expected {a!r}, got {b!r}"
    for position, (a, b, mark) in enumerate(zip(exp_numbers, got_numbers, noisy), 1):
        if mark and not tolerance.close(float(a), float(b)):
            return f"number {position} is {b}, expected ~{a} within tolerance {tolerance}"
        if not mark and a != b:
            return f"number {position} is {b}, expected exactly {a} (not marked {NOISY})"
    return None


def unified_diff(expected: str, got: str) -> str:
    lines = difflib.unified_diff(
        expected.splitlines(), got.splitlines(), "expected", "got", lineterm="", n=2
    )
    return "\n".join(lines)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


# -- reading outputs --------------------------------------------------------------


@dataclasses.dataclass
class CellOutput:
    text: str  # stdout and the text of every rich output (shown_text), in order
    stderr: str
    error: str | None  # traceback, ANSI stripped
    has_text: bool
    error_line: str | None = None  # `ValueError: message`

    def with_error_as_text(self) -> "CellOutput":
        """A `raises-exception` cell: its error is printed text, not a failure."""
        if self.error is None:
            return self
        text = self.text + self.error_line + "\n"
        return dataclasses.replace(self, text=text, error=None, has_text=True)


class _HTMLText(html.parser.HTMLParser):
    """The text a browser shows for an HTML output: no tags, no scripts or styles."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self._hidden = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._hidden += 1
        elif tag in ("br", "p", "div", "tr", "li", "h1", "h2", "h3", "h4", "table"):
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._hidden = max(0, self._hidden - 1)
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_data(self, data):
        if not self._hidden:
            self.parts.append(data)


def html_text(markup: str) -> str:
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def shown_text(data: dict, kind: str = "display_data") -> str | None:
    """The text a rich output shows, or None for a picture (a figure, a player).

    A bundle with an image is a figure: its text/plain is a placeholder
    (`<Figure size ...>`) and its text/html, where there is one, a player. Otherwise
    the text is what the page renders: text/markdown first (a `display(Markdown(...))`
    table), then the text of text/html, then text/plain. An `execute_result` keeps
    its text/plain even beside an image (`<engine.figures.Interactive player, ...>`),
    as it always has.
    """
    if any(key.startswith("image/") for key in data):
        return data.get("text/plain") if kind == "execute_result" else None
    if data.get("text/markdown") is not None:
        return data["text/markdown"]
    if data.get("text/html") is not None:
        return html_text(data["text/html"])
    return data.get("text/plain")


def cell_output(outputs, raises=False) -> CellOutput:
    """Collect a cell's outputs: what it printed and the text of every result and display
    (`shown_text`), in order. With `raises` (the cell is tagged `raises-exception`,
    which nbclient and so the build accept), an error is part of the printed text as
    its last traceback line, `ValueError: message`, instead of a failure."""
    text, stderr, error, error_line, has_text = [], [], None, None, False
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            if output.get("name") == "stderr":
                stderr.append(output.get("text", ""))
            else:
                text.append(output.get("text", ""))
                has_text = True
        elif kind in ("execute_result", "display_data"):
            shown = shown_text(output.get("data", {}), kind)
            if shown is not None:
                text.append(shown if shown.endswith("\n") else shown + "\n")
                has_text = True
        elif kind == "error":
            error_line = strip_ansi(f"{output.get('ename')}: {output.get('evalue')}")
            error = strip_ansi("\n".join(output.get("traceback", []))) or error_line
    result = CellOutput("".join(text), "".join(stderr), error, has_text, error_line)
    return result.with_error_as_text() if raises else result


@dataclasses.dataclass
class Failure:
    line: int
    what: str  # one line
    detail: str = ""  # diff or traceback, several lines
    kind: str = "other"  # "differs", "missing", "unexpected" (rewritable) or "other"


def check_cell(cell: CodeCell, output: CellOutput) -> list[Failure]:
    """Every way this cell's output breaks the book's rules."""
    failures = []
    if cell.raises:
        output = output.with_error_as_text()
    if output.stderr:
        first = (output.stderr.strip().splitlines() or [repr(output.stderr)])[0]
        failures.append(
            Failure(cell.line, "cell wrote to stderr: " + first, indent(output.stderr.rstrip()))
        )
    if output.error is not None:
        last = output.error_line or output.error.strip().splitlines()[-1]
        if last.startswith("CellTimeoutError: "):  # engine_cache.execute stopped it there
            failures.append(Failure(cell.line, last[len("CellTimeoutError: "):]))
            return failures
        failures.append(Failure(cell.line, "cell raised " + last, indent(output.error.rstrip())))
        return failures
    expect = cell.expect
    if expect is not None and not isinstance(expect, str):
        # `expect: 1.` is the YAML float 1.0: comparing its str() would be wrong
        failures.append(Failure(
            cell.line,
            f"expect: reads as YAML {type(expect).__name__} {expect!r}, not text: "
            "write it as a block (`expect: |` and the text below) or quote it",
            indent(unified_diff(str(expect), output.text)), "differs",
        ))
        return failures
    try:
        tolerance = parse_tolerance(cell.tolerance)
    except ToleranceError as error:
        failures.append(Failure(cell.line, str(error)))
        return failures
    if tolerance is not None and not has_marks(expect or "") and _glue_marked(cell):
        tolerance = None  # the tolerance is for the marked numbers of its `glue:` texts
    if expect is None:
        if tolerance is not None and not _glue_marked(cell):
            failures.append(Failure(cell.line, f"tolerance {tolerance} is declared but nothing "
                                    f"is marked noisy: write `{NOISY}` before each noisy number"))
        if output.has_text and output.text.strip():
            failures.append(
                Failure(cell.line, "cell prints text but has no expect: option",
                        indent(unified_diff("", output.text)), "missing")
            )
        return failures
    if not output.text.strip():
        failures.append(Failure(cell.line, "expect: is set but the cell printed nothing",
                                indent(unified_diff(expect, "")), "unexpected"))
        return failures
    try:
        what = compare(expect, output.text, tolerance)
    except ToleranceError as error:  # `~` marks and the tolerance option disagree
        failures.append(Failure(cell.line, str(error)))
        return failures
    if what is not None:
        failures.append(Failure(cell.line, what, indent(unified_diff(expect, output.text)),
                                "differs"))
    return failures


def indent(text: str, prefix="    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


# -- rewriting expect: blocks -------------------------------------------------------


def canonical_expectation(text: str) -> str:
    """The text update mode stores: lines right-stripped, no blank lines at the ends."""
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def expect_block_lines(text: str, indentation: str = "") -> list[str]:
    """`expect: |` plus the text indented two spaces, as YAML block-scalar lines."""
    lines = canonical_expectation(text).splitlines()
    header = "expect: |2" if lines and lines[0].startswith(" ") else "expect: |"
    body = [("  " + line) if line else "" for line in lines]
    return [indentation + header] + [(indentation + line) if line else "" for line in body]


def _options_block(lines: list[str], fence: int):
    """(start, end) 0-based indices of the `---` lines of a cell's YAML block, or None.

    Mirrors myst-parser: the block opens when the first content line starts with
    `---` and closes at the next line starting with three or more dashes.
    """
    first = fence + 1
    if first < len(lines) and lines[first].startswith("---"):
        for end in range(first + 1, len(lines)):
            if re.match(r"^-{3,}", lines[end]):
                return first, end
    return None


def _colon_options(lines: list[str], fence: int) -> int:
    """How many `:key: value` option lines follow the fence."""
    count = 0
    while fence + 1 + count < len(lines) and lines[fence + 1 + count].lstrip().startswith(":"):
        count += 1
    return count


def _block_indent(lines: list[str], start: int, end: int) -> str:
    """The indentation myst-parser dedents the YAML block by."""
    body = [line for line in lines[start + 1 : end] if line.strip()]
    if not body:
        return ""
    width = min(len(line) - len(line.lstrip(" ")) for line in body)
    return " " * width


def _expect_key_span(lines: list[str], start: int, end: int):
    """(first, stop) of the `expect:` key and its value lines inside a YAML block."""
    pad = _block_indent(lines, start, end)
    for i in range(start + 1, end):
        if re.match(rf"^{pad}expect\s*:", lines[i]):
            stop = i + 1
            while stop < end and (
                lines[stop].startswith((pad + " ", pad + "\t")) or not lines[stop].strip()
            ):
                stop += 1
            while stop > i + 1 and not lines[stop - 1].strip():
                stop -= 1  # trailing blank lines belong to the block around, not the value
            return i, stop
    return None


def rewrite_expectations(text: str, fences: dict[int, str | None]) -> str:
    """Set the `expect:` of the cells whose fences are at these 1-based lines.

    `fences` maps a fence line to the new expected text, or to None to delete the
    option. Only the lines of those `expect:` blocks change (a `---` block is
    added when the cell has no options); every other byte stays as it was.
    """
    newline = "\r\n" if "\r\n" in text else "\n"
    ends_with_newline = text.endswith(("\n", "\r"))
    lines = text.splitlines()
    # rewrite from the bottom up so earlier line numbers stay valid
    for fence_line in sorted(fences, reverse=True):
        new = fences[fence_line]
        fence = fence_line - 1
        block = _options_block(lines, fence)
        if block is not None:
            start, end = block
            span = _expect_key_span(lines, start, end)
            pad = _block_indent(lines, start, end)
            replacement = expect_block_lines(new, pad) if new is not None else []
            if span is not None:
                lines[span[0] : span[1]] = replacement
            else:
                lines[end:end] = replacement
            start, end = _options_block(lines, fence)
            if end == start + 1:  # the block is now empty: remove it
                del lines[start : end + 1]
        elif new is None:
            continue
        elif _colon_options(lines, fence):
            raise ValueError(
                f"line {fence_line}: this cell's options are `:key: value` lines, which "
                "cannot hold a multi-line expect:; turn them into a `---` YAML block first"
            )
        else:
            lines[fence + 1 : fence + 1] = ["---"] + expect_block_lines(new) + ["---"]
    result = newline.join(lines)
    return result + newline if ends_with_newline else result


def diff_text(old: str, new: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(old.splitlines(True), new.splitlines(True), name, name)
    )


def updated_text(chapter: Chapter, updates: dict[int, str | None], root=ROOT) -> str:
    """The chapter's text with these cells' (by fence line) expect: rewritten.

    Reads the result back with myst-nb and checks that every rewritten cell now
    carries exactly the canonical new text and that nothing else in the notebook
    moved (sources, other options, cell count).
    """
    new_text = rewrite_expectations(chapter.text, updates)
    again = read_chapter(chapter.path, root, text=new_text)
    if len(again.cells) != len(chapter.cells):
        raise ValueError(f"{chapter.path}: rewriting expect: changed the number of code cells")
    for old, new in zip(chapter.cells, again.cells):
        want = dict(old.options)
        if old.line in updates:
            want.pop("expect", None)
            if updates[old.line] is not None:
                want["expect"] = canonical_expectation(updates[old.line])
        if new.source != old.source or new.options != want:
            raise ValueError(
                f"{chapter.path}:{old.line}: rewritten expect: does not read back as written "
                f"(wanted {want!r}, myst-nb read {new.options!r})"
            )
    return new_text


# -- glued values: numbers in the prose ----------------------------------------------
#
# `glue("name", value, display=False)` in a cell and {glue:text}`name:.3f` in the prose
# put a computed number into a sentence. It is a number a reader sees, so it is checked
# like a printed one: the cell that glues it says, in its options, the text the page
# must show,
#
#     glue:
#       x1_bar: "5.5"
#
# compared with the verifier's rules (`~` marks and the cell's `tolerance:` as in
# `expect:`). A value the page shows that no cell declares fails, and so does a
# declaration the page does not show.

GLUE_PREFIX = "application/papermill.record/"
GLUE_ROLES = {"glue": "any", "glue:": "any", "glue:any": "any", "glue:text": "text",
              "glue:md": "md"}
# directives whose body is not MyST prose, so holds no glue roles
NOT_PROSE = {"code-cell", "code", "code-block", "sourcecode", "literalinclude", "math", "raw",
             "bibliography", "execution-report", "nb-exec-table", "csv-table"}


def has_marks(text: str) -> bool:
    return any(tokenize_expected(text)[2])


def _glue_marked(cell: CodeCell) -> bool:
    declared = cell.options.get("glue")
    return isinstance(declared, dict) and any(
        isinstance(text, str) and has_marks(text) for text in declared.values())


def glued_values(cells) -> dict:
    """{name: mimebundle} of every `glue(...)` output left in these notebook cells."""
    found = {}
    for cell in cells:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                found[name] = {k[len(GLUE_PREFIX):] if k.startswith(GLUE_PREFIX) else k: v
                               for k, v in output.get("data", {}).items()}
    return found


@dataclasses.dataclass
class GlueUse:
    name: str
    kind: str  # "text", "any" or "md"
    spec: str  # the format after the last colon of {glue:text}`name:spec`
    line: int  # 1-based line of the chapter


@functools.lru_cache(maxsize=None)
def _markdown_parser(root: Path):
    from markdown_it.renderer import RendererHTML
    from myst_parser.parsers.mdit import create_md_parser

    return create_md_parser(md_parser_config(root), RendererHTML)


def _directive_body(content: str):
    """(MyST text of a directive's body, how many option lines were skipped)."""
    lines = content.split("\n")
    if lines and lines[0].startswith("---"):
        end = next((i for i in range(1, len(lines)) if re.match(r"^-{3,}", lines[i])), None)
        if end is not None:
            return "\n".join(lines[end + 1:]), end + 1
    count = 0
    while count < len(lines) and re.match(r"^\s*:[\w-]+:", lines[count]):
        count += 1
    return "\n".join(lines[count:]), count


def glue_uses(text: str, root=ROOT, first_line: int = 1) -> list[GlueUse]:
    """Every glue role in the prose (directive bodies too), with its line, read by
    myst-parser's own markdown-it tokens."""
    uses = []
    for token in _markdown_parser(Path(root).resolve()).parse(text):
        if token.type == "inline" and token.map:
            line = first_line + token.map[0]
            for child in token.children or []:
                if child.type in ("softbreak", "hardbreak"):
                    line += 1
                elif child.type == "myst_role" and child.meta.get("name") in GLUE_ROLES:
                    kind = GLUE_ROLES[child.meta["name"]]
                    name, spec = child.content, ""
                    if kind in ("text", "md") and ":" in child.content:
                        name, spec = child.content.rsplit(":", 1)
                    uses.append(GlueUse(name, kind, spec, line))
                line += child.content.count("\n") if child.type == "text" else 0
        elif token.type in ("fence", "colon_fence") and token.map:
            directive = re.match(r"\{([^}]+)\}", token.info.strip())
            if directive and directive.group(1) not in NOT_PROSE:
                body, skipped = _directive_body(token.content)
                uses += glue_uses(body, root, first_line + token.map[0] + 1 + skipped)
    return uses


def glue_text(use: GlueUse, bundle: dict) -> str | None:
    """The text the page shows for this role, as myst-nb renders it (None: no text)."""
    from myst_nb.core.variables import format_plain_text

    plain = bundle.get("text/plain")
    plain = "".join(plain) if isinstance(plain, list) else plain
    if use.kind == "md" and "text/markdown" in bundle:
        return bundle["text/markdown"]
    if plain is None:
        return None
    return format_plain_text(plain, use.spec or "s") if use.kind == "text" else plain


def check_glue(text: str, cells: list[CodeCell], glued: dict, root=ROOT) -> list[Failure]:
    """Every way the glued values the chapter's prose shows break the book's rules."""
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
            tolerance = parse_tolerance(cell.tolerance) if has_marks(expected) else None
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
        elif name not in glued:
            pass  # reported at the role above
    return failures
