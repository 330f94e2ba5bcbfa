"""The readers' notebooks: every chapter as an executed .ipynb that runs in plain Jupyter,
in its page's download menu (`_sources/<docname>.ipynb`) and in the book's archive,
`downloads/autodiff-book.zip` (the intro links it), with the finished `engine` and
pyproject.toml, the runtime pins as requirements.txt and archive_README.txt (its README.md),
the same bytes every time.

Each has the page's outputs; a first cell that unpacks the engine as of its chapter and
the data the page reads; each `{listing}` as a Markdown cell; a fallback for `from myst_nb
import glue`; plain Markdown prose (notebook_markdown.py); hidden cells folded, not removed."""

import base64
import copy
import io
import posixpath
import re
import zipfile
from pathlib import Path

import nbformat
from docutils import nodes

import listings
import snapshots
from book_config import RUNTIME_PINS, data_files, notebook_docnames
from engine_cache import page_run
from execution import snapshot_chapter
from myst_reader import fences
from notebook_markdown import (References, fold_solutions, glue_figure_markdown, plain_markdown,
                               players_as_stills, show_roles)

ARCHIVE = "downloads/autodiff-book.zip"
ARCHIVE_TOP = "autodiff-book"
STAMP = (2026, 1, 1, 0, 0, 0)
README = Path(__file__).with_name("archive_README.txt")
LISTING_TAG = "engine-listing"
SNAPSHOT_TAG = "engine-snapshot"
# folded where JupyterLab and Notebook 7 fold (nbformat's `jupyter.source_hidden` and
# `outputs_hidden`) and where the classic notebook does (`collapsed`)
HIDDEN_SOURCE = {SNAPSHOT_TAG, "remove-cell", "remove-input", "hide-input", "hide-cell"}
HIDDEN_OUTPUT = {"remove-cell", "remove-output", "hide-output", "hide-cell"}

GLUE_FALLBACK = '''\
try:
    from myst_nb import glue
except ImportError:  # outside the book's build: show what display=True would show
    def glue(name, variable, display=True):
        if display:
            from IPython.display import display as show
            show(variable)'''


def zip_bytes(files: dict) -> bytes:
    """A zip of {name: text or bytes} that is the same bytes every time."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=STAMP)
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name], compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def listing_cell(fence, chapter, root):
    """One `{listing}` as the page shows it, after the lines it replaces."""
    options, _ = fence.parse(listings.ListingDirective)
    listing = listings.listing_lines(fence.arg, options, chapter, root)
    old = "".join(f"*Replaces, in {listing.where()}, these lines of `{replaced}`:*\n\n"
                  f"```python\n{text}\n```\n\n" for replaced, text in listing.replaced_blocks())
    return nbformat.v4.new_markdown_cell(
        f"{old}*Listing: {listing.caption()}*\n\n```python\n{listing.text}\n```", metadata={
            "tags": [LISTING_TAG], "engine_listing": {
                "file": fence.arg, "chapter": listing.chapter,
                **{key: str(value) for key, value in options.items()}}})


def snapshot_cell(chapter, root, doc_path):
    """The first code cell: it unpacks the engine as of `chapter` and the page's
    `data_files` beside the notebook."""
    folder = f"engine-as-of-{chapter}"
    files = {f"{folder}/{name}": text
             for name, text in snapshots.snapshot_files(chapter, root).items()}
    data = {path.relative_to(doc_path.resolve().parent).as_posix(): path.read_text(encoding="utf-8")
            for path in data_files(doc_path)}
    packed = base64.b64encode(zip_bytes({**files, **data})).decode()
    what = f"{len(files)} files" + (f" and the data it reads ({', '.join(sorted(data))})"
                                    if data else "")
    source = "\n".join([
        f"# The engine as of this chapter ({chapter}), carried by this notebook: this cell writes",
        f"# its {what} beside the notebook, and imports `engine` from ./{folder}/.",
        "import base64, io, sys, zipfile",
        "from pathlib import Path",
        "",
        "_engine_zip = (",
        *[f'    "{packed[i:i + 76]}"' for i in range(0, len(packed), 76)],
        ")",
        "zipfile.ZipFile(io.BytesIO(base64.b64decode(_engine_zip))).extractall()",
        f'sys.path.insert(0, str(Path("{folder}").resolve()))',
        "for _name in [m for m in sys.modules if m == \"engine\" or m.startswith(\"engine.\")]:",
        "    del sys.modules[_name]  # another engine imported earlier in this kernel",
        "del _engine_zip",
    ])
    return nbformat.v4.new_code_cell(source, metadata={
        "tags": [SNAPSHOT_TAG, "hide-input"], "engine_snapshot": {"chapter": chapter}})


def fold_hidden(cell):
    """The code cell `cell`, its source and outputs folded where the page hides them."""
    tags = set(cell.metadata.get("tags", []))
    if tags & HIDDEN_SOURCE:
        cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
    if tags & HIDDEN_OUTPUT and cell.get("outputs"):
        cell.metadata.setdefault("jupyter", {})["outputs_hidden"] = True
        cell.metadata["collapsed"] = True
    return cell


def markdown_cells(cell, glued, chapter, root, refs):
    """A Markdown cell with its roles shown, split at each `{listing}`, which becomes a cell
    (one nested in a block comes right after the cell that holds it); with `refs`, in
    plain Markdown."""
    text = show_roles(cell.source, root, glued, refs)
    lines, cells, chunk, hoisted, cursor = text.split("\n"), [], [], [], 0
    attachments = dict(cell.get("attachments", {}))

    def flush():
        source = "\n".join(chunk).strip("\n")
        if source.strip():
            new = nbformat.v4.new_markdown_cell(plain_markdown(source, refs) if refs else source,
                                                metadata=copy.deepcopy(cell.metadata))
            used = {k: v for k, v in attachments.items() if f"attachment:{k}" in new.source}
            if used:
                new["attachments"] = used
            cells.append(new)
        cells.extend(hoisted)  # listings nested in this text come right after it
        chunk.clear()
        hoisted.clear()

    for fence in fences(text, root):
        if fence.name not in ("listing", "glue:figure", "glue", "glue:any") or \
                fence.line - 1 < cursor:  # not a block made here, or inside one replaced
            continue
        chunk.extend(lines[cursor:fence.line - 1])
        if fence.name != "listing":
            chunk.extend(glue_figure_markdown(fence, glued, attachments, refs).split("\n"))
        elif fence.depth == 0:
            flush()
            cells.append(listing_cell(fence, chapter, root))
        else:  # inside another directive: show it right after this cell
            chunk.append(f"*(Listing of `{fence.arg}`: the cell after this text.)*")
            hoisted.append(listing_cell(fence, chapter, root))
        cursor = fence.end
    chunk.extend(lines[cursor:])
    flush()
    return cells


def reader_notebook(nb, doc_path, root, glue_data=None, refs=None):
    """The executed notebook `nb` of the chapter at `doc_path` (its glue moved out to
    `glue_data`, as myst-nb does), made for plain Jupyter. With `References` (the build
    passes them) its MyST becomes plain Markdown."""
    nb, doc_path, root = copy.deepcopy(nb), Path(doc_path), Path(root)
    glued = {name: dict(output.get("data", {})) for name, output in (glue_data or {}).items()}
    chapter = snapshot_chapter(doc_path, root)
    cells = [fold_hidden(snapshot_cell(chapter, root, doc_path))] if chapter is not None else []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cells += markdown_cells(cell, glued, doc_path.stem, root, refs)
            continue
        if cell.cell_type == "code":
            cell.source = re.sub(r"^from myst_nb import glue[ \t]*$", GLUE_FALLBACK, cell.source,
                                 flags=re.M)
            players_as_stills(cell)
            fold_hidden(cell)
        cells.append(cell)
    if refs is not None:
        cells = fold_solutions(cells, refs) + refs.references_cells()
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"  # unique, for the cells made here too
    nb.cells, nb.nbformat_minor = cells, max(nb.nbformat_minor, 5)
    nb.metadata.pop("source_map", None)
    source = doc_path.resolve().relative_to(root.resolve())
    nb.metadata["autodiff_book"] = {"source": source.as_posix()}
    return nb


# -- Sphinx ---------------------------------------------------------------------------


def _page_context(app, pagename, templatename, context, doctree):
    """Offer the executed notebook in the download menu of every notebook page."""
    if (app.builder.name == "html" and "kernelspec" in app.env.metadata.get(pagename, {})
            and page_run(app, pagename)[0] is not None):
        context["ipynb_source"] = f"{pagename}.ipynb"  # written by _build_finished


def _build_finished(app, exception):
    """Write each notebook page's reader notebook beside its page, and the archive."""
    if exception is not None or app.builder.name != "html":  # not the PDF's one page
        return
    notebooks = {}
    for docname in notebook_docnames(app.env):
        nb, glue, _ = page_run(app, docname)
        if nb is not None:
            text = notebooks[docname] = nbformat.writes(reader_notebook(
                nb, app.env.doc2path(docname), app.srcdir, glue, References(app, docname)))
            target = Path(app.outdir) / "_sources" / f"{docname}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    write_archive(Path(app.outdir) / ARCHIVE, notebooks, Path(app.srcdir))


def write_archive(out_zip, notebooks, root):
    """Write the zip; `notebooks` maps a docname to its notebook's text, which goes in
    notebooks/ (`book/tensors` as `notebooks/tensors.ipynb`)."""
    files = {"README.md": README.read_text(encoding="utf-8"),
             "pyproject.toml": (root / "pyproject.toml").read_text(),
             "requirements.txt": (root / RUNTIME_PINS).read_text(),
             **snapshots.finished_files(root),  # as the wheel has them: no markers
             **{f"notebooks/{docname.removeprefix('book/')}.ipynb": text
                for docname, text in notebooks.items()}}
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_zip.with_suffix(".zip.tmp")
    tmp.write_bytes(zip_bytes({f"{ARCHIVE_TOP}/{k}": v for k, v in files.items()}))
    tmp.replace(out_zip)


def book_archive_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{book-archive}`Download everything (.zip)``: a link to the archive of the book."""
    env = inliner.document.settings.env
    uri = posixpath.relpath(ARCHIVE, posixpath.dirname(env.docname) or ".")
    return [nodes.reference(rawtext, text or posixpath.basename(ARCHIVE), refuri=uri,
                            classes=["book-archive"])], []


def setup(app):
    app.setup_extension("build_warnings")  # the warnings that name a bad edit's file and line
    app.connect("html-page-context", _page_context, priority=400)
    app.connect("build-finished", _build_finished)
    app.add_role("book-archive", book_archive_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
