"""MyST to plain Markdown: a notebook that reads cleanly in JupyterLab and Colab.

The chapters' Markdown cells are MyST: directives (theorems, exercises, dropdowns),
roles ({numref}, {prf:ref}, {doc}, {cite}) and `(label)=` targets, which plain Jupyter
shows as raw text. The download renders them to Markdown and HTML that plain Jupyter
draws: titled blocks as block quotes, solutions and dropdowns as <details>, every
reference as the text the page shows (notebook_refs.Resolver), glued values as the
text the page shows and glued figures as image attachments, and a player as its still
frame with a note. Fenced blocks are found by cells.fences (myst-parser's tokens).
"""

import base64
import re

from cells import NOT_PROSE, GlueUse, fences
from checks import glue_text, is_player

SOLUTION_START = "<!-- engine-solution-start {label} -->"
SOLUTION_END = "<!-- engine-solution-end -->"
_SOLUTION_START = re.compile(r"<!-- engine-solution-start (?P<label>\S*) -->")
_ROLE = re.compile(r"(?<!`)\{(?P<role>[a-z][\w:-]*)\}`(?P<body>[^`]*)`")
_EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
_TARGET_LINE = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
PROOF_KINDS = {"theorem", "definition", "lemma", "corollary", "proposition", "remark",
               "example", "axiom", "conjecture", "criterion", "algorithm", "property",
               "observation", "assumption", "notation"}
ADMONITIONS = {"note", "tip", "warning", "important", "hint", "caution", "attention",
               "danger", "error", "seealso"}


# -- glue -------------------------------------------------------------------------------

def glue_figure_markdown(fence, glued, attachments, resolver=None):
    """Markdown for a glued figure: the PNG as a cell attachment, caption below, with
    the figure's number when a resolver knows it. A player shows its still frame, and
    says so: a notebook viewer does not run the player's script."""
    from myst_nb.ext.glue.directives import PasteFigureDirective

    name = fence.arg
    data = glued.get(name, {})
    options, caption_lines = fence.parse(PasteFigureDirective)
    caption = "\n".join(caption_lines).strip()
    label = options.get("name")
    number = resolver.number(resolver.docname, "figure", label) if resolver and label else None
    if caption:
        caption = f"*{caption}*"
    if number:
        caption = f"**Figure {number}.** {caption}"
    if is_player(data):
        caption += "\n\n" + PLAYER_NOTE
    anchor = f'<a id="{label}"></a>\n\n' if label else ""
    alt = str(options.get("alt", name)).replace("]", "")
    png = data.get("image/png")
    if png:
        key = f"{name}.png"
        attachments[key] = {"image/png": png if isinstance(png, str) else base64.b64encode(png).decode()}
        out = f"![{alt}](attachment:{key})"
    elif "text/plain" in data:
        out = f"`{data['text/plain']}`"
    else:
        out = f"*(figure `{name}`)*"
    return anchor + out + (f"\n\n{caption}" if caption else "")


_GLUE_ROLE = re.compile(r"\{glue(?::(?P<kind>text|any|md))?\}`(?P<body>[^`]+)`")


def paste_glue_roles(text, glued, root):
    """`{glue:text}`key:.3f`` -> the glued value as the page shows it (plain Markdown)."""
    def paste(match):
        kind = {"text": "text", "md": "md"}.get(match["kind"], "any")
        name, spec = (match["body"].rsplit(":", 1) if kind == "text" and ":" in match["body"]
                      else (match["body"], ""))
        name = name.split("::")[-1]
        try:
            shown = glue_text(GlueUse(name, kind, spec, 0), glued.get(name, {}))
        except ValueError:  # a format the value does not take: check_glue fails the build
            shown = glued.get(name, {}).get("text/plain")
        return match[0] if shown is None else shown

    # not inside code blocks (directive bodies, e.g. a dropdown's, are prose)
    code = {i for f in fences(text, root) if f.name is None or f.name in NOT_PROSE
            for i in range(f.line - 1, f.end)}
    return "\n".join(line if i in code else _GLUE_ROLE.sub(paste, line)
                     for i, line in enumerate(text.split("\n")))


def _quote(lines):
    return [("> " + line) if line.strip() else ">" for line in lines]


def _render_roles(line, resolver):
    def one(match):
        role, body = match["role"], match["body"]
        explicit = _EXPLICIT.match(body)
        text, target = (explicit["text"].strip(), explicit["target"].strip()) if explicit \
            else ("", body.strip())
        if role == "doc":
            return resolver.doc(text, target)
        if role == "numref":
            return resolver.numref(text, target)
        if role in ("prf:ref",):
            return resolver.prf_ref(text, target)
        if role == "ref":
            return resolver.ref(text, target)
        if role == "eq":
            return resolver.eq(text, target)
        if role.startswith("cite") or role.startswith("footcite"):
            return resolver.cite(body)
        if role == "math":
            return f"${body}$"
        if role in ("code", "literal", "file", "samp", "command", "kbd"):
            return f"`{body}`"
        if role in ("term", "abbr", "sub", "sup", "guilabel", "menuselection"):
            return text or target
        if role == "book-archive":
            return text or target
        return text or target  # an unknown role: its text, never the raw markup

    return _ROLE.sub(one, line)


def _render_directive(fence, resolver):
    """Plain Markdown lines for one directive block (its body rendered first)."""
    name, arg, rest = fence.name, fence.arg, list(fence.body)
    options = {key: str(value) for key, value in fence.options.items()}
    while rest and not rest[0].strip():
        rest = rest[1:]
    inner = plain_markdown("\n".join(rest), resolver).split("\n") if rest else []
    kind = name.split(":", 1)[1] if name.startswith("prf:") else name
    title = _render_roles(arg, resolver) if arg else ""
    label = options.get("label", "")
    anchor = [f'<a id="{label}"></a>'] if label else []
    if kind in PROOF_KINDS:
        number = resolver.number(resolver.docname, kind, label) if label else None
        head = kind.capitalize() + (f" {number}" if number else "") + (f" ({title})" if title else "")
        return anchor + _quote([f"**{head}.**", ""] + inner)
    if kind == "proof":
        if inner:
            inner[0] = "*Proof.* " + inner[0]
        else:
            inner = ["*Proof.*"]
        inner[-1] = inner[-1] + " ∎"
        return _quote(inner)
    if name == "exercise":
        number = resolver.number(resolver.docname, "exercise", label) if label else None
        head = "Exercise" + (f" {number}" if number else "") + (f" ({title})" if title else "")
        return anchor + _quote([f"**{head}**", ""] + inner)
    if name == "solution-start":
        return [SOLUTION_START.format(label=arg.strip())]
    if name == "solution-end":
        return [SOLUTION_END]
    if name == "solution":
        return _details(_solution_title(arg.strip(), resolver), inner)
    if name == "dropdown":
        return _details(title or "Details", inner)
    if name in ("admonition",) or name in ADMONITIONS:
        head = title or name.capitalize()
        return _quote([f"**{head}**", ""] + inner)
    if name in ("math",):
        return anchor + ["$$"] + rest + ["$$"]
    if name in ("code-block", "code", "sourcecode"):
        return ["```" + arg.strip()] + rest + ["```"]
    if name == "bibliography":
        return []  # a References cell closes the notebook
    if name == "only":
        return inner if "html" in arg or "not" in arg else []
    if name in ("figure", "image"):
        caption = " ".join(inner).strip()
        return [f"![{options.get('alt', '')}]({arg.strip()})"] + ([f"*{caption}*"] if caption else [])
    return [f"*(On the book's page this place shows `{name}` output.)*"]


PLAYER_NOTE = ("*(On the book's site this figure is a player that steps through its "
               "frames; a notebook viewer does not run its script, so this is one frame of "
               "it. Run the cell in Jupyter to play it.)*")


def players_as_stills(cell):
    """A player's output (matplotlib's JavaScript animation) becomes its still frame and
    a note: JupyterLab and Colab do not run the script of a notebook they did not run."""
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if not is_player(data):
            continue
        png = data.get("image/png")
        data.pop("text/html", None)
        if png:
            png = png if isinstance(png, str) else base64.b64encode(png).decode()
            data["text/markdown"] = f"![a still frame of the player](data:image/png;base64,{png.strip()})\n\n{PLAYER_NOTE}"


def _solution_title(label, resolver):
    number = resolver.exercise(label)
    return f"Solution to Exercise {number}" if number else "Solution"


def _details(summary, inner):
    return ["<details>", f"<summary><b>{summary}</b></summary>", ""] + inner + ["", "</details>"]


def plain_markdown(text, resolver):
    """One MyST Markdown text rendered to plain Markdown (see above)."""
    lines = text.split("\n")
    out, cursor = [], 0
    for fence in fences(text, resolver.root):
        start, end = fence.line - 1, fence.end - 1
        if fence.depth or start < cursor:
            continue
        out.extend(_render_text(lines[cursor:start], resolver))
        if fence.name is None:  # a plain code block: as it is
            out.extend(lines[start:end + 1])
        else:
            out.extend(_render_directive(fence, resolver))
        cursor = end + 1
    out.extend(_render_text(lines[cursor:], resolver))
    return "\n".join(out)


def _render_text(lines, resolver):
    out = []
    for line in lines:
        target = _TARGET_LINE.match(line)
        if target:
            out.append(f'<a id="{target["label"]}"></a>')
            continue
        out.append(_render_roles(line, resolver))
    return out


def fold_solutions(cells, resolver):
    """Gated solutions (solution-start ... solution-end) span cells: each stretch of
    Markdown inside one goes in a <details> block, its code cells are collapsed
    (JupyterLab's `source_hidden` / `outputs_hidden`) and tagged `solution`."""
    marker = re.compile(r"(<!-- engine-solution-start \S* -->|<!-- engine-solution-end -->)")
    inside, opened = None, False  # the open solution's title; whether its first part is out
    for cell in cells:
        if cell.cell_type == "code":
            if inside is not None:
                jupyter = cell.metadata.setdefault("jupyter", {})
                jupyter["source_hidden"] = True
                jupyter["outputs_hidden"] = True
                tags = cell.metadata.setdefault("tags", [])
                if "solution" not in tags:
                    tags.append("solution")
            continue
        if cell.cell_type != "markdown":
            continue
        parts = []
        for piece in marker.split(cell.source):
            start = _SOLUTION_START.fullmatch(piece)
            if start:
                inside, opened = _solution_title(start["label"], resolver), False
            elif piece == SOLUTION_END:
                if inside is not None and not opened:  # a solution of code cells only
                    parts.append("\n".join(_details(inside, ["(Its code is in the folded "
                                                              "cells above.)"])))
                inside = None
            elif piece.strip():
                if inside is None:
                    parts.append(piece.strip("\n"))
                else:
                    title = (inside + ", continued" if opened else
                             inside + " (its code cells, if any, follow folded)")
                    parts.append("\n".join(_details(title, piece.strip().split("\n"))))
                    opened = True
        if inside is not None and not opened:  # its code cells come next
            parts.append("\n".join(_details(inside, ["(Its code is in the folded cells "
                                                      "below.)"])))
            opened = True
        cell.source = "\n\n".join(parts)
    return [c for c in cells if c.cell_type != "markdown" or c.source.strip()]
