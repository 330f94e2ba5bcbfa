"""The build's checks, each mistake a warning at `<file>:<line>` so that `-W` fails: cell
options that do not read, pages missing from `_toc.yml`, missing `data_files:`, and executed
outputs that break the verifier's rules (output_rules.py)."""

import re
from pathlib import Path

from sphinx.util import logging

from book_config import data_files, is_notebook, notebook_docnames, pages_missing_from_toc
from myst_reader import code_cells, comment_out_bad_options
from engine_cache import once_per_build, page_run
from output_rules import cell_output, check_cell, check_glue, joined

CHECK_KEY = "engine_report_checks"  # {docname: (key, problems)}, see check_outputs
logger = logging.getLogger(__name__)


def check_source(app, docname, source):
    """source-read: a warning at each cell whose options do not read (the page is read
    without them) and at each data file the front matter names that does not exist; the
    page depends on those files."""
    if is_notebook(source[0]):
        source[0], problems = comment_out_bad_options(source[0], app.srcdir)
        for line, what in problems:
            logger.warning(what, location=(docname, line))
    for data in data_files(app.env.doc2path(docname), source[0]):
        if not data.is_file():
            logger.warning(f"data file {data} (named in the front matter's data_files) "
                           "does not exist", location=(docname, 1), type="engine",
                           subtype="data_files")
        app.env.note_dependency(str(data))  # for the page being read: `docname`


def warn_pages_missing_from_toc(app):
    if app.config.external_toc_exclude_missing:  # else the build reads them, and Sphinx warns
        for path in pages_missing_from_toc(app.srcdir):
            logger.warning("this page is not in _toc.yml, so the book leaves it out: list "
                           "it in _toc.yml (or delete it)", location=f"{path}:1")


_OBJECT_REPR = re.compile(r"^<(Figure size |matplotlib\.|[\w.]+ object at 0x)")


def shown_outputs(nb, glue, types=("display_data", "execute_result")):
    """[(cell index or None, output)]: the cells' outputs of these types, then the glued
    values (page_run moved them out of their cells)."""
    found = [(i, o) for i, c in enumerate(nb.cells) if c.cell_type == "code"
             for o in c.get("outputs", []) if o.get("output_type") in types]
    return found + [(o.get("metadata", {}).get("engine_cell_index"), o) for o in glue.values()]


def textless_figures(nb, glue, lines):
    """(line, message, "figure") for each figure that reaches the page as a repr, no image;
    `lines` maps a cell's index to its fence line."""
    for index, output in shown_outputs(nb, glue, ["display_data"]):
        data = output.get("data", {})
        text = joined(data.get("text/plain", "")).strip()
        if set(data) <= {"text/plain"} and _OBJECT_REPR.match(text):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            what = f"glued value {name!r}" if name else "a displayed output"
            yield (lines.get(index), f"figure without an image: {what} shows only its text "
                   f"{text!r}, no image (was matplotlib's backend switched, e.g. "
                   "matplotlib.use(\"Agg\"), before it was shown?)", "figure")


def chapter_problems(app, docname):
    """[(line, message, subtype)]: the warnings `check_outputs` gives for one chapter, made
    once per build (the report counts them too)."""
    return once_per_build(app, "problems", docname, _chapter_problems)


def _chapter_problems(app, docname):
    nb, glue, _ = page_run(app, docname)
    if nb is None:
        return []
    found, cells = [], code_cells(nb)
    for cell in cells:
        for failure in check_cell(cell, cell_output(nb.cells[cell.index].get("outputs", []))):
            detail = f"\n{failure.detail}" if failure.detail else ""
            if failure.kind == "error":  # said as myst-nb would, without `allow_errors`
                found.append((cell.line, failure.what + detail, "execution"))
            else:
                found.append((cell.line, f"unverified output: {failure.what}{detail}",
                              "unverified"))
    text = Path(app.env.doc2path(docname)).read_text(encoding="utf8")
    glued = {name: dict(output.get("data", {})) for name, output in glue.items()}
    for failure in check_glue(text, cells, glued, Path(app.srcdir)):
        found.append((failure.line, f"unchecked glue: {failure.what}", "glue"))
    return [*found, *textless_figures(nb, glue, {cell.index: cell.line for cell in cells})]


def check_outputs(app, env):
    """env-updated, which every build emits: so an unchanged unverified chapter fails the
    next build too. Kept with the chapter's read time: an unchanged rebuild opens no notebook."""
    memo = env.__dict__.setdefault(CHECK_KEY, {})
    for docname in notebook_docnames(env):
        key = (env.all_docs.get(docname), str(app.config.nb_execution_cache_path))
        if docname not in memo or memo[docname][0] != key:
            memo[docname] = (key, chapter_problems(app, docname))
        for line, message, subtype in memo[docname][1]:
            logger.warning(message, location=(docname, line or None), type="engine",
                           subtype=subtype)


def setup(app):
    app.connect("builder-inited", warn_pages_missing_from_toc)
    app.connect("source-read", check_source)
    app.connect("env-updated", check_outputs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
