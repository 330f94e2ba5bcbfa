"""Tests of the chapter verifier on small throwaway chapters (NumPy only).

Each throwaway book lives in a tmp folder with its own build folder, so its
execution cache never touches the real one. Kernels are the slow part (~1-2 s
each): one chapter holds most failure kinds at once and is executed once per
module; the update-mode and build-reuse tests share a second book.
"""

import difflib
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import book_config
import myst_reader
import engine_cache
import execution
import expect_match
import expect_update
import output_rules
import verifier
from support import books
from support.books import FRONT

CONFIG = f"""\
title: throwaway
author: verifier tests
only_build_toc_files: true
exclude_patterns: [_build]
execute:
  execute_notebooks: cache
  timeout: 30
  allow_errors: false
  stderr_output: warn
  run_in_temp: false
sphinx:
  local_extensions:
    engine_cache: {verifier.ROOT / "book" / "_ext"}
"""


def cell(body, options=""):
    """A code-cell fence; `options` is the YAML between `---` lines (none if empty)."""
    head = "```{code-cell} ipython3\n"
    if options:
        head += "---\n" + textwrap.dedent(options).strip("\n") + "\n---\n"
    return head + textwrap.dedent(body).strip("\n") + "\n```\n"


def make_book(root: Path, chapters: dict) -> Path:
    """A book at `root` whose _toc.yml lists `chapters` ({slug: markdown body})."""
    return books.make_book(root, CONFIG, {name: FRONT + f"\n# {name}\n\n" + body
                                          for name, body in chapters.items()})


fence_line = books.fence_of  # 1-based line of the fence of the cell holding a marker


# -- one chapter with every kind of failure, executed once -----------------------------

MIXED = "\n".join([
    cell("""
        import numpy as np  # padding
        print(np.array([5.5, 1., 4.]))
        print(np.array([1., -2.]))
        """, """
        expect: |
          [5.5 1. 4.]
          [1. -2.]
        """),
    cell('print(np.array([5.5, 1., 4.]))  # wrong-5.6', "expect: |\n  [5.6 1. 4.]"),
    cell('print(np.array([5.5, 1., 4.]))  # wrong-1.9', "expect: |\n  [5.5 1.9 4.]"),
    cell('print(f"gap = {1.6e-10:.2g}")  # rel-pass', "expect: gap = ~1.2e-10\ntolerance: rel 0.5"),
    cell('print(f"gap = {1.6e-10:.2g}")  # rel-fail', "expect: gap = ~1e-10\ntolerance: rel 0.5"),
    cell('print(f"gap = {1.6e-10:.2g}")  # mag-pass', "expect: gap = ~3e-10\ntolerance: magnitude"),
    cell('print(f"gap = {1.6e-10:.2g}")  # mag-fail', "expect: gap = ~3e-12\ntolerance: magnitude"),
    cell('print(f"gap = {1.6e-10:.2g}")  # mag-sign', "expect: gap = ~-2e-10\ntolerance: magnitude"),
    cell('print(f"gap = {1.6e-10:.2g}")  # tol-text', "expect: jump = ~1.6e-10\ntolerance: abs 1"),
    cell('print("an unchecked number", 3.25)  # missing'),
    cell('x = 1  # silent', "expect: '1'"),
    cell('1 + 1  # result', "expect: '2'"),
    cell('raise ValueError("boom in a cell")  # raises'),
    cell('import sys; print("careful", file=sys.stderr)  # stderr'),
    cell('print(0.5)  # bad-tolerance', "expect: '0.5'\ntolerance: relative 0.5"),
    cell('print("still running")  # after-error', "expect: still running"),
    cell('print("next:")\nraise ValueError("shown on purpose")  # tagged',
         "tags: [raises-exception]\nexpect: |\n  next:\n  ValueError: shown on purpose"),
    cell("import time; time.sleep(30)  # sleeps", "timeout: 1"),
    cell('print("never")  # never-run', "expect: wrong on purpose"),
])


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    root = make_book(tmp_path_factory.mktemp("mixed"), {"mixed": MIXED})
    path = root / "book" / "mixed.md"
    result = verifier.verify(path, root=root, build=root / "_build")
    by_line = {}
    for failure in result.failures:
        by_line.setdefault(failure.line, []).append(failure)
    return path, result, by_line


def failures_of(mixed, marker):
    path, _, by_line = mixed
    return by_line.get(fence_line(path, marker), [])


def test_source_map_points_at_fences(mixed):
    path, result, _ = mixed
    lines = path.read_text().splitlines()
    assert len(result.chapter.cells) == MIXED.count("```{code-cell}")
    for code in result.chapter.cells:
        assert lines[code.line - 1].startswith("```{code-cell} ipython3")
        assert code.source.splitlines()[-1] in lines[code.line : code.line + 8]


def test_real_chapters_map_to_fences():
    for path in book_config.chapter_paths(verifier.ROOT):
        chapter = myst_reader.read_chapter(path, verifier.ROOT)
        lines = chapter.text.splitlines()
        for code in chapter.cells:
            assert lines[code.line - 1].lstrip().startswith("```{code-cell}"), (path, code.line)


def test_padding_differences_pass(mixed):
    assert failures_of(mixed, "# padding") == []
    assert failures_of(mixed, "# result") == []
    assert failures_of(mixed, "# after-error") == []  # a raise does not stop later cells
    assert failures_of(mixed, "# tagged") == []  # raises-exception: the error is checked as text


@pytest.mark.parametrize("marker", ["# wrong-5.6", "# wrong-1.9"])
def test_wrong_last_digit_fails(mixed, marker):
    [failure] = failures_of(mixed, marker)
    assert failure.what == "printed text differs from expect:"
    assert "-[5.6 1. 4.]" in failure.detail or "-[5.5 1.9 4.]" in failure.detail
    assert "+[5.5 1.  4. ]" in failure.detail


def test_tolerance(mixed):
    assert failures_of(mixed, "# rel-pass") == []
    assert failures_of(mixed, "# mag-pass") == []
    for marker, words in [
        ("# rel-fail", "number 1 is 1.6e-10, expected ~1e-10 within tolerance rel 0.5"),
        ("# mag-fail", "within tolerance magnitude"),
        ("# mag-sign", "expected ~-2e-10"),
        ("# tol-text", "text between numbers differs"),
    ]:
        [failure] = failures_of(mixed, marker)
        assert words in failure.what


def test_unknown_tolerance_is_named(mixed):
    [failure] = failures_of(mixed, "# bad-tolerance")
    assert "unknown tolerance 'relative 0.5'" in failure.what
    assert "rel R" in failure.what


def test_missing_and_unexpected(mixed):
    [failure] = failures_of(mixed, "# missing")
    assert failure.what == "cell prints text but has no expect: option"
    assert "+an unchecked number 3.25" in failure.detail
    [failure] = failures_of(mixed, "# silent")
    assert failure.what == "expect: is set but the cell printed nothing"


def test_exception_shows_traceback(mixed):
    [failure] = failures_of(mixed, "# raises")
    assert failure.what == "cell raised ValueError: boom in a cell"
    assert "Traceback" in failure.detail or "----> 1" in failure.detail
    assert "\x1b[" not in failure.detail  # ANSI colours stripped


def test_stderr_fails(mixed):
    [failure] = failures_of(mixed, "# stderr")
    assert failure.what == "cell wrote to stderr: careful"


def test_timeout_names_cell_and_stops(mixed):
    [failure] = failures_of(mixed, "# sleeps")
    assert failure.what.startswith("cell timed out after 1 s")
    assert failures_of(mixed, "# never-run") == []  # not run, so not judged


def test_one_report_names_every_failing_line(mixed):
    path, result, by_line = mixed
    report = result.report()
    assert report.startswith("book/mixed.md: ")
    for line in by_line:
        assert f"\nbook/mixed.md:{line}: " in report
    assert len(by_line) == 12
    assert not result.stored  # a raise or a timeout: the build would not cache it either


# -- update mode and the build reusing the verifier's outputs ---------------------------

UPDATE = "\n".join([
    cell("import numpy as np"),
    "Some prose with a number 5.5 that update mode must not touch.\n",
    cell('print("x1.grad =", np.round(np.array([5.5, 1., 4.]), 3))  # differs', """
        tags: [hide-input]
        expect: |
          x1.grad = [~5.4 1. 4.]
          this line goes
        tolerance: abs 0.01
        """),
    cell('print("y =", 11.652)  # no-options'),
    cell('print("  indented first line")\nprint("second")  # with-options', "tags: [x]"),
    cell('z = 3  # stale', "tags: [y]\nexpect: '3'"),
    cell('print("same")  # right', "expect: same"),
])

UPDATED = "\n".join([
    cell("import numpy as np"),
    "Some prose with a number 5.5 that update mode must not touch.\n",
    cell('print("x1.grad =", np.round(np.array([5.5, 1., 4.]), 3))  # differs', """
        tags: [hide-input]
        expect: |
          x1.grad = [~5.5 1.  4. ]
        tolerance: abs 0.01
        """),
    cell('print("y =", 11.652)  # no-options', "expect: |\n  y = 11.652"),
    cell('print("  indented first line")\nprint("second")  # with-options',
         "tags: [x]\nexpect: |2\n    indented first line\n  second"),
    cell('z = 3  # stale', "tags: [y]"),
    cell('print("same")  # right', "expect: same"),
])

GOOD = cell('import numpy as np\nprint(np.arange(3) * 0.5)', "expect: '[0. 0.5 1.]'") + "\n" + cell(
    'np.ones(2) + np.ones(3)', "tags: [raises-exception]\nexpect: 'ValueError: operands could not "
    "be broadcast together with shapes (2,) (3,)'")


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    root = make_book(tmp_path_factory.mktemp("book"), {"good": GOOD, "update": UPDATE})
    path = root / "book" / "update.md"
    before = path.read_text()
    good = verifier.verify(root / "book" / "good.md", root=root, build=root / "_build")
    updated = verifier.verify(path, root=root, build=root / "_build", update=True)
    return root, before, good, updated


def test_update_rewrites_only_expectation_lines(book):
    root, before, _, updated = book
    after = (root / "book" / "update.md").read_text()
    assert after == before.replace(UPDATE, UPDATED)
    changed = [line for line in difflib.ndiff(before.splitlines(), after.splitlines())
               if line[:1] in "+-"]
    assert sorted(changed) == sorted([
        "-   x1.grad = [~5.4 1. 4.]", "-   this line goes", "+   x1.grad = [~5.5 1.  4. ]",
        "+ ---", "+ expect: |", "+   y = 11.652", "+ ---",
        "+ expect: |2", "+     indented first line", "+   second",
        "- expect: '3'",
    ])
    assert updated.ok and len(updated.rewritten) == 4


def test_rewritten_chapter_passes_without_reexecuting(book):
    root, _, _, _ = book
    again = verifier.verify(root / "book" / "update.md", root=root, build=root / "_build")
    assert again.ok, again.report()
    assert again.source == "cache"  # re-stored under the new hash: nothing ran again


def test_cached_notebook_holds_the_outputs(book):
    root = book[0]
    nb, _ = engine_cache.read_page_run(root / "book" / "good.md", root / "_build", root)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert outputs[0]["text"] == "[0.  0.5 1. ]\n" and "language_info" in nb.metadata
    assert engine_cache.read_page_run(root / "book" / "good.md", root / "elsewhere",
                                          root)[0] is None


@pytest.mark.slow
def test_build_uses_the_verifiers_outputs(book):
    root, _, good, _ = book
    assert good.ok and good.stored and good.source == "executed"
    code, log = books.run_build(root, command=["--path-output", str(root)])
    assert code == 0, log
    for name in ("good", "update"):
        assert f"book/{name}.md: Using cached notebook" in log, log
    assert "Executing notebook" not in log, log


def test_update_cli_on_a_chapter_path(tmp_path, monkeypatch, capsys):
    """`python tests/verifier.py [--update] <path>`: exit 1 and a report, then rewrite."""
    root = make_book(tmp_path, {"c": cell('print("a", 1)', "expect: a 2")})
    monkeypatch.setenv("BOOK_BUILD_DIR", str(root / "_build"))
    path = root / "book" / "c.md"
    assert verifier.main([str(path)]) == 1
    assert f"c.md:{fence_line(path, 'print')}: printed text differs" in capsys.readouterr().out
    assert verifier.main(["--update", str(path)]) == 0
    assert path.read_text().endswith(cell('print("a", 1)', "expect: |\n  a 1"))
    assert verifier.verify(path, root=root).source == "cache"


def test_a_cached_run_counts_only_in_the_numerical_environment_it_was_made_in(
        tmp_path, monkeypatch):
    """A run made on other numerics is executed again; one the build stored here is not."""
    root = make_book(tmp_path, {"c": cell("print(0.5)", "expect: '0.5'")})
    path, build = root / "book" / "c.md", root / "_build"
    first = verifier.verify(path, root=root, build=build)
    assert first.ok and first.source == "executed"
    assert verifier.verify(path, root=root, build=build).source == "cache"
    monkeypatch.setattr(execution, "numerics_json", lambda: '{"openblas_core": "Prescott"}')
    assert verifier.verify(path, root=root, build=build).source == "executed"
    assert verifier.verify(path, root=root, build=build).source == "cache"
    monkeypatch.undo()
    assert verifier.verify(path, root=root, build=build).source == "executed"
    # what the build stores (engine_cache.store, the same executor's run) is trusted
    chapter = myst_reader.read_chapter(path, root)
    engine_cache.store(chapter, first.executed_nb, build, 0.1, root)
    assert verifier.verify(path, root=root, build=build).source == "cache"


# -- normalization and numbers -----------------------------------------------------------


@pytest.mark.parametrize("a, b", [
    ("[5.5 1.  4. ]", "[5.5 1. 4.]"),
    ("[ 1. -2.]", "[1. -2.]"),
    ("[[1. 2.]\n [3. 4.]]", "[[1. 2.] [3. 4.]]"),
    ("  y =\t3\n\n", "y = 3"),
    ("( 1, 2 )", "(1, 2)"),
])
def test_normalize_equal(a, b):
    assert expect_match.normalize(a) == expect_match.normalize(b)
    assert expect_match.compare(b, a) is None


@pytest.mark.parametrize("expected, got", [
    ("[5.6 1. 4.]", "[5.5 1.  4. ]"),
    ("[5.5 1.9 4.]", "[5.5 1.  4. ]"),
    ("x = 1.", "x = 1.0"),
    ("y = 2", "y = -2"),
    ("a b", "ab"),
])
def test_strict_comparison_fails(expected, got):
    assert expect_match.compare(expected, got) is not None


def test_tokenize():
    texts, numbers = expect_match.tokenize("x1.grad = [ 5.5 -1.  4e-3 ] nan -inf +2 .5 1E+10 float64")
    assert numbers == ["5.5", "-1.", "4e-3", "nan", "-inf", "+2", ".5", "1E+10"]
    assert texts[0] == "x1.grad = [" and texts[-1] == " float64"


@pytest.mark.parametrize("spec, expected, got, ok", [
    ("rel 0.1", "1.0", "1.09", True), ("rel 0.1", "1.0", "1.11", False),
    ("abs 1e-9", "0", "5e-10", True), ("abs 1e-9", "0", "2e-9", False),
    ("magnitude", "1e-10", "9e-10", True), ("magnitude", "1e-10", "2e-9", False),
    ("magnitude", "0", "0.", True), ("magnitude", "0", "1e-300", False),
    ("magnitude", "1", "-1", False), ("rel 0.5", "nan", "nan", True),
    ("rel 0.5", "[1 2]", "[1 2 3]", False),
])
def test_tolerances(spec, expected, got, ok):
    noisy = expect_match.NUMBER.sub(lambda m: "~" + m.group(0), expected)  # every number marked
    assert (expect_match.compare(noisy, got, spec) is None) == ok


@pytest.mark.parametrize("expected, got, ok", [
    ("entries: 34, gap: ~4e-10", "entries: 34, gap: 9e-10", True),
    ("entries: 34, gap: ~4e-10", "entries: 35, gap: 4e-10", False),  # unmarked: exact
    ("count 2868, gap ~5e-10", "count 2712, gap 5e-10", False),  # a stale count is caught
    ("[~1.5 2.]", "[2.5 2.]", True), ("[~1.5 2.]", "[1.5 2.5]", False),
])
def test_a_tolerance_relaxes_only_the_numbers_marked_noisy(expected, got, ok):
    assert (expect_match.compare(expected, got, "magnitude") is None) == ok


def test_marks_and_tolerance_must_come_together():
    with pytest.raises(expect_match.ToleranceError, match="no number of expect: is marked"):
        expect_match.compare("gap 3e-10", "gap 3e-10", "magnitude")
    with pytest.raises(expect_match.ToleranceError, match="declares no tolerance"):
        expect_match.compare("gap ~3e-10", "gap 3e-10", None)


def test_update_mode_carries_the_marks_of_noisy_numbers():
    assert expect_match.carry_marks("n 8, gap ~3e-10", "n 8, gap 4.1e-10\n") == "n 8, gap ~4.1e-10\n"
    assert expect_match.carry_marks("n 8, gap ~3e-10", "n 8 9, gap 4e-10") == "n 8 9, gap 4e-10"


@pytest.mark.parametrize("spec", ["relative 0.5", "rel", "abs x", "rel -1", "magnitudes", 3])
def test_unknown_tolerance_raises(spec):
    with pytest.raises(expect_match.ToleranceError, match="unknown tolerance"):
        expect_match.parse_tolerance(spec)


@given(st.text(alphabet=" \n\t[]()ab.-19e,", max_size=40))
def test_normalize_is_idempotent(text):
    once = expect_match.normalize(text)
    assert expect_match.normalize(once) == once


finite = st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 3))


@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=6), elements=finite),
       st.integers(10, 200))
def test_numpy_padding_and_linewidth_normalize_equal(array, width):
    narrow = np.array2string(array, max_line_width=width)
    wide = np.array2string(array, max_line_width=10_000)
    assert expect_match.normalize(narrow) == expect_match.normalize(wide)
    assert expect_match.compare(wide, narrow) is None


@given(finite, st.sampled_from(["", "x = ", "[", "grad: "]))
def test_last_digit_perturbation_fails(value, prefix):
    printed = str(np.round(np.array([value, 1.5]), 3))
    digits = [i for i, ch in enumerate(printed) if ch.isdigit()]
    assume(digits)
    i = digits[-1]
    perturbed = printed[:i] + str((int(printed[i]) + 1) % 10) + printed[i + 1:]
    assert expect_match.compare(prefix + perturbed, prefix + printed) is not None
    assert expect_match.compare(prefix + printed, prefix + printed) is None


@settings(max_examples=50)
@given(st.text(alphabet=st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=30)
       .filter(lambda s: s.strip()), st.booleans())
def test_rewrite_round_trips(text, first_indented):
    body = ("  " if first_indented else "") + text + "\nsecond line 1.5\n"
    chapter_text = FRONT + "\n" + cell("print(1)") + "\ntext\n"
    chapter = myst_reader.read_chapter("/tmp/round-trip.md", verifier.ROOT, text=chapter_text)
    new = expect_update.updated_text(chapter, {chapter.cells[0].line: body}, verifier.ROOT)
    again = myst_reader.read_chapter("/tmp/round-trip.md", verifier.ROOT, text=new)
    assert again.cells[0].expect == expect_match.canonical_expectation(body)


def test_raises_exception_tag_checks_the_error_as_text():
    """The Sphinx report calls cell_output without the tag; check_cell applies it."""
    outputs = [{"output_type": "stream", "name": "stdout", "text": "before\n"},
               {"output_type": "error", "ename": "ValueError", "evalue": "shapes (3,) and (2,)",
                "traceback": ["\x1b[0;31mValueError\x1b[0m: shapes (3,) and (2,)"]}]
    tagged = myst_reader.CodeCell(0, 7, "", {"tags": ["raises-exception"],
                                    "expect": "before\nValueError: shapes (3,) and (2,)\n"})
    assert output_rules.check_cell(tagged, output_rules.cell_output(outputs)) == []
    plain = myst_reader.CodeCell(0, 7, "", {"expect": "before\n"})
    [failure] = output_rules.check_cell(plain, output_rules.cell_output(outputs))
    assert failure.what == "cell raised ValueError: shapes (3,) and (2,)"
    assert "\x1b" not in failure.detail


def test_non_text_expect_is_rejected():
    cell_ = myst_reader.CodeCell(0, 3, "", {"expect": 1.0})  # from `expect: 1.`
    output = output_rules.cell_output([{"output_type": "stream", "name": "stdout", "text": "1.\n"}])
    [failure] = output_rules.check_cell(cell_, output)
    assert "reads as YAML float 1.0" in failure.what and failure.kind == "differs"


def test_rewrite_keeps_an_indented_block_and_other_options():
    text = FRONT + "\n" + (
        "```{code-cell} ipython3\n---\n  tags: [a]\n  expect: 2\n  timeout: 5\n---\nprint(1)\n```\n"
        "\n```{code-cell} ipython3\n---\ntags: [b]\n---\nx = 1\n```\n"
    )
    chapter = myst_reader.read_chapter("/tmp/indented.md", verifier.ROOT, text=text)
    first, second = (code.line for code in chapter.cells)
    new = expect_update.updated_text(chapter, {first: "1\n", second: None}, verifier.ROOT)
    assert new == text.replace("  expect: 2\n", "  expect: |\n    1\n")
    again = myst_reader.read_chapter("/tmp/indented.md", verifier.ROOT, text=new)
    assert again.cells[0].options == {"tags": ["a"], "expect": "1\n", "timeout": 5}


@given(st.floats(allow_nan=True, allow_infinity=True),
       st.sampled_from(["{:g}", "{:.3f}", "{:e}", "{!r}", "{:.0f}."]),
       st.sampled_from(["a = {}, b", "[{} 2.5]", "({})", "x1.grad = {}"]))
def test_tokenize_finds_every_printed_number(value, number_format, template):
    printed = number_format.format(value)
    assume(not printed.endswith("..") and "inf." not in printed and "nan." not in printed)
    texts, numbers = expect_match.tokenize(template.format(printed))
    assert printed in numbers
    parsed = float(numbers[numbers.index(printed)])
    assert parsed == float(printed) or (np.isnan(parsed) and np.isnan(value))
    assert "".join(t + n for t, n in zip(texts, numbers + [""])) == expect_match.normalize(
        template.format(printed))


def test_every_text_a_cell_shows_is_checked():
    """display_data counts as much as print: a Markdown table, the text of an HTML table,
    plain text; a figure (an image beside its `<Figure size ...>` placeholder) does not."""
    def display(data):
        return {"output_type": "display_data", "data": data, "metadata": {}}

    outputs = [{"output_type": "stream", "name": "stdout", "text": "first\n"},
               display({"text/markdown": "| a | b |\n|---|---|\n| 1 | 2.5 |",
                        "text/plain": "<IPython.core.display.Markdown object>"}),
               display({"text/html": "<table><tr><td>x</td><td>&lt;3</td></tr></table>"
                                     "<script>var ignored = 1;</script>",
                        "text/plain": "<IPython.core.display.HTML object>"}),
               display({"text/plain": "plain 7"}),
               display({"image/png": "iVBOR", "text/plain": "<Figure size 640x480 with 1 Axes>"})]
    output = output_rules.cell_output(outputs)
    assert output.text == "first\n| a | b |\n|---|---|\n| 1 | 2.5 |\nx <3\nplain 7\n"
    assert output_rules.check_cell(myst_reader.CodeCell(0, 3, "", {"expect": output.text}), output) == []
    [failure] = output_rules.check_cell(myst_reader.CodeCell(0, 3, "", {}), output)
    assert failure.kind == "missing"
    wrong = output.text.replace("2.5", "2.6")
    [failure] = output_rules.check_cell(myst_reader.CodeCell(0, 3, "", {"expect": wrong}), output)
    assert failure.kind == "differs"
    figure = output_rules.cell_output(outputs[-1:])
    assert figure.text == ""
    assert output_rules.check_cell(myst_reader.CodeCell(0, 3, "", {}), figure) == []  # no expect: needed
