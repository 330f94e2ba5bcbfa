"""Downloadable notebooks: every chapter as an executed .ipynb, and the whole book as a zip.

What the site offers a reader, for every chapter (a MyST Markdown notebook) with no
per-chapter configuration:

* "Download .ipynb" in the page's download menu. sphinx-book-theme only offers it
  when a launch service (Binder, Colab, ...) is configured; this extension sets the
  page context key the theme reads (`ipynb_source`) itself, and writes the notebook
  to `_sources/<docname>.ipynb`, where the theme's link points.
* The notebook is the EXECUTED one (the outputs the page shows and the verifier
  checks), made to work in plain Jupyter:
  - its first code cell carries the engine as of the chapter (its snapshot, see
    book/_ext/snapshots.py), zipped: it writes the files next to the notebook and
    imports `engine` from there, so the notebook runs alone with NumPy, SciPy and
    Matplotlib installed and nothing else;
  - each ```{listing} engine/x.py``` becomes a Markdown cell with the listing as the
    page shows it, tagged `engine-listing` (the code runs from the unpacked engine);
  - `from myst_nb import glue` gets a fallback, so the notebook runs without the
    book's Sphinx toolchain installed.
  - each glued figure (```{glue:figure} name```, ```{glue} name```) is shown in the
    Markdown cell as an image attachment of the glued output.
* `downloads/autodiff-book.zip` (linked from the intro with the `book-archive` role):
  every chapter notebook, the `engine` package with its pyproject.toml (`pip install .`)
  and a requirements.txt with the runtime subset of the book's pins.
"""

import base64
import copy
import io
import json
import posixpath
import re
import zipfile
from pathlib import Path

import nbformat

ARCHIVE = "downloads/autodiff-book.zip"
ARCHIVE_TOP = "autodiff-book"
LISTING_TAG = "engine-listing"
# what a reader needs to run the notebooks (their dependency closure is pinned)
RUNTIME_ROOTS = ["numpy", "scipy", "matplotlib", "ipykernel", "nbclient", "nbformat"]

GLUE_FALLBACK = '''\
try:
    from myst_nb import glue
except ImportError:  # outside the book's build: show what display=True would show
    def glue(name, variable, display=True):
        if display:
            from IPython.display import display as show
            show(variable)'''

_FENCE_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|:{3,})\s*(?P<info>.*)$")
_DIRECTIVE = re.compile(r"^\{(?P<name>[\w:.-]+)\}\s*(?P<arg>.*)$")
_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*)$")


# -- parsing MyST fences in a Markdown cell -------------------------------------------


def _fenced_blocks(lines):
    """Yield (start, end, name, arg, body_lines, depth, in_code) for every fenced block.

    `start`/`end` are the opening and closing line indexes, `depth` how many fences
    enclose it, `in_code` whether one of them is a plain code fence (no directive).
    """
    stack = []  # (fence string, start, name, arg, in_code)
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stack:
            fence = stack[-1][0]
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence, start, name, arg, in_code = stack.pop()
                yield start, i, name, arg, lines[start + 1:i], len(stack), in_code
                continue
            if stack[-1][2] is None:  # inside a plain code block nothing opens
                continue
        match = _FENCE_OPEN.match(line)
        if not match:
            continue
        info = match["info"].strip()
        directive = _DIRECTIVE.match(info)
        if match["fence"][0] == ":" and not directive:
            continue
        in_code = any(entry[2] is None for entry in stack)
        if directive:
            stack.append((match["fence"], i, directive["name"], directive["arg"].strip(), in_code))
        else:
            stack.append((match["fence"], i, None, info, in_code))


def _parse_directive(directive_class, arg, body):
    """(options, body lines) of a MyST directive, parsed exactly as MyST parses them."""
    from myst_parser.parsers.directives import parse_directive_text

    result = parse_directive_text(directive_class, arg, "\n".join(body),
                                  validate_options=directive_class is not None)
    return dict(result.options), list(result.body)


# -- listings and the engine a notebook carries ------------------------------------------

SNAPSHOT_TAG = "engine-snapshot"


def listing_cell(file, options, chapter, root):
    """A Markdown cell showing one `{listing}` as the page shows it, with its caption."""
    import listings

    listing = listings.listing_lines(file, options, chapter, root)
    text = (f"*Listing: {listing.caption()}*\n\n```python\n{listing.text}\n```")
    meta = {"tags": [LISTING_TAG], "engine_listing": {"file": file, "chapter": listing.chapter,
                                                      **{k: str(v) for k, v in options.items()}}}
    return nbformat.v4.new_markdown_cell(text, metadata=meta)


def _zip_bytes(files: dict) -> bytes:
    """A zip of {name: text} that is the same bytes every time (fixed dates and order)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()


def snapshot_cell(chapter, root, doc_path=None):
    """The first code cell of a downloaded chapter: it unpacks the engine as of `chapter`,
    and the data files the page reads (its front matter's `data_files`), beside itself."""
    import engine_cache
    import snapshots

    folder = f"engine-as-of-{chapter}"
    files = {f"{folder}/{name}": text
             for name, text in snapshots.snapshot_files(chapter, root).items()}
    data = engine_cache.data_files(doc_path) if doc_path is not None else []
    for path in data:
        files[Path(path).relative_to(Path(doc_path).resolve().parent).as_posix()] = (
            Path(path).read_text(encoding="utf-8"))
    packed = base64.b64encode(_zip_bytes(files)).decode()
    rows = [packed[i:i + 76] for i in range(0, len(packed), 76)]
    what = f"{len(files) - len(data)} files" + (
        f" and the data it reads ({', '.join(sorted(f for f in files if not f.startswith(folder)))})"
        if data else "")
    source = "\n".join([
        f"# The engine as of this chapter ({chapter}), carried by this notebook: this cell writes",
        f"# its {what} beside the notebook, and imports `engine` from ./{folder}/.",
        "import base64, io, sys, zipfile",
        "from pathlib import Path",
        "",
        "_engine_zip = (",
        *[f'    "{row}"' for row in rows],
        ")",
        "zipfile.ZipFile(io.BytesIO(base64.b64decode(_engine_zip))).extractall()",
        f'sys.path.insert(0, str(Path("{folder}").resolve()))',
        "for _name in [m for m in sys.modules if m == \"engine\" or m.startswith(\"engine.\")]:",
        "    del sys.modules[_name]  # another engine imported earlier in this kernel",
        "del _engine_zip",
    ])
    return nbformat.v4.new_code_cell(source, metadata={
        "tags": [SNAPSHOT_TAG, "hide-input"], "engine_snapshot": {"chapter": chapter}})


# -- glue -----------------------------------------------------------------------------

def glued_outputs(nb, glue_data=None):
    """{name: mimebundle} of every `glue(...)` call: myst-nb moves them out of the
    executed notebook into `<docname>.glue.json` (`glue_data`); any left in place count too."""
    found = {name: dict(output.get("data", {})) for name, output in (glue_data or {}).items()}
    found.update(_ex().glued_values(nb.cells))
    return found


def _glue_figure_markdown(name, body, glued, attachments, resolver=None):
    """Markdown for a glued figure: the PNG as a cell attachment, caption below, with
    the figure's number when a resolver knows it. A player shows its still frame, and
    says so: a notebook viewer does not run the player's script."""
    from myst_nb.ext.glue.directives import PasteFigureDirective

    data = glued.get(name, {})
    options, caption_lines = _parse_directive(PasteFigureDirective, name, body)
    caption = "\n".join(caption_lines).strip()
    label = options.get("name")
    number = resolver._number(resolver.docname, "figure", label) if resolver and label else None
    if caption:
        caption = f"*{caption}*"
    if number:
        caption = f"**Figure {number}.** {caption}"
    html = data.get("text/html", "")
    html = "".join(html) if isinstance(html, list) else html
    if 'class="animation"' in html or "engine-interactive" in html:
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


def _paste_glue_roles(text, glued):
    """`{glue:text}`key:.3f`` -> the glued value as the page shows it (plain Markdown)."""
    from myst_nb.core.variables import format_plain_text

    def paste(match):
        kind, body = match["kind"] or "any", match["body"]
        key, spec = (body.rsplit(":", 1) + ["s"])[:2] if kind == "text" else (body, "s")
        data = glued.get(key.split("::")[-1], {})
        plain = data.get("text/plain")
        if kind == "md" and "text/markdown" in data:
            return data["text/markdown"]
        if plain is None:
            return match[0]
        try:
            return format_plain_text(plain, spec) if kind == "text" else plain
        except Exception:
            return plain

    # not inside code blocks (directive bodies, e.g. a dropdown's, are prose)
    lines = text.split("\n")
    in_code = set()
    for start, end, name, _, _, _, inside_code in _fenced_blocks(lines):
        if name is None or inside_code:
            in_code.update(range(start, end + 1))
    return "\n".join(line if i in in_code else _GLUE_ROLE.sub(paste, line)
                     for i, line in enumerate(lines))


# -- the notebook a reader downloads --------------------------------------------------


def reader_notebook(nb, doc_path, root, glue_data=None, resolver=None):
    """The executed notebook `nb` of the chapter at `doc_path`, made for plain Jupyter.

    With a `Resolver` (the build passes one), its MyST is rendered to plain Markdown."""
    nb = copy.deepcopy(nb)
    doc_path = Path(doc_path)
    glued = glued_outputs(nb, glue_data)
    import engine_cache

    chapter = engine_cache.snapshot_of(doc_path, root)
    cells = [snapshot_cell(chapter, root, doc_path)] if chapter is not None else []
    for cell in nb.cells:
        if cell.cell_type == "code":
            source = re.sub(r"^from myst_nb import glue[ \t]*$", GLUE_FALLBACK, cell.source,
                            flags=re.M)
            cell.source = source
            if resolver is not None:
                _players_as_stills(cell)
            cells.append(cell)
            continue
        if cell.cell_type != "markdown":
            cells.append(cell)
            continue
        cell.source = _paste_glue_roles(cell.source, glued)
        lines = cell.source.split("\n")
        replacements = []  # (start, end, kind, payload)
        for start, end, name, arg, body, depth, in_code in _fenced_blocks(lines):
            if in_code or name is None:
                continue
            if name == "listing":
                import listings

                options, _ = _parse_directive(listings._directive(), arg, body)
                new = [listing_cell(arg, options, doc_path.stem, root)]
                replacements.append((start, end, "listing", (depth, new, arg)))
            elif name in ("glue:figure", "glue", "glue:any"):
                replacements.append((start, end, "glue", (arg, body)))
        if not replacements:
            cells.append(cell)
            continue
        replacements.sort()
        attachments = dict(cell.get("attachments", {}))
        pending, hoisted, chunk, cursor = [], [], [], 0

        def flush():
            text = "\n".join(chunk).strip("\n")
            if text.strip():
                new_cell = nbformat.v4.new_markdown_cell(text, metadata=copy.deepcopy(cell.metadata))
                used = {k: v for k, v in attachments.items() if f"attachment:{k}" in text}
                if used:
                    new_cell["attachments"] = used
                pending.append(new_cell)
            chunk.clear()
            pending.extend(hoisted)  # listings nested in this text come right after it
            hoisted.clear()

        for start, end, kind, payload in replacements:
            if start < cursor:
                continue  # inside a block already replaced
            chunk.extend(lines[cursor:start])
            if kind == "glue":
                chunk.extend(_glue_figure_markdown(payload[0], payload[1], glued,
                                                   attachments, resolver).split("\n"))
            else:
                depth, new, label = payload
                if depth == 0:
                    flush()
                    pending.extend(new)
                else:  # inside another directive: show it right after this cell
                    chunk.append(f"*(Listing of `{label}`: the cell after this text.)*")
                    hoisted.extend(new)
            cursor = end + 1
        chunk.extend(lines[cursor:])
        flush()
        cells.extend(pending)
    if resolver is not None:
        for cell in cells:
            if cell.cell_type == "markdown" and LISTING_TAG not in cell.metadata.get("tags", []):
                cell.source = plain_markdown(cell.source, resolver)
        cells = fold_solutions(cells, resolver)
        references = resolver.references_cell()
        if references is not None:
            cells.append(references)
    nb.cells = cells
    for cell in nb.cells:  # unique ids for the cells made here
        cell.pop("id", None)
    nb.nbformat_minor = max(nb.nbformat_minor, 5)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    nb.metadata.pop("source_map", None)
    nb.metadata["autodiff_book"] = {"source": doc_path.resolve().relative_to(Path(root).resolve()).as_posix()
                                    if doc_path.resolve().is_relative_to(Path(root).resolve()) else doc_path.name}
    return nb


# -- MyST to plain Markdown: a notebook that reads cleanly in JupyterLab and Colab -------
#
# The chapters' Markdown cells are MyST: directives (theorems, exercises, dropdowns),
# roles ({numref}, {prf:ref}, {doc}, {cite}) and `(label)=` targets, which plain Jupyter
# shows as raw text. The download renders them to Markdown and HTML that plain Jupyter
# draws: titled blocks as block quotes, solutions and dropdowns as <details>, every
# reference as the text the page shows (numbers and titles come from the build's own
# environment: Sphinx's labels and figure numbers, sphinx-proof's and sphinx-exercise's
# registries), citations as "Author et al., year" with a References cell at the end, and
# a player as its still frame with a note.

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


class Resolver:
    """The text the site shows for a reference, from the build's environment."""

    def __init__(self, env, docname, root):
        self.env = env
        self.docname = docname
        self.root = Path(root)
        self.cited = []  # bibliography keys in order of first citation
        self._bib = None

    # labels and numbers
    def _number(self, docname, kind, label):
        number = self.env.toc_fignumbers.get(docname, {}).get(kind, {}).get(label)
        return ".".join(map(str, number)) if number else None

    def _target_doc(self, target):
        target = target.strip()
        if target.startswith("/"):
            return target.lstrip("/")
        return posixpath.normpath(posixpath.join(posixpath.dirname(self.docname), target))

    def doc(self, text, target):
        docname = self._target_doc(target)
        title = self.env.titles[docname].astext() if docname in self.env.titles else target
        shown = text or title
        if "kernelspec" in self.env.metadata.get(docname, {}):
            return f"[{shown}]({posixpath.basename(notebook_name(docname))})"
        return shown

    def numref(self, text, label):
        std = self.env.domaindata["std"]["labels"].get(label)
        if std is None:
            return self.prf_ref(text, label)
        docname, labelid, _ = std
        numfig = self.env.config.numfig_format
        for kind, fmt in (("figure", None), ("table", None), ("code-block", None),
                          ("exercise", None)):
            number = self._number(docname, kind, labelid)
            if number:
                if text:
                    return text.replace("{number}", number).replace("{name}", "")
                return (numfig.get(kind) or (kind.capitalize() + " %s")).replace("%s", number)
        return text or std[2]

    def prf_ref(self, text, label):
        proof = getattr(self.env, "proof_list", {}).get(label)
        if proof is None:
            return text or label
        if text:
            return text
        number = self._number(proof["docname"], proof["countertype"], label)
        return proof["realtype"].capitalize() + (f" {number}" if number else "")

    def exercise(self, label):
        registry = getattr(self.env, "sphinx_exercise_registry", {})
        entry = registry.get(label)
        if entry is None:
            return None
        return self._number(entry["docname"], "exercise", label)

    def ref(self, text, label):
        if text:
            return text
        number = self.exercise(label)
        if number:
            return f"Exercise {number}"
        std = self.env.domaindata["std"]["labels"].get(label)
        if std is not None:
            return std[2]
        if label in getattr(self.env, "proof_list", {}):
            return self.prf_ref("", label)
        return label

    def eq(self, text, label):
        math = self.env.domaindata.get("math", {}).get("objects", {})
        entry = math.get(label)
        number = self.env.toc_fignumbers.get(entry[0], {}).get("displaymath", {}).get(
            entry[0] and label) if entry else None
        if entry and not number and len(entry) > 1:
            number = entry[1]
        if isinstance(number, tuple):
            number = ".".join(map(str, number))
        return text or f"({number})"

    # citations
    def bibliography(self):
        if self._bib is None:
            from pybtex.database import parse_file

            self._bib = {}
            for name in self.env.config.bibtex_bibfiles or []:
                self._bib.update(parse_file(str(Path(self.env.srcdir) / name)).entries)
        return self._bib

    def _entry(self, key):
        """The bibliography entry of a key, also under a chapter's `:keyprefix:` (cr-)."""
        bib = self.bibliography()
        if key in bib:
            return bib[key]
        prefix, _, rest = key.partition("-")
        return bib.get(rest) if rest else None

    @staticmethod
    def _plain(text):
        import codecs

        import latexcodec  # noqa: F401  (registers the codec)

        text = codecs.decode(text, "ulatex")
        return re.sub(r"[{}]", "", text)

    def cite(self, keys):
        shown = []
        for key in [k.strip() for k in keys.split(",") if k.strip()]:
            entry = self._entry(key)
            if key not in self.cited:
                self.cited.append(key)
            if entry is None:
                shown.append(key)
                continue
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = [self._plain(" ".join(p.last_names)) for p in people]
            if not names:
                who = self._plain(entry.fields.get("title", key))
            elif len(names) == 1:
                who = names[0]
            elif len(names) == 2:
                who = f"{names[0]} and {names[1]}"
            else:
                who = f"{names[0]} et al."
            year = entry.fields.get("year", "")
            shown.append(f"[{who}, {year}](#ref-{key})" if year else f"[{who}](#ref-{key})")
        return "[" + "; ".join(shown) + "]"

    def references_cell(self):
        if not self.cited:
            return None
        from pybtex.plugin import find_plugin

        style = find_plugin("pybtex.style.formatting", "plain")()
        lines = ["## References", ""]
        for key in self.cited:
            entry = self._entry(key)
            if entry is None:
                continue
            formatted = style.format_entry(key, entry)
            text = self._plain(formatted.text.render_as("text"))
            lines.append(f'- <a id="ref-{key}"></a>{text}')
        return nbformat.v4.new_markdown_cell("\n".join(lines),
                                             metadata={"tags": ["engine-references"]})


def _options_and_body(body):
    """Leading `:key: value` lines of a directive body, and the rest."""
    options, i = {}, 0
    while i < len(body):
        match = _OPTION.match(body[i])
        if not match:
            break
        options[match["key"]] = match["value"].strip()
        i += 1
    rest = body[i:]
    while rest and not rest[0].strip():
        rest = rest[1:]
    return options, rest


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


def _render_directive(name, arg, body, resolver):
    """Plain Markdown lines for one directive block (its body rendered first)."""
    options, rest = _options_and_body(body)
    inner = plain_markdown("\n".join(rest), resolver).split("\n") if rest else []
    kind = name.split(":", 1)[1] if name.startswith("prf:") else name
    title = _render_roles(arg, resolver) if arg else ""
    label = options.get("label", "")
    anchor = [f'<a id="{label}"></a>'] if label else []
    if kind in PROOF_KINDS:
        number = resolver._number(resolver.docname, kind, label) if label else None
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
        number = resolver._number(resolver.docname, "exercise", label) if label else None
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


def _players_as_stills(cell):
    """A player's output (matplotlib's JavaScript animation) becomes its still frame and
    a note: JupyterLab and Colab do not run the script of a notebook they did not run."""
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        html = data.get("text/html", "")
        html = "".join(html) if isinstance(html, list) else html
        if not ('class="animation"' in html or "engine-interactive" in html):
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
    blocks = [b for b in _fenced_blocks(lines) if b[5] == 0 and not b[6]]
    out, cursor = [], 0
    for start, end, name, arg, body, _, _ in sorted(blocks):
        if start < cursor:
            continue
        out.extend(_render_text(lines[cursor:start], resolver))
        if name is None:  # a plain code block: as it is
            out.extend(lines[start:end + 1])
        else:
            out.extend(_render_directive(name, arg, body, resolver))
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


# -- the archive ----------------------------------------------------------------------


def _pins(requirements):
    pins = {}
    for line in Path(requirements).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.match(r"^([A-Za-z0-9_.-]+)\s*==\s*(\S+)$", line)
        if match:
            pins[_canonical(match[1])] = (match[1], match[2])
    return pins


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_requirements(requirements, roots=RUNTIME_ROOTS):
    """The pinned lines of `requirements` that the runtime roots need (their closure)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    pins = _pins(requirements)
    seen, todo = set(), [_canonical(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for spec in requires:
            req = Requirement(spec)
            if req.marker and not req.marker.evaluate({"extra": ""}):
                continue
            todo.append(_canonical(req.name))
    lines = [f"{pins[n][0]}=={pins[n][1]}" for n in sorted(seen) if n in pins]
    return lines


def notebook_docnames(env):
    """Docnames (in toc order where known) whose source is a Jupyter notebook."""
    names = [d for d in env.found_docs if "kernelspec" in env.metadata.get(d, {})]
    order = {d: i for i, d in enumerate(_toc_order(env))}
    return sorted(names, key=lambda d: (order.get(d, len(order)), d))


def _toc_order(env):
    try:
        root = env.config.root_doc
        order, todo = [], [root]
        while todo:
            doc = todo.pop(0)
            if doc in order:
                continue
            order.append(doc)
            todo[0:0] = env.toctree_includes.get(doc, [])
        return order
    except Exception:
        return []


def notebook_name(docname):
    """`book/tensors` -> `tensors.ipynb` inside the archive's notebooks/ folder."""
    parts = docname.split("/")
    if len(parts) > 1 and parts[0] == "book":
        parts = parts[1:]
    return "/".join(parts) + ".ipynb"


README = """\
# Automatic differentiation, built and checked: the notebooks

Every chapter of the book as a Jupyter notebook, executed (the outputs are the
book's), and the `engine` package the chapters build.

    python3 -m venv .venv
    .venv/bin/pip install -r requirements.txt
    .venv/bin/pip install .
    .venv/bin/pip install jupyterlab        # or any Jupyter front end
    .venv/bin/jupyter lab notebooks/

Cells tagged `engine-listing` show the package's source as the book shows it;
running one changes nothing the other cells see (they use the installed package).
The prose is MyST Markdown: theorems, cross-references and citations show as their
source unless the front end renders MyST (`pip install jupyterlab-myst`).
To run every notebook top to bottom without a browser:

    .venv/bin/jupyter execute notebooks/*.ipynb
"""


def write_archive(out_zip, notebooks, root, requirements):
    """Write the zip: notebooks/{name}.ipynb, engine/, pyproject.toml, requirements.txt."""
    root = Path(root)
    stamp = (2026, 1, 1, 0, 0, 0)
    out_zip = Path(out_zip)
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_zip.with_suffix(".zip.tmp")

    def add(zf, name, data):
        info = zipfile.ZipInfo(f"{ARCHIVE_TOP}/{name}", date_time=stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        zf.writestr(info, data)

    with zipfile.ZipFile(tmp, "w") as zf:
        add(zf, "README.md", README)
        pins = "\n".join(runtime_requirements(requirements))
        add(zf, "requirements.txt",
            "# Runtime pins of the book (numpy, scipy, matplotlib, Jupyter kernel and their\n"
            "# dependencies), taken from the book's own requirements.txt.\n" + pins + "\n")
        add(zf, "pyproject.toml", (root / "pyproject.toml").read_text())
        for path in sorted((root / "engine").rglob("*.py")):
            if "__pycache__" not in path.parts:
                add(zf, path.relative_to(root).as_posix(), path.read_bytes())
        for name, nb in notebooks:
            add(zf, f"notebooks/{name}", nbformat.writes(nb))
    tmp.replace(out_zip)
    return out_zip


# -- Sphinx ---------------------------------------------------------------------------


def _root(app):
    return Path(app.srcdir)


def executed_notebook(app, docname):
    """(notebook, glue data) of `docname` with the outputs the build shows, or (None, {}).

    In `cache` mode the outputs come from the execution cache, as myst-nb merges
    them: on a cache hit myst-nb writes the UNexecuted notebook to
    `jupyter_execute/` (myst-nb 1.4: it merges the outputs into a copy), so that
    file is only used when the cache has no match (the notebook ran, or failed,
    in place) or execution is not cached. Glue outputs are taken out of the cells
    as myst-nb does (`display=False` ones removed) and returned by name.
    """
    from myst_nb.ext.glue import extract_glue_data_cell

    build = Path(app.outdir).parent  # jupyter-book: <build>/html, <build>/jupyter_execute
    config = app.config
    nb = None
    if getattr(config, "nb_execution_mode", None) == "cache" and config.nb_execution_cache_path:
        nb = _from_cache(app, docname)
    glue = {}
    if nb is None:
        path = build / "jupyter_execute" / f"{docname}.ipynb"
        if not path.exists():
            return None, {}
        nb = nbformat.read(path, as_version=4)
        glue_path = path.with_name(path.name[: -len(".ipynb")] + ".glue.json")
        if glue_path.exists():
            glue = json.loads(glue_path.read_text())
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for key, output in extract_glue_data_cell(cell):
                output.setdefault("metadata", {})["engine_cell_index"] = index
                glue[key] = output
    return nb, glue


def _from_cache(app, docname):
    import yaml
    from jupyter_cache import get_cache
    from myst_nb.core.read import MystMetadataParsingError, create_nb_reader

    path = app.env.doc2path(docname)
    try:
        text = Path(path).read_text(encoding="utf8")
        reader = create_nb_reader(str(path), app.env.myst_config, app.env.mystnb_config, text)
        if reader is None:
            return None
        nb = reader.read(text)
        cache = get_cache(app.config.nb_execution_cache_path)
        _, merged = cache.merge_match_into_notebook(nb)
    except (KeyError, OSError, AttributeError, MystMetadataParsingError, yaml.YAMLError):
        return None  # a cell's options do not read: _check_cell_options warned
    merged.metadata["source_map"] = nb.metadata.get("source_map")
    return merged


def _build_reader_notebook(app, docname):
    nb, glue = executed_notebook(app, docname)
    if nb is None:
        return None
    return reader_notebook(nb, app.env.doc2path(docname), _root(app), glue,
                           Resolver(app.env, docname, _root(app)))


def _page_context(app, pagename, templatename, context, doctree):
    """Offer the executed notebook in the download menu of every notebook page."""
    if app.builder.format != "html" or pagename not in app.env.found_docs:
        return
    if "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    if _reader_notebook_once(app, pagename) is None:
        return
    context["ipynb_source"] = f"{pagename}.ipynb"  # written by _build_finished


def _reader_notebook_once(app, docname):
    """The reader's notebook of `docname`, converted once per build, for the page and the archive."""
    made = app.__dict__.setdefault("_engine_reader_notebooks", {})
    if docname not in made:
        made[docname] = _build_reader_notebook(app, docname)
    return made[docname]


def _build_finished(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    notebooks = []
    for docname in notebook_docnames(app.env):
        nb = _reader_notebook_once(app, docname)
        if nb is None:
            continue
        target = Path(app.outdir) / "_sources" / f"{docname}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(nbformat.writes(nb), encoding="utf-8")
        notebooks.append((notebook_name(docname), nb))
    root = _root(app)
    write_archive(Path(app.outdir) / ARCHIVE, notebooks, root, root / "requirements.txt")


# -- bad edits: name the file and the line -------------------------------------------
#
# Three mistakes reach a reader of the build log without a line to fix: myst-nb
# crashes on a cell whose options are not YAML ("Code cell 2 at line 17 could not be
# read", no file), reports a failing or endless cell as "Executing notebook failed:
# CellExecutionError" (file, no cell), and a page missing from _toc.yml is left out
# with one info line ("Excluded 1 extra file(s)"), which -W does not fail. Each
# becomes a warning at `<file>:<line>`, so `-W` fails and names it.

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _ex():
    """book/_ext/expectations.py (the verifier's reader), beside this file."""
    import sys

    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import expectations

    return expectations


def _check_cell_options(app, docname, source):
    """A code cell whose options do not read: a warning at its line, then read the cell
    without options, so the build goes on and lists the other problems too."""
    from myst_nb.core.read import MystMetadataParsingError, create_nb_reader

    path = app.env.doc2path(docname)
    if not str(path).endswith(".md"):
        return
    try:
        reader = create_nb_reader(str(path), app.env.myst_config, app.env.mystnb_config,
                                  source[0])
    except Exception:  # not a notebook this extension can judge: myst-nb will say
        return
    if reader is None:
        return
    import yaml

    ex = _ex()
    for _ in range(source[0].count("{code-cell}")):
        try:
            reader.read(source[0])
            return
        except (MystMetadataParsingError, yaml.YAMLError):
            problems = ex.options_problems(source[0])
            if not problems:
                return  # myst-nb's own error follows
            line, what = problems[0]
            logger().warning(what, location=(docname, line))
            source[0] = ex.comment_out_options(source[0], line)


def failed_cell(nb, exec_data):
    """(line in the .md, what) of the cell that stopped a failed execution, or None.

    nbclient stops at the first cell that raises or times out (allow_errors is off)
    and leaves an error output on it; myst-nb writes that notebook, with its
    source_map (cell index -> fence line), to jupyter_execute/.
    """
    source_map = nb.metadata.get("source_map") or []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or index >= len(source_map):
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if not errors:
            continue
        if exec_data.get("error") == "CellTimeoutError":
            seconds = re.search(r"after (\S+) seconds", exec_data.get("traceback") or "")
            limit = f" after {seconds[1]} s" if seconds else ""
            what = (f"cell timed out{limit} (the build's limit is `execute: timeout` of "
                    "_config.yml for every cell; the verifier applies a cell's `timeout:`)")
        else:
            error = errors[0]
            what = _ANSI.sub("", f"cell raised {error.get('ename')}: {error.get('evalue')}")
        return source_map[index], what
    return None


def _name_failing_cell(app, doctree):
    """After myst-nb's "Executing notebook failed": the file and line of the cell."""
    try:
        from myst_nb.sphinx_ import NbMetadataCollector

        exec_data = NbMetadataCollector.get_exec_data(app.env, app.env.docname)
    except Exception:
        return
    if not exec_data or exec_data.get("succeeded", True):
        return
    path = Path(app.outdir).parent / "jupyter_execute" / f"{app.env.docname}.ipynb"
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return
    found = failed_cell(nb, exec_data)
    if found is not None:
        logger().warning(found[1], location=(app.env.docname, found[0]))


def _toc_exclusions_before(app, config):
    app.__dict__["_engine_excluded_before"] = list(config.exclude_patterns)


def _warn_pages_missing_from_toc(app):
    """Pages of the chapters' folder that sphinx-external-toc dropped for not being in
    _toc.yml (`only_build_toc_files`): a warning each, naming the file."""
    before = set(app.__dict__.get("_engine_excluded_before", ()))
    root_folder = posixpath.dirname(app.config.root_doc)
    srcdir = Path(app.srcdir)
    for pattern in app.config.exclude_patterns:
        if pattern in before or not (srcdir / pattern).is_file():
            continue
        if root_folder and not pattern.startswith(root_folder + "/"):
            continue  # outside the chapters' folder, e.g. a README beside _config.yml
        logger().warning(
            "this page is not in _toc.yml, so the book leaves it out: list it in _toc.yml "
            "(or delete it)", location=f"{srcdir / pattern}:1")


def _coalesce_streams():
    """Run every notebook with nbclient's `coalesce_streams` on.

    A kernel sends what a cell prints in chunks, cut by its flush timer (0.2 s), so a
    slow cell's stdout lands in one, two or three stream outputs depending on how
    busy the machine is, and two builds cache different notebooks for the same
    text. nbclient's option joins each cell's streams into one per name; myst-nb
    1.4 calls jupyter-cache's `single_nb_execution` without a way to pass it, so
    its two execution modes get a wrapper that does (the verifier sets it itself).
    """
    from myst_nb.core.execute import cache as cache_mode
    from myst_nb.core.execute import direct as direct_mode

    for module in (cache_mode, direct_mode):
        original = module.single_nb_execution
        if getattr(original, "coalesces_streams", False):
            continue

        def single_nb_execution(*args, _original=original, **kwargs):
            kwargs.setdefault("coalesce_streams", True)
            return _original(*args, **kwargs)

        single_nb_execution.coalesces_streams = True
        module.single_nb_execution = single_nb_execution


def logger():
    from sphinx.util import logging

    return logging.getLogger(__name__)


def book_archive_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{book-archive}`Download everything (.zip)``: a link to the archive of the book."""
    from docutils import nodes

    env = inliner.document.settings.env
    uri = posixpath.relpath(ARCHIVE, posixpath.dirname(env.docname) or ".")
    node = nodes.reference(rawtext, text or posixpath.basename(ARCHIVE), refuri=uri,
                           classes=["book-archive"])
    return [node], []


def setup(app):
    _coalesce_streams()
    app.connect("config-inited", _toc_exclusions_before, priority=100)  # etoc's runs at 900
    app.connect("builder-inited", _warn_pages_missing_from_toc)
    app.connect("source-read", _check_cell_options)
    app.connect("doctree-read", _name_failing_cell)
    app.connect("html-page-context", _page_context, priority=400)
    app.connect("build-finished", _build_finished)
    app.add_role("book-archive", book_archive_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
