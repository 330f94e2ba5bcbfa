"""Helpers shared by the browser tests (not a conftest, so tests can import it)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 740}


def toc_docnames(root=ROOT):
    """Every page of the book, in table-of-contents order."""
    from sphinx_external_toc.parsing import parse_toc_yaml

    return list(parse_toc_yaml(str(root / "_toc.yml")))


def chapter_docnames(root=ROOT):
    """The pages that are notebooks (a kernelspec in their front matter)."""
    sys.path.insert(0, str(root / "book" / "_ext"))
    import expectations

    chapters = {p.resolve() for p in expectations.chapter_paths(root)}
    return [d for d in toc_docnames(root) if (root / f"{d}.md").resolve() in chapters]


def page_id(docname):
    return docname.replace("/", "-")




BUILD_COMMAND = ["jupyter-book", "build", ".", "-W", "-n", "--keep-going"]  # the README's
_BUILT = {}


class BuildFailed(Exception):
    pass


def build_site(root=ROOT):
    """Build the book once per process with the README's command; return `_build/html`."""
    root = Path(root)
    if root in _BUILT:
        return _BUILT[root]
    command = [str(Path(sys.executable).parent / BUILD_COMMAND[0])] + BUILD_COMMAND[1:]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        log = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr).splitlines()
        shown = []
        for i, line in enumerate(log):  # each warning with the lines that explain it
            if re.search(r"WARNING|ERROR|Traceback|Exception", line) and "IPKernelApp" not in line:
                shown.append(line)
                shown += [ln for ln in log[i + 1:i + 12] if ln.startswith((" ", "\t"))][:10]
        raise BuildFailed("the book does not build warning-free (README build command):\n"
                          + "\n".join(shown[-80:] or log[-40:]))
    html = root / "_build" / "html"
    assert (html / "index.html").exists()
    _BUILT[root] = html
    return html
