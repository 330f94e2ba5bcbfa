"""Two setuptools hooks; pyproject.toml holds the metadata.

`pip install .` builds a wheel of the finished engine: engine/ marks each block with the
chapter that introduces it (book/_ext/snapshots.py), the book's authoring format, so each
module goes into the wheel as the last chapter's snapshot has it, without the markers and
the lines later chapters replaced.

`pip install -e .` reads engine/ as it is, and also puts book/_ext on sys.path, so that the
book's scripts (tests/verifier.py, tests/benchmarks/run.py, book/_ext/book_pdf.py) import
its tooling by name, a module added there included.
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
    # by its path: the build runs in an environment of its own, with setuptools alone
    spec = importlib.util.spec_from_file_location("snapshots", TOOLING / "snapshots.py")
    module = sys.modules["snapshots"] = importlib.util.module_from_spec(spec)
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
        if match := snapshots._REPLACED.match(raw):
            order.add(match["until"], match["chapter"])
        elif match := snapshots._ADDED.match(raw):
            order.add(match["chapter"])
    return list(order.static_order())


class BuildFinishedEngine(build_py):
    def build_module(self, module, module_file, package):
        outfile, copied = super().build_module(module, module_file, package)
        Path(outfile).write_text(finished_source(module_file, load_snapshots()),
                                 encoding="utf8")
        return outfile, copied


class EditableWithTooling(editable_wheel):
    # setuptools picks how an editable install finds `engine` (a finder on sys.meta_path,
    # which the snapshots' sitecustomize looks for); this adds one .pth line to it
    def _select_strategy(self, name, tag, build_lib):
        return WithToolingPath(super()._select_strategy(name, tag, build_lib))


class WithToolingPath:
    def __init__(self, strategy):
        self.strategy = strategy

    def __call__(self, wheel, files, mapping):
        self.strategy(wheel, files, mapping)
        wheel.writestr("autodiff_book_tooling.pth", f"{TOOLING}\n")

    def __enter__(self):
        self.strategy.__enter__()
        return self

    def __exit__(self, *exception):
        return self.strategy.__exit__(*exception)


setup(cmdclass={"build_py": BuildFinishedEngine, "editable_wheel": EditableWithTooling})
