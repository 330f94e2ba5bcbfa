"""The execution report (book/report.md says what each column means): the directive
```{execution-report}``` becomes a table of the runs engine_cache.py stored."""

import ast
from pathlib import Path

from sphinx.util.docutils import SphinxDirective

from book_config import chapter_paths
from build_warnings import chapter_problems, shown_outputs
from myst_reader import code_cells, prose_words
from engine_cache import page_run
from output_rules import STOPPING_ERRORS, is_interactive

COLUMNS = ["Chapter", "Prose words", "Code cells", "Verified outputs", "Figures (interactive)",
           "Run time (s)", "Status", "Engine modules (engine.*)"]
TOTALLED = ["words", "cells", "shown", "checked", "verified", "figures", "interactive", "seconds"]


def figures(nb, glue):
    """(figures, interactive): image, player or widget outputs, in cells and glued."""
    bundles = [output.get("data", {}) for _, output in shown_outputs(nb, glue)]
    shown = [b for b in bundles if any(k.startswith("image/") for k in b) or is_interactive(b)]
    return len(shown), sum(1 for b in shown if is_interactive(b))


def _engine_exports(root):
    """{name: module} for `from .module import name` lines in engine/__init__.py."""
    try:
        tree = ast.parse((Path(root) / "engine" / "__init__.py").read_text())
    except (OSError, SyntaxError):
        return {}
    return {alias.asname or alias.name: f"engine.{node.module}" for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
            for alias in node.names}


def engine_modules(nb, root):
    """Sorted engine modules the notebook's code cells import."""
    exports, found = _engine_exports(root), set()
    for cell in code_cells(nb):
        try:  # IPython's magics and shell lines are no Python
            tree = ast.parse("\n".join(line for line in cell.source.splitlines()
                                       if not line.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module != "engine":
                found.add(node.module)
            elif isinstance(node, ast.ImportFrom) and not node.level:  # engine's module or name
                found |= {f"engine.{a.name}" if Path(root, "engine", f"{a.name}.py").exists()
                          else exports.get(a.name, "engine") for a in node.names}
    return sorted(m for m in found if m.split(".")[0] == "engine")


def status_of(row):
    if row["stopped"]:
        return "execution failed"
    if row["unverified"]:
        return f"fails the build: {row['unverified']} unverified"
    return "nothing printed" if row["checked"] == 0 else "verified"


def chapter_numbers(app, docname, root):
    """The report's numbers for one chapter (None when it has no executed notebook)."""
    nb, glue, seconds = page_run(app, docname)
    if nb is None:
        return None
    cells = code_cells(nb)
    hidden = [c for c in cells if {"remove-cell", "remove-input"} & set(c.options.get("tags") or [])]
    bad_lines = {line for line, _, subtype in chapter_problems(app, docname)
                 if subtype in ("execution", "unverified")}  # a cell's own output
    checked = [c.line for c in cells if c.expect is not None]
    n_figures, n_interactive = figures(nb, glue)
    return {"words": prose_words((Path(root) / f"{docname}.md").read_text("utf-8"), root),
            "cells": len(cells), "shown": len(cells) - len(hidden), "checked": len(checked),
            "verified": len(set(checked) - bad_lines), "unverified": len(bad_lines),
            "figures": n_figures, "interactive": n_interactive, "seconds": seconds,
            "stopped": any(o.get("ename") in STOPPING_ERRORS
                           for c in nb.cells for o in c.get("outputs", [])),
            "modules": engine_modules(nb, root)}


def _columns(row):
    """Prose words to run time, as the table shows them."""
    return [f"{row['words']:,}",
            f"{row['cells']} ({row['shown']} shown)" if row["shown"] != row["cells"]
            else row["cells"],
            f"{row['verified']} of {row['checked']}" if row["verified"] != row["checked"]
            else row["verified"],
            f"{row['figures']} ({row['interactive']})",
            "-" if row["seconds"] is None else f"{row['seconds']:.2f}"]


def _table_row(cells):
    return "| " + " | ".join(map(str, cells)) + " |"


class MarkdownDirective(SphinxDirective):
    """A directive that becomes the MyST Markdown `markdown()` makes, rendered into the page
    as myst's {include} renders a file, headings and labels too (here and errors_page.py)."""

    def run(self):
        self.state._renderer.nested_render_text(self.markdown(), self.lineno)
        return []


class ExecutionReport(MarkdownDirective):
    def markdown(self):
        """The report as a MyST table: a row per chapter, then the totals."""
        root = Path(self.env.srcdir)
        # read again when a chapter or the book's contents change: the numbers are theirs
        self.env.note_dependency(str(root / "_toc.yml"))
        lines = ["```{table}", ":class: engine-report", ":widths: auto", "",
                 _table_row(COLUMNS), _table_row(["---"] * len(COLUMNS))]
        rows = []
        for path in chapter_paths(root):
            self.env.note_dependency(str(path))
            docname = path.relative_to(root).with_suffix("").as_posix()
            row = chapter_numbers(self.env.app, docname, root)
            if row is not None:
                rows.append(row)
                modules = ", ".join(f"`{m.split('.', 1)[-1]}`" for m in row["modules"]) or "-"
                lines.append(_table_row([f"{{doc}}`/{docname}`", *_columns(row), status_of(row),
                                         modules]))
        total = {key: sum(row[key] or 0 for row in rows) for key in TOTALLED}
        lines.append(_table_row([f"**{len(rows)} chapters**", *_columns(total), "", ""]))
        return "\n".join(lines + ["```"])


def setup(app):
    app.setup_extension("build_warnings")  # the warnings for what the report shows
    app.add_directive("execution-report", ExecutionReport)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
