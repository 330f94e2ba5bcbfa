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
  and the book's runtime pins as its requirements.txt.
"""


import base64
import copy
import re
from pathlib import Path

import nbformat

from cells import fences
from notebook_archive import ARCHIVE, book_archive_role, notebook_name, write_archive, zip_bytes

LISTING_TAG = "engine-listing"
SNAPSHOT_TAG = "engine-snapshot"

GLUE_FALLBACK = '''\
try:
    from myst_nb import glue
except ImportError:  # outside the book's build: show what display=True would show
    def glue(name, variable, display=True):
        if display:
            from IPython.display import display as show
            show(variable)'''


def listing_cell(fence, chapter, root):
    """A Markdown cell showing one `{listing}` as the page shows it, with its caption."""
    import listings

    file = fence.arg
    options, _ = fence.parse(listings._directive())
    listing = listings.listing_lines(file, options, chapter, root)
    text = (f"*Listing: {listing.caption()}*\n\n```python\n{listing.text}\n```")
    meta = {"tags": [LISTING_TAG], "engine_listing": {"file": file, "chapter": listing.chapter,
                                                      **{k: str(v) for k, v in options.items()}}}
    return nbformat.v4.new_markdown_cell(text, metadata=meta)


def snapshot_cell(chapter, root, doc_path=None):
    """The first code cell of a downloaded chapter: it unpacks the engine as of `chapter`,
    and the data files the page reads (its front matter's `data_files`), beside itself."""
    import snapshots
    from book_config import data_files

    folder = f"engine-as-of-{chapter}"
    files = {f"{folder}/{name}": text
             for name, text in snapshots.snapshot_files(chapter, root).items()}
    data = data_files(doc_path) if doc_path is not None else []
    for path in data:
        files[Path(path).relative_to(Path(doc_path).resolve().parent).as_posix()] = (
            Path(path).read_text(encoding="utf-8"))
    packed = base64.b64encode(zip_bytes(files)).decode()
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


# What the site hides stays in the notebook (it runs), folded where Jupyter Notebook 7 and
# JupyterLab fold a cell: `jupyter.source_hidden` and `jupyter.outputs_hidden` (nbformat's
# documented cell metadata), and the classic notebook's `collapsed` for the outputs.
HIDDEN_SOURCE = {SNAPSHOT_TAG, "remove-cell", "remove-input", "hide-input", "hide-cell"}
HIDDEN_OUTPUT = {"remove-cell", "remove-output", "hide-output", "hide-cell"}


def hide(cell):
    """Fold the source and outputs of a code cell the page hides."""
    tags = set(cell.metadata.get("tags", []))
    if cell.cell_type != "code" or not tags & (HIDDEN_SOURCE | HIDDEN_OUTPUT):
        return
    jupyter = cell.metadata.setdefault("jupyter", {})
    if tags & HIDDEN_SOURCE:
        jupyter["source_hidden"] = True
    if tags & HIDDEN_OUTPUT and cell.get("outputs"):
        jupyter["outputs_hidden"] = True
        cell.metadata["collapsed"] = True


def _split_markdown(cell, glued, chapter, root, resolver):
    """A Markdown cell of the chapter, its glue shown and each `{listing}` made a cell of
    its own (one inside another block comes right after the cell that holds it)."""
    from notebook_markdown import glue_figure_markdown, paste_glue_roles

    cell.source = paste_glue_roles(cell.source, glued, root)
    lines = cell.source.split("\n")
    blocks = [f for f in fences(cell.source, root)
              if f.name in ("listing", "glue:figure", "glue", "glue:any")]
    if not blocks:
        return [cell]
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

    for fence in blocks:
        if fence.line - 1 < cursor:
            continue  # inside a block already replaced
        chunk.extend(lines[cursor:fence.line - 1])
        if fence.name != "listing":
            chunk.extend(glue_figure_markdown(fence, glued, attachments, resolver).split("\n"))
        elif fence.depth == 0:
            flush()
            pending.append(listing_cell(fence, chapter, root))
        else:  # inside another directive: show it right after this cell
            chunk.append(f"*(Listing of `{fence.arg}`: the cell after this text.)*")
            hoisted.append(listing_cell(fence, chapter, root))
        cursor = fence.end
    chunk.extend(lines[cursor:])
    flush()
    return pending


def reader_notebook(nb, doc_path, root, glue_data=None, resolver=None):
    """The executed notebook `nb` of the chapter at `doc_path`, made for plain Jupyter.

    With a `Resolver` (the build passes one), its MyST is rendered to plain Markdown."""
    from checks import glued_values
    from execution import snapshot_of
    from notebook_markdown import fold_solutions, plain_markdown, players_as_stills

    nb = copy.deepcopy(nb)
    doc_path = Path(doc_path)
    # glue(...) values: myst-nb moves them out of the executed notebook; any left count too
    glued = {name: dict(output.get("data", {})) for name, output in (glue_data or {}).items()}
    glued.update(glued_values(nb.cells))
    chapter = snapshot_of(doc_path, root)
    cells = [snapshot_cell(chapter, root, doc_path)] if chapter is not None else []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cells.extend(_split_markdown(cell, glued, doc_path.stem, root, resolver))
            continue
        if cell.cell_type == "code":
            cell.source = re.sub(r"^from myst_nb import glue[ \t]*$", GLUE_FALLBACK, cell.source,
                                 flags=re.M)
            if resolver is not None:
                players_as_stills(cell)
        cells.append(cell)
    if resolver is not None:
        for cell in cells:
            if cell.cell_type == "markdown" and LISTING_TAG not in cell.metadata.get("tags", []):
                cell.source = plain_markdown(cell.source, resolver)
        cells = fold_solutions(cells, resolver)
        references = resolver.references_cell()
        if references is not None:
            cells.append(references)
    nb.cells = cells
    for cell in nb.cells:
        hide(cell)
    for cell in nb.cells:  # unique ids for the cells made here
        cell.pop("id", None)
    nb.nbformat_minor = max(nb.nbformat_minor, 5)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    nb.metadata.pop("source_map", None)
    nb.metadata["autodiff_book"] = {"source": doc_path.resolve().relative_to(Path(root).resolve()).as_posix()
                                    if doc_path.resolve().is_relative_to(Path(root).resolve()) else doc_path.name}
    return nb


# -- Sphinx ---------------------------------------------------------------------------


def _build_reader_notebook(app, docname):
    from engine_cache import shown_notebook
    from notebook_refs import Resolver

    nb, glue, _ = shown_notebook(app, docname)
    if nb is None:
        return None
    return reader_notebook(nb, app.env.doc2path(docname), app.srcdir, glue,
                           Resolver(app.env, docname, app.srcdir))


def _reader_notebook_once(app, docname):
    """The reader's notebook of `docname`, converted once per build, for the page and the archive."""
    from engine_cache import per_build

    return per_build(app, "reader_notebooks", docname, _build_reader_notebook)


def _page_context(app, pagename, templatename, context, doctree):
    """Offer the executed notebook in the download menu of every notebook page."""
    if app.builder.format != "html" or pagename not in app.env.found_docs:
        return
    if "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    if _reader_notebook_once(app, pagename) is None:
        return
    context["ipynb_source"] = f"{pagename}.ipynb"  # written by _build_finished


def _build_finished(app, exception):
    from book_config import notebook_docnames

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
    root = Path(app.srcdir)
    write_archive(Path(app.outdir) / ARCHIVE, notebooks, root)


def setup(app):
    app.setup_extension("build_checks")  # the warnings that name a bad edit's file and line
    app.connect("html-page-context", _page_context, priority=400)
    app.connect("build-finished", _build_finished)
    app.add_role("book-archive", book_archive_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
