"""The MyST reader: a chapter's fenced blocks (`fences`), code cells and their options
(`read_chapter`, `options_block`, `options_problem`: the line to fix when they do not read)
and roles (`roles`, `glue_uses`), on myst-parser's own markdown-it tokens under the book's
MyST settings, as myst-nb reads them."""

from __future__ import annotations

import collections
import dataclasses
import functools
import re
from pathlib import Path

from docutils.parsers.rst.directives import unchanged

from book_config import ROOT, display_path, md_parser_config

# directives whose body is not MyST prose: no blocks or roles inside them
NOT_PROSE = {"code-cell", "raw-cell", "code", "code-block", "sourcecode", "literalinclude",
             "math", "raw", "bibliography", "execution-report", "nb-exec-table", "csv-table"}


@functools.lru_cache(maxsize=None)
def markdown_parser(root: Path):
    from markdown_it.renderer import RendererHTML
    from myst_parser.parsers.mdit import create_md_parser

    return create_md_parser(md_parser_config(root), RendererHTML)


class _AnyDirective:
    """What myst-parser needs to read a directive's options: any option, as its text."""
    option_spec = collections.defaultdict(lambda: unchanged, any=unchanged)  # not empty: read
    required_arguments = optional_arguments = 0
    has_content = True


@dataclasses.dataclass
class Fence:
    line: int  # 1-based line of the opening fence
    end: int  # 1-based line of the closing fence (the last line when never closed)
    name: str | None  # the directive (`listing`, `code-cell`), None for plain code
    arg: str  # the rest of the opening line: a directive's argument, a code block's language
    content: str  # every line between the fences
    depth: int  # how many directives enclose it
    level: int  # how many Markdown blocks (a list, a quote) enclose it in its own text
    options: dict = dataclasses.field(default_factory=dict)  # as MyST reads them: text
    body: list = dataclasses.field(default_factory=list)  # the lines after the options
    body_line: int = 0  # 1-based line of body[0]

    def parse(self, directive_class):
        """(options, body lines) as MyST parses them for this directive class."""
        from myst_parser.parsers.directives import parse_directive_text

        result = parse_directive_text(directive_class, self.arg, self.content)
        return dict(result.options), list(result.body)


def fences(text: str, root=ROOT, first_line: int = 1, depth: int = 0):
    """Every fenced block of `text`, in order, nested ones (in prose directives) too."""
    from myst_parser.parsers.directives import parse_directive_text

    for token in markdown_parser(Path(root).resolve()).parse(text):
        if token.type not in ("fence", "colon_fence") or not token.map:
            continue
        info = token.info.strip()
        match = re.match(r"^\{([^}]+)\}\s*(.*)$", info)
        fence = Fence(first_line + token.map[0], first_line + token.map[1] - 1,
                      match.group(1) if match else None, match.group(2) if match else info,
                      token.content, depth, token.level)
        if fence.name is not None:
            result = parse_directive_text(_AnyDirective, "", token.content)
            fence.options, fence.body = dict(result.options), list(result.body)
            fence.body_line = fence.line + 1 + result.body_offset
        yield fence
        if fence.name is not None and fence.name not in NOT_PROSE:
            yield from fences("\n".join(fence.body), root, fence.body_line, depth + 1)


def code_cell_fences(text: str, root=ROOT) -> list[Fence]:
    """The ```{code-cell}``` fences myst-nb makes cells of (not inside other blocks)."""
    return [f for f in fences(text, root)
            if f.name == "code-cell" and f.depth == 0 and f.level == 0]


def options_block(lines: list[str], fence: int, end: int | None = None):
    """Where the options of the block fenced at 0-based `fence` are, by myst-parser's rules:
    ("yaml", first, close) for a `---` block (its two `---` lines; close None when never
    closed), ("colon", first, stop) for `:key: value` lines, or None."""
    end = len(lines) if end is None else end
    first = fence + 1
    if first < end and lines[first].startswith("---"):
        close = next((i for i in range(first + 1, end) if re.match(r"^-{3,}", lines[i])), None)
        return "yaml", first, close
    stop = first
    while stop < end and lines[stop].lstrip().startswith(":"):
        stop += 1
    return ("colon", first, stop) if stop > first else None


def options_problem(lines: list[str], fence: Fence):
    """(line, what) when this code cell's options do not read as a YAML mapping, else None:
    myst-nb says "Code cell 2 at line 17 could not be read", this the line, in YAML's words."""
    import textwrap

    import yaml

    block = options_block(lines, fence.line - 1, fence.end - 1)
    if block is None:
        return None
    kind, first, stop = block
    if kind == "yaml" and stop is None:
        return fence.line + 1, ("the cell's options block opened by `---` here is never "
                                "closed: end it with a `---` line before the code")
    if kind == "yaml":
        first, body = first + 1, textwrap.dedent("\n".join(lines[first + 1:stop]))
    else:
        body = "\n".join(line.lstrip()[1:] for line in lines[first:stop])
    try:
        value = yaml.safe_load(body)
    except yaml.YAMLError as error:
        at, context, context_at = (getattr(error, name, None) for name in (
            "problem_mark", "context", "context_mark"))
        where = first + 1 + (at.line if at else 0)
        what = ("the cell's options are not valid YAML: " + (getattr(error, "problem", None)
                or str(error).splitlines()[0]) + (f" (line {where})" if at else ""))
        if context and context_at:
            what += f", {context} that starts at line {first + 1 + context_at.line}"
            if "quoted" in context or "flow" in context:  # unclosed: the line that opens it
                where = first + 1 + context_at.line
        return where, what + " (`expect: |` then the text indented by two spaces is the safe form)"
    if value is not None and not isinstance(value, dict):
        return first + 1, (f"the cell's options read as a YAML {type(value).__name__}, not "
                           "as `key: value` lines")
    return None


def options_problems(text: str, root=ROOT):
    """[(line, what)] for every code cell whose options do not read, in order."""
    lines = text.splitlines()
    found = (options_problem(lines, fence) for fence in code_cell_fences(text, root))
    return [problem for problem in found if problem is not None]


def comment_out_options(text: str, line: int, root=ROOT) -> str:
    """`text` with the options of the cell whose problem is at `line` made YAML comments,
    every line number unchanged: the build reads the cell with no options after warning,
    so one bad cell does not hide the other problems `--keep-going` should list."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines()
    fence = max((f for f in code_cell_fences(text, root) if f.line <= line),
                key=lambda f: f.line)
    kind, first, stop = options_block(lines, fence.line - 1, fence.end - 1)
    if kind == "yaml":
        # no closing `---`: myst reads the whole cell as options, so it all becomes comments
        stop = fence.end - 1 if stop is None else stop
        lines[first + 1:stop] = ["# " + ln for ln in lines[first + 1:stop]]
    else:
        lines[first:stop] = [":# " + ln.lstrip()[1:] for ln in lines[first:stop]]
    result = newline.join(lines)
    return result + newline if text.endswith(("\n", "\r")) else result


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
    def raises(self):  # an error is expected, and checked as text
        return "raises-exception" in (self.options.get("tags") or [])


@dataclasses.dataclass
class Chapter:
    path: Path
    text: str
    nb: object  # nbformat.NotebookNode, exactly as myst-nb reads it
    cells: list  # CodeCell, in order


class ChapterError(ValueError):
    """A chapter that cannot be read at all; names the file and the line to fix."""

    def __init__(self, path, line: int, what: str, root=ROOT):
        self.path, self.line, self.what = Path(path), line, what
        super().__init__(f"{display_path(path, root)}:{line}: {what}")


def code_cells(nb) -> list[CodeCell]:
    """A CodeCell for every code cell of a notebook myst-nb read (its `source_map`)."""
    source_map = nb.metadata.get("source_map") or []
    return [CodeCell(i, source_map[i] if i < len(source_map) else 0, c.source, dict(c.metadata))
            for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def read_chapter(path, root=ROOT, text=None) -> Chapter:
    """The chapter at `path` as myst-nb reads it (source_map included); a cell whose
    options do not read raises ChapterError naming its line."""
    import yaml
    from myst_nb.core.read import MystMetadataParsingError, read_myst_markdown_notebook

    path = Path(path).resolve()
    text = path.read_text(encoding="utf8") if text is None else text
    try:
        nb = read_myst_markdown_notebook(text, config=md_parser_config(root),
                                         add_source_map=True, path=str(path))
    except (MystMetadataParsingError, yaml.YAMLError) as error:
        problems = options_problems(text, root)
        if not problems:
            raise
        raise ChapterError(path, *problems[0], root) from error
    return Chapter(path, text, nb, code_cells(nb))


@dataclasses.dataclass
class Role:
    name: str  # `glue:text`, `doc`, `prf:ref`, ...
    content: str  # between the backticks
    line: int  # 1-based line of the chapter


def prose_tokens(text: str, root=ROOT, first_line: int = 1):
    """(markdown-it token, the text's first line) for the prose, prose directives too."""
    for token in markdown_parser(Path(root).resolve()).parse(text):
        yield token, first_line
    for fence in fences(text, root, first_line):
        if fence.depth == 0 and fence.name is not None and fence.name not in NOT_PROSE:
            yield from prose_tokens("\n".join(fence.body), root, fence.body_line)


def roles(text: str, root=ROOT, first_line: int = 1) -> list[Role]:
    """Every role in the prose, with its line, in order."""
    found = []
    for token, first in prose_tokens(text, root, first_line):
        line = first + token.map[0] if token.map else 0
        for child in token.children or [] if token.type == "inline" and token.map else []:
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type == "myst_role":
                found.append(Role(child.meta["name"], child.content, line))
            else:  # text, and inline math that spans lines
                line += child.content.count("\n")
    return sorted(found, key=lambda role: role.line)


GLUE_ROLES = {"glue": "any", "glue:": "any", "glue:any": "any", "glue:text": "text", "glue:md": "md"}


@dataclasses.dataclass
class GlueUse:
    name: str
    kind: str  # "text", "any" or "md"
    spec: str  # the format after the last colon of {glue:text}`name:spec`
    line: int  # 1-based line of the chapter


def glue_use(role: Role) -> GlueUse:
    kind = GLUE_ROLES[role.name]
    name, spec = (role.content.rsplit(":", 1) if kind != "any" and ":" in role.content
                  else (role.content, ""))
    return GlueUse(name, kind, spec, role.line)


def glue_uses(text: str, root=ROOT, first_line: int = 1) -> list[GlueUse]:
    """Every glue role in the prose (directive bodies too), with its line."""
    return [glue_use(role) for role in roles(text, root, first_line) if role.name in GLUE_ROLES]


def comment_out_bad_options(text: str, root=ROOT):
    """(text, [(line, what)]): `text` with the options of every code cell that does not
    read commented out (`comment_out_options`), and what was wrong with each."""
    problems = options_problems(text, root)
    for line, _ in problems:
        text = comment_out_options(text, line, root)
    return text, problems


def prose_words(text: str, root=ROOT) -> int:
    """Words a reader reads: the prose (prose directives too), inline code and the TeX of
    the math, not code cells, listings or glued values; a word has a letter or a digit."""
    words = re.compile(r"\S*\w\S*").findall
    count = sum(len(words(" ".join(f.body))) for f in fences(text, root) if f.name == "math")
    for token, _ in prose_tokens(text, root):
        if token.type in ("math_block", "amsmath"):
            count += len(words(token.content))
        for child in token.children or [] if token.type == "inline" else []:
            if not (child.type == "myst_role" and child.meta.get("name") in GLUE_ROLES):
                count += len(words(child.content))
    return count
