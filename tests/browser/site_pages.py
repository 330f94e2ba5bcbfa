"""Helpers shared by the browser tests (not a conftest, so tests can import it)."""

from pathlib import Path

# the book's pages and its build, shared with the other tests (tests/support/books.py)
from support.books import BUILD_COMMAND, ROOT, chapter_docnames, run_build, toc_docnames  # noqa: F401

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 740}


def page_id(docname):
    return docname.replace("/", "-")


_BUILT = {}


class BuildFailed(Exception):
    pass


def build_site(root=ROOT):
    """Build the book once per process with the README's command; return `_build/html`."""
    root = Path(root)
    if root in _BUILT:
        return _BUILT[root]
    code, log = run_build(root, command=BUILD_COMMAND[3:], timeout=1800)
    if code != 0:
        log = log.splitlines()
        shown = []
        for i, line in enumerate(log):  # each warning with the lines that explain it
            if (any(w in line for w in ("WARNING", "ERROR", "Traceback", "Exception"))
                    and "IPKernelApp" not in line):
                shown.append(line)
                shown += [ln for ln in log[i + 1:i + 12] if ln.startswith((" ", "\t"))][:10]
        raise BuildFailed("the book does not build warning-free (README build command):\n"
                          + "\n".join(shown[-80:] or log[-40:]))
    html = root / "_build" / "html"
    assert (html / "index.html").exists()
    _BUILT[root] = html
    return html
