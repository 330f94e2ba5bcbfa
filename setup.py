"""Two setuptools hooks; pyproject.toml holds the metadata.

`pip install .` builds a wheel of the finished engine: engine/ marks each block with the
chapter that introduces it (book/_ext/snapshots.py), the book's authoring format, so each
module goes into the wheel as the last chapter's snapshot has it, without the markers and
the lines later chapters replaced.

`pip install -e .` reads engine/ as it is, and also makes the book's tooling, book/_ext,
importable by name, so that the book's scripts (tests/verifier.py, tests/numerics.py,
tests/benchmarks/run.py) import it from any folder.
"""

import functools
import graphlib
import importlib.util
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

TOOLING = Path(__file__).resolve().parent / "book" / "_ext"


@functools.cache
def load_snapshots():
    # by their paths: the build runs in an environment of its own, with setuptools alone;
    # snapshots imports book_config, so that one is loaded first
    for name in ("book_config", "snapshots"):
        spec = importlib.util.spec_from_file_location(name, TOOLING / f"{name}.py")
        module = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def finished_source(path, snapshots) -> str:
    """The module at `path` as the last chapter's snapshot has it (snapshots.snapshot_files)."""
    text = Path(path).read_text(encoding="utf8")
    lines = [line for line in snapshots.parse(text, path, marker_order(text, snapshots))
             if line.until is None]
    return "\n".join(line.text for line in snapshots._tidy(lines)) + "\n"


def marker_order(text, snapshots) -> list:
    """The chapters the markers name, each before the chapters that replace its lines: what
    snapshots.parse checks its order against (reading _toc.yml's order needs Sphinx)."""
    order = graphlib.TopologicalSorter()
    for raw in text.splitlines():
        if (match := snapshots.MARKER.match(raw)) and match["until"]:
            order.add(match["until"], match["replaced"])
        elif match:
            order.add(match["added"])
    return list(order.static_order())


class BuildFinishedEngine(build_py):
    def build_module(self, module, module_file, package):
        outfile, copied = super().build_module(module, module_file, package)
        Path(outfile).write_text(finished_source(module_file, load_snapshots()),
                                 encoding="utf8")
        return outfile, copied


# Searched after everything on sys.path, not put on it: a book built from another folder
# (a test's copy, another worktree) still imports the tooling of its own _config.yml, which
# jupyter-book appends to sys.path. Searched afresh each time: a module added is found.
TOOLING_FINDER = f"""\
\"""The book's tooling, book/_ext, importable by name (setup.py, `pip install -e .`).\"""
import sys
from importlib.machinery import PathFinder


class BookTooling:
    @staticmethod
    def find_spec(name, path=None, target=None):
        return None if path else PathFinder.find_spec(name, [{str(TOOLING)!r}])


sys.meta_path.append(BookTooling)
"""


class EditableWithTooling(editable_wheel):
    # setuptools picks how the install finds `engine` (a finder on sys.meta_path, which the
    # snapshots' sitecustomize takes away in kernels); this adds the tooling's finder to it
    def _select_strategy(self, name, tag, build_lib):
        return WithTooling(super()._select_strategy(name, tag, build_lib))


class WithTooling:
    def __init__(self, strategy):
        self.strategy = strategy

    def __call__(self, wheel, files, mapping):
        self.strategy(wheel, files, mapping)
        wheel.writestr("autodiff_book_tooling.py", TOOLING_FINDER)
        wheel.writestr("autodiff_book_tooling.pth", "import autodiff_book_tooling\n")

    def __enter__(self):
        self.strategy.__enter__()
        return self

    def __exit__(self, *exception):
        return self.strategy.__exit__(*exception)


setup(cmdclass={"build_py": BuildFinishedEngine, "editable_wheel": EditableWithTooling})
