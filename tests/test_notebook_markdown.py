"""A downloaded notebook reads cleanly in plain JupyterLab or Colab: no raw MyST.

For every chapter's "Download .ipynb" of the built site (the README's build, or the
site at BOOK_SITE_DIR): no Markdown cell holds a directive fence (```{prf:theorem}),
a role ({numref}`...`, {prf:ref}`...`, {doc}`...`, {cite}`...`) or a `(label)=`
target line; theorems and exercises are titled blocks with the page's numbers;
every exercise's solution is folded (<details>, its code cells collapsed); every
citation points into a References cell; every player is a still figure that says so.
"""

import os
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]

from site_pages import BuildFailed, build_site, chapter_docnames

CHAPTERS = chapter_docnames()
FENCE = re.compile(r"^\s*(?:`{3,}|:{3,})\s*\{[^}]+\}", re.M)
ROLE = re.compile(r"(?<!`)\{[a-z][\w:-]*\}`")
TARGET = re.compile(r"^\s*\([^()\s]+\)=\s*$", re.M)
LISTING_TAG = "engine-listing"


@pytest.fixture(scope="module")
def site():
    given = os.environ.get("BOOK_SITE_DIR")
    if given:
        return Path(given)
    try:
        return build_site()
    except BuildFailed as error:
        pytest.fail(str(error), pytrace=False)


def _notebook(site, docname):
    path = site / "_sources" / f"{docname}.ipynb"
    assert path.exists(), f"no download at {path}"
    return nbformat.read(path, as_version=4)


def _prose(nb):
    """The Markdown a reader reads: every Markdown cell but the code listings."""
    return [c.source for c in nb.cells if c.cell_type == "markdown"
            and LISTING_TAG not in c.metadata.get("tags", [])]


def _without_code(text):
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


@pytest.mark.parametrize("docname", CHAPTERS, ids=lambda d: d.split("/")[-1])
def test_no_myst_markup_is_left(site, docname):
    prose = [_without_code(t) for t in _prose(_notebook(site, docname))]
    found = []
    for text in prose:
        found += [m.group(0).strip() for m in FENCE.finditer(text)]
        found += [m.group(0) for m in ROLE.finditer(text)]
        found += [m.group(0).strip() for m in TARGET.finditer(text)]
    assert not found, f"{len(found)} pieces of raw MyST: {sorted(set(found))[:12]}"


@pytest.mark.parametrize("docname", CHAPTERS, ids=lambda d: d.split("/")[-1])
def test_blocks_are_titled_and_solutions_folded(site, docname):
    nb = _notebook(site, docname)
    text = "\n".join(_prose(nb))
    source = (ROOT / f"{docname}.md").read_text(encoding="utf-8")
    theorems = len(re.findall(r"^\s*`{3,}\{prf:theorem\}", source, re.M))
    exercises = len(re.findall(r"^\s*`{3,}\{exercise\}", source, re.M))
    solutions = len(re.findall(r"^\s*`{3,}\{solution(?:-start)?\}", source, re.M))
    assert len(re.findall(r"^> \*\*Theorem [\d.]+", text, re.M)) == theorems
    assert len(re.findall(r"^> \*\*Exercise [\d.]+", text, re.M)) == exercises
    folded = set(re.findall(r"<summary><b>Solution to Exercise ([\d.]+)", text))
    assert len(folded) == solutions, f"{len(folded)} folded solutions for {solutions}"
    gated = re.findall(r"^\s*`{3,}\{solution-start\}", source, re.M)
    if gated:
        folded = [c for c in nb.cells if c.cell_type == "code"
                  and "solution" in c.metadata.get("tags", [])]
        assert folded and all(c.metadata.get("jupyter", {}).get("source_hidden")
                              for c in folded), "a solution's code cells are not folded"


@pytest.mark.parametrize("docname", CHAPTERS, ids=lambda d: d.split("/")[-1])
def test_citations_resolve_into_a_references_cell(site, docname):
    nb = _notebook(site, docname)
    text = "\n".join(_prose(nb))
    cited = set(re.findall(r"\]\(#ref-([\w:-]+)\)", text))
    source = (ROOT / f"{docname}.md").read_text(encoding="utf-8")
    if "{cite" not in source:
        return
    assert cited, "the chapter cites, the notebook shows no citation"
    anchors = set(re.findall(r'<a id="ref-([\w:-]+)"></a>', nb.cells[-1].source))
    assert cited <= anchors, f"citations without an entry: {sorted(cited - anchors)}"


def _is_still_player(cell):
    return any("is a player" in "".join(o.get("data", {}).get("text/markdown", ""))
               for o in cell.get("outputs", []))


def test_players_are_still_figures_with_a_note(site):
    players = 0
    for docname in CHAPTERS:
        nb = _notebook(site, docname)
        for i, cell in enumerate(nb.cells):
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                html = "".join(data.get("text/html", ""))
                assert 'class="animation"' not in html, f"{docname}: a player left as a script"
                if "is a player" in "".join(data.get("text/markdown", "")):
                    players += 1
                    assert "data:image/png;base64," in "".join(data["text/markdown"])
            if cell.cell_type != "markdown":
                continue
            if "is a player" in cell.source:
                players += 1
                assert "attachment:" in cell.source, "a player's note without its still frame"
            if "press play" in cell.source.lower():  # a caption written for the site
                assert "is a player" in cell.source or any(
                    _is_still_player(c) for c in nb.cells[max(0, i - 2):i + 1]), (
                    f"{docname}: a caption says 'press play' with no still player and note "
                    "just before it")
    assert players, "no player is shown as a still figure with its note"


def test_math_and_code_blocks_and_roles_become_plain_markdown():
    """No chapter has them yet; a chapter that writes them must not get a notebook that
    says "this place shows `math` output" or drops the dollars of an inline formula."""
    import notebook_markdown as nm

    class Page:  # what plain_markdown asks of a page: its folder, and no numbered labels
        root = Path(__file__).resolve().parents[1]

        def number(self, kind, label):
            return None

    text = ("Before.\n\n```{math}\n:label: eq-square\nx^2\n```\n\n"
            "```{code-block} python\nprint(1)\n```\n\nAfter.")
    assert nm.plain_markdown(text, Page()) == (
        'Before.\n\n<a id="eq-square"></a>\n$$\nx^2\n$$\n\n```python\nprint(1)\n```\n\nAfter.')
    assert nm.References.role(None, "math", r"\bar x") == r"$\bar x$"
    assert nm.References.role(None, "code", "x.grad") == "`x.grad`"
