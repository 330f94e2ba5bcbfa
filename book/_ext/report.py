"""The execution report: one row per chapter, from the outputs the site shows.

* The build's warnings for unverified outputs are build_checks.py's; this page
  shows what they found, chapter by chapter.
* ```{execution-report}``` renders one row per chapter: code cells (and how many
  the page shows, when some only draw a figure), verified outputs (cells with
  `expect:` that match, "n of m" when some do not), figures (of which interactive: players and widgets), run time, status, and the engine
  modules its cells import. Cells and outputs come from the executed notebook the
  page shows; the run time is the one engine_cache measured and stored with that
  notebook (`execution_seconds` in its cache record, the number its log line
  "engine_cache: ran ... in N s" and the verifier print), not myst-nb's (myst-nb
  only loads the cached notebook). The status is a word, never an emoji:
  `verified`; `nothing printed` (no output to check); `fails the build: N
  unverified` (a build with --keep-going still writes the page, but exits with an
  error); `execution failed`.
"""

import ast
from pathlib import Path

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

from book_config import notebook_docnames
from build_checks import failures
from cells import code_cells, prose_words
from checks import is_interactive
from engine_cache import shown_notebook

ENV_KEY = "engine_report_docs"


def _is_image(data):
    return any(k.startswith("image/") for k in data)


def figures(nb, glue):
    """(figures, interactive): image, player or widget outputs, in cells and glued."""
    bundles = [o.get("data", {}) for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", []) if o.get("output_type") in ("display_data", "execute_result")]
    bundles += [o.get("data", {}) for o in glue.values()]
    shown = [b for b in bundles if _is_image(b) or is_interactive(b)]
    return len(shown), sum(1 for b in shown if is_interactive(b))


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
    nb, glue, seconds = shown_notebook(app, docname)
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
        "runtime": seconds,
        "succeeded": exec_data.get("succeeded"),
        "modules": engine_modules(nb, root),
        "words": prose_words((Path(root) / f"{docname}.md").read_text(encoding="utf-8"), root),
    }


# -- Sphinx ------------------------------------------------------------------------


def reread_report(app, env, added, changed, removed):
    """Re-read the pages with a report when a chapter (a notebook, or a page not read
    before) is added, changed or removed: the report's numbers come from them."""
    reports = getattr(env, ENV_KEY, set())
    chapters = {d for d in changed if "kernelspec" in env.metadata.get(d, {"kernelspec": 1})}
    if not (set(added) | set(removed) | chapters) - reports:
        return []
    return sorted(d for d in reports if d in env.found_docs and d not in removed)


def purge(app, env, docname):
    getattr(env, ENV_KEY, set()).discard(docname)


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


COLUMNS = ["Chapter", "Prose words", "Code cells", "Verified outputs", "Figures (interactive)",
           "Run time (s)", "Status", "Engine modules (engine.*)"]


def _entry(*children):
    paragraph = nodes.paragraph()
    for child in children:
        paragraph += child if isinstance(child, nodes.Node) else nodes.Text(str(child))
    return nodes.entry("", paragraph)


def _table(app, env, docname):
    rows = []
    nb_metadata = getattr(env, "nb_metadata", {})
    for chapter in notebook_docnames(env):
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
              "interactive": 0, "runtime": 0.0, "words": 0}
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
        r += _entry(f"{row['words']:,}")
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
        for key in ("code_cells", "shown_cells", "checked", "verified", "figures", "interactive",
                    "words"):
            totals[key] += row[key]
        totals["runtime"] += row["runtime"] or 0.0
    r = nodes.row(classes=["engine-report-total"])
    r += _entry(nodes.strong(text=f"{len(rows)} chapters"))
    r += _entry(f"{totals['words']:,}")
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
    app.setup_extension("build_checks")  # the warnings for what the report shows
    app.add_node(report_node)
    app.add_directive("execution-report", ExecutionReport)
    app.add_post_transform(ReportTransform)
    app.connect("env-get-outdated", reread_report)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
