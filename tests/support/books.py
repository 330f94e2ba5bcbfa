"""Throwaway books, builds and their logs: one builder, one build runner, one of each helper.

Tests that build a book in a temporary folder write it with `make_book`, build it with
`run_build` (jupyter-book of this venv; the log without ANSI colours), and find a cell's
line in a chapter with `line_of` and `fence_of`. `chapter_docnames` lists the real book's
notebook pages in table-of-contents order.
"""

import subprocess
import sys
from pathlib import Path

from book_config import chapter_paths, toc_docnames  # noqa: F401  (site_pages imports toc_docnames from here)
from expect_match import strip_ansi

ROOT = Path(__file__).resolve().parents[2]

JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"
BUILD_COMMAND = ["jupyter-book", "build", ".", "-W", "-n", "--keep-going"]  # the README's

# The front matter that makes a .md file a MyST notebook for myst-nb.
FRONT = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""

# A throwaway book with only the site's finishing step (book/_ext/site_assets.py).
SITE_POLISH_CONFIG = """\
title: site polish probe
only_build_toc_files: true
exclude_patterns: [_build]
sphinx:
  local_extensions:
    site_assets: book/_ext
"""


def make_book(root, config, chapters, intro="# Intro\n\nA throwaway book.\n", pages=None):
    """A book at `root`: `_config.yml`, `book/intro.md`, and one page per chapter
    ({name: full text of book/<name>.md}) listed in `_toc.yml` in that order; `pages`
    ({relative path: text}) are written too, and not listed."""
    root = Path(root)
    (root / "book").mkdir(parents=True, exist_ok=True)
    (root / "_config.yml").write_text(config)
    (root / "book" / "intro.md").write_text(intro)
    toc = "format: jb-book\nroot: book/intro\nchapters:\n"
    for name, text in chapters.items():
        (root / "book" / f"{name}.md").write_text(text)
        toc += f"  - file: book/{name}\n"
    (root / "_toc.yml").write_text(toc)
    for relative, text in (pages or {}).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def run_build(book, *options, timeout=600, command=None):
    """(exit status, log without colours) of `jupyter-book build <book> -W -n --keep-going
    <options>`, run in `book`; `command` replaces the arguments after `build <book>`."""
    args = list(command) if command is not None else ["-W", "-n", "--keep-going", *options]
    run = subprocess.run([str(JUPYTER_BOOK), "build", str(book), *args], cwd=book,
                         capture_output=True, text=True, timeout=timeout)
    return run.returncode, strip_ansi(run.stdout + run.stderr)


def _text(text_or_path):
    return Path(text_or_path).read_text() if isinstance(text_or_path, Path) else text_or_path


def line_of(text_or_path, needle):
    """1-based number of the first line holding `needle` (a chapter's text, or its path)."""
    lines = _text(text_or_path).splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def fence_of(text_or_path, needle):
    """1-based line of the ```{code-cell} fence of the cell whose source holds `needle`."""
    lines = _text(text_or_path).splitlines()
    at = line_of(text_or_path, needle) - 1
    return max(i for i in range(at + 1) if lines[i].startswith("```{code-cell}")) + 1


def chapter_docnames(root=ROOT):
    """The pages that are notebooks (a kernelspec in their front matter), in toc order."""
    root = Path(root)
    chapters = {p.resolve() for p in chapter_paths(root)}
    return [d for d in toc_docnames(root) if (root / f"{d}.md").resolve() in chapters]
