"""The notebooks a reader downloads run as they are, and print what the book prints.

From the BUILT site (the README's build command) this takes the archive linked from
the intro (`downloads/autodiff-book.zip`) and every chapter's "Download .ipynb",
makes a fresh virtual environment with nothing of the repository in it but what
the archive holds (`pip install -r requirements.txt` then `pip install .`), runs
every notebook top to bottom there with nbclient, and checks every cell with the
verifier's own rules (`book/_ext/expectations.py`): the `expect:` of each cell,
no stderr, no error. The engine listings (cells tagged `engine-listing`) must
run without output and leave every other cell's output as the site shows it.
"""

import io
import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

import expectations as ex  # noqa: E402
from site_pages import BuildFailed, build_site  # noqa: E402

import notebooks  # noqa: E402

ARCHIVE = "downloads/autodiff-book.zip"
LISTING_TAG = "engine-listing"

RUNNER = r'''
import json, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
import nbformat
from nbclient import NotebookClient

folder, out, timeout = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])


def run(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
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


@pytest.fixture(scope="module")
def archive(site):
    path = site / ARCHIVE
    assert path.exists(), f"the build made no {ARCHIVE}"
    return zipfile.ZipFile(io.BytesIO(path.read_bytes()))


def chapter_docnames():
    chapters = []
    for path in ex.chapter_paths(ROOT):
        chapters.append(path.resolve().relative_to(ROOT).with_suffix("").as_posix())
    return chapters


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
def test_archive_requirements_are_the_runtime_pins_only(archive):
    top = archive.namelist()[0].split("/")[0]
    lines = [ln for ln in archive.read(f"{top}/requirements.txt").decode().splitlines()
             if ln and not ln.startswith("#")]
    pins = dict(ln.split("==") for ln in lines)
    book_pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            book_pins[name.strip()] = version.strip()
    for name in ("numpy", "scipy", "matplotlib", "ipykernel", "nbclient"):
        assert pins.get(name) == book_pins[name], name
    for tool in ("Sphinx", "jupyter-book", "myst-nb", "sphinx-book-theme", "docutils"):
        assert tool not in pins, f"{tool} is build toolchain, not runtime"
    assert all(book_pins.get(name) == version for name, version in pins.items())


@pytest.fixture(scope="module")
def fresh_run(archive, tmp_path_factory):
    """Unpack the archive, make a fresh venv from it alone, execute every notebook there."""
    work = tmp_path_factory.mktemp("reader")
    archive.extractall(work)
    top = work / archive.namelist()[0].split("/")[0]
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    environ = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    environ["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    for args in (["-r", "requirements.txt"], ["."]):
        result = subprocess.run([str(python), "-m", "pip", "install", "-q", *args], cwd=top,
                                env=environ, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, f"pip install {' '.join(args)}:\n{result.stderr[-3000:]}"
    # the engine the notebooks import is the archive's copy, installed, not the repository's
    where = subprocess.run([str(python), "-c", "import engine, sys; print(engine.__file__)"],
                           cwd=work, env=environ, capture_output=True, text=True)
    assert str(ROOT) not in where.stdout and str(env_dir) in where.stdout, where.stdout
    out = work / "executed"
    timeout = int(ex.default_timeout(ROOT) or 600)
    runner = work / "run_notebooks.py"
    runner.write_text(RUNNER)
    result = subprocess.run([str(python), str(runner), str(top / "notebooks"), str(out),
                             str(timeout)], cwd=work, env=environ, capture_output=True,
                            text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    times = json.loads(result.stdout.strip().splitlines()[-1])
    return top, out, times


def _text(outputs):
    return ex.cell_output(outputs).text


@pytest.mark.slow
def test_every_notebook_runs_in_a_fresh_environment_as_the_book_prints(fresh_run):
    top, out, times = fresh_run
    problems = []
    for name in sorted(times):
        original = nbformat.read(top / "notebooks" / name, as_version=4)
        executed = nbformat.read(out / name, as_version=4)
        assert len(original.cells) == len(executed.cells)
        for index, (before, after) in enumerate(zip(original.cells, executed.cells)):
            if after.cell_type != "code":
                continue
            where = f"{name} cell {index} ({after.source.strip().splitlines()[0][:60]!r})"
            if LISTING_TAG in after.metadata.get("tags", []):
                if after.outputs:
                    problems.append(f"{where}: the listing printed or raised: "
                                    f"{ex.cell_output(after.outputs)}")
                continue
            cell = ex.CodeCell(index, 0, after.source, dict(after.metadata))
            for failure in ex.check_cell(cell, ex.cell_output(after.outputs)):
                problems.append(f"{where}: {failure.what}\n{failure.detail}")
            book_text = _text(before.outputs)
            if after.metadata.get("tolerance") and isinstance(after.metadata.get("expect"), str):
                # the numbers the chapter marks noisy may move; the others may not
                book_text = ex.carry_marks(after.metadata["expect"], book_text)
            tolerance = after.metadata.get("tolerance") if ex.has_marks(book_text) else None
            if ex.compare(book_text, _text(after.outputs), tolerance) is not None:
                problems.append(f"{where}: prints other text than the book's notebook\n"
                                + ex.indent(ex.unified_diff(_text(before.outputs),
                                                            _text(after.outputs))))
    assert not problems, "\n".join(problems)
    assert times, "no notebook ran"


# -- the conversion itself, on a throwaway package (fast) ----------------------------

CORE = """\
\"\"\"A throwaway module.\"\"\"
import numpy as np

from .helpers import double

SCALE = 2.0


class Thing:
    \"\"\"A thing.\"\"\"

    def __init__(self, v):
        self.v = v

    def twice(self):
        # -- twice start
        out = double(self.v)
        return out
        # -- twice end

    def sum(self):
        return self.v


class Base:
    pass


class Child(Base):
    kind = "child"  # needs Base to run
"""

MARKDOWN = """\
The class:

```{literalinclude} ../pkg/core.py
:language: python
:pyobject: Thing
```

A fragment:

```{literalinclude} ../pkg/core.py
:start-after: "# -- twice start"
:end-before: "# -- twice end"
```

````{admonition} Nested
```{literalinclude} ../pkg/core.py
---
pyobject: Thing.twice
---
```
````

A class whose base no earlier cell imported:

```{literalinclude} ../pkg/core.py
:pyobject: Child
```

A method whose name is a builtin's:

```{literalinclude} ../pkg/core.py
:pyobject: Thing.sum
```

The imports:

```{literalinclude} ../pkg/core.py
:lines: 2-4
```

````md
```{literalinclude} not/a/directive.py
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


@pytest.fixture
def package(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "core.py").write_text(CORE)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helpers.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "book").mkdir()
    return tmp_path


def convert(root):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from myst_nb import glue\nfrom pkg.core import Thing\nx = 1"),
                nbformat.v4.new_markdown_cell(MARKDOWN)]
    glue = {"fig-a": {"data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}},
            "grad": {"data": {"text/plain": "1.71633"}}, "count": {"data": {"text/plain": "7"}}}
    out = notebooks.reader_notebook(nb, root / "book" / "chapter.md", root, glue)
    nbformat.validate(out)
    return out


def test_listings_become_runnable_code_cells(package):
    cells = convert(package).cells
    listings = [c for c in cells if LISTING_TAG in c.metadata.get("tags", [])]
    kinds = [(c.cell_type, c.metadata["engine_listing"]["runnable"]) for c in listings]
    # class, fragment, nested method, Child, method `sum`, imports; the ```md one is text
    assert kinds == [("code", True), ("markdown", False), ("code", True), ("code", True),
                     ("code", True), ("code", True)]
    whole_class, fragment, method, child, builtin_named, imports = listings
    assert child.source.splitlines()[1] == (
        "from pkg.core import Base  # what this listing needs to run here")
    assert child.source.splitlines()[-1].startswith("del Child, Base  #")
    assert whole_class.source.startswith("# Listing: pkg/core.py (Thing)")
    assert "class Thing:" in whole_class.source
    # an earlier cell imported Thing: the package's own class comes back after the listing
    assert whole_class.source.rstrip().endswith(
        "from pkg.core import Thing  # later cells use the package's own definitions")
    assert "```python\nout = double(self.v)\nreturn out\n```" in fragment.source
    assert method.source.splitlines()[1] == "def twice(self):"  # dedented
    assert method.source.splitlines()[-1].startswith("del twice  # shown, not kept")
    assert builtin_named.source.splitlines()[-1].startswith("del sum  #")
    assert "from pkg.helpers import double" in imports.source  # relative import made absolute
    assert "{literalinclude} not/a/directive.py" in "".join(c.source for c in cells)


def test_running_the_listings_changes_nothing_later_cells_see(package, monkeypatch):
    import builtins

    monkeypatch.syspath_prepend(str(package))
    import pkg.core

    namespace = {}
    for cell in convert(package).cells:
        if cell.cell_type == "code":
            exec(cell.source.replace("from myst_nb import glue", "from not_myst_nb import glue"),
                 namespace)
    assert namespace["Thing"] is pkg.core.Thing
    assert "sum" not in namespace and "twice" not in namespace
    assert "Child" not in namespace and "Base" not in namespace
    assert eval("sum([1, 2])", namespace) == 3 and builtins.sum is sum
    namespace["glue"]("name", 1, display=False)  # the fallback glue runs


def test_nested_listing_is_hoisted_after_its_block(package):
    cells = convert(package).cells
    at = next(i for i, c in enumerate(cells) if "{admonition} Nested" in c.source)
    assert "the cell after this text" in cells[at].source
    assert cells[at + 1].source.splitlines()[1] == "def twice(self):"


def test_glue_import_falls_back_and_glued_figures_are_attached(package):
    cells = convert(package).cells
    assert "except ImportError:" in cells[0].source and cells[0].source.endswith("x = 1")
    figure = next(c for c in cells if "attachment:fig-a.png" in c.source)
    assert figure.attachments["fig-a.png"]["image/png"] == "iVBORw0KGgo="
    assert "![the figure](attachment:fig-a.png)" in figure.source
    assert "*Its caption.*" in figure.source
    assert "The gradient is 1.716, the count 7." in figure.source  # glue roles pasted
    assert "Also here: 1.7." in figure.source and "Not in code: {glue}`count`" in figure.source
