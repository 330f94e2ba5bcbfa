"""The execution report (book/report.md says what each column means): its
```{execution-report}``` block becomes a MyST table when the page is read, from the runs
engine_cache.py stored before any page is read."""

import ast
from pathlib import Path

from book_config import chapter_paths
from build_warnings import cell_failures
from myst_reader import code_cells, prose_words
from engine_cache import page_run
from output_rules import STOPPING_ERRORS, is_interactive

MARKER = "```{execution-report}\n```"
COLUMNS = ["Chapter", "Prose words", "Code cells", "Verified outputs", "Figures (interactive)",
           "Run time (s)", "Status", "Engine modules (engine.*)"]


def figures(nb, glue):
    """(figures, interactive): image, player or widget outputs, in cells and glued."""
    bundles = [o.get("data", {}) for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", [])
               if o.get("output_type") in ("display_data", "execute_result")]
    bundles += [o.get("data", {}) for o in glue.values()]
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
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:  # IPython's magics and shell lines are no Python
            tree = ast.parse("\n".join(line for line in cell.source.splitlines()
                                       if not line.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] == "engine"}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "engine":
                for alias in node.names:
                    module = (Path(root) / "engine" / f"{alias.name}.py").exists()
                    found.add(f"engine.{alias.name}" if module else exports.get(alias.name, "engine"))
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                    node.module.split(".")[0] == "engine"):
                found.add(node.module)
    return sorted(found)


def status_of(stopped, unverified, checked):
    """What the chapter's outputs mean for the build, in words."""
    if stopped:
        return "execution failed"
    if unverified:
        return f"fails the build: {unverified} unverified"
    return "nothing printed" if checked == 0 else "verified"


def chapter_numbers(app, docname, root):
    """The report's numbers for one chapter (None when it has no executed notebook)."""
    nb, glue, seconds = page_run(app, docname)
    if nb is None:
        return None
    cells = code_cells(nb)
    hidden = [c for c in cells if {"remove-cell", "remove-input"} & set(c.options.get("tags") or [])]
    bad_lines = {cell.line for cell, _ in cell_failures(nb)}
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


def report_markdown(app):
    """The table that replaces the marker: a row per chapter, then the totals."""
    root = Path(app.srcdir)
    lines = ["```{table}", ":class: engine-report", ":widths: auto", "", _table_row(COLUMNS),
             _table_row(["---"] * len(COLUMNS))]
    total = dict.fromkeys(["words", "cells", "shown", "checked", "verified", "figures",
                           "interactive", "seconds"], 0)
    chapters = 0
    for path in chapter_paths(root):
        docname = path.relative_to(root).with_suffix("").as_posix()
        row = chapter_numbers(app, docname, root)
        if row is None:
            continue
        chapters += 1
        for key in total:
            total[key] += row[key] or 0
        status = status_of(row["stopped"], row["unverified"], row["checked"])
        modules = ", ".join(f"`{m.split('.', 1)[-1]}`" for m in row["modules"]) or "-"
        lines.append(_table_row([f"{{doc}}`/{docname}`", *_columns(row), status, modules]))
    lines.append(_table_row([f"**{chapters} chapters**", *_columns(total), "", ""]))
    return "\n".join(lines + ["```"])


class GeneratedBlock:
    """A block that becomes the Markdown `make(app)` returns when its page is read (here
    and on the errors page); the pages holding it are read again when
    `stale(env, added, changed, removed, pages)` says so."""

    def __init__(self, app, key, marker, make, stale):
        self.key, self.marker, self.make, self.stale = key, marker, make, stale  # key: in env
        app.connect("source-read", self.fill)
        app.connect("env-get-outdated", self.outdated)
        app.connect("env-purge-doc", self.purge)
        app.connect("env-merge-info", self.merge)

    def pages(self, env) -> set:
        return env.__dict__.setdefault(self.key, set())

    def fill(self, app, docname, source):
        if self.marker in source[0]:
            self.pages(app.env).add(docname)
            source[0] = source[0].replace(self.marker, self.make(app))

    def outdated(self, app, env, added, changed, removed):
        if not self.stale(env, added, changed, removed, self.pages(env)):
            return []
        return sorted(d for d in self.pages(env) if d in env.found_docs and d not in removed)

    def purge(self, app, env, docname):
        self.pages(env).discard(docname)

    def merge(self, app, env, docnames, other):
        self.pages(env).update(self.pages(other))


def chapters_changed(env, added, changed, removed, pages):
    """A chapter (a notebook, or a page not read before) was added, changed or removed:
    the report's numbers come from them."""
    chapters = {d for d in changed if "kernelspec" in env.metadata.get(d, {"kernelspec": 1})}
    return bool((set(added) | set(removed) | chapters) - pages)


def setup(app):
    app.setup_extension("build_warnings")  # the warnings for what the report shows
    GeneratedBlock(app, "engine_report_docs", MARKER, report_markdown, chapters_changed)
    # version 2: the table is Markdown now; a build read with a node of version 1 starts afresh
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 2}
