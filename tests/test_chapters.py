"""One test per chapter of _toc.yml: every printed number matches its `expect:`.

Chapters are found when the tests are collected, so a chapter added to _toc.yml
is checked with no change here. `pytest --update-expect` rewrites the expect:
blocks that differ (see tests/verifier.py).
"""

import warnings

import pytest

import book_config
import verifier

CHAPTERS = book_config.chapter_paths(verifier.ROOT)


@pytest.mark.parametrize(
    "path", CHAPTERS, ids=[book_config.slug(path, verifier.ROOT) for path in CHAPTERS]
)
def test_chapter(path, request):
    result = verifier.verify(path, update=request.config.getoption("--update-expect"))
    if result.rewritten:
        lines = ", ".join(f"{result.name}:{line}" for line in result.rewritten)
        warnings.warn(f"rewrote expect: of the cells at {lines}", UserWarning)
    if not result.ok:
        pytest.fail(result.report(), pytrace=False)
