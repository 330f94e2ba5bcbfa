"""The engine as of each chapter (book/_ext/snapshots.py), and what the book does with it.

- The chapter markers of engine/ read as documented, and bad ones name file and line.
- Every snapshot imports; none holds a line or a module of a later chapter; the last
  one is the package itself, markers and replaced lines aside.
- A chapter's kernel runs on its snapshot: a line of a later chapter is not there.
- Each chapter's listings show every line the chapter introduces, and every line it
  replaces, in a block of replaced lines above a listing.
- Every engine test marked for a chapter passes on that chapter's snapshot.
- A chapter's cached outputs are keyed on its own snapshot: an edit of a later
  chapter's lines leaves the earlier chapters' keys alone.
"""

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import book_config
import myst_reader
import engine_cache
import execution
import listings
import output_rules
import snapshots
import verifier

ROOT = verifier.ROOT

CHAPTERS = snapshots.engine_chapters(ROOT)
ORDER = snapshots.chapter_order(ROOT)
ORDER_OF = {chapter: i for i, chapter in enumerate(ORDER)}


# -- the marker scheme ------------------------------------------------------------------

TOY_ORDER = ["one", "two", "three"]
TOY = textwrap.dedent("""\
    #> one
    import math


    class A:
        def f(self):
            x = 1
            #> two
            x += 1
            #> one
            return x

        #< one, replaced in three
        # def g(self):
        #     return 1
        #> three
        def g(self):
            return 3

        #> two
        def h(self):
            return 2
    """)


def toy(chapter):
    lines = snapshots.parse(TOY, "toy.py", TOY_ORDER)
    position = {c: i for i, c in enumerate(TOY_ORDER)}
    kept = snapshots._tidy([line for line in lines if snapshots._keep(line, chapter, position)])
    return "\n".join(line.text for line in kept) + "\n"


def test_markers_give_each_chapter_its_own_lines():
    one = toy("one")
    assert "x += 1" not in one and "def h" not in one and "return 3" not in one
    assert "    def g(self):\n        return 1\n" in one  # the replaced lines, uncommented
    two = toy("two")
    assert "x += 1" in two and "def h" in two and "return 1" in two
    three = toy("three")
    assert "return 1" not in three and "return 3" in three
    for chapter in TOY_ORDER:
        compile(toy(chapter), f"toy-{chapter}", "exec")  # every snapshot is Python
    ns = {}
    exec(toy("two"), ns)
    assert ns["A"]().f() == 2 and ns["A"]().g() == 1


def test_a_line_back_at_the_outer_indentation_belongs_to_the_block_around():
    text = "#> one\ndef f():\n    x = 1\n    if x:\n        #> two\n        x += 1\n    return x\n"
    lines = snapshots.parse(text, "toy.py", TOY_ORDER)
    assert [(line.text.strip(), line.chapter) for line in lines] == [
        ("def f():", "one"), ("x = 1", "one"), ("if x:", "one"), ("x += 1", "two"),
        ("return x", "one")]


@pytest.mark.parametrize("text, line, words", [
    ("x = 1\n", 1, "a line before any chapter marker"),
    ("#> four\nx = 1\n", 1, "not a page of _toc.yml"),
    ("#> two\n#< two, replaced in one\n# x = 1\n", 2, "does not come after it"),
    ("#> one\ndef f():\n    #< one, replaced in two\n    # x = 1\n        #> two\n", 5,
     "a marker inside replaced lines"),
])
def test_bad_markers_name_the_file_and_line(text, line, words):
    with pytest.raises(snapshots.MarkerError) as error:
        snapshots.parse(text, "bad.py", TOY_ORDER)
    assert error.value.line == line and words in error.value.what
    assert str(error.value).startswith(f"bad.py:{line}: ")


# -- the real engine -------------------------------------------------------------------


def test_every_engine_line_belongs_to_a_page_of_the_book():
    lines = snapshots.engine_lines(ROOT)  # raises MarkerError naming file:line otherwise
    assert set(lines) == {p.relative_to(ROOT).as_posix()
                          for p in (ROOT / "engine").rglob("*.py") if "__pycache__" not in p.parts}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_snapshot_holds_a_line_of_a_later_chapter(chapter):
    k = ORDER_OF[chapter]
    for file, lines in snapshots.snapshot_lines(chapter, ROOT).items():
        for line in lines:
            assert ORDER_OF[line.chapter] <= k or not line.text.strip(), (file, line)
            assert line.until is None or ORDER_OF[line.until] > k, (file, line)
    for file, lines in snapshots.engine_lines(ROOT).items():  # a module from later: absent
        if all(ORDER_OF[line.chapter] > k for line in lines if line.text.strip()):
            assert file not in snapshots.snapshot_files(chapter, ROOT)


def test_the_last_snapshot_is_the_package():
    last = snapshots.snapshot_files(snapshots.chapter_order(ROOT)[-1], ROOT)
    for path in sorted((ROOT / "engine").rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        file = path.relative_to(ROOT).as_posix()
        source = path.read_text(encoding="utf8")
        assert ast.dump(ast.parse(last[file])) == ast.dump(ast.parse(source)), file
        # and line for line, once the markers and the replaced lines are taken out
        plain = [ln for ln in snapshots.parse(source, path, ORDER) if ln.until is None]
        assert [ln.text for ln in plain if ln.text.strip()] == [
            ln for ln in last[file].splitlines() if ln.strip()], file


def test_every_snapshot_imports_with_its_modules(tmp_path):
    script = ("import importlib, pkgutil, engine\n"
              "names = [m.name for m in pkgutil.iter_modules(engine.__path__)]\n"
              "for name in names:\n    importlib.import_module('engine.' + name)\n"
              "print(engine.__file__, len(names))\n")
    for chapter in CHAPTERS:
        folder = snapshots.write_snapshot(chapter, tmp_path / chapter, ROOT)
        done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(folder)})
        assert done.returncode == 0, f"{chapter}: {done.stderr[-2000:]}"
        path, count = done.stdout.split()
        assert Path(path).is_relative_to(folder), (chapter, path)
        modules = {Path(f).stem for f in snapshots.snapshot_files(chapter, ROOT)} - {"__init__"}
        assert int(count) == len(modules), (chapter, count, modules)


def test_a_chapters_kernel_runs_on_its_snapshot(tmp_path):
    """The executor of the build and the verifier: `tensors` has no `@` and no memory module."""
    import nbformat

    probe = ("import engine, importlib.util\n"
             "from engine import Tensor\n"
             "print(hasattr(Tensor, '__matmul__'), hasattr(Tensor, 'sum'),"
             " importlib.util.find_spec('engine.memory') is None,"
             " importlib.util.find_spec('engine.tensor') is not None)\n")
    path = ROOT / "book" / "tensors.md"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(probe)],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    chapter = myst_reader.Chapter(path, "", nb, [myst_reader.CodeCell(0, 1, probe, {})])
    executed, _, failures, _ = execution.execute(chapter, ROOT, tmp_path)
    assert not failures
    assert output_rules.cell_output(executed.cells[0].outputs).text.split() == [
        "False", "False", "True", "True"]


# -- listings ---------------------------------------------------------------------------


def _report(chapter, missing, what):
    return (listings.describe_unshown(chapter, missing, what, ROOT)
            + f"\n(python book/_ext/listings.py {chapter} lists them too)")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_chapters_listings_show_every_line_it_introduces(chapter):
    page = ROOT / "book" / f"{chapter}.md"
    missing = listings.unshown_lines(chapter, page.read_text(encoding="utf8"), ROOT)
    assert not missing, _report(chapter, missing, "introduces")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_chapters_listings_show_every_line_it_replaces(chapter):
    """Above a listing, the page shows the old lines it replaces: every line that a chapter
    replaces must be in such a block on the chapter's page, or a reader never sees what
    changed (chapter fast's Steps once named lines no listing showed)."""
    page = ROOT / "book" / f"{chapter}.md"
    missing = listings.unshown_lines(chapter, page.read_text(encoding="utf8"), ROOT,
                                     replaced=True)
    assert not missing, _report(chapter, missing, "replaces")


def test_a_listing_shows_the_lines_it_replaces_above_it():
    result = listings.listing_lines("engine/tensor.py", {"pyobject": "Tensor._result"},
                                    "fast", ROOT)
    blocks = dict(result.replaced_blocks())
    assert list(blocks) == ["tensors", "memory"]  # a block per chapter, in the book's order
    # the old `def` sits above the new one: it belongs to the object all the same
    assert blocks["tensors"].startswith("def _result(self, data, parents, op, backward_fn):")
    assert "out = Tensor(data, requires_grad=False, copy=False)" in blocks["tensors"]
    assert "record_versions(backward_fn)" in blocks["memory"]
    assert "\n    ...\n" in blocks["memory"]  # the runs are apart in the file
    # a line replaced in `memory` was gone before `fast`: not among fast's replaced lines
    assert "if any(parent.requires_grad" not in "".join(blocks.values())
    assert result.replaced_caption("tensors") == (
        "`engine/tensor.py`, `Tensor._result`: the lines of `tensors` that this listing replaces")
    assert "replacing lines of chapter `tensors`, chapter `memory`" in result.caption()
    assert "replacing lines of {doc}`tensors`" in result.caption(lambda c: f"{{doc}}`{c}`")
    # a range gets the old line right above it, not the next statement's old lines below
    seed = listings.listing_lines("engine/tensor.py", {
        "start-at": "self._add_grad(seed_ones(self.shape)",
        "end-at": "self._add_grad(seed_ones(self.shape)"}, "fast", ROOT)
    assert [text for _, text in seed.replaced_blocks()] == [
        "self._add_grad(np.ones(self.shape) if gradient is None else gradient)"]
    # under :changes:, the replaced runs next to a line shown; none in the page's own chapter
    backward = listings.listing_lines("engine/tensor.py", {"pyobject": "Tensor.backward",
                                                           "changes": None}, "fast", ROOT)
    assert "for node in reversed(order):" in dict(backward.replaced_blocks())["tensors"]
    assert not listings.listing_lines("engine/tensor.py", {"pyobject": "Tensor.backward"},
                                      "tensors", ROOT).replaced_lines


def test_a_listing_shows_only_its_chapters_engine():
    backward = listings.listing_lines("engine/tensor.py", {"pyobject": "Tensor.backward"},
                                      "tensors", ROOT)
    assert "retain_graph" not in backward.text and "check_saved" not in backward.text
    assert all(line.chapter == "tensors" for line in backward.lines if line.text.strip())
    later = listings.listing_lines("engine/tensor.py", {"pyobject": "Tensor.backward"},
                                   "memory", ROOT)
    assert "check_saved(node)" in later.text and later.mixed
    # memory's backward replaces the signature that chapter higher-order gave it
    assert "memory" in later.caption() and "higher-order" in later.caption()
    with pytest.raises(listings.ListingError, match="not in the engine as of chapter"):
        listings.listing_lines("engine/memory.py", {}, "tensors", ROOT)


# -- engine tests per snapshot ------------------------------------------------------------


def _test_files(chapter):
    """The engine test modules holding a test marked for `chapter`."""
    mark = re.compile(rf"""pytest\.mark\.chapter\(\s*["']{re.escape(chapter)}["']""")
    return sorted(str(p) for p in (ROOT / "tests").glob("test_*.py") if mark.search(p.read_text()))


def run_engine_tests(chapter, folder):
    """The engine tests marked for `chapter`, run by pytest on its snapshot in `folder`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    snapshot = snapshots.snapshot_folder(chapter, folder, ROOT)  # with the finder fix
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
         "-c", str(ROOT / "pyproject.toml"), "--engine-chapter", chapter, *_test_files(chapter)],
        cwd=folder, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(snapshot)}, timeout=600)


_background = {}  # chapter -> the future of its run


def reads_background(item):
    """The per-chapter runs below (tests/conftest.py runs these tests last)."""
    return getattr(item, "originalname", None) == (
        "test_the_engine_tests_of_a_chapter_pass_on_its_snapshot")


def start_in_background(build):
    """Run every chapter's engine tests one after another beside the session, on one core
    (tests/conftest.py calls this once the session is collected): each is a pytest of its
    own, and the rest of the session mostly leaves a core free."""
    if _background:
        return
    from support import background

    folder = Path(build) / "snapshot-tests"
    shutil.rmtree(folder, ignore_errors=True)
    chapters = [c for c in CHAPTERS if _test_files(c)]
    futures = background.start_each(run_engine_tests, [(c, folder / c) for c in chapters])
    _background.update(zip(chapters, futures))


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if _test_files(c)])
def test_the_engine_tests_of_a_chapter_pass_on_its_snapshot(chapter, tmp_path):
    future = _background.get(chapter)
    done = future.result() if future else run_engine_tests(chapter, tmp_path)
    assert done.returncode == 0, f"on the engine as of {chapter}:\n{done.stdout[-4000:]}"
    assert re.search(r"\d+ passed", done.stdout), done.stdout[-2000:]


# -- the cache keys -----------------------------------------------------------------------


def _book_copy(folder, chapters):
    """The engine, the toc and empty pages of `chapters`: what a cache key reads."""
    book = folder / "book-copy"
    shutil.copytree(ROOT / "engine", book / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "_toc.yml", book)
    (book / "book").mkdir()
    for chapter in chapters:
        (book / "book" / f"{chapter}.md").write_text("")
    return book


def test_an_edit_of_a_later_chapters_lines_keeps_earlier_keys(tmp_path):
    book = _book_copy(tmp_path, ("tensors", "memory", "speed"))
    (book / "requirements.txt").write_text("")
    before = {c: engine_cache.run_key(book / "book" / f"{c}.md", book)
              for c in ("tensors", "memory", "speed")}
    memory = book / "engine" / "memory.py"
    memory.write_text(memory.read_text().replace(
        '"""How many times the memory of this array was changed in place."""',
        '"""How many times this memory was changed in place."""'))
    after = {c: engine_cache.run_key(book / "book" / f"{c}.md", book)
             for c in ("tensors", "memory", "speed")}
    assert after["tensors"] == before["tensors"]
    assert after["memory"] != before["memory"] and after["speed"] != before["speed"]


def test_a_new_runtime_pin_changes_every_key(tmp_path):
    """The runtime pins live in their own file, which requirements.txt includes: a change
    there (a new NumPy) must run every chapter again, as a change of requirements.txt does."""
    book = _book_copy(tmp_path, ("tensors",))
    shutil.copy(ROOT / "requirements.txt", book)
    pins = book / book_config.RUNTIME_PINS
    shutil.copy(ROOT / book_config.RUNTIME_PINS, pins)
    before = engine_cache.run_key(book / "book" / "tensors.md", book)
    pins.write_text(pins.read_text().replace("numpy==", "numpy==0.0.1+"))
    assert engine_cache.run_key(book / "book" / "tensors.md", book) != before


def test_a_snapshot_folder_is_whole_while_another_process_writes_it(tmp_path, monkeypatch):
    """The session's build and the numerical-environment matrix (which runs alongside it)
    ask for the same snapshot folders at the same moment: none may see one half written.
    Here a second caller asks while the first has written only part of the files."""
    chapter = snapshots.chapter_order(ROOT)[-1]
    expected = sorted(snapshots.snapshot_files(chapter, ROOT))
    seen = []
    write_text = Path.write_text

    def write_and_look(path, *args, **kwargs):
        done = write_text(path, *args, **kwargs)
        if path.name == "__init__.py" and not seen:  # part of the snapshot is on disk
            seen.append(None)
            folder = snapshots.snapshot_folder(chapter, tmp_path, ROOT)
            seen[0] = sorted(p.relative_to(folder).as_posix()
                             for p in (folder / "engine").rglob("*.py"))
        return done

    monkeypatch.setattr(Path, "write_text", write_and_look)
    folder = snapshots.snapshot_folder(chapter, tmp_path, ROOT)
    assert seen and seen[0] == expected
    assert sorted(p.relative_to(folder).as_posix()
                  for p in (folder / "engine").rglob("*.py")) == expected
    assert (folder / "sitecustomize.py").exists()
    assert [p.name for p in (tmp_path / "snapshots").iterdir()] == [folder.name]
