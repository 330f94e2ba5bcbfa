"""Helpers shared by the browser tests (not a conftest, so tests can import it)."""

import threading
from pathlib import Path
from urllib.parse import urlparse

# the book's pages and its build, shared with the other tests (tests/support/books.py)
from support.books import BUILD_COMMAND, ROOT, chapter_docnames, run_build, toc_docnames  # noqa: F401

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 740}


def failed_request(url, failure, local):
    """The problem a failed request to the site `local` (host:port) shows, or None: Chromium
    aborts what is still loading when a page is reloaded or left (net::ERR_ABORTED)."""
    if urlparse(url).netloc != local or failure == "net::ERR_ABORTED":
        return None
    return f"request failed: {url} ({failure})"


def page_id(docname):
    return docname.replace("/", "-")


_BUILT = {}
_BUILDING = threading.Lock()  # the PDF and the notebooks' runs ask for the site from threads


class BuildFailed(Exception):
    pass


def build_site(root=ROOT):
    """Build the book once per process with the README's command; return `_build/html`.
    A caller that comes while another thread builds waits for that build."""
    with _BUILDING:
        return _build_site(Path(root))


def _build_site(root):
    if root not in _BUILT:
        try:
            _BUILT[root] = _run_site_build(root)
        except BuildFailed as error:  # kept, so that the next test fails at once, not rebuilds
            _BUILT[root] = error
    if isinstance(_BUILT[root], BuildFailed):
        raise _BUILT[root]
    return _BUILT[root]


def _run_site_build(root):
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
    return html
