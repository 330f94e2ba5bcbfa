"""Every chapter: each code-cell fence in the source is a code cell of the notebook, and
each code exercise has a check its reader runs.

A backtick in the info string of a backtick fence (say ````{exercise} Rebuild `engine/x.py`````)
makes it an ordinary line, and the cells after it quietly stop being cells: they neither run
nor get verified. Counting fences against parsed cells catches that.
"""

import pytest
from myst_nb.core.read import read_myst_markdown_notebook

import book_config

CHAPTERS = {book_config.slug(path): path for path in book_config.chapter_paths()}


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_code_cell_fence_is_a_cell(chapter):
    source = CHAPTERS[chapter].read_text()
    notebook = read_myst_markdown_notebook(source)
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert len(cells) == source.count("```{code-cell}"), (
        f"{chapter}: {source.count('```{code-cell}')} code-cell fences but "
        f"{len(cells)} code cells parsed; look for a backtick in a directive's title")


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_exercise_has_a_check(chapter):
    """Each exercise whose solution runs code is followed by a check cell before the solution."""
    source = CHAPTERS[chapter].read_text()
    pieces = source.split("````{exercise}")[1:]
    for piece in pieces:
        title = piece.splitlines()[0].strip()
        before_solution, _, solution = piece.partition("````{solution-start}")
        solution = solution.split("````{solution-end}")[0]
        if "{code-cell}" in solution:
            assert "def check_" in before_solution, f"{chapter}: exercise {title!r} has no check cell"
            name = before_solution.split("def check_")[1].split("(")[0]
            assert f"check_{name}(" in solution, \
                f"{chapter}: the solution of {title!r} does not run check_{name}"
