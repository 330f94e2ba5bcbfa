"""The whole book as one PDF, printed from the built site by Debian's headless Chromium.

    .venv/bin/python book/_ext/book_pdf.py          (the README's PDF command)

It builds the site unless a clean build left it as the book is now (`site_is_built`), joins
the articles of its pages in the book's order into `_build/pdf/book.html`, with the print
style and a `beforeprint` handler that opens every folded block, moves each chapter's
solutions to its end and hides the players' buttons, and prints that to A4 as
`_build/pdf/book.pdf`. Then it copies the PDF into the site and links it from the intro, as
a site build that finds the PDF does (`setup`): a site carries the link exactly when it
carries the file. tests/test_pdf.py checks both.
"""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from book_config import ROOT, content_hash, file_stamps, toc_docnames

HTML, PDF = ROOT / "_build" / "html", ROOT / "_build" / "pdf" / "book.pdf"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--no-pdf-header-footer", "--disable-pdf-tagging",
                 "--virtual-time-budget=600000"]  # virtual ms for MathJax to typeset first
ARTICLE = re.compile(r'<article class="bd-article">.*?</article>', re.S)
BOOK_TOC = re.compile(r'<p aria-level="2" class="caption".*?(?=\s*</div>\s*</nav>)', re.S)  # sidebar's
PAGE_TOC = re.compile(r'<nav aria-label="Page">.*?</nav>', re.S)  # the printed contents
SOLUTION = re.compile(r'<div class="solution\b')

# the print style and the `beforeprint` handler, put into the joined page
PAPER = Path(__file__).with_name("pdf_print.html").read_text(encoding="utf-8")


def one_page(html=HTML, out=PDF.with_suffix(".html"), root=ROOT):
    """The site's pages joined in the book's order into the intro's page, its contents the
    book's; links between pages lead inside it, `../_static` and `../_images` into the site.
    Returns (page, chapters, solutions)."""
    docnames = toc_docnames(root)
    intro = (html / f"{docnames[0]}.html").read_text(encoding="utf-8")
    articles = [ARTICLE.search((html / f"{d}.html").read_text(encoding="utf-8"))[0]
                for d in docnames]
    first_id = {f"{Path(d).name}.html": "#" + re.search(r' id="([^"]+)"', article)[1]
                for d, article in zip(docnames, articles)}
    book_toc = f'<nav aria-label="Book">{BOOK_TOC.search(intro)[0]}</nav>'
    text = ARTICLE.sub(lambda _: "\n".join(articles), PAGE_TOC.sub(lambda _: book_toc, intro, 1), 1)
    text = re.sub(r'href="([\w-]+\.html)(#[^"]*)?"', lambda m: f'href="{m[2] or first_id[m[1]]}"'
                  if m[1] in first_id else m[0], text)
    text = re.sub(r'(["(])\.\./_', r"\1../html/_", LINK_TO_PDF.sub("", text))  # a link to itself
    text = text.replace("</head>", PAPER + "</head>", 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out, len(articles), sum(len(SOLUTION.findall(a)) for a in articles)


def print_pdf(page, out=PDF):
    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    done = subprocess.run([str(CHROMIUM), *CHROMIUM_ARGS, f"--print-to-pdf={out}", page.as_uri()],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit("Chromium could not print the book:\n" + done.stderr[-3000:])


# -- the site carries the PDF -------------------------------------------------------------

PDF_LINK = ('<p class="eng-pdf-link">This copy of the site carries it: '
            '<a class="reference external" href="../book.pdf">book.pdf</a> ({size}).</p>')
LINK_TO_PDF = re.compile(r'\n?<p class="eng-pdf-link">.*?</p>', re.S)
_PDF_PARAGRAPH = re.compile(r"<p>[^<]*\bas one PDF\b.*?</p>", re.S)


def link_pdf(html, pdf):
    """Copy `pdf` to the site at `html` and link it after the intro's paragraph about the
    PDF; return whether the site links it. Twice changes nothing; without a PDF or an
    intro, nothing is done."""
    html, pdf = Path(html), Path(pdf)
    intro = html / "book" / "intro.html"
    if not pdf.is_file() or not intro.is_file():
        return False
    _replace(html / "book.pdf", lambda part: shutil.copyfile(pdf, part))  # before its link
    text = LINK_TO_PDF.sub("", intro.read_text(encoding="utf-8"))
    paragraph = _PDF_PARAGRAPH.search(text)
    if paragraph is None:
        return False
    link = PDF_LINK.format(size=f"{pdf.stat().st_size / 2**20:.1f} MiB")
    text = text[:paragraph.end()] + "\n" + link + text[paragraph.end():]
    _replace(intro, lambda part: part.write_text(text, encoding="utf-8"))
    return True


def _replace(path, write):
    """Write `path` whole or not at all: a reader of the site (a browser test, a server)
    that opens it meanwhile gets the old file or the new one, never half of one."""
    part = path.with_name(path.name + ".part")
    write(part)
    os.replace(part, path)


def _link_after_build(app, exception):
    if exception is None and app.builder.name == "html":
        link_pdf(app.outdir, Path(app.outdir).parent / "pdf" / "book.pdf")


# -- a site built cleanly is not built again ----------------------------------------------

def book_inputs(root=ROOT) -> str:
    """A hash of the name, time and size of every file of the book's top folder, book/ and
    engine/ (what a build reads): it changes when one is edited, added or removed."""
    root = Path(root).resolve()
    found = [*root.glob("*"), *(root / "book").rglob("*"), *(root / "engine").rglob("*")]
    files = sorted(p for p in found if p.is_file() and not p.name.startswith(".")
                   and "__pycache__" not in p.parts)
    return content_hash((path, f"{time} {size}") for path, time, size in file_stamps(files))


def _inputs_stamp(html) -> Path:
    return Path(html).parent / ".html-inputs"


def _forget_built_site(app):  # taken at the start: a file edited meanwhile builds again
    if app.builder.name == "html":
        app.book_inputs = book_inputs(app.srcdir)
        _inputs_stamp(app.outdir).unlink(missing_ok=True)


def _stamp_built_site(app, exception):
    # the README's build (-W --keep-going sets keep_going, -n nitpicky) without a warning:
    # the handlers before this one counted theirs
    if (exception is None and app.builder.name == "html" and app.keep_going
            and app.config.nitpicky and not app._warncount):
        _inputs_stamp(app.outdir).write_text(app.book_inputs)


def site_is_built(html=HTML, root=ROOT) -> bool:
    """Whether the README's build made the site at `html` without a warning, no file it
    reads has changed since it started, and the site still has every page of the book."""
    stamp, pages = _inputs_stamp(html), [Path(html) / f"{d}.html" for d in toc_docnames(root)]
    return (stamp.is_file() and stamp.read_text() == book_inputs(root)
            and all(page.is_file() for page in pages))


def setup(app):
    app.connect("builder-inited", _forget_built_site)
    app.connect("build-finished", _link_after_build, priority=910)
    app.connect("build-finished", _stamp_built_site, priority=1000)  # the last handler
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main():
    start, site = time.monotonic(), "the site was built already"
    if not site_is_built():  # else the README's build would run no cell and change nothing
        build = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", ".",
                                "-W", "-n", "--keep-going"],
                               cwd=ROOT, capture_output=True, text=True)
        if build.returncode != 0:
            raise SystemExit("the site's build failed:\n" + (build.stdout + build.stderr)[-4000:])
        site = f"site build {time.monotonic() - start:.0f} s"
    built = time.monotonic()
    page, chapters, solutions = one_page()
    print_pdf(page)
    print(f"{PDF.relative_to(ROOT)}: {PDF.stat().st_size // 1024} KiB, {chapters} pages of the "
          f"book, {solutions} solutions at chapter ends ({site}, "
          f"printing {time.monotonic() - built:.0f} s)")
    if link_pdf(HTML, PDF):
        print("_build/html: the intro links book.pdf")


if __name__ == "__main__":
    main()
