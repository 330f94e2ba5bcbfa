"""The execution cache never hides a change of the engine, and runs no more than it must
(book/_ext/engine_cache.py).

A throwaway book of two chapters, `first` and `second`, with an engine of its own whose
lines are marked for one or the other. Each chapter prints what its snapshot has. An
edit of a line of `second` must run `second` again and leave `first` cached; an edit of
a line of `first` runs both; undoing an edit runs what it changed once more and shows
the old values again.
"""

import re
import shutil
from pathlib import Path

import pytest

from support import books
from support.side_jobs import Job
from support.books import FRONT

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """\
title: cache probe
only_build_toc_files: true
exclude_patterns: [_build, engine]
execute:
  execute_notebooks: cache
sphinx:
  local_extensions:
    engine_cache: book/_ext
"""

TOC = "format: jb-book\nroot: book/intro\nchapters:\n  - file: book/first\n  - file: book/second\n"

ENGINE = """\
#> first
VALUE = {first}
#> second
OTHER = {second}
"""

CHAPTER = FRONT + """\
# {name}

```{{code-cell}} ipython3
import engine  # in chapter {name}: jupyter-cache keys a notebook on its code, so make it its own
print("value", engine.VALUE, "other", getattr(engine, "OTHER", None))
```
"""


def build(book):
    code, log = books.run_build(book, "-v", timeout=300)
    assert code == 0, log[-3000:]
    pages = {name: (book / "_build" / "html" / "book" / f"{name}.html").read_text()
             for name in ("first", "second")}
    ran = set(re.findall(r"engine_cache: ran book/(\w+) on ", log))
    return pages, ran


def engine(book, first, second):
    (book / "engine" / "__init__.py").write_text(ENGINE.format(first=first, second=second))


def engine_edits(folder):
    """The probe built four times, checked as it goes (in the side thread, below)."""
    book = folder / "book-root"
    (book / "book").mkdir(parents=True)
    shutil.copytree(ROOT / "book" / "_ext", book / "book" / "_ext",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (book / "engine").mkdir()
    (book / "_config.yml").write_text(CONFIG)
    (book / "_toc.yml").write_text(TOC)
    (book / "book" / "intro.md").write_text("# Probe\n")
    for name in ("first", "second"):
        (book / "book" / f"{name}.md").write_text(CHAPTER.format(name=name))

    engine(book, 1, 10)
    pages, ran = build(book)
    assert ran == {"first", "second"}
    assert "value 1 other None" in pages["first"]  # `first` runs on its own snapshot
    assert "value 1 other 10" in pages["second"]

    engine(book, 1, 20)  # a line of `second`
    pages, ran = build(book)
    assert ran == {"second"}, "an edit of a later chapter's line ran an earlier chapter"
    assert "value 1 other 20" in pages["second"] and "value 1 other None" in pages["first"]

    engine(book, 2, 20)  # a line of `first`: both snapshots change
    pages, ran = build(book)
    assert ran == {"first", "second"}
    assert "value 2 other None" in pages["first"] and "value 2 other 20" in pages["second"]

    pages, ran = build(book)  # nothing changed: nothing runs
    assert ran == set()
    assert "value 2 other 20" in pages["second"]


ENGINE_EDITS = Job("engine-edits", engine_edits, guess=39)


def side_jobs(item):
    """The probes' builds and runs: the test only waits on them, so they run beside the
    session (tests/support/side_jobs.py); an assertion that fails in them fails the test."""
    return {"test_an_engine_edit_runs_its_chapter_and_the_later_ones_only": [ENGINE_EDITS],
            "test_the_verifier_and_the_build_reuse_each_others_runs": [REUSE],
            }.get(item.originalname, [])


@pytest.mark.slow
def test_an_engine_edit_runs_its_chapter_and_the_later_ones_only():
    ENGINE_EDITS.result()


# -- one execution path: what the verifier ran, the build shows, and the reverse ----------

ONE_PATH_CONFIG = f"""\
title: one execution path
only_build_toc_files: true
exclude_patterns: [_build]
execute:
  execute_notebooks: cache
sphinx:
  local_extensions:
    engine_cache: {ROOT / "book" / "_ext"}
"""

ONE_CELL = FRONT + """\
# {name}

```{{code-cell}} ipython3
---
expect: |
  {name} ran
---
print("{name} ran")
```
"""


@pytest.mark.slow
def test_the_verifier_and_the_build_reuse_each_others_runs():
    """Both execute through execution.execute and store in the build's cache: a chapter
    the verifier ran, the build only reads, and a chapter the build ran, the verifier
    only checks. Nothing executes twice, and myst-nb executes nothing itself."""
    REUSE.result()


def reuse(folder):
    """The verifier, two builds, the verifier again, checked as they go (a side job)."""
    import verifier

    book = books.make_book(folder / "book-root", ONE_PATH_CONFIG,
                           {"first": ONE_CELL.format(name="first")})
    build_dir = book / "_build"
    first = verifier.verify(book / "book" / "first.md", root=book, build=build_dir)
    assert first.ok and first.source == "executed" and first.stored, first.report()

    code, log = books.run_build(book, "-v", timeout=300)
    assert code == 0, log[-3000:]
    assert "engine_cache: ran" not in log and "Executing notebook" not in log, log[-3000:]
    assert "book/first.md: Using cached notebook" in log
    assert "first ran" in (build_dir / "html" / "book" / "first.html").read_text()

    (book / "book" / "second.md").write_text(ONE_CELL.format(name="second"))
    (book / "_toc.yml").write_text((book / "_toc.yml").read_text() + "  - file: book/second\n")
    code, log = books.run_build(book, "-v", timeout=300)
    assert code == 0, log[-3000:]
    assert set(re.findall(r"engine_cache: ran book/(\w+) on ", log)) == {"second"}
    assert "Executing notebook" not in log, log[-3000:]
    second = verifier.verify(book / "book" / "second.md", root=book, build=build_dir)
    assert second.ok and second.source == "cache", second.report()


REUSE = Job("verifier-build-reuse", reuse, guess=23)


TRANSPORT_CELL = FRONT + """\
# Transport

```{code-cell} ipython3
from ipykernel.kernelapp import IPKernelApp

kernel = IPKernelApp.instance()
print(kernel.transport, len(kernel.ip) < 90)
```
"""


def test_kernels_talk_over_unix_sockets_not_tcp_ports(tmp_path):
    """The build runs two kernels at once, and the numerical-environment matrix more
    beside them: over TCP each picks "free" ports that another kernel starting at the
    same moment may pick too (a build died once with `ZMQError: Address already in
    use`). Sockets in a folder of the run's own cannot collide, and their path stays
    short (a Unix socket's path is limited to about a hundred bytes)."""
    import verifier

    book = books.make_book(tmp_path / "book-root", ONE_PATH_CONFIG,
                           {"transport": TRANSPORT_CELL})
    result = verifier.verify(book / "book" / "transport.md", root=book,
                             build=book / "_build", use_cache=False)
    printed = result.executed_nb.cells[-1].outputs[0]["text"]
    assert printed == "ipc True\n", printed
