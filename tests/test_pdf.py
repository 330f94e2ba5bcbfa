"""The whole book as one PDF, made by the README's PDF command (book/_ext/book_pdf.py).

The command runs once per session, in a thread started as the session starts
(`support/pdf_job.py`), after the site build, whose execution cache it reuses. The PDF
must exist, hold every chapter of `_toc.yml` by its title, hold the four lines chapter
`tensors` must print on the running program (BOOK-PLAN), have its math typeset (no TeX
left in its text), and carry each chapter's solutions at the chapter's end. It needs
Chromium like the browser tests: without it the tests skip, unless
BOOK_REQUIRE_BROWSER=1 (CI), where they fail.
"""

import os
import re
import shutil
import unicodedata
from pathlib import Path

import pytest

import book_pdf
from site_pages import CHROMIUM
from support import pdf_job
from support.side_jobs import Job

ROOT = Path(__file__).resolve().parents[1]
PDF = pdf_job.PDF
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
    from site_pages import toc_docnames

    titles = {}
    for docname in toc_docnames(ROOT):
        source = (ROOT / f"{docname}.md").read_text(encoding="utf-8")
        titles[docname] = re.search(r"^# (.+)$", source, re.M)[1].strip()
    return titles


def reads_background(item):
    """The tests of the printed PDF (tests/conftest.py runs them last)."""
    return "pdf_text" in getattr(item, "fixturenames", ())


def start_in_background(build):
    """Print the PDF in a thread from now on (tests/conftest.py calls this once the
    session is collected); without Chromium there is nothing to start."""
    if CHROMIUM.exists():
        pdf_job.start()


@pytest.fixture(scope="module")
def pdf_text():
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is not installed (.ci/run installs it)"
        if os.environ.get("BOOK_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " and BOOK_REQUIRE_BROWSER=1", pytrace=False)
        pytest.skip(reason)
    # the session's site first (the job builds it, or waits for the thread that does), so
    # that the PDF command finds a built site to link the PDF into
    from site_pages import BuildFailed

    try:
        result, pages = pdf_job.result()
    except BuildFailed as error:
        pytest.fail(str(error), pytrace=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert PDF.exists() and PDF.stat().st_size > 100_000, f"no PDF at {PDF}"
    return pages


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


# -- the site links the PDF exactly when it carries it ------------------------------------

INTRO = """<html><body><section>
<p>The whole book can also be printed as one PDF: the same executed chapters, with the math
typeset.</p>
</section></body></html>
"""


def _site(tmp_path):
    html = tmp_path / "_build" / "html"
    (html / "book").mkdir(parents=True)
    (html / "book" / "intro.html").write_text(INTRO)
    return html


def test_a_site_without_the_pdf_links_none(tmp_path):
    html = _site(tmp_path)
    assert not book_pdf.link_pdf(html, tmp_path / "_build" / "pdf" / "book.pdf")
    assert (html / "book" / "intro.html").read_text() == INTRO
    assert not (html / "book.pdf").exists()


def test_a_site_given_the_pdf_carries_it_and_links_it_once(tmp_path):
    html = _site(tmp_path)
    pdf = tmp_path / "_build" / "pdf" / "book.pdf"
    pdf.parent.mkdir(parents=True)
    pdf.write_bytes(b"%PDF-1.4 " + b"x" * 3000)
    assert book_pdf.link_pdf(html, pdf)
    assert book_pdf.link_pdf(html, pdf)  # the PDF command after a build that linked it
    intro = (html / "book" / "intro.html").read_text()
    assert intro.count('href="../book.pdf"') == 1, intro
    assert intro.index("as one PDF") < intro.index("eng-pdf-link")
    assert (html / "book.pdf").read_bytes() == pdf.read_bytes()


@pytest.mark.slow
def test_a_build_links_the_pdf_of_its_own_build_folder_only():
    """Built without a PDF, the intro links none (and no page asks the server for one);
    rebuilt once `_build/pdf/book.pdf` exists (even with no page out of date), the site
    carries the file and the intro links it. Each clean build leaves the site marked as
    built (the PDF command builds no more); a build with a warning leaves it unmarked."""
    PDF_LINKS.result()


def test_the_inputs_of_a_build_change_with_any_file_it_reads(tmp_path):
    """`site_is_built` compares them: an edit, a new file or a removed one under the top
    folder, book/ or engine/ means the site is not built; the build's own files do not.
    A site that has lost a page is not built either."""
    for name in ("book/one.md", "engine/tensor.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/one\n")
    before = book_pdf.book_inputs(tmp_path)
    html = tmp_path / "_build" / "html"
    assert not book_pdf.site_is_built(html, tmp_path)  # never built
    (tmp_path / "book" / "__pycache__").mkdir()
    (tmp_path / "book" / "__pycache__" / "one.pyc").write_text("x")
    html.mkdir(parents=True)
    (tmp_path / "_build" / ".html-inputs").write_text(before)  # as a clean build leaves it
    assert book_pdf.book_inputs(tmp_path) == before
    assert not book_pdf.site_is_built(html, tmp_path)  # its page is gone
    (html / "book").mkdir()
    (html / "book" / "one.html").write_text("x")
    assert book_pdf.site_is_built(html, tmp_path)
    (tmp_path / "engine" / "tensor.py").write_text("xy")
    edited = book_pdf.book_inputs(tmp_path)
    (tmp_path / "book" / "two.md").write_text("x")
    added = book_pdf.book_inputs(tmp_path)
    (tmp_path / "book" / "one.md").unlink()
    assert len({before, edited, added, book_pdf.book_inputs(tmp_path)}) == 4


def pdf_links(folder):
    """The probe's two builds, checked as they go (in the side thread: `side_jobs`)."""
    from support import books

    book = books.make_book(folder / "probe", books.SITE_POLISH_CONFIG, {"one": "# One\n\nText.\n"},
                           intro="# Intro\n\nThe whole book can also be printed as one PDF.\n")
    shutil.copytree(ROOT / "book" / "_ext", book / "book" / "_ext",
                    ignore=shutil.ignore_patterns("__pycache__"))
    html = book / "_build" / "html"
    code, log = books.run_build(book)
    assert code == 0, log[-3000:]
    assert book_pdf.site_is_built(html, book)
    intro = (html / "book" / "intro.html").read_text()
    assert "book.pdf" not in intro and not (html / "book.pdf").exists()
    pdf = book / "_build" / "pdf" / "book.pdf"
    pdf.parent.mkdir(parents=True)
    pdf.write_bytes(b"%PDF-1.4 " + b"x" * 3000)
    code, log = books.run_build(book)
    assert code == 0, log[-3000:]
    intro = (html / "book" / "intro.html").read_text()
    assert intro.count('href="../book.pdf"') == 1 and (html / "book.pdf").exists()
    assert book_pdf.site_is_built(html, book)
    (book / "book" / "one.md").write_text("# One\n\nA reference to {ref}`nowhere`.\n")
    assert not book_pdf.site_is_built(html, book)
    code, log = books.run_build(book)
    assert code != 0 and "nowhere" in log, log[-3000:]
    assert not book_pdf.site_is_built(html, book) and not (book / "_build" / ".html-inputs").exists()


PDF_LINKS = Job("pdf-links", pdf_links, guess=8)


def side_jobs(item):
    """The test process only waits on the probe's builds: they run beside the session
    (tests/support/side_jobs.py)."""
    return [PDF_LINKS] if item.originalname == (
        "test_a_build_links_the_pdf_of_its_own_build_folder_only") else []


def test_the_pdf_command_links_the_pdf_from_a_built_site(pdf_text):
    """After the README's PDF command, a site already built carries the PDF and links it
    (the command runs the same step as the build)."""
    html = ROOT / "_build" / "html"  # built before the command ran (the pdf_text fixture)
    assert (html / "book.pdf").read_bytes() == PDF.read_bytes()
    assert 'href="../book.pdf"' in (html / "book" / "intro.html").read_text()
