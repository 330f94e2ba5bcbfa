"""The execution cache never hides a change of the engine (book/_ext/engine_cache.py).

jupyter-cache keys a notebook on its own cells only. A throwaway book whose one
chapter prints a value from a throwaway copy of `engine/` is built, the engine is
edited, the book is built again: the page must show the new value. Undoing the
edit must find the first execution again instead of running the chapter.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from throwaway import FRONT

ROOT = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"

CONFIG = """\
title: cache probe
only_build_toc_files: true
exclude_patterns: [_build, engine]
execute:
  execute_notebooks: cache
  cache: _build/.jupyter_cache
sphinx:
  local_extensions:
    engine_cache: book/_ext
"""

CHAPTER = FRONT + """\
# Probe

```{code-cell} ipython3
import sys
sys.path.insert(0, "..")  # the throwaway engine, not the installed one
from engine import probe
print("probe value", probe.VALUE)
```
"""


def build(book):
    result = subprocess.run(
        [str(JUPYTER_BOOK), "build", str(book), "-W", "-n", "--keep-going", "-v"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    html = (book / "_build" / "html" / "book" / "probe.html").read_text()
    return html, result.stdout


@pytest.mark.slow
def test_editing_the_engine_reexecutes_and_undoing_it_reuses_the_cache(tmp_path):
    book = tmp_path / "book-root"
    (book / "book" / "_ext").mkdir(parents=True)
    shutil.copy(ROOT / "book" / "_ext" / "engine_cache.py", book / "book" / "_ext")
    (book / "engine").mkdir()
    (book / "engine" / "__init__.py").write_text("")
    probe = book / "engine" / "probe.py"
    probe.write_text("VALUE = 1\n")
    (book / "_config.yml").write_text(CONFIG)
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/probe\n")
    (book / "book" / "probe.md").write_text(CHAPTER)

    html, log = build(book)
    assert "probe value 1" in html

    probe.write_text("VALUE = 2\n")  # only the engine changes, not the chapter
    html, log = build(book)
    assert "probe value 2" in html, "the page kept an output of the old engine"
    assert "Executing notebook" in log

    probe.write_text("VALUE = 1\n")
    html, log = build(book)
    assert "probe value 1" in html
    assert "Using cached notebook" in log and "Executing notebook" not in log
