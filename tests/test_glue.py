"""Glued values are numbers a reader sees: each one the prose shows is checked.

The rules of `output_rules.check_glue`, on chapters written here (no kernel): the
glue roles are found with their lines (in directive bodies too), rendered as
myst-nb renders them and compared with the `glue:` option of the cell that glues
them. The build applies the same check (tests/test_report.py builds a book whose
glued value changed).
"""

import textwrap

import pytest

import book_config
import myst_reader
import output_rules
import verifier

ROOT = verifier.ROOT


def chapter_text(body):
    return textwrap.dedent(body).lstrip("\n")


def uses(body):
    return [(u.name, u.kind, u.spec, u.line) for u in myst_reader.glue_uses(chapter_text(body), ROOT)]


def cell(options, line=1):
    return myst_reader.CodeCell(index=0, line=line, source="", options=options)


def plain(value):
    return {"text/plain": repr(value)}


def test_roles_are_found_with_their_lines_and_formats():
    assert uses("""
        One {glue:text}`a:.3f` here,
        and {glue:text}`b` on the next line.

        ```{code-cell} ipython3
        x = "{glue:text}`not_prose`"
        ```

        ````{dropdown} A question
        :open:

        Inside: {glue:text}`c:.1e`.
        ````

        {glue}`d` and {glue:md}`e`
        """) == [("a", "text", ".3f", 1), ("b", "text", "", 2), ("c", "text", ".1e", 11),
                 ("d", "any", "", 14), ("e", "md", "", 14)]


def test_rendered_like_myst_nb():
    use = myst_reader.GlueUse("x", "text", ".3f", 1)
    assert output_rules.glue_text(use, plain(1.71633781)) == "1.716"
    assert output_rules.glue_text(myst_reader.GlueUse("n", "text", "", 1), plain(7)) == "7"
    assert output_rules.glue_text(myst_reader.GlueUse("s", "text", "", 1), plain("50,000")) == "50,000"


TEXT = "The gradient is {glue:text}`g:.1f`.\n"


def test_a_declared_value_that_matches_passes():
    assert output_rules.check_glue(TEXT, [cell({"glue": {"g": "5.5"}})], {"g": plain(5.4999)}, ROOT) == []


def test_a_changed_value_fails_at_its_cell():
    [failure] = output_rules.check_glue(TEXT, [cell({"glue": {"g": "5.5"}}, line=9)],
                              {"g": plain(5.61)}, ROOT)
    assert failure.line == 9
    assert failure.what.startswith("glued value 'g', shown at line 1, is '5.6', glue: says '5.5'")


def test_an_undeclared_value_fails_at_the_line_that_shows_it():
    [failure] = output_rules.check_glue("\n\n" + TEXT, [cell({})], {"g": plain(5.5)}, ROOT)
    assert failure.line == 3
    assert "no check covers it" in failure.what and 'g: "5.5"' in failure.what


def test_a_noisy_value_is_compared_within_the_cells_tolerance():
    options = {"glue": {"g": "~5.5"}, "tolerance": "abs 0.2"}
    assert output_rules.check_glue(TEXT, [cell(options)], {"g": plain(5.6)}, ROOT) == []
    [failure] = output_rules.check_glue(TEXT, [cell(options)], {"g": plain(5.8)}, ROOT)
    assert "within tolerance abs 0.2" in failure.what
    [failure] = output_rules.check_glue(TEXT, [cell({"glue": {"g": "~5.5"}})], {"g": plain(5.5)}, ROOT)
    assert "declares no tolerance" in failure.what


def test_a_tolerance_for_glue_only_is_not_an_orphan():
    options = {"glue": {"g": "~5.5"}, "tolerance": "abs 0.2", "expect": "x = 1\n"}
    output = output_rules.CellOutput("x = 1\n", "", None)
    assert output_rules.check_cell(cell(options), output) == []
    lonely = {"tolerance": "abs 0.2"}
    [failure] = output_rules.check_cell(cell(lonely), output_rules.CellOutput("", "", None))
    assert "nothing is marked noisy" in failure.what


@pytest.mark.parametrize("declared, words", [
    ({"g": 5.5}, "reads as YAML float 5.5, not text"),
    ("5.5", "glue: must map each glued name"),
])
def test_a_declaration_that_is_not_text_is_refused(declared, words):
    failures = output_rules.check_glue(TEXT, [cell({"glue": declared})], {"g": plain(5.5)}, ROOT)
    assert any(words in f.what for f in failures), failures


def test_a_declaration_the_page_does_not_show_fails():
    [failure] = output_rules.check_glue("No roles.\n", [cell({"glue": {"g": "5.5"}}, line=4)],
                              {"g": plain(5.5)}, ROOT)
    assert (failure.line, failure.what) == (4, "glue: declares 'g', which no role on the page "
                                               "shows")


def test_every_glued_value_of_the_book_is_declared():
    """No chapter's prose shows a glued value that no cell declares (read, not run)."""
    problems = []
    for path in book_config.chapter_paths(ROOT):
        chapter = myst_reader.read_chapter(path, ROOT)
        declared = {name for c in chapter.cells for name in (c.options.get("glue") or {})}
        for use in myst_reader.glue_uses(chapter.text, ROOT):
            if use.name not in declared:
                problems.append(f"{book_config.display_path(path, ROOT)}:{use.line}: {use.name}")
    assert not problems, problems
