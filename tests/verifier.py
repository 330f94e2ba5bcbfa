"""Run a chapter the way the site build does and check every printed number.

    python tests/verifier.py                    # every chapter of _toc.yml
    python tests/verifier.py tensors            # one chapter, by slug or path
    python tests/verifier.py --update tensors   # rewrite differing/missing expect: blocks
    python tests/verifier.py --environment sse-prescott   # as on another CPU (tests/numerics.py)

Outputs come from the build's own execution cache (`<build>/.jupyter_cache`, in
$BOOK_BUILD_DIR or <repo>/_build), where a chapter's outputs are kept with the
engine snapshot they ran on: a hit is literally what the site shows. A hit counts
only if it was made in the numerical environment this process is in (OpenBLAS core,
NumPy SIMD groups and version, stored with every run), whether the build or the
verifier ran it. On a miss
the chapter runs here through the build's own executor (book/_ext/execution.py:
one kernel on the chapter's snapshot, cell by cell, in the chapter's folder, each
cell under its `timeout:` or `execute: timeout:`; a cell that raises does not
stop the others, a timeout does), and is stored, so the next `jupyter-book
build` reuses it ("Using cached notebook") instead of running it.
The comparison rules live in book/_ext/expect_match.py and output_rules.py.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

# the book's tooling, book/_ext: on sys.path in pytest (pyproject.toml) and, for this script,
# after `pip install -e .` (setup.py)
import book_config
import myst_reader
import engine_cache
import execution
import expect_match
import expect_update
import output_rules

ROOT = Path(__file__).resolve().parents[1]


def build_dir(root=ROOT) -> Path:
    return Path(os.environ.get("BOOK_BUILD_DIR") or Path(root) / "_build")


# -- the numerical environment a cached run belongs to ------------------------------------
#
# The build's cache key says what a chapter ran on (its cells, its engine snapshot, its
# data files), not where: OpenBLAS's kernel family and NumPy's SIMD groups change the
# last bits of the numbers. Every stored run, the build's or the verifier's, carries the
# numbers of the machine that made it (execution.numerics_json); the verifier trusts a cached
# run only if they are the numbers it would make now.


def trusted(data) -> bool:
    """The cached run (its record's data) was made with this process's numbers, by the
    build or the verifier."""
    return data.get(engine_cache.NUMERICS) == execution.numerics_json()


@dataclasses.dataclass
class Result:
    chapter: myst_reader.Chapter
    root: Path
    source: str = ""  # "cache" or "executed"
    seconds: float = 0.0  # execution wall time, this run
    cell_seconds: dict = dataclasses.field(default_factory=dict)  # fence line -> seconds
    failures: list = dataclasses.field(default_factory=list)  # output_rules.Failure
    stored: bool = False  # the executed notebook went into the build's cache
    rewritten: list = dataclasses.field(default_factory=list)  # fence lines updated
    executed_nb: object = None

    @property
    def name(self):
        return book_config.display_path(self.chapter.path, self.root)

    @property
    def ok(self):
        return not self.failures

    def report(self) -> str:
        if self.chapter.nb is None:
            head = f"{self.name}: myst-nb cannot read this chapter, so no cell ran"
        else:
            source = "from the build cache" if self.source == "cache" else "executed"
            head = (
                f"{self.name}: {len(self.failures)} problem(s) in "
                f"{len({f.line for f in self.failures})} of {len(self.chapter.cells)} code cells "
                f"(outputs {source})"
            )
        parts = [head]
        for failure in self.failures:
            parts.append(f"{self.name}:{failure.line}: {failure.what}")
            if failure.detail:
                parts.append(failure.detail)
        if any(f.kind in ("differs", "missing", "unexpected") for f in self.failures):
            parts.append(
                "If the new numbers are right: pytest --update-expect "
                f"(or python tests/verifier.py --update {book_config.slug(self.chapter.path, self.root)})"
            )
        return "\n".join(parts)


# -- execution: book/_ext/execution.py, shared with the build ----------------------------


def restore_under(new_chapter: myst_reader.Chapter, executed_nb):
    """The notebook the build would have cached for `new_chapter`: its cells, these outputs.

    Only cell metadata (the expect: options) differ between the two readings, so
    the outputs carry over unchanged.
    """
    nb = copy.deepcopy(new_chapter.nb)
    for key in ("language_info", "widgets"):
        if key in executed_nb.metadata:
            nb.metadata[key] = copy.deepcopy(executed_nb.metadata[key])
    old_code = [c for c in executed_nb.cells if c.cell_type == "code"]
    new_code = [c for c in nb.cells if c.cell_type == "code"]
    assert len(old_code) == len(new_code)
    for old, new in zip(old_code, new_code):
        assert old.source == new.source
        new.outputs = copy.deepcopy(old.outputs)
        new.execution_count = old.execution_count
    return nb


# -- one chapter ---------------------------------------------------------------------


def verify(path, root=ROOT, build=None, update=False, use_cache=True, env=None) -> Result:
    """Check one chapter; with `update`, rewrite its differing/missing expect: blocks.

    With `env` (kernel variables of a numerical environment, {} for this machine as
    it is) the chapter always runs afresh and its outputs are never stored: the
    build's cache holds what the build itself ran.
    """
    if env is not None:
        use_cache, update = False, False
    root = Path(root).resolve()
    path = Path(path).resolve()
    build = Path(build) if build is not None else build_dir(root)
    try:
        chapter = myst_reader.read_chapter(path, root)
    except myst_reader.ChapterError as error:  # e.g. a cell's options are not YAML: nothing can run
        chapter = myst_reader.Chapter(path, path.read_text(encoding="utf8"), None, [])
        return Result(chapter, root, failures=[output_rules.Failure(error.line, error.what)])
    result = Result(chapter, root)

    executed = None
    if use_cache:
        executed, data = engine_cache.cached_run(chapter, build, root)
        if executed is not None and not trusted(data):
            executed = None  # made in another numerical environment
        if executed is not None:
            result.source = "cache"
            result.seconds = data.get("execution_seconds") or 0.0
    run_failures = []
    if executed is None:
        executed, result.cell_seconds, run_failures, result.seconds = execution.execute(
            chapter, root, build, env=env
        )
        result.source = "executed"
    result.executed_nb = executed

    by_index = {cell.index: cell for cell in chapter.cells}
    failures = []
    timed_out = {f.line for f in run_failures}
    for index, nb_cell in enumerate(executed.cells):
        cell = by_index.get(index)
        if cell is None:
            continue
        output = output_rules.cell_output(nb_cell.get("outputs", []), raises=cell.raises)
        if cell.line in timed_out:
            failures.extend(f for f in run_failures if f.line == cell.line)
            break
        failures.extend(output_rules.check_cell(cell, output))
    failures.extend(f for f in run_failures if f.line not in timed_out)
    if not run_failures:  # every cell ran: each glued value the prose shows is there
        glued = output_rules.glued_values(executed.cells)
        failures.extend(output_rules.check_glue(chapter.text, chapter.cells, glued, root))
    result.failures = failures

    if result.source == "executed" and env is None:  # what the build would have stored
        engine_cache.store(chapter, executed, build, result.seconds, root,
                           failed=bool(run_failures))
        result.stored = not run_failures  # a run cut short runs again next time

    if update:
        rewrite(result, build)
    return result


def rewrite(result: Result, build):
    """Update mode: rewrite every differing or missing expect: and re-store the outputs."""
    updates = {}
    executed_cells = result.executed_nb.cells
    for failure in result.failures:
        if failure.kind not in ("differs", "missing", "unexpected"):
            continue
        cell = next(c for c in result.chapter.cells if c.line == failure.line)
        output = output_rules.cell_output(executed_cells[cell.index].get("outputs", []), cell.raises)
        new = output.text if output.text.strip() else None
        if new is not None and isinstance(cell.expect, str):
            new = expect_match.carry_marks(cell.expect, new)  # keep the author's `~` on noisy numbers
        updates[cell.line] = new
    if not updates:
        return
    chapter = result.chapter
    new_text = expect_update.updated_text(chapter, updates, result.root)
    chapter.path.write_text(new_text, encoding="utf8")
    new_chapter = myst_reader.read_chapter(chapter.path, result.root)
    if result.stored or result.source == "cache":
        nb = restore_under(new_chapter, result.executed_nb)
        engine_cache.store(new_chapter, nb, build, result.seconds, result.root)
    result.rewritten = sorted(updates)
    result.failures = [f for f in result.failures if f.line not in updates]
    result.chapter = new_chapter


# -- command line ------------------------------------------------------------------------


def find_chapters(names, root=ROOT):
    """[(chapter path, its book's root)]: every chapter of `root`'s toc, or the ones named.

    A name is a slug or a path; a path may belong to another book (the nearest
    `_toc.yml` above it). A page that exists but is not in its book's `_toc.yml` is
    refused: the build leaves it out, so checking it would pass a page nobody sees.
    """
    chapters = book_config.chapter_paths(root)
    if not names:
        return [(path, root) for path in chapters]
    picked = []
    for name in names:
        matches = [
            p for p in chapters if name in (book_config.slug(p, root), str(p), book_config.display_path(p, root))
        ]
        if matches:
            picked.extend((path, root) for path in matches)
            continue
        candidates = [Path(name), Path(root) / "book" / f"{name}.md"]
        path = next((c.resolve() for c in candidates if c.is_file()), None)
        home = book_config.book_root(path) if path is not None else None
        if path is not None and home is not None:
            if path in book_config.chapter_paths(home):
                picked.append((path, home))
                continue
            shown = book_config.display_path(path, home)
            if path.relative_to(home).with_suffix("").as_posix() in book_config.toc_docnames(home):
                raise SystemExit(f"{shown}: not a notebook (no kernelspec in its front matter), "
                                 "so it has no code cells to verify")
            raise SystemExit(
                f"{shown}: not in {book_config.display_path(home / '_toc.yml')}, "
                "so the book leaves it out and the chapter tests never run it: list it there"
            )
        known = ", ".join(book_config.slug(p, root) for p in chapters)
        raise SystemExit(f"no chapter {name!r} in _toc.yml (chapters: {known})")
    return picked


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="slugs (tensors) or paths; default: all")
    parser.add_argument("--update", action="store_true",
                        help="rewrite differing or missing expect: blocks in place")
    parser.add_argument("--no-cache", action="store_true",
                        help="execute even when the build cache holds the outputs")
    parser.add_argument("--environment", metavar="NAME",
                        help="run in a numerical environment of tests/numerics.py "
                        "(always executes; stores nothing)")
    parser.add_argument("--json", metavar="FILE", type=Path,
                        help="also write each chapter's result to FILE")
    args = parser.parse_args(argv)
    env = None
    if args.environment:
        import numerics

        environment = numerics.by_name(args.environment)
        why_not = environment.runnable()
        if why_not:
            raise SystemExit(f"{args.environment}: {why_not}")
        env = environment.variables()
    status, results = 0, {}
    for path, root in find_chapters(args.chapters):
        result = verify(path, root=root, update=args.update, use_cache=not args.no_cache,
                        env=env)
        results[result.name] = {"ok": result.ok, "seconds": round(result.seconds, 1),
                                "cells": len(result.chapter.cells),
                                "cell_seconds": {str(line): round(s, 2) for line, s
                                                 in sorted(result.cell_seconds.items())},
                                "report": "" if result.ok else result.report()}
        if args.json:  # after every chapter: a run cut short still says how far it got
            args.json.write_text(json.dumps(results, indent=1))
        timing = f"{result.seconds:.1f} s, {result.source}"
        if result.rewritten:
            lines = ", ".join(str(line) for line in result.rewritten)
            print(f"{result.name}: rewrote expect: of the cells at lines {lines}")
        if result.cell_seconds:
            line, slowest = max(result.cell_seconds.items(), key=lambda item: item[1])
            timing += f"; slowest cell {result.name}:{line} took {slowest:.1f} s"
        if result.ok:
            print(f"{result.name}: ok ({len(result.chapter.cells)} code cells, {timing})")
        else:
            status = 1
            print(result.report() + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
