"""Helpers shared by the browser tests (not a conftest, so tests can import it)."""

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


