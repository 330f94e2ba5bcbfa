"""The notebooks a reader downloads run as they are, and print what the book prints.

From the BUILT site (the README's build command) this takes the archive linked from
the intro (`downloads/autodiff-book.zip`) and every chapter's "Download .ipynb",
makes a fresh virtual environment with the archive's runtime pins and nothing
else (`pip install -r requirements.txt`: no engine), runs every page's notebook
there alone, each in a folder of its own, with nbclient, and checks every cell
with the verifier's own rules (`book/_ext/output_rules.py`, `expect_match.py`): the `expect:` of each
cell, no stderr, no error, and the text the site shows. Each notebook brings its
own engine: its first cell unpacks the engine as of its chapter.
"""

import io
import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import nbformat
import pytest

import book_config
import myst_reader
import expect_match
import notebooks
import output_rules
import snapshots
from site_pages import BuildFailed, build_site
from support import background
from support.books import chapter_docnames

ROOT = Path(__file__).resolve().parents[1]

ARCHIVE = "downloads/autodiff-book.zip"
LISTING_TAG = "engine-listing"

RUNNER = r'''
import json, os, shutil, sys, tempfile, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
import nbformat
from nbclient import NotebookClient
from traitlets.config import Config

folder, out, timeout = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])


def run(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    start = time.perf_counter()
    sockets = tempfile.mkdtemp(prefix="k")  # Unix sockets: two kernels may pick one TCP port
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}},
                            config=Config({"KernelManager": {"transport": "ipc",
                                           "ip": os.path.join(sockets, "s")}}))
    try:
        client.execute()
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    target = out / path.relative_to(folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return path.relative_to(folder).as_posix(), round(time.perf_counter() - start, 2)


if __name__ == "__main__":
    paths = sorted(folder.rglob("*.ipynb"))
    with ProcessPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        times = dict(pool.map(run, paths))
    print(json.dumps(times))
'''


@pytest.fixture(scope="module")
def site():
    try:
        return build_site(ROOT)
    except BuildFailed as error:
        pytest.fail(str(error), pytrace=False)


def open_archive(site):
    path = site / ARCHIVE
    assert path.exists(), f"the build made no {ARCHIVE}"
    return zipfile.ZipFile(io.BytesIO(path.read_bytes()))


@pytest.mark.slow
def test_every_downloaded_notebook_opens_on_the_lesson(site):
    """What the page hides (the engine the notebook carries, figure code, hidden checks) is
    folded in Jupyter, not shown in full: the first thing a reader sees is the lesson."""
    for docname in chapter_docnames():
        nb = nbformat.read(site / "_sources" / f"{docname}.ipynb", as_version=4)
        for i, cell in enumerate(nb.cells):
            tags = set(cell.metadata.get("tags", []))
            if cell.cell_type == "code" and tags & notebooks.HIDDEN_SOURCE:
                assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, (
                    f"{docname}: cell {i} (tags {sorted(tags)}) shows its source")
        first = nb.cells[0]
        assert notebooks.SNAPSHOT_TAG in first.metadata["tags"], docname
        shown = [c for c in nb.cells if not c.metadata.get("jupyter", {}).get("source_hidden")]
        assert shown[0].cell_type == "markdown", f"{docname}: opens on code, not the lesson"


@pytest.fixture(scope="module")
def archive(site):
    return open_archive(site)


@pytest.mark.slow
def test_every_chapter_is_in_the_archive_as_on_its_page(site, archive):
    """The archive holds each chapter's notebook, identical to its page's download."""
    top = archive.namelist()[0].split("/")[0]
    names = {n for n in archive.namelist() if n.endswith(".ipynb")}
    for docname in chapter_docnames():
        page_copy = site / "_sources" / f"{docname}.ipynb"
        assert page_copy.exists(), f"{docname}: no .ipynb for its download menu"
        inside = f"{top}/notebooks/{docname.split('/', 1)[-1] if docname.startswith('book/') else docname}.ipynb"
        assert inside in names, f"{docname}: {inside} missing from the archive"
        assert archive.read(inside).decode() == page_copy.read_text(), (
            f"{docname}: the archive's notebook differs from the page's download")
    assert len(names) == len(chapter_docnames())


@pytest.mark.slow
def test_archive_engine_is_the_finished_engine(archive):
    """The archive's engine/ is the finished engine, as the wheel has it: the last chapter's
    snapshot, with no chapter marker and no commented-out replaced line."""
    top = archive.namelist()[0].split("/")[0]
    shipped = {name[len(top) + 1:]: archive.read(name).decode()
               for name in archive.namelist() if name.startswith(f"{top}/engine/")}
    assert shipped == snapshots.snapshot_files(snapshots.chapter_order()[-1])
    for name, text in shipped.items():
        for number, line in enumerate(text.splitlines(), 1):
            assert not snapshots.MARKER.match(line), (
                f"{name}:{number}: a chapter marker in the archive: {line}")


@pytest.mark.slow
def test_archive_requirements_are_the_runtime_pins_only(archive):
    """The archive's requirements.txt is the book's runtime pin file, as it is: the
    notebooks' own needs, none of the build toolchain. That it is complete is checked
    where it is installed alone (run_downloads: pip --no-deps, then pip check)."""
    top = archive.namelist()[0].split("/")[0]
    shipped = archive.read(f"{top}/requirements.txt").decode()
    assert shipped == (ROOT / book_config.RUNTIME_PINS).read_text()
    pins = dict(line.split("==") for line in shipped.splitlines()
                if line and not line.startswith("#"))
    for name in ("numpy", "scipy", "matplotlib", "ipykernel", "nbclient", "nbformat"):
        assert name in pins, f"{name}: the notebooks import it, and it is not pinned"
    for tool in ("Sphinx", "jupyter-book", "myst-nb", "sphinx-book-theme", "docutils"):
        assert tool not in pins, f"{tool} is build toolchain, not runtime"
    included = (ROOT / "requirements.txt").read_text().splitlines()
    assert f"-r {book_config.RUNTIME_PINS}" in included, "requirements.txt must include it"


_runs = []  # the future of run_downloads, started as the session starts


def reads_background(item):
    """The test of the downloads' run (tests/conftest.py runs it last)."""
    return "fresh_run" in getattr(item, "fixturenames", ())


def start_in_background(build):
    """Run the downloads in a thread from now on (tests/conftest.py calls this once the
    session is collected): they wait for the site, then use the core the matrix leaves."""
    if not _runs:
        _runs.append(background.start(run_downloads, Path(build) / "reader"))


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory):
    try:
        if _runs:
            return _runs[0].result()
        return run_downloads(tmp_path_factory.mktemp("reader"))
    except BuildFailed as error:
        pytest.fail(str(error), pytrace=False)


def run_downloads(work):
    """A fresh venv with the archive's runtime pins only; every page's notebook of the
    session's site run there alone, in a folder of its own: each one brings its own
    engine. Returns (the archive's top folder, the executed notebooks' folder, times)."""
    site = build_site(ROOT)
    archive = open_archive(site)
    shutil.rmtree(work, ignore_errors=True)  # nothing of an earlier session is read
    work.mkdir(parents=True)
    archive.extractall(work)
    top = work / archive.namelist()[0].split("/")[0]
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    environ = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    environ["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # the runtime pins only (no engine, no book toolchain), and nothing pip would add to
    # them: pip check then fails on any dependency the pin file lacks
    for command in (["install", "-q", "--no-deps", "-r", "requirements.txt"], ["check"]):
        result = subprocess.run([str(python), "-m", "pip", *command], cwd=top, env=environ,
                                capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, (
            f"pip {' '.join(command)}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    nowhere = subprocess.run([str(python), "-c", "import engine"], cwd=work, env=environ,
                             capture_output=True, text=True)
    assert nowhere.returncode != 0, "the fresh environment can import an engine already"
    # each notebook alone in a folder of its own, as the page's download menu gives it
    alone = work / "alone"
    for docname in chapter_docnames():
        name = Path(docname).name
        (alone / name).mkdir(parents=True)
        (alone / name / f"{name}.ipynb").write_bytes(
            (site / "_sources" / f"{docname}.ipynb").read_bytes())
    out = work / "executed"
    timeout = int(book_config.default_timeout(ROOT) or 600)
    runner = work / "run_notebooks.py"
    runner.write_text(RUNNER)
    result = subprocess.run([str(python), str(runner), str(alone), str(out),
                             str(timeout)], cwd=work, env=environ, capture_output=True,
                            text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    times = json.loads(result.stdout.strip().splitlines()[-1])
    return top, out, times


def _text(outputs):
    return output_rules.cell_output(outputs).text


@pytest.mark.slow
def test_every_notebook_runs_in_a_fresh_environment_as_the_book_prints(fresh_run):
    top, out, times = fresh_run
    problems = []
    alone = out.parent / "alone"
    for name in sorted(times):
        original = nbformat.read(alone / name, as_version=4)
        executed = nbformat.read(out / name, as_version=4)
        assert any((alone / Path(name).parent).glob("engine-as-of-*/engine/__init__.py")), (
            f"{name}: its first cell unpacked no engine")
        assert len(original.cells) == len(executed.cells)
        for index, (before, after) in enumerate(zip(original.cells, executed.cells)):
            if after.cell_type != "code":
                continue
            where = f"{name} cell {index} ({after.source.strip().splitlines()[0][:60]!r})"
            if LISTING_TAG in after.metadata.get("tags", []):
                if after.outputs:
                    problems.append(f"{where}: the listing printed or raised: "
                                    f"{output_rules.cell_output(after.outputs)}")
                continue
            cell = myst_reader.CodeCell(index, 0, after.source, dict(after.metadata))
            for failure in output_rules.check_cell(cell, output_rules.cell_output(after.outputs)):
                problems.append(f"{where}: {failure.what}\n{failure.detail}")
            book_text = _text(before.outputs)
            if after.metadata.get("tolerance") and isinstance(after.metadata.get("expect"), str):
                # the numbers the chapter marks noisy may move; the others may not
                book_text = expect_match.carry_marks(after.metadata["expect"], book_text)
            tolerance = after.metadata.get("tolerance") if expect_match.has_marks(book_text) else None
            if expect_match.compare(book_text, _text(after.outputs), tolerance) is not None:
                problems.append(f"{where}: prints other text than the book's notebook\n"
                                + expect_match.indent(expect_match.unified_diff(_text(before.outputs),
                                                            _text(after.outputs))))
    assert not problems, "\n".join(problems)
    assert times, "no notebook ran"


# -- the conversion itself (fast) ----------------------------------------------------

MARKDOWN = """\
The closure of `exp`:

```{listing} engine/tensor.py
:pyobject: Tensor.exp
```

````{admonition} Nested
```{listing} engine/tensor.py
:pyobject: Tensor.log
```
````

````md
```{listing} not/a/directive.py
```
````

```{glue:figure} fig-a
:alt: the figure

Its caption.
```

The gradient is {glue:text}`grad:.3f`, the count {glue}`count`.

```{dropdown} Inside a directive
Also here: {glue:text}`grad:.1f`.
```

```md
Not in code: {glue}`count`
```
"""


def convert(chapter="tensors"):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from myst_nb import glue\nx = 1"),
                nbformat.v4.new_markdown_cell(MARKDOWN)]
    glue = {"fig-a": {"data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}},
            "grad": {"data": {"text/plain": "1.71633"}}, "count": {"data": {"text/plain": "7"}}}
    out = notebooks.reader_notebook(nb, ROOT / "book" / f"{chapter}.md", ROOT, glue)
    nbformat.validate(out)
    return out


def test_the_first_cell_carries_the_engine_as_of_the_chapter(tmp_path):
    first = convert().cells[0]
    assert first.cell_type == "code" and notebooks.SNAPSHOT_TAG in first.metadata["tags"]
    assert first.metadata["engine_snapshot"] == {"chapter": "tensors"}
    probe = first.source + (
        "\nimport engine\nfrom engine import Tensor\n"
        "print(engine.__file__, hasattr(Tensor, '__matmul__'), hasattr(Tensor, 'exp'))\n")
    done = subprocess.run([sys.executable, "-I", "-c", probe], cwd=tmp_path,
                          capture_output=True, text=True)  # -I: no site, no installed engine
    assert done.returncode == 0, done.stderr[-2000:]
    path, matmul, exp = done.stdout.split()
    assert Path(path) == tmp_path / "engine-as-of-tensors" / "engine" / "__init__.py"
    assert (matmul, exp) == ("False", "True")  # `@` comes in chapter shapes


def test_hidden_cells_are_folded_and_still_run():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["remove-cell"]}),
                nbformat.v4.new_code_cell("y = 2", metadata={"tags": ["remove-input"]}),
                nbformat.v4.new_code_cell("z = 3")]
    out = notebooks.reader_notebook(nb, ROOT / "book" / "tensors.md", ROOT)
    hidden = [c.metadata.get("jupyter", {}).get("source_hidden", False) for c in out.cells]
    assert hidden == [True, True, True, False]  # the engine's cell, the two hidden, the shown
    assert [c.source for c in out.cells[1:]] == ["x = 1", "y = 2", "z = 3"]


def test_a_page_that_reads_data_carries_it_too():
    first = convert("speed").cells[0]
    assert "data/benchmarks.json" in first.source.splitlines()[1]


def test_listings_become_the_listing_as_the_page_shows_it():
    cells = convert().cells
    listings = [c for c in cells if LISTING_TAG in c.metadata.get("tags", [])]
    assert [c.cell_type for c in listings] == ["markdown", "markdown"]
    exp, log = listings
    assert exp.source.startswith("*Listing: `engine/tensor.py`, `Tensor.exp`*")
    assert "```python\ndef exp(self):\n    y = np.exp(self.data)\n" in exp.source
    assert "checked(" not in exp.source  # the errors appendix's line is not in `tensors`
    assert exp.metadata["engine_listing"]["chapter"] == "tensors"
    assert "{listing} not/a/directive.py" in "".join(c.source for c in cells)


def test_nested_listing_is_hoisted_after_its_block():
    cells = convert().cells
    at = next(i for i, c in enumerate(cells) if "{admonition} Nested" in c.source)
    assert "the cell after this text" in cells[at].source
    assert "def log(self):" in cells[at + 1].source


def test_glue_import_falls_back_and_glued_figures_are_attached():
    cells = convert().cells
    code = next(c for c in cells if c.cell_type == "code" and "x = 1" in c.source)
    assert "except ImportError:" in code.source and code.source.endswith("x = 1")
    figure = next(c for c in cells if "attachment:fig-a.png" in c.source)
    assert figure.attachments["fig-a.png"]["image/png"] == "iVBORw0KGgo="
    assert "![the figure](attachment:fig-a.png)" in figure.source
    assert "*Its caption.*" in figure.source
    assert "The gradient is 1.716, the count 7." in figure.source  # glue roles pasted
    assert "Also here: 1.7." in figure.source and "Not in code: {glue}`count`" in figure.source


def test_a_listing_cell_shows_the_lines_it_replaces_before_it():
    text = "```{listing} engine/tensor.py\n:pyobject: Tensor._result\n```\n"
    fence = next(f for f in myst_reader.fences(text, ROOT) if f.name == "listing")
    source = notebooks.listing_cell(fence, "fast", ROOT).source
    assert source.startswith("*Replaces, in `engine/tensor.py`, `Tensor._result`, these lines "
                             "of `tensors`:*\n\n```python\ndef _result(self, data, parents")
    assert "these lines of `memory`:*" in source
    # the old lines come first, the listing (and its caption) after them
    assert source.index("record_versions(backward_fn)") < source.index(
        "*Listing: `engine/tensor.py`, `Tensor._result` (replacing lines of") < source.index(
        "Tensor.__new__(Tensor)")
