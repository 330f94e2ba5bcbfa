"""MyST to plain Markdown, for the notebook a reader downloads (plain Jupyter shows MyST
as raw text): titled blocks become quotes, solutions and dropdowns <details>, a reference
the text the page shows (resolved by the build's domains), a glued value its text, a
glued figure an attachment, a player its still frame with a note."""

import itertools
import re

import nbformat
from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.util import docname_join
from sphinx.util.nodes import split_explicit_title
from sphinx_proof.proof_type import PROOF_TYPES

from myst_reader import GLUE_ROLES, NOT_PROSE, fences, glue_use, roles
from output_rules import glue_text, is_player

SOLUTION_START = "<!-- engine-solution-start {label} -->"
SOLUTION_END = "<!-- engine-solution-end -->"
_SOLUTION_MARK = re.compile(r"<!-- engine-solution-(?:start (\S*)|end) -->")
_TARGET_LINE = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
PLAYER_NOTE = ("*(On the book's site this figure is a player that steps through its "
               "frames; a notebook viewer does not run its script, so this is one frame of "
               "it. Run the cell in Jupyter to play it.)*")


class References:
    """What the page `docname` shows for a role, from the build's environment."""

    def __init__(self, app, docname):
        self.app, self.env, self.docname, self.root = app, app.env, docname, app.srcdir
        self.cited = {}  # citation keys in order of first citation
        # sphinxcontrib-bibtex's domain, in a book with a .bib
        self.citations = {c.key: c for c in getattr(self.env.domains.get("cite"), "citations", [])
                          if c.bibliography_key.docname == docname}

    def number(self, kind, label):
        number = self.env.toc_fignumbers.get(self.docname, {}).get(kind, {}).get(label)
        return ".".join(map(str, number)) if number else None

    def role(self, name, body):
        if name.startswith(("cite", "footcite")):
            return self.cite(name, body)
        if name == "math":
            return f"${body}$"
        if name in ("code", "literal", "file", "samp", "command", "kbd"):
            return f"`{body}`"
        explicit, title, target = split_explicit_title(body.strip())
        domain, _, kind = name.rpartition(":")
        domain = "math" if kind == "eq" else domain or "std"
        target = target.strip()
        if kind == "ref" and target in getattr(self.env, "sphinx_exercise_registry", {}):
            kind = "numref"  # sphinx-exercise shows a {ref} to an exercise as its number
        node = pending_xref("", nodes.inline(title, title), refdoc=self.docname, refdomain=domain,
                            reftype=kind, reftarget=target, refexplicit=explicit)
        # a role's domain is registered, or the page would not have built
        found = self.env.domains[domain].resolve_xref(self.env, self.docname, self.app.builder,
                                                      kind, target, node, node[0])
        shown = found.astext() if found is not None else title
        docname = docname_join(self.docname, target)
        if kind == "doc" and "kernelspec" in self.env.metadata.get(docname, {}):
            return f"[{shown}]({docname.rpartition('/')[2]}.ipynb)"  # the notebook beside it
        return shown  # an unknown role: its text, never the raw markup

    def cite(self, role, keys):
        """The citation as the page shows it (sphinxcontrib-bibtex's style), each linked to
        its entry in the References cell."""
        self.cited.update(dict.fromkeys(k.strip() for k in keys.split(",") if k.strip()))
        shown = self.env.domains["cite"].resolve_xref(
            self.env, self.docname, self.app.builder, role.partition(":")[2] or "p", keys,
            pending_xref(""), None)
        ids = {c.citation_id: key for key, c in self.citations.items()}
        for link in list(shown.findall(nodes.reference)):
            at = link.get("refid") or link.get("refuri", "").rpartition("#")[2]
            if at in ids:
                link.replace_self(nodes.Text(f"[{link.astext()}](#ref-{ids[at]})"))
        return shown.astext()

    def references_cells(self):
        """The chapter's bibliography as its page shows it, a cell for the notebook's end
        (none when it cites nothing)."""
        lines = [f'- <a id="ref-{key}"></a>'
                 + self.citations[key].formatted_entry.text.render_as("text")
                 for key in self.cited if key in self.citations]
        return [nbformat.v4.new_markdown_cell("\n".join(["## References", ""] + lines), metadata={
            "tags": ["engine-references"]})] if lines else []


def show_roles(text, root, glued, refs=None):
    """`text` with every glue role as the text the page shows, and, with `refs`, every
    other role too."""
    lines = text.split("\n")
    for role in roles(text, root):
        if role.name in GLUE_ROLES:
            use = glue_use(role)
            bundle = glued.get(use.name.split("::")[-1], {})
            try:
                shown = glue_text(use, bundle)
            except ValueError:  # a format the value does not take: check_glue fails the build
                shown = bundle.get("text/plain")
        else:
            shown = refs.role(role.name, role.content) if refs else None
        markup = f"{{{role.name}}}`{role.content}`"
        # its line, or one after: a code span's line ends are not counted
        at = next((i for i in range(role.line - 1, len(lines)) if markup in lines[i]), None)
        if shown is not None and at is not None:
            lines[at] = lines[at].replace(markup, shown, 1)
    return "\n".join(lines)


def glue_figure_markdown(fence, glued, attachments, refs=None):
    """A glued figure: its PNG as a cell attachment, with its number and caption."""
    data, options = glued.get(fence.arg, {}), fence.options
    caption, label = "\n".join(fence.body).strip(), options.get("name")
    caption = f"*{caption}*" if caption else ""
    number = refs.number("figure", label) if refs and label else None
    caption = f"**Figure {number}.** {caption}" if number else caption
    caption += f"\n\n{PLAYER_NOTE}" if is_player(data) else ""
    if data.get("image/png"):
        attachments[f"{fence.arg}.png"] = {"image/png": data["image/png"]}
        shown = f"![{str(options.get('alt', fence.arg)).replace(']', '')}](attachment:{fence.arg}.png)"
    else:
        shown = f"`{data['text/plain']}`" if "text/plain" in data else f"*(figure `{fence.arg}`)*"
    anchor = f'<a id="{label}"></a>\n\n' if label else ""
    return anchor + shown + (f"\n\n{caption}" if caption else "")


def players_as_stills(cell):
    """A player's output (a script a viewer does not run) becomes its still frame and a note."""
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if is_player(data):
            data.pop("text/html", None)
            if data.get("image/png"):
                data["text/markdown"] = ("![a still frame of the player](data:image/png;base64,"
                                         f"{data['image/png'].strip()})\n\n{PLAYER_NOTE}")


def plain_markdown(text, refs):
    """MyST Markdown, its roles shown (`show_roles`), as plain Markdown."""
    lines, out, cursor = text.split("\n"), [], 0
    for fence in (f for f in fences(text, refs.root) if f.depth == 0):
        out += _anchors(lines[cursor:fence.line - 1])
        out += lines[fence.line - 1:fence.end] if fence.name is None else _directive(fence, refs)
        cursor = fence.end
    return "\n".join(out + _anchors(lines[cursor:]))


def _anchors(lines):
    """`lines`, each `(label)=` target line an HTML anchor."""
    return [_TARGET_LINE.sub(r'<a id="\g<label>"></a>', line) for line in lines]


def _quote(lines):
    return [("> " + line) if line.strip() else ">" for line in lines]


def _details(summary, inner):
    return ["<details>", f"<summary><b>{summary}</b></summary>", ""] + inner + ["", "</details>"]


def _solution_title(label, refs):
    number = refs.number("exercise", label)
    return f"Solution to Exercise {number}" if number else "Solution"


def _directive(fence, refs):
    """Plain Markdown lines for one directive (its body rendered first)."""
    name, arg = fence.name, fence.arg.strip()
    body = "\n".join(itertools.dropwhile(lambda line: not line.strip(), fence.body))
    inner = plain_markdown(body, refs).split("\n") if body and name not in NOT_PROSE else []
    kind = name.removeprefix("prf:")
    title = show_roles(arg, refs.root, {}, refs) if arg else ""
    if kind in PROOF_TYPES or name == "exercise":
        label = str(fence.options.get("label", ""))
        number = refs.number(kind, label) if label else None
        head = kind.capitalize()
        if number:
            head += f" {number}"
        if title:
            head += f" ({title})"
        head = f"**{head}**" if kind == "exercise" else f"**{head}.**"
        anchor = [f'<a id="{label}"></a>'] if label else []
        return anchor + _quote([head, ""] + inner)
    if kind == "proof":
        inner = [f"*Proof.* {inner[0] if inner else ''}".rstrip()] + inner[1:]
        return _quote(inner[:-1] + [inner[-1] + " ∎"])
    if name in ("solution-start", "solution-end"):
        return [SOLUTION_START.format(label=arg) if name == "solution-start" else SOLUTION_END]
    if name in ("solution", "dropdown"):
        return _details(_solution_title(arg, refs) if name == "solution" else title or "Details",
                        inner)
    if name == "math":
        label = fence.options.get("label")
        anchor = [f'<a id="{label}"></a>'] if "label" in fence.options else []
        return anchor + ["$$", *fence.body, "$$"]
    if name in ("code-block", "code", "sourcecode"):
        return ["```" + arg, *fence.body, "```"]
    if name == "bibliography":
        return []  # a References cell closes the notebook
    if inner or title:  # an admonition or another block of prose
        return _quote([f"**{title or name.capitalize()}**", ""] + inner)
    return [f"*(On the book's page this place shows `{name}` output.)*"]


def fold_solutions(cells, refs):
    """Gated solutions (solution-start ... solution-end) span cells: each stretch of
    Markdown inside one goes in a <details> block, and its code cells are folded
    (`jupyter.source_hidden`, `outputs_hidden`) and tagged `solution`."""
    inside, opened = None, False  # the open solution's title; whether its first part is out
    for cell in cells:
        if cell.cell_type == "code" and inside is not None:
            cell.metadata.setdefault("jupyter", {}).update(source_hidden=True, outputs_hidden=True)
            cell.metadata.setdefault("tags", []).append("solution")  # no page tags a cell so
        if cell.cell_type != "markdown":
            continue
        parts, pieces = [], _SOLUTION_MARK.split(cell.source)
        for at, piece in enumerate(pieces):  # text, then (start label or None, text) pairs
            if at % 2:  # a mark: a solution starts (its label) or ends (None)
                inside = None if piece is None else _solution_title(piece, refs)
                opened = False
            elif piece.strip() and inside is None:
                parts.append(piece.strip("\n"))
            elif piece.strip():
                title = inside + (", continued" if opened else
                                  " (its code cells, if any, follow folded)")
                parts.append("\n".join(_details(title, piece.strip().split("\n"))))
                opened = True
        if inside is not None and not opened:  # its code cells come next
            parts.append("\n".join(_details(inside, ["(Its code is in the folded cells below.)"])))
            opened = True
        cell.source = "\n\n".join(parts)
    return [c for c in cells if c.cell_type != "markdown" or c.source.strip()]
