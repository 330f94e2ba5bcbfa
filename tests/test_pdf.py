"""The whole book as one PDF, made by the README's PDF command (book/_ext/book_pdf.py).

The command runs once for this module (about 40 s after a site build, whose execution
cache it reuses). The PDF must exist, hold every chapter of `_toc.yml` by its title,
hold the four lines chapter `tensors` must print on the running program (BOOK-PLAN),
have its math typeset (no TeX left in its text), and carry each chapter's solutions
at the chapter's end. It needs Chromium like the browser tests: without it the tests
skip, unless BOOK_REQUIRE_BROWSER=1 (CI), where they fail.
"""

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PDF = ROOT / "_build" / "pdf" / "book.pdf"
COMMAND = ".venv/bin/python book/_ext/book_pdf.py"  # the README's PDF command
TENSORS_LINES = [
    "y       = [11.652  0.    -0.602]",
    "x1.grad = [5.5 1.  4. ]",
    "x2.grad = [1.716 0.    0.916]",
    "nodes in the graph: 7",
]


def _flat(text):
    # NFKC turns the font's ligatures (the "ff" of "differentiation") back into letters
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


def _chapter_titles():
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    from site_pages import toc_docnames

    titles = {}
    for docname in toc_docnames(ROOT):
        source = (ROOT / f"{docname}.md").read_text(encoding="utf-8")
        titles[docname] = re.search(r"^# (.+)$", source, re.M)[1].strip()
    return titles


@pytest.fixture(scope="module")
def pdf_text():
    if not Path("/usr/bin/chromium").exists():
        reason = "/usr/bin/chromium is not installed (.ci/run installs it)"
        if os.environ.get("BOOK_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " and BOOK_REQUIRE_BROWSER=1", pytrace=False)
        pytest.skip(reason)
    result = subprocess.run([sys.executable, "book/_ext/book_pdf.py"], cwd=ROOT,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert PDF.exists() and PDF.stat().st_size > 100_000, f"no PDF at {PDF}"
    from pypdf import PdfReader

    reader = PdfReader(str(PDF))
    return [page.extract_text() for page in reader.pages]


def test_the_readme_gives_the_pdf_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert COMMAND in readme, f"the README does not show the PDF command `{COMMAND}`"


def test_the_pdf_has_every_chapter_in_order(pdf_text):
    text = _flat("\n".join(pdf_text))
    at = 0
    for docname, title in _chapter_titles().items():
        found = text.find(_flat(title), at)
        assert found >= 0, f"{docname}: its title {title!r} is not in the PDF after the one before"
        at = found


def test_the_pdf_holds_the_four_lines_of_chapter_tensors(pdf_text):
    text = _flat("\n".join(pdf_text))
    missing = [line for line in TENSORS_LINES if _flat(line) not in text]
    assert not missing, f"lines of chapter tensors missing from the PDF: {missing}"


def test_the_pdf_math_is_typeset(pdf_text):
    text = "\n".join(pdf_text)
    raw = sorted(set(re.findall(r"\\(?:frac|partial|mathbb|begin|\(|\[)", text)))
    assert not raw, f"TeX left untypeset in the PDF: {raw}"


def test_solutions_stand_at_the_end_of_their_chapters(pdf_text):
    text = _flat("\n".join(pdf_text))
    with_solutions = [d for d in _chapter_titles()
                      if "solution-start" in (ROOT / f"{d}.md").read_text(encoding="utf-8")
                      or "{solution}" in (ROOT / f"{d}.md").read_text(encoding="utf-8")]
    heading = "Solutions to the exercises of this chapter"
    assert text.count(heading) == len(with_solutions), (
        f"{text.count(heading)} solution sections for {len(with_solutions)} chapters "
        "with solutions")
    # every solution is in a solutions section: none before the first heading
    first = text.find(heading)
    assert "Solution to Exercise" not in text[:first] and "Solution to" in text[first:]
