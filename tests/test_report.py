"""The execution report, and the build-time check that fails on an unverified chapter.

A throwaway book with the book's own extensions (book/_ext) and two chapters:
`good` (every printed output has a matching `expect:`, a figure, an interactive
player, an engine listing) and `bad` (one cell prints without `expect:`, one
prints something else than its `expect:`). Building it must fail with warnings
that name `book/bad.md:<line of the cell>`; building it again unchanged must fail
again (Sphinx re-reads nothing then, so the check must not ride on re-reading);
once `bad` is fixed the build passes and the report page shows each chapter's
numbers.
"""

import re
import shutil
import sys
from pathlib import Path

import pytest

import book_config
import myst_reader
from support import books
from support.side_jobs import Job
from support.books import FRONT

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

CONFIG = """\
title: report probe
only_build_toc_files: true
exclude_patterns: [_build, engine]
execute:
  execute_notebooks: cache
  stderr_output: warn
  timeout: 60
sphinx:
  local_extensions:
    engine_cache: book/_ext
    notebooks: book/_ext
    report: book/_ext
    site_assets: book/_ext
  config:
    nitpicky: true
"""

GOOD = FRONT + """
# Good

```{code-cell} ipython3
---
expect: |
  x1.grad = [5.5 1.  4. ]
---
import numpy as np
import matplotlib.pyplot as plt
from myst_nb import glue
from engine import Tensor
from engine.figures import interactive
x1 = Tensor([2, 1, 0.5]); x2 = Tensor([5, 0, 2])
y = x1.log() + x1 * x2 - x2.sin()
y.backward()
print("x1.grad =", np.round(x1.grad, 3))
```

```{literalinclude} ../engine/tensor.py
:language: python
:pyobject: Tensor.__mul__
```

```{code-cell} ipython3
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([0, 1], [0, 1])
glue("fig-line", fig, display=False)
plt.close(fig)
fig, ax = plt.subplots(figsize=(3, 2))
line, = ax.plot([0, 1], [0, 0])
glue("fig-player", interactive(fig, lambda k: line.set_ydata([0, k]), range(3)), display=False)
```

```{glue:figure} fig-line
:name: fig-line

A line.
```

```{glue:figure} fig-player
:name: fig-player

A player.
```
"""

BAD = FRONT + """
# Bad

```{code-cell} ipython3
print("no expectation")
```

```{code-cell} ipython3
---
expect: |
  two = 2
---
print("two =", 1 + 2)
```

```{code-cell} ipython3
import matplotlib
matplotlib.use("Agg")  # takes IPython's PNG formatter away: the glue gets text only
import matplotlib.pyplot as plt
from myst_nb import glue
fig, ax = plt.subplots()
glue("fig-text", fig, display=False)
plt.close(fig)
```

```{glue:figure} fig-text
:name: fig-text

No image.
```

```{code-cell} ipython3
---
glue:
  half: "0.6"
---
glue("half", 0.5, display=False)
glue("third", 1 / 3, display=False)
```

A half is {glue:text}`half:.1f`, and
a third is {glue:text}`third:.2f`.
"""

FIXED = (BAD.replace('print("no expectation")', "x = 1").replace("1 + 2", "1 + 1")
         .replace('matplotlib.use("Agg")', "pass")
         .replace('half: "0.6"', 'half: "0.5"\n  third: "0.33"'))

REPORT = """\
# Report

```{execution-report}
```

```{nb-exec-table}
```
"""


def make_book(book, bad=BAD):
    """The report probe at `book`: intro, good, bad (as given) and the report page."""
    books.make_book(book, CONFIG, {"good": GOOD, "bad": bad, "report": REPORT},
                    intro="# Probe\n\n{book-archive}`Everything`\n")
    shutil.copytree(ROOT / "book" / "_ext", book / "book" / "_ext",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # the listing reads the repository's engine; the kernel imports the installed one
    shutil.copytree(ROOT / "engine", book / "engine",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", book)
    shutil.copy(ROOT / "requirements.txt", book)
    shutil.copy(ROOT / book_config.RUNTIME_PINS, book / book_config.RUNTIME_PINS)
    return book


# Each test takes the build it needs from a job of its own, so any one test runs alone
# and in any order: `broken` is the probe with bad.md unverified, built once from clean,
# then once more unchanged; `fixed` is a second probe with bad.md fixed, built once from
# clean. The test process only waits on these builds, so they run beside the session
# (tests/support/side_jobs.py), and their tests last.


def build_broken(folder):
    """(book, exit code, log, good.html of that first, clean build, (exit code, log) of
    the unchanged rebuild)."""
    book = make_book(folder / "report-broken")
    code, log = build(book)
    html = (book / "_build" / "html" / "book" / "good.html").read_text()
    return book, code, log, html, build(book)


def build_fixed(folder):
    """(book, exit code, log) of a clean build of the probe with bad.md fixed."""
    book = make_book(folder / "report-fixed", bad=FIXED)
    code, log = build(book)
    return book, code, log


BROKEN, FIXED_BUILD = Job("report-broken", build_broken, 30), Job("report-fixed", build_fixed, 9)


def side_jobs(item):
    fixtures = getattr(item, "fixturenames", ())
    return [job for name, job in (("broken", BROKEN), ("fixed", FIXED_BUILD)) if name in fixtures]


@pytest.fixture(scope="module")
def broken():
    return BROKEN.result()


@pytest.fixture(scope="module")
def fixed():
    return FIXED_BUILD.result()


def build(book):
    return books.run_build(book)


line_of = books.fence_of  # the fence line of the cell holding a needle


def test_unverified_chapter_fails_the_build_at_its_cells(broken):
    _, code, log, _, _ = broken
    assert code != 0, log[-3000:]
    missing = line_of(BAD, 'print("no expectation")')
    differs = line_of(BAD, "1 + 2")
    assert re.search(rf"book/bad\.md:{missing}: WARNING: unverified output: cell prints text "
                     r"but has no expect:", log), log[-3000:]
    assert re.search(rf"book/bad\.md:{differs}: WARNING: unverified output: printed text "
                     r"differs from expect:", log), log[-3000:]
    assert "+two = 3" in log  # the difference is shown
    # glued values in the prose: one that differs from its declaration, one undeclared
    glue_cell = line_of(BAD, 'glue("half"')
    assert re.search(rf"book/bad\.md:{glue_cell}: WARNING: unchecked glue: glued value 'half', "
                     rf"shown at line {glue_cell + 9}, is '0.5', glue: says '0.6'", log), log[-3000:]
    assert re.search(rf"book/bad\.md:{glue_cell + 10}: WARNING: unchecked glue: the page shows "
                     r"glued value 'third' \('0.33'\) and no check covers it", log), log[-3000:]
    agg = line_of(BAD, 'matplotlib.use("Agg")')
    assert re.search(rf"book/bad\.md:{agg}: WARNING: figure without an image: glued value "
                     r"'fig-text' shows only its text '<Figure size", log), log[-3000:]
    assert "good.md" not in " ".join(ln for ln in log.splitlines() if "WARNING" in ln)


def test_a_clean_build_links_stylesheets_and_scripts_as_a_rebuild_does(broken):
    """Sphinx and extensions copy some files into _static after the pages are written,
    so a clean build used to link them without the checksum (`?v=...`) that a rebuild
    adds: two correct builds differed."""
    html = broken[3]
    links = re.findall(r'(?:href|src)="[^"]*_static/([^"]+\.(?:css|js)[^"]*)"', html)
    assert any(link.startswith("mystnb.") for link in links), links
    assert all("?v=" in link or "?digest=" in link for link in links), links


def test_an_unchanged_rebuild_fails_again(broken):
    code, log = broken[4]
    assert code != 0, "the second build passed although bad.md is still unverified"
    assert "book/bad.md:" in log


def test_fixed_chapter_builds_and_the_report_shows_every_chapter(fixed):
    book, code, log = fixed
    assert code == 0, log[-3000:]
    html = (book / "_build" / "html" / "book" / "report.html").read_text()
    table = html[html.index("engine-report"):]
    table = table[: table.index("</table>")]
    rows = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip()
            for row in re.findall(r"<tr.*?</tr>", table, re.S)]
    good = next(r for r in rows if r.startswith("Good"))
    bad = next(r for r in rows if r.startswith("Bad"))
    words = {name: f"{myst_reader.prose_words((book / 'book' / f'{name}.md').read_text(), book):,}"
             for name in ("good", "bad")}
    # chapter, prose words, code cells, verified outputs, figures (interactive), time, status,
    # modules
    assert re.fullmatch(rf"Good {words['good']} 2 1 2 \(1\) [\d.]+ verified figures , tensor", good), good
    assert re.fullmatch(rf"Bad {words['bad']} 4 1 1 \(0\) [\d.]+ verified -", bad), bad
    total = int(words["good"].replace(",", "")) + int(words["bad"].replace(",", ""))
    assert any(r.startswith(f"2 chapters {total:,} 6 2 3 (1)") for r in rows), rows
    assert "nb-exec-table" not in html and "Run Time" in html  # myst-nb's table is there too


def test_download_menu_and_archive(fixed):
    book, code, log = fixed
    assert code == 0, log[-3000:]
    html = (book / "_build" / "html" / "book" / "good.html").read_text()
    assert 'href="../_sources/book/good.ipynb"' in html
    assert (book / "_build" / "html" / "_sources" / "book" / "good.ipynb").exists()
    intro = (book / "_build" / "html" / "book" / "intro.html").read_text()
    assert 'href="../downloads/autodiff-book.zip"' in intro
    assert (book / "_build" / "html" / "downloads" / "autodiff-book.zip").exists()
