"""A sentence about a computation is checked like a printed number.

Where the prose says what a computation gives (a count, an order, a limit), a hidden cell
right after the computation asserts it on the computed objects. This test takes a real
chapter up to one such check, makes the claim false by editing the check's expected
value (as an edit of the prose's number would require), and runs the chapter verifier:
it must fail, naming the chapter and the line of the check's cell.
"""

import shutil
from pathlib import Path

import pytest

import book_config
import myst_reader
import verifier

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "chain-rule"
CLAIM = ("round(slopes[0], 9) == 33", "round(slopes[0], 9) == 34")  # "dy/dx falls from 33"

pytestmark = pytest.mark.slow


def book_copy(folder, text):
    """The engine, the configuration, the pins and one chapter: what the verifier reads."""
    book = folder / "book-copy"
    shutil.copytree(ROOT / "engine", book / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("_toc.yml", "_config.yml", "requirements.txt"):
        shutil.copy(ROOT / name, book)
    (book / "book").mkdir()
    shutil.copy(ROOT / book_config.RUNTIME_PINS, book / book_config.RUNTIME_PINS)
    (book / "book" / f"{CHAPTER}.md").write_text(text, encoding="utf-8")
    return book


def claim_check(text):
    """The fence of the hidden cell that asserts the claim."""
    return next(f for f in myst_reader.code_cell_fences(text)
                if "remove-cell" in f.options.get("tags", "") and CLAIM[0] in f.content)


def test_a_false_claim_fails_the_verifier_naming_chapter_and_line(tmp_path):
    text = (ROOT / "book" / f"{CHAPTER}.md").read_text(encoding="utf-8")
    check = claim_check(text)  # StopIteration: the claim this test edits has moved
    lines = text.split("\n")[: check.end]  # the chapter up to and with that check
    head = "\n".join(lines) + "\n"
    # the true claim passes: tests/test_chapters.py verifies the whole chapter
    book = book_copy(tmp_path, head.replace(*CLAIM))
    bad = verifier.verify(book / "book" / f"{CHAPTER}.md", root=book, build=book / "_build")
    report = bad.report()
    assert [f.line for f in bad.failures] == [check.line], report
    assert f"book/{CHAPTER}.md:{check.line}" in report and "AssertionError" in report, report
    assert "falls from 33" in report, report  # the check's own message says which claim
