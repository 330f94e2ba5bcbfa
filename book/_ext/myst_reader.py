"""The MyST reader: a chapter's fenced blocks, code cells and their options, and roles, on
myst-parser's own markdown-it tokens under the book's MyST settings, as myst-nb reads them."""

import collections
import dataclasses
import functools
import re
import textwrap
from pathlib import Path

import yaml
from docutils.parsers.rst.directives import unchanged
from myst_parser.parsers.directives import parse_directive_text

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
    """Any argument, and any option, as its text."""
    option_spec = collections.defaultdict(lambda: unchanged, any=unchanged)  # not empty: read
    required_arguments, optional_arguments, final_argument_whitespace = 0, 1, True
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

    def parse(self, directive_class):
        """(options, body lines) as MyST parses them for this directive class."""
        result = parse_directive_text(directive_class, self.arg, self.content)
        return dict(result.options), list(result.body)


def _fence(token, first_line: int, depth: int) -> Fence:
    info = token.info.strip()
    directive = re.match(r"^\{([^}]+)\}\s*(.*)$", info)
    name, arg = directive.groups() if directive else (None, info)
    fence = Fence(first_line + token.map[0], first_line + token.map[1] - 1, name, arg,
                  token.content, depth, token.level)
    if fence.name is not None:
        fence.options, fence.body = fence.parse(_AnyDirective)
    return fence


def _tokens(text: str, root, first_line: int = 1, depth: int = 0):
    """(markdown-it token, its text's first line, its Fence or None), prose directives too."""
    for token in markdown_parser(Path(root).resolve()).parse(text):
        is_fence = token.type in ("fence", "colon_fence") and token.map
        fence = _fence(token, first_line, depth) if is_fence else None
        yield token, first_line, fence
        if fence is not None and fence.name is not None and fence.name not in NOT_PROSE:
            # the body is the content's last lines (after the options)
            body_line = fence.line + 1 + len(fence.content.splitlines()) - len(fence.body)
            yield from _tokens("\n".join(fence.body), root, body_line, depth + 1)


def fences(text: str, root=ROOT):
    """Every fenced block of `text`, in order, nested ones (in prose directives) too."""
    return (fence for _, _, fence in _tokens(text, root) if fence is not None)


def code_cell_fences(text: str, root=ROOT) -> list[Fence]:
    """The ```{code-cell}``` fences myst-nb makes cells of (not inside other blocks)."""
    return [f for f in fences(text, root)
            if f.name == "code-cell" and f.depth == 0 and f.level == 0]


def options_block(lines: list[str], fence: Fence):
    """Where the options of this code cell are in `lines`, by myst-parser's rules, as
    (kind, first, stop), 0-based: "yaml" for the lines between `---` and the closing `---`,
    "unclosed" when none closes it (myst then reads the whole cell as options), "colon" for
    `:key: value` lines; None when the cell has no options."""
    first, end = fence.line, fence.end - 1  # the line after the fence, the closing fence
    if first < end and lines[first].startswith("---"):
        close = next((i for i in range(first + 1, end) if re.match(r"^-{3,}", lines[i])), None)
        return ("yaml", first + 1, close) if close is not None else ("unclosed", first + 1, end)
    stop = first
    while stop < end and lines[stop].lstrip().startswith(":"):
        stop += 1
    return ("colon", first, stop) if stop > first else None


def options_problem(lines: list[str], kind: str, first: int, stop: int):
    """(line, what) when the options of this options_block do not read as a YAML mapping,
    else None (myst-nb says only "Code cell 2 at line 17 could not be read")."""
    if kind == "unclosed":  # `first - 1` is the `---` line: 1-based, that is `first`
        return first, ("the cell's options block opened by `---` here is never closed: end "
                       "it with a `---` line before the code")
    if kind == "yaml":
        body = textwrap.dedent("\n".join(lines[first:stop]))
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


def same_line_ends(text: str, lines: list[str]) -> str:
    """`lines` joined as `text` joins its own: its newline, a final one if it has one."""
    newline = "\r\n" if "\r\n" in text else "\n"
    return newline.join(lines) + (newline if text.endswith(("\n", "\r")) else "")


def comment_out_bad_options(text: str, root=ROOT):
    """(text, [(line, what)]): `text` with the options of every code cell that does not
    read made YAML comments, every line where it was, and what was wrong with each. The
    build reads those cells with no options, so one bad cell hides no other problem."""
    lines, problems = text.splitlines(), []
    for fence in code_cell_fences(text, root):
        block = options_block(lines, fence)
        problem = options_problem(lines, *block) if block is not None else None
        if problem is None:
            continue
        problems.append(problem)
        kind, first, stop = block
        if kind == "colon":
            lines[first:stop] = [":# " + line.lstrip()[1:] for line in lines[first:stop]]
        else:  # a `---` block, closed or not (then the whole cell)
            lines[first:stop] = ["# " + line for line in lines[first:stop]]
    return (same_line_ends(text, lines) if problems else text), problems


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
    source_map = nb.metadata.get("source_map") or []
    return [CodeCell(i, source_map[i] if i < len(source_map) else 0, c.source, dict(c.metadata))
            for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def read_chapter(path, root=ROOT, text=None) -> Chapter:
    """The chapter at `path` as myst-nb reads it; options that do not read (as the build
    finds them) raise ChapterError naming their line."""
    from myst_nb.core.read import read_myst_markdown_notebook

    path = Path(path).resolve()
    text = path.read_text(encoding="utf8") if text is None else text
    problems = comment_out_bad_options(text, root)[1]
    if problems:
        raise ChapterError(path, *problems[0], root)
    nb = read_myst_markdown_notebook(text, config=md_parser_config(root), add_source_map=True,
                                     path=str(path))
    return Chapter(path, text, nb, code_cells(nb))


@dataclasses.dataclass
class Role:
    name: str  # `glue:text`, `doc`, `prf:ref`, ...
    content: str  # between the backticks
    line: int  # 1-based line of the chapter


def roles(text: str, root=ROOT) -> list[Role]:
    """Every role in the prose (prose directives too), with its line, in order."""
    found = []
    for token, first, _ in _tokens(text, root):
        if token.type != "inline" or not token.map:
            continue
        line = first + token.map[0]
        for child in token.children or []:
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


def glue_uses(text: str, root=ROOT) -> list[GlueUse]:
    return [glue_use(role) for role in roles(text, root) if role.name in GLUE_ROLES]


def prose_words(text: str, root=ROOT) -> int:
    """Words a reader reads: the prose (prose directives too), inline code and the TeX of
    the math, not code cells, listings or glued values; a word has a letter or a digit."""
    words = re.compile(r"\S*\w\S*").findall
    count = 0
    for token, _, fence in _tokens(text, root):
        if fence is not None and fence.name == "math":
            count += len(words(" ".join(fence.body)))
        if token.type in ("math_block", "amsmath"):
            count += len(words(token.content))
        for child in token.children or [] if token.type == "inline" else []:
            if not (child.type == "myst_role" and child.meta.get("name") in GLUE_ROLES):
                count += len(words(child.content))
    return count
