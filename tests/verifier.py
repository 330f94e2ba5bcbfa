"""Run a chapter the way the site build does and check every printed number.

    python tests/verifier.py                    # every chapter of _toc.yml
    python tests/verifier.py tensors            # one chapter, by slug or path
    python tests/verifier.py --update tensors   # rewrite differing/missing expect: blocks
    python tests/verifier.py --environment sse-prescott   # as on another CPU (tests/numerics.py)

Outputs come from the build's own execution cache (`engine_cache.cache_dir`, in
$BOOK_BUILD_DIR or <repo>/_build): a hit is literally what the site shows. On a
miss the chapter runs here in one kernel, cell by cell, in the chapter's folder,
each cell under its `timeout:` (or `execute: timeout:`); a cell that raises does
not stop the others, a timeout does. When nothing raised or timed out, the
executed notebook is stored exactly as myst-nb stores it, so the next
`jupyter-book build` reuses it ("Using cached notebook") instead of running it.
The comparison rules live in book/_ext/expectations.py.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import expectations as ex  # noqa: E402


def build_dir(root=ROOT) -> Path:
    return Path(os.environ.get("BOOK_BUILD_DIR") or Path(root) / "_build")


open_cache = ex.open_cache  # the folder engine_cache gives Sphinx


@dataclasses.dataclass
class Result:
    chapter: ex.Chapter
    root: Path
    source: str = ""  # "cache" or "executed"
    seconds: float = 0.0  # execution wall time, this run
    cell_seconds: dict = dataclasses.field(default_factory=dict)  # fence line -> seconds
    failures: list = dataclasses.field(default_factory=list)  # ex.Failure
    stored: bool = False  # the executed notebook went into the build's cache
    rewritten: list = dataclasses.field(default_factory=list)  # fence lines updated
    executed_nb: object = None

    @property
    def name(self):
        return ex.display_path(self.chapter.path, self.root)

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
                f"(or python tests/verifier.py --update {ex.slug(self.chapter.path, self.root)})"
            )
        return "\n".join(parts)


# -- execution ---------------------------------------------------------------------


def execute(chapter: ex.Chapter, root=ROOT, default_timeout=None, env=None):
    """Run the notebook in one kernel, cell by cell; keep going after an error.

    `env`: variables to set for the kernel on top of this process's own (a
    numerical environment of tests/numerics.py).

    Returns (executed notebook, {fence line: seconds}, failures, total seconds,
    stopped) where failures only holds timeouts and kernel deaths (errors are
    outputs, checked with the rest).
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    nb = copy.deepcopy(chapter.nb)
    if default_timeout is None:
        default_timeout = ex.default_timeout(root)
    # a chapter may override the timeout in its front matter, as the build allows
    default_timeout = nb.metadata.get("mystnb", {}).get("execution_timeout", default_timeout)
    default_timeout = nb.metadata.get("execution", {}).get("timeout", default_timeout)
    if default_timeout is not None and default_timeout < 0:
        default_timeout = None

    def timeout_of(cell):
        value = cell.metadata.get("timeout", default_timeout)
        return None if value is None or value < 0 else value

    client = NotebookClient(
        nb,
        timeout=default_timeout,
        allow_errors=True,
        record_timing=False,  # as myst-nb: timings in cell metadata would change the hash
        coalesce_streams=True,  # as the build (notebooks.py): one stream output per name
        kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"),
        resources={"metadata": {"path": str(chapter.path.parent)}},
    )
    client.timeout_func = timeout_of
    lines = {cell.index: cell.line for cell in chapter.cells}
    seconds, failures, stopped = {}, [], False
    start = time.perf_counter()
    client.reset_execution_trackers()
    kernel = {} if env is None else {"env": {**os.environ, **env}}
    with client.setup_kernel(**kernel):
        info = client.wait_for_reply(client.kc.kernel_info())
        if info is not None and "language_info" in info["content"]:
            nb.metadata["language_info"] = info["content"]["language_info"]
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            t0 = time.perf_counter()
            try:
                client.execute_cell(cell, index)
            except CellTimeoutError:
                seconds[lines[index]] = time.perf_counter() - t0
                failures.append(ex.Failure(
                    lines[index],
                    f"cell timed out after {timeout_of(cell)} s "
                    "(set `timeout:` in its options if it needs longer); later cells not run",
                ))
                stopped = True
                break
            except DeadKernelError as error:
                failures.append(ex.Failure(lines[index], f"kernel died: {error}"))
                stopped = True
                break
            seconds[lines[index]] = time.perf_counter() - t0
        client.set_widgets_metadata()
    total = time.perf_counter() - start
    return nb, seconds, failures, total, stopped


def store(cache, nb, path, seconds):
    """Cache an executed notebook exactly as myst-nb does after its own execution."""
    from jupyter_cache.base import CacheBundleIn

    return cache.cache_notebook_bundle(
        CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
        check_validity=False,
        overwrite=True,
    )


def restore_under(new_chapter: ex.Chapter, executed_nb):
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
        chapter = ex.read_chapter(path, root)
    except ex.ChapterError as error:  # e.g. a cell's options are not YAML: nothing can run
        chapter = ex.Chapter(path, path.read_text(encoding="utf8"), None, [])
        return Result(chapter, root, failures=[ex.Failure(error.line, error.what)])
    result = Result(chapter, root)
    cache = open_cache(build)

    executed = None
    if use_cache:
        try:
            record = cache.match_cache_notebook(chapter.nb)
        except KeyError:
            record = None
        if record is not None:
            _, executed = cache.merge_match_into_notebook(chapter.nb)
            result.source = "cache"
            result.seconds = record.data.get("execution_seconds") or 0.0
    run_failures = []
    if executed is None:
        executed, result.cell_seconds, run_failures, result.seconds, stopped = execute(
            chapter, root, env=env
        )
        result.source = "executed"
    result.executed_nb = executed

    by_index = {cell.index: cell for cell in chapter.cells}
    failures, raised = [], False
    timed_out = {f.line for f in run_failures}
    for index, nb_cell in enumerate(executed.cells):
        cell = by_index.get(index)
        if cell is None:
            continue
        output = ex.cell_output(nb_cell.get("outputs", []), raises=cell.raises)
        if output.error is not None:
            raised = True
        if cell.line in timed_out:
            failures.extend(f for f in run_failures if f.line == cell.line)
            break
        failures.extend(ex.check_cell(cell, output))
    failures.extend(f for f in run_failures if f.line not in timed_out)
    if not run_failures:  # every cell ran: each glued value the prose shows is there
        glued = ex.glued_values(executed.cells)
        failures.extend(ex.check_glue(chapter.text, chapter.cells, glued, root))
    result.failures = failures

    if result.source == "executed" and not run_failures and not raised and env is None:
        store(cache, executed, path, result.seconds)
        result.stored = True

    if update:
        rewrite(result, cache)
    return result


def rewrite(result: Result, cache):
    """Update mode: rewrite every differing or missing expect: and re-store the outputs."""
    updates = {}
    executed_cells = result.executed_nb.cells
    for failure in result.failures:
        if failure.kind not in ("differs", "missing", "unexpected"):
            continue
        cell = next(c for c in result.chapter.cells if c.line == failure.line)
        output = ex.cell_output(executed_cells[cell.index].get("outputs", []), cell.raises)
        new = output.text if output.text.strip() else None
        if new is not None and isinstance(cell.expect, str):
            new = ex.carry_marks(cell.expect, new)  # keep the author's `~` on noisy numbers
        updates[cell.line] = new
    if not updates:
        return
    chapter = result.chapter
    new_text = ex.updated_text(chapter, updates, result.root)
    chapter.path.write_text(new_text, encoding="utf8")
    new_chapter = ex.read_chapter(chapter.path, result.root)
    if result.stored or result.source == "cache":
        nb = restore_under(new_chapter, result.executed_nb)
        store(cache, nb, chapter.path, result.seconds)
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
    chapters = ex.chapter_paths(root)
    if not names:
        return [(path, root) for path in chapters]
    picked = []
    for name in names:
        matches = [
            p for p in chapters if name in (ex.slug(p, root), str(p), ex.display_path(p, root))
        ]
        if matches:
            picked.extend((path, root) for path in matches)
            continue
        candidates = [Path(name), Path(root) / "book" / f"{name}.md"]
        path = next((c.resolve() for c in candidates if c.is_file()), None)
        home = ex.book_root(path) if path is not None else None
        if path is not None and home is not None:
            if path in ex.chapter_paths(home):
                picked.append((path, home))
                continue
            raise SystemExit(
                f"{ex.display_path(path, home)}: not in {ex.display_path(home / '_toc.yml')}, "
                "so the book leaves it out and the chapter tests never run it: list it there"
            )
        known = ", ".join(ex.slug(p, root) for p in chapters)
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
