"""The README's PDF command, run once per session in a thread of its own.

It prints the PDF from the session's site (its execution cache, and the intro it
links the PDF from), so it starts by asking for that site, and waits while another
thread builds it. tests/test_pdf.py starts it as the session starts (tests/conftest.py),
so that it runs on the core the background matrix has left free; it also writes into
`_build/html`, so a test that compares that site with another one waits for it first
(`wait_if_started`).
"""

import subprocess
import sys
from pathlib import Path

from support import background

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "book/_ext/book_pdf.py"]  # the README's, with this venv's Python
PDF = ROOT / "_build" / "pdf" / "book.pdf"

_job = []


def _print():
    """The command's run, and the text of each page of the PDF it printed (None if the
    command failed): pypdf takes a while on the whole book, so that is done here too."""
    from site_pages import build_site  # raises BuildFailed: the PDF needs a built site

    build_site(ROOT)
    run = subprocess.run(COMMAND, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if run.returncode != 0 or not PDF.exists():
        return run, None
    from pypdf import PdfReader

    return run, [page.extract_text() for page in PdfReader(str(PDF)).pages]


def start():
    """Start the command now, in a thread, unless it was started already."""
    if not _job:
        _job.append(background.start(_print))


def result():
    """(the command's run, its pages' text): started now, and waited for, if nothing
    started it."""
    start()
    return _job[0].result()


def wait_if_started():
    """Wait until a started run has finished, whatever its outcome."""
    if _job:
        _job[0].exception()  # waits; a failure is test_pdf's to report
