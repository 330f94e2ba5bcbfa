"""The book under bad edits: the build and the verifier fail, naming the file and the line.

One throwaway book (tiny chapters, no engine import) holds five broken edits, and is
built ONCE for the module with the README's flags (`-W -n --keep-going`), so every
problem is listed in the same log:

1. `syntax`: a cell with a syntax error;
2. `forever`: a cell that never ends (`while True: pass`, `timeout: 1`, below the
   `execute: timeout: 3` of the throwaway _config.yml: the build and the verifier run
   cells with one executor, book/_ext/execution.py, which applies a cell's own
   `timeout:`);
3. `badyaml`: an `expect:` whose quote is never closed, in the cell's YAML options;
4. `orphan`: a page in book/ that `_toc.yml` does not list;
5. `badref`: a `{ref}` and a `{numref}` to labels nobody defines.

The build must exit non-zero and print `<file>:<line>: WARNING: ...` for each (the
line of the cell's fence, of the bad YAML line, of the reference; line 1 for the
page missing from the toc). The verifier must say the same for the cells, and
refuse the page missing from the toc.
"""

import atexit
import shutil
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

import book_config
import myst_reader
import verifier
from support import books
from support.side_jobs import Job
from support.books import FRONT, fence_of, line_of

EXT = verifier.ROOT / "book" / "_ext"

CONFIG = f"""\
title: bad edits
author: bad-edit tests
only_build_toc_files: true
exclude_patterns: [_build]
execute:
  execute_notebooks: cache
  timeout: 3
  allow_errors: false
  stderr_output: warn
  run_in_temp: false
sphinx:
  local_extensions:
    engine_cache: {EXT}
    notebooks: {EXT}
  config:
    nitpicky: true
"""

CHAPTERS = {
    "syntax": """
        A cell that runs, then one that does not parse.

        ```{code-cell} ipython3
        ---
        expect: fine
        ---
        print("fine")
        ```

        ```{code-cell} ipython3
        def f(x:  # syntax-error
            return x
        ```
        """,
    "forever": """
        ```{code-cell} ipython3
        ---
        timeout: 1
        ---
        while True:  # never-ends
            pass
        ```
        """,
    "badyaml": """
        ```{code-cell} ipython3
        ---
        expect: ok
        ---
        print("ok")
        ```

        ```{code-cell} ipython3
        ---
        tags: [hide-input]
        expect: "ok  # unclosed-quote
        ---
        print("ok")
        ```
        """,
    "badref": """
        See {ref}`no-such-label` here.

        And {numref}`no-such-figure` there.
        """,
}
ORPHAN = "Written, but never listed in _toc.yml.\n"


def make_book(root: Path) -> Path:
    chapters = {name: FRONT + f"\n# {name}\n" + textwrap.dedent(body)
                for name, body in CHAPTERS.items()}
    # notebooks.py packs engine/, pyproject.toml and the pins into the site's archive
    return books.make_book(root, CONFIG, chapters, pages={
        "pyproject.toml": '[project]\nname = "bad-edits"\n', "requirements.txt": "",
        "book/runtime-requirements.txt": "",
        "book/orphan.md": FRONT + "\n# Orphan\n\n" + ORPHAN})


_book = []
_making = threading.Lock()


def the_book(folder=None):
    """The one broken book of the session: in `folder`, or a temporary one, once."""
    with _making:
        if not _book:
            if folder is None:
                folder = tempfile.mkdtemp(prefix="bad-edits-")
                atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _book.append(make_book(Path(folder) / "bad-edits"))
        return _book[0]


# the test process only waits on the build: it runs beside the session
# (tests/support/side_jobs.py), and the tests that read its log last
BUILD = Job("bad-edits", lambda folder: books.run_build(the_book(folder), timeout=300), guess=7)


def side_jobs(item):
    return [BUILD] if "build_log" in getattr(item, "fixturenames", ()) else []


@pytest.fixture(scope="module")
def book():
    return the_book()


@pytest.fixture(scope="module")
def build_log():
    """(exit status, log without colours) of one build of the broken book."""
    return BUILD.result()


def warning(book, name, line, what):
    """The warning line Sphinx prints: `<abs path>:<line>: WARNING: <what>`."""
    return f"{book / 'book' / name}.md:{line}: WARNING: {what}"


# -- the build --------------------------------------------------------------------------


@pytest.mark.slow
def test_the_build_fails_and_lists_every_bad_edit(build_log):
    status, log = build_log
    assert status != 0, log[-3000:]
    assert "build finished with problems" in log, log[-3000:]
    assert "Exception occurred" not in log, "a bad edit crashed the build:\n" + log[-3000:]


@pytest.mark.slow
def test_build_names_the_cell_with_a_syntax_error(book, build_log):
    line = fence_of(book / "book" / "syntax.md", "# syntax-error")
    expected = warning(book, "syntax", line, "cell raised SyntaxError: '(' was never closed")
    assert expected in build_log[1], build_log[1][-3000:]


@pytest.mark.slow
def test_build_names_the_cell_that_never_ends(book, build_log):
    line = fence_of(book / "book" / "forever.md", "# never-ends")
    expected = warning(book, "forever", line, "cell timed out after 1 s")
    assert expected in build_log[1], build_log[1][-3000:]


@pytest.mark.slow
def test_build_names_the_line_of_bad_yaml_options(book, build_log):
    line = line_of(book / "book" / "badyaml.md", "# unclosed-quote")
    expected = warning(book, "badyaml", line, "the cell's options are not valid YAML: ")
    assert expected in build_log[1], build_log[1][-3000:]
    assert f"quoted scalar that starts at line {line}" in build_log[1]


@pytest.mark.slow
def test_build_names_the_page_missing_from_the_toc(book, build_log):
    expected = warning(book, "orphan", 1, "this page is not in _toc.yml")
    assert expected in build_log[1], build_log[1][-3000:]


@pytest.mark.slow
def test_build_names_each_undefined_label(book, build_log):
    path = book / "book" / "badref.md"
    for label in ("no-such-label", "no-such-figure"):
        expected = warning(book, "badref", line_of(path, label), f"undefined label: '{label}'")
        assert expected in build_log[1], build_log[1][-3000:]


# -- the verifier -------------------------------------------------------------------------


def check(book, name):
    path = book / "book" / f"{name}.md"
    return path, verifier.verify(path, root=book, build=book / "_verifier-build")


@pytest.mark.slow
def test_verifier_names_the_cell_with_a_syntax_error(book):
    path, result = check(book, "syntax")
    line = fence_of(path, "# syntax-error")
    assert [(f.line, f.what.split(" (")[0]) for f in result.failures] == [
        (line, "cell raised SyntaxError: '(' was never closed")]
    assert f"\nbook/syntax.md:{line}: cell raised SyntaxError" in result.report()


@pytest.mark.slow
def test_verifier_stops_the_cell_that_never_ends_at_its_own_timeout(book):
    path, result = check(book, "forever")
    [failure] = result.failures
    assert failure.line == fence_of(path, "# never-ends")
    assert failure.what.startswith("cell timed out after 1 s")  # the cell's `timeout: 1`
    assert f"\nbook/forever.md:{failure.line}: cell timed out after 1 s" in result.report()


def test_verifier_names_the_line_of_bad_yaml_options(book):
    path, result = check(book, "badyaml")
    line = line_of(path, "# unclosed-quote")
    [failure] = result.failures
    assert failure.line == line
    assert failure.what.startswith("the cell's options are not valid YAML")
    assert result.report().startswith("book/badyaml.md: myst-nb cannot read this chapter")
    assert f"\nbook/badyaml.md:{line}: the cell's options are not valid YAML" in result.report()


def test_verifier_cli_fails_on_bad_yaml(book, capsys, monkeypatch):
    monkeypatch.setenv("BOOK_BUILD_DIR", str(book / "_verifier-build"))
    path = book / "book" / "badyaml.md"
    assert verifier.main([str(path)]) == 1
    line = line_of(path, "# unclosed-quote")
    assert f"book/badyaml.md:{line}: the cell's options are not valid YAML" in (
        capsys.readouterr().out)


@pytest.mark.parametrize("name", ["orphan", "book/orphan.md", "ABSOLUTE"])
def test_verifier_refuses_a_page_missing_from_the_toc(book, name, monkeypatch):
    monkeypatch.chdir(book)
    name = str(book / "book" / "orphan.md") if name == "ABSOLUTE" else name
    with pytest.raises(SystemExit) as stopped:
        verifier.find_chapters([name], root=book)
    assert str(stopped.value).startswith("book/orphan.md: not in ")
    assert "_toc.yml, so the book leaves it out" in str(stopped.value)


def test_pages_missing_from_the_toc_are_found(book):
    assert book_config.pages_missing_from_toc(book) == [book / "book" / "orphan.md"]


def test_every_page_of_the_real_book_is_in_its_toc():
    missing = [book_config.display_path(p) for p in book_config.pages_missing_from_toc(verifier.ROOT)]
    assert not missing, f"not in _toc.yml, so the build leaves them out: {missing}"


# -- where a cell's options stop reading as YAML (no kernel) -------------------------------

BAD_OPTIONS = [
    # (options lines, marker on the line to name, words of the message)
    (['expect: "ok  # here'], "# here", "while scanning a quoted scalar"),
    (["expect: |", "  fine", " tags: [x]  # here"], "# here", "expected <block end>"),
    (["tags: [x  # here", "expect: a"], "# here", "while parsing a flow sequence"),
    (["expect: a", "  b: c  # here"], "# here", "mapping values are not allowed here"),
    (["- a list  # here"], "# here", "read as a YAML list, not as `key: value` lines"),
]


@pytest.mark.parametrize("options, marker, words", BAD_OPTIONS)
def test_bad_options_name_their_line(options, marker, words, tmp_path):
    text = (FRONT + "\n# T\n\n```{code-cell} ipython3\nprint(1)\n```\n\n"
            "```{code-cell} ipython3\n---\n" + "\n".join(options) + "\n---\nprint(2)\n```\n")
    path = tmp_path / "t.md"
    path.write_text(text)
    with pytest.raises(myst_reader.ChapterError) as error:
        myst_reader.read_chapter(path, verifier.ROOT)
    assert error.value.line == line_of(path, marker)
    assert words in error.value.what
    assert str(error.value).startswith(f"{path}:{error.value.line}: ")
    # the build comments the options out, keeping every line where it was
    fixed, problems = myst_reader.comment_out_bad_options(text)
    assert problems == [(error.value.line, error.value.what)]
    assert len(fixed.splitlines()) == len(text.splitlines())
    chapter = myst_reader.read_chapter(path, verifier.ROOT, text=fixed)
    assert [c.source for c in chapter.cells] == ["print(1)", "print(2)"]
    assert chapter.cells[1].options == {}


def test_unclosed_options_block_names_its_opening_line(tmp_path):
    text = FRONT + "\n# T\n\n```{code-cell} ipython3\n---\nexpect: a\nprint(2)\n```\n"
    path = tmp_path / "t.md"
    path.write_text(text)
    with pytest.raises(myst_reader.ChapterError) as error:
        myst_reader.read_chapter(path, verifier.ROOT)
    assert error.value.line == line_of(path, "expect: a") - 1
    assert "never closed" in error.value.what


def test_a_chapter_whose_options_block_never_closes_is_not_run_as_built(tmp_path):
    """Commenting out an unclosed block leaves its `---` line: the text the build reads
    still has the problem, so the executor does not run that chapter (the build fails on
    the warning at that line), rather than run it with a cell that lost its options."""
    import engine_cache

    text = FRONT + "\n# T\n\n```{code-cell} ipython3\n---\nexpect: a\nprint(2)\n```\n"
    path = tmp_path / "t.md"
    path.write_text(text)
    fixed, problems = myst_reader.comment_out_bad_options(text)
    assert problems and myst_reader.comment_out_bad_options(fixed)[1]
    assert engine_cache.read_as_built(path, verifier.ROOT) is None
