"""The build's checks: every mistake becomes a warning at `<file>:<line>`, so `-W` fails.

- A code cell whose options do not read: myst-nb would stop at it with "Code cell 2 at
  line 17 could not be read" and no file. It is a warning at the line to fix, and the
  page is read with those options commented out (`cells.repaired`, as engine_cache runs
  it), so `--keep-going` lists the other problems too.
- A page of the chapters' folder missing from `_toc.yml`: sphinx-external-toc leaves
  it out with one info line. It is a warning at its line 1.
- Every notebook page's EXECUTED outputs (the ones the site shows) are checked with
  the verifier's own rules (`checks.check_cell`, `checks.check_glue`): a cell that
  prints without an `expect:`, or whose output differs from it, wrote to stderr or
  raised, is a warning at its ```{code-cell}``` fence. The check runs at
  `env-updated`, which Sphinx emits on every build, even one that re-reads nothing, so
  an unchanged but unverified chapter fails the next build too; what it found is kept
  with the chapter's read time, so such a rebuild does not open the notebooks again.
  A figure that reaches the page as its text repr (`<Figure size ...>`, no image) is
  a warning at its cell as well.
- A page that reads data files names them in its front matter, relative to the page
  (`data_files: [data/benchmarks.json]`); the page depends on them, and one that does
  not exist is a warning.
"""

import re
from pathlib import Path

from book_config import front_matter, is_notebook, notebook_docnames, pages_missing_from_toc
from cells import code_cells, repaired
from checks import cell_output, check_cell, check_glue, joined

CHECK_KEY = "engine_report_checks"  # {docname: (key, problems)}, see check_outputs


def logger():
    from sphinx.util import logging

    return logging.getLogger(__name__)


def check_cell_options(app, docname, source):
    """source-read: a warning at the line of each cell whose options do not read."""
    if not str(app.env.doc2path(docname)).endswith(".md") or not is_notebook(source[0]):
        return
    text, problems = repaired(source[0], app.srcdir)
    for line, what in problems:
        logger().warning(what, location=(docname, line))
    source[0] = text


def warn_pages_missing_from_toc(app):
    if not app.config.external_toc_exclude_missing:
        return  # the build reads them (and Sphinx warns they are in no toctree)
    for path in pages_missing_from_toc(app.srcdir):
        logger().warning("this page is not in _toc.yml, so the book leaves it out: list it "
                         "in _toc.yml (or delete it)", location=f"{path}:1")


_OBJECT_REPR = re.compile(r"^<(Figure size |matplotlib\.|[\w.]+ object at 0x)")


def textless_figures(nb, glue):
    """[(cell index or None, what)] for figures that reach the page as a repr, no image.

    E.g. `<Figure size 800x260 with 2 Axes>` where the PNG should be: the figure was
    displayed or glued after `matplotlib.use("Agg")` took IPython's image formatter
    away. The verifier reads only stdout and results, so this is checked here, on
    display outputs and glued values.
    """
    found = []
    outputs = [(i, o) for i, c in enumerate(nb.cells) if c.cell_type == "code"
               for o in c.get("outputs", []) if o.get("output_type") == "display_data"]
    outputs += [(o.get("metadata", {}).get("engine_cell_index"), o) for o in glue.values()]
    for index, output in outputs:
        data = output.get("data", {})
        text = joined(data.get("text/plain", ""))
        if set(data) <= {"text/plain"} and _OBJECT_REPR.match(text.strip()):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            found.append((index, (f"glued value {name!r}" if name else "a displayed output")
                          + f" shows only its text {text.strip()!r}, no image"))
    return found


def failures(nb):
    """[(CodeCell, Failure)] for every rule a cell's executed output breaks."""
    return [(cell, failure) for cell in code_cells(nb) for failure in
            check_cell(cell, cell_output(nb.cells[cell.index].get("outputs", [])))]


def chapter_problems(app, docname):
    """[(line, message, subtype)]: the warnings `check_outputs` gives for one chapter."""
    from engine_cache import WARNED, shown_notebook

    nb, glue, _ = shown_notebook(app, docname)
    if nb is None:
        return []
    found = []
    warned = app.__dict__.get(WARNED, set())  # engine_cache ran it just now, and said so
    for cell, failure in failures(nb):
        if (docname, cell.line) in warned and failure.what.startswith(
                ("cell raised", "cell timed out")):
            continue
        detail = f"\n{failure.detail}" if failure.detail else ""
        found.append((cell.line, f"unverified output: {failure.what}{detail}", "unverified"))
    text = Path(app.env.doc2path(docname)).read_text(encoding="utf8")
    glued = {name: dict(output.get("data", {})) for name, output in glue.items()}
    for failure in check_glue(text, code_cells(nb), glued, Path(app.srcdir)):
        found.append((failure.line, f"unchecked glue: {failure.what}", "glue"))
    lines = {cell.index: cell.line for cell in code_cells(nb)}
    for index, what in textless_figures(nb, glue):
        found.append((lines.get(index), f"figure without an image: {what} (was matplotlib's "
                      "backend switched, e.g. matplotlib.use(\"Agg\"), before it was shown?)",
                      "figure"))
    return found


def check_outputs(app, env):
    """env-updated: a warning at the cell's fence line for every unverified output."""
    memo = getattr(env, CHECK_KEY, None)
    if memo is None:
        memo = {}
        setattr(env, CHECK_KEY, memo)
    for docname in notebook_docnames(env):
        key = (env.all_docs.get(docname), str(app.config.nb_execution_cache_path))
        if docname not in memo or memo[docname][0] != key:
            memo[docname] = (key, chapter_problems(app, docname))
        for line, message, subtype in memo[docname][1]:
            logger().warning(message, location=(docname, line or None), type="engine",
                             subtype=subtype)


def note_data_files(app, docname, source):
    """source-read: the page depends on the data files its front matter names."""
    files = front_matter(source[0]).get("data_files") or []
    folder = Path(app.env.doc2path(docname)).parent
    for name in [files] if isinstance(files, str) else files:
        path = (folder / str(name)).resolve()
        if not path.is_file():
            logger().warning(f"data file {name!r} (named in the front matter's data_files) "
                             f"does not exist: {path}", location=(docname, 1), type="engine",
                             subtype="data_files")
        app.env.note_dependency(str(path))  # for the page being read: `docname`


def purge(app, env, docname):
    getattr(env, CHECK_KEY, {}).pop(docname, None)


def setup(app):
    app.connect("builder-inited", warn_pages_missing_from_toc)
    app.connect("source-read", check_cell_options)
    app.connect("source-read", note_data_files)
    app.connect("env-purge-doc", purge)
    app.connect("env-updated", check_outputs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
