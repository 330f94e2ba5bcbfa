"""The execution report, and a build that fails on any unverified chapter.

* Every build checks every notebook page's EXECUTED outputs (the ones the site
  shows: from the execution cache, see `notebooks.executed_notebook`) with the
  verifier's own rules
  (`expectations.check_cell`): a cell that prints without an `expect:`, or whose
  output differs from it, wrote to stderr or raised, is a warning located at
  `book/<chapter>.md:<line>` of its ```{code-cell}``` fence. Warnings are errors in
  the book's build (`-W`), so an unverified chapter fails it.
  The check runs at `env-updated`, which Sphinx emits on every build, even one
  that re-reads nothing, so an unchanged but unverified chapter fails the next
  build too; what a chapter's check found is kept with the chapter's read time,
  so such a rebuild does not open the notebooks again. The page holding the
  report is re-read only when a chapter is (its numbers come from them): a
  rebuild with nothing changed reads and writes nothing of this extension's.
  A figure that reaches the page as its text repr (`<Figure size ...>`, no image)
  is a warning at its cell as well.
* ```{execution-report}``` renders one row per chapter: code cells (and how many
  the page shows, when some only draw a figure), verified outputs (cells with
  `expect:` that match, "n of m" when some do not), figures (of which interactive), run time, status, and the engine
  modules its cells import. Cells and outputs come from the executed notebook the
  page shows; the run time is the one engine_cache measured and stored with that
  notebook (`execution_seconds` in its cache record, the number its log line
  "engine_cache: ran ... in N s" and the verifier print), not myst-nb's (myst-nb
  only loads the cached notebook). The status is a word, never an emoji:
  `verified`; `nothing printed` (no output to check); `fails the build: N
  unverified` (a build with --keep-going still writes the page, but exits with an
  error); `execution failed`.
* A page that reads data files names them in its front matter, relative to the
  page (`data_files: [data/benchmarks.json]`); the page is re-read, and so
  re-executed if it also sets `mystnb: execution_mode: force`, whenever one of
  them changes.
"""

import ast
import posixpath
import re
from pathlib import Path

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

import expectations as ex
from notebooks import executed_notebook

LOGGER = logging.getLogger(__name__)
ENV_KEY = "engine_report_docs"
CHECK_KEY = "engine_report_checks"  # {docname: (key, problems)}, see check_chapters


# -- reading a chapter's executed notebook ------------------------------------------------


def code_cells(nb):
    """expectations.CodeCell for every code cell, with its fence line in the .md."""
    source_map = nb.metadata.get("source_map") or []
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        line = source_map[index] if index < len(source_map) else 0
        cells.append(ex.CodeCell(index, line, cell.source, dict(cell.metadata)))
    return cells


def failures(nb):
    """[(CodeCell, Failure)] for every rule a cell's executed output breaks."""
    found = []
    for cell in code_cells(nb):
        output = ex.cell_output(nb.cells[cell.index].get("outputs", []))
        for failure in ex.check_cell(cell, output):
            found.append((cell, failure))
    return found


_OBJECT_REPR = re.compile(r"^<(Figure size |matplotlib\.|[\w.]+ object at 0x)")


def textless_figures(nb, glue):
    """[(cell index or None, what)] for figures that reach the page as a repr, no image.

    E.g. `<Figure size 800x260 with 2 Axes>` where the PNG should be: the figure
    was displayed or glued after `matplotlib.use("Agg")` took IPython's image
    formatter away. The verifier reads only stdout and results, so this is checked
    here, on display outputs and glued values.
    """
    found = []
    outputs = [(i, o) for i, c in enumerate(nb.cells) if c.cell_type == "code"
               for o in c.get("outputs", []) if o.get("output_type") == "display_data"]
    outputs += [(o.get("metadata", {}).get("engine_cell_index"), o) for o in glue.values()]
    for index, output in outputs:
        data = output.get("data", {})
        text = data.get("text/plain", "")
        text = "".join(text) if isinstance(text, list) else text
        if set(data) <= {"text/plain"} and _OBJECT_REPR.match(text.strip()):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            found.append((index, (f"glued value {name!r}" if name else "a displayed output")
                          + f" shows only its text {text.strip()!r}, no image"))
    return found


def _is_image(data):
    return any(k.startswith("image/") for k in data)


def _is_player(data):
    html = data.get("text/html", "")
    if isinstance(html, list):
        html = "".join(html)
    return 'class="animation"' in html or "engine-interactive" in html


def figures(nb, glue):
    """(figures, interactive): image or player outputs, in cells and glued."""
    bundles = [o.get("data", {}) for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", []) if o.get("output_type") in ("display_data", "execute_result")]
    bundles += [o.get("data", {}) for o in glue.values()]
    shown = [b for b in bundles if _is_image(b) or _is_player(b)]
    return len(shown), sum(1 for b in shown if _is_player(b))


def _engine_exports(root):
    """{name: module} for `from .module import name` lines in engine/__init__.py."""
    exports = {}
    init = Path(root) / "engine" / "__init__.py"
    try:
        tree = ast.parse(init.read_text())
    except (OSError, SyntaxError):
        return exports
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                exports[alias.asname or alias.name] = f"engine.{node.module}"
    return exports


def engine_modules(nb, root):
    """Sorted engine modules the notebook's code cells import."""
    exports = _engine_exports(root)
    found = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join(ln for ln in cell.source.splitlines()
                           if not ln.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] == "engine"}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == "engine":
                    for alias in node.names:
                        if (Path(root) / "engine" / f"{alias.name}.py").exists():
                            found.add(f"engine.{alias.name}")
                        else:
                            found.add(exports.get(alias.name, "engine"))
                elif node.module.split(".")[0] == "engine":
                    found.add(node.module)
    return sorted(found)


def executed_once(app, docname):
    """`executed_notebook`, read once per build for the check and the table both."""
    made = app.__dict__.setdefault("_engine_report_executed", {})
    if docname not in made:
        made[docname] = executed_notebook(app, docname)
    return made[docname]


def run_seconds(app, docname):
    """Seconds the chapter's cached run took, as engine_cache measured and stored it."""
    import engine_cache

    try:
        chapter = ex.read_chapter(Path(app.env.doc2path(docname)), Path(app.srcdir))
    except (ex.ChapterError, ValueError):
        return None
    _, record = engine_cache.cached(chapter, engine_cache._build_dir(app), Path(app.srcdir))
    if record is None:
        return None
    return (record.data or {}).get("execution_seconds")


def status_of(row):
    """What the chapter's outputs mean for the build, in words."""
    if row["succeeded"] is False:
        return "execution failed"
    if row["unverified"]:
        return f"fails the build: {row['unverified']} unverified"
    if row["checked"] == 0:
        return "nothing printed"
    return "verified"


def chapter_row(app, docname, root, exec_data=None):
    """The report's numbers for one chapter (None when it has no executed notebook)."""
    nb, glue = executed_once(app, docname)
    if nb is None:
        return None
    cells = code_cells(nb)
    hidden = [c for c in cells if {"remove-cell", "remove-input"} & set(c.options.get("tags") or [])]
    problems = failures(nb)
    bad_lines = {cell.line for cell, _ in problems}
    verified = [c for c in cells if c.expect is not None and c.line not in bad_lines]
    n_figures, n_players = figures(nb, glue)
    exec_data = exec_data or {}
    return {
        "docname": docname,
        "code_cells": len(cells),
        "shown_cells": len(cells) - len(hidden),
        "checked": sum(1 for c in cells if c.expect is not None),
        "verified": len(verified),
        "unverified": len(bad_lines),
        "figures": n_figures,
        "interactive": n_players,
        "runtime": run_seconds(app, docname),
        "method": exec_data.get("method"),
        "succeeded": exec_data.get("succeeded"),
        "modules": engine_modules(nb, root),
    }


# -- Sphinx ------------------------------------------------------------------------


def notebook_docnames(env):
    return sorted(d for d in env.found_docs if "kernelspec" in env.metadata.get(d, {}))


def chapter_problems(app, docname):
    """[(line, message, subtype)]: the warnings `check_chapters` gives for one chapter."""
    nb, glue = executed_once(app, docname)
    if nb is None:
        return []
    found = []
    warned = app.__dict__.get("_engine_cache_warned", set())  # engine_cache ran it just now
    for cell, failure in failures(nb):
        if (docname, cell.line) in warned and failure.what.startswith(
                ("cell raised", "cell timed out")):
            continue
        detail = f"\n{failure.detail}" if failure.detail else ""
        found.append((cell.line, f"unverified output: {failure.what}{detail}", "unverified"))
    text = Path(app.env.doc2path(docname)).read_text(encoding="utf8")
    glued = {name: dict(output.get("data", {})) for name, output in glue.items()}
    for failure in ex.check_glue(text, code_cells(nb), glued, Path(app.srcdir)):
        found.append((failure.line, f"unchecked glue: {failure.what}", "glue"))
    lines = {cell.index: cell.line for cell in code_cells(nb)}
    for index, what in textless_figures(nb, glue):
        found.append((lines.get(index), f"figure without an image: {what} (was matplotlib's "
                      "backend switched, e.g. matplotlib.use(\"Agg\"), before it was shown?)",
                      "figure"))
    return found


def check_chapters(app, env):
    """Warn, at the cell's fence line, for every unverified output of every chapter.

    A chapter's outputs change only when Sphinx reads it again (then myst-nb takes
    them from the execution cache, or runs it) or when the engine, and so the cache
    folder, changes; the problems found are kept in the environment under that key,
    so a rebuild that reads nothing warns again without opening every notebook."""
    memo = getattr(env, CHECK_KEY, None)
    if memo is None:
        memo = {}
        setattr(env, CHECK_KEY, memo)
    for docname in notebook_docnames(env):
        key = (env.all_docs.get(docname), str(app.config.nb_execution_cache_path))
        if docname not in memo or memo[docname][0] != key:
            memo[docname] = (key, chapter_problems(app, docname))
        for line, message, subtype in memo[docname][1]:
            LOGGER.warning(message, location=(docname, line or None), type="engine",
                           subtype=subtype)


def reread_report(app, env, added, changed, removed):
    """Re-read the pages with a report when a chapter (a notebook, or a page not read
    before) is added, changed or removed: the report's numbers come from them."""
    reports = getattr(env, ENV_KEY, set())
    chapters = {d for d in changed if "kernelspec" in env.metadata.get(d, {"kernelspec": 1})}
    if not (set(added) | set(removed) | chapters) - reports:
        return []
    return sorted(d for d in reports if d in env.found_docs and d not in removed)


def front_matter(text):
    """The YAML front matter of a page's source as a dict ({} without one)."""
    import yaml

    match = re.match(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(\r?\n|\Z)", text, re.S)
    if not match:
        return {}
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def note_data_files(app, docname, source):
    """Make a page depend on the data files its front matter names (`data_files:`)."""
    files = front_matter(source[0]).get("data_files") or []
    folder = Path(app.env.doc2path(docname)).parent
    for name in [files] if isinstance(files, str) else files:
        path = (folder / str(name)).resolve()
        if not path.is_file():
            LOGGER.warning(f"data file {name!r} (named in the front matter's data_files) "
                           f"does not exist: {path}", location=(docname, 1), type="engine",
                           subtype="data_files")
        app.env.note_dependency(str(path))  # for the page being read: `docname`


def purge(app, env, docname):
    getattr(env, ENV_KEY, set()).discard(docname)
    getattr(env, CHECK_KEY, {}).pop(docname, None)


def merge(app, env, docnames, other):
    setattr(env, ENV_KEY, getattr(env, ENV_KEY, set()) | getattr(other, ENV_KEY, set()))


class report_node(nodes.General, nodes.Element):
    """Placeholder, replaced by the table once every chapter has been read."""


class ExecutionReport(SphinxDirective):
    has_content = False

    def run(self):
        if not hasattr(self.env, ENV_KEY):
            setattr(self.env, ENV_KEY, set())
        getattr(self.env, ENV_KEY).add(self.env.docname)
        return [report_node()]


COLUMNS = ["Chapter", "Code cells", "Verified outputs", "Figures (interactive)",
           "Run time (s)", "Status", "Engine modules (engine.*)"]


def _entry(*children):
    paragraph = nodes.paragraph()
    for child in children:
        paragraph += child if isinstance(child, nodes.Node) else nodes.Text(str(child))
    return nodes.entry("", paragraph)


def _table(app, env, docname):
    from notebooks import notebook_docnames as toc_ordered

    rows = []
    nb_metadata = getattr(env, "nb_metadata", {})
    for chapter in toc_ordered(env):
        exec_data = nb_metadata.get(chapter, {}).get("exec_data") or {}
        row = chapter_row(app, chapter, Path(app.srcdir), exec_data)
        if row is not None:
            rows.append(row)
    table = nodes.table(classes=["colwidths-auto", "engine-report"])
    group = nodes.tgroup(cols=len(COLUMNS))
    table += group
    for _ in COLUMNS:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    header = nodes.row()
    head += header
    for name in COLUMNS:
        header += _entry(name)
    body = nodes.tbody()
    group += body
    totals = {"code_cells": 0, "shown_cells": 0, "checked": 0, "verified": 0, "figures": 0,
              "interactive": 0, "runtime": 0.0}
    for row in rows:
        link = pending_xref(refdoc=docname, reftype="doc", refdomain="std", refexplicit=False,
                            reftarget="/" + row["docname"], refwarn=True, classes=["xref", "doc"])
        link += nodes.inline(text=row["docname"])
        status = status_of(row)
        runtime = "-" if row["runtime"] is None else f"{row['runtime']:.2f}"
        modules = [nodes.literal(text=m.split(".", 1)[1] if "." in m else m)
                   for m in row["modules"]] or ["-"]
        joined = []
        for i, m in enumerate(modules):
            joined += ([", "] if i else []) + [m]
        r = nodes.row()
        r += _entry(link)
        hidden = row["code_cells"] - row["shown_cells"]
        r += _entry(f"{row['code_cells']} ({row['shown_cells']} shown)" if hidden
                    else row["code_cells"])
        r += _entry(f"{row['verified']} of {row['checked']}"
                    if row["verified"] != row["checked"] else row["verified"])
        r += _entry(f"{row['figures']} ({row['interactive']})")
        r += _entry(runtime)
        r += _entry(status)
        r += _entry(*joined)
        body += r
        for key in ("code_cells", "shown_cells", "checked", "verified", "figures", "interactive"):
            totals[key] += row[key]
        totals["runtime"] += row["runtime"] or 0.0
    r = nodes.row(classes=["engine-report-total"])
    r += _entry(nodes.strong(text=f"{len(rows)} chapters"))
    r += _entry(f"{totals['code_cells']} ({totals['shown_cells']} shown)"
                if totals["code_cells"] != totals["shown_cells"] else totals["code_cells"])
    r += _entry(f"{totals['verified']} of {totals['checked']}"
                if totals["verified"] != totals["checked"] else totals["verified"])
    r += _entry(f"{totals['figures']} ({totals['interactive']})")
    r += _entry(f"{totals['runtime']:.2f}")
    r += _entry("")
    r += _entry("")
    body += r
    return table


class ReportTransform(SphinxPostTransform):
    default_priority = 8  # before the reference resolvers, which resolve the chapter links

    def run(self, **kwargs):
        for node in list(self.document.findall(report_node)):
            node.replace_self(_table(self.app, self.env, self.env.docname))


def setup(app):
    app.add_node(report_node)
    app.add_directive("execution-report", ExecutionReport)
    app.add_post_transform(ReportTransform)
    app.connect("env-get-outdated", reread_report)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("source-read", note_data_files)
    app.connect("env-updated", check_chapters)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
