"""The engine as of each chapter, derived from the chapter markers in `engine/`.

Every line of `engine/` belongs to the chapter that introduces it; a comment line marks
each block:

    #> tensors                       the lines after it belong to chapter `tensors`
    #< tensors, replaced in speed    the commented lines after it are lines of `tensors`
    # ...                            that chapter `speed` replaces

A block is the lines after its marker indented at least as deep as the marker, up to the
next marker at the same or a lower indentation; a block of replaced lines ends at the first
line that is not a comment at its indentation. Every file starts with a marker. A line back
at the indentation of an outer block belongs to that block again, so lines a later chapter
adds inside a function, at the body's indentation, need the function's marker after them.

The snapshot of chapter C is every line whose chapter comes no later than C in `_toc.yml`,
less the lines replaced by then (shown uncommented until then, as Crafting Interpreters
keeps deleted code), markers taken out; a module with no line left is not in it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import threading
from pathlib import Path

from book_config import ROOT, content_hash, file_stamps, toc_docnames

PACKAGE = "engine"

MARKER = re.compile(r"^(?P<indent>[ ]*)#(?:> (?P<added>[\w-]+)"
                     r"|< (?P<replaced>[\w-]+), replaced in (?P<until>[\w-]+))\s*$")


class MarkerError(ValueError):
    def __init__(self, path, line, what):
        self.path, self.line, self.what = Path(path), line, what
        super().__init__(f"{path}:{line}: {what}")


@dataclasses.dataclass(frozen=True)
class Line:
    text: str  # as the snapshots show it (a replaced line uncommented)
    chapter: str  # the chapter that introduces it
    until: str | None  # the chapter that replaces it, if one does
    number: int  # 1-based line in the file under engine/


def indentation(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def chapter_order(root=ROOT) -> list[str]:
    """Every page of `_toc.yml` by its file name (`tensors`), in the book's order."""
    return [Path(docname).name for docname in toc_docnames(root)]


def parse(text: str, path, order) -> list[Line]:
    """The lines of one engine file with their chapters, markers dropped; with `order`
    None, the chapters the markers name are not checked."""
    position = {chapter: i for i, chapter in enumerate(order or ())}
    lines, stack = [], []  # stack: (indent, chapter, until), `until` set only in replaced lines
    for number, raw in enumerate(text.splitlines(), 1):
        if marker := MARKER.match(raw):
            indent = len(marker["indent"])
            while stack and stack[-1][0] >= indent:
                stack.pop()
            chapter, until = marker["added"] or marker["replaced"], marker["until"]
            for name in [chapter, until] if order is not None else []:
                if name is not None and name not in position:
                    raise MarkerError(path, number, f"marker names {name!r}, which is not a "
                                      f"page of _toc.yml ({', '.join(order)})")
            if order is not None and until is not None and position[until] <= position[chapter]:
                raise MarkerError(path, number, f"{chapter!r} lines replaced in {until!r}, "
                                  "which does not come after it")
            if stack and stack[-1][2] and stack[-1][0] < indent:
                raise MarkerError(path, number, "a marker inside replaced lines")
            stack.append((indent, chapter, until))
            continue
        if not stack:
            raise MarkerError(path, number, "a line before any chapter marker: start the "
                              "file with one, such as `#> tensors`")
        if not raw.strip():
            lines.append(Line("", stack[-1][1], stack[-1][2], number))
            continue
        indent = indentation(raw)
        while len(stack) > 1 and stack[-1][0] > indent:
            stack.pop()
        top = stack[-1]
        if top[2]:  # replaced lines: comments at the marker's indentation
            body = raw[top[0]:]
            if indent == top[0] and body.startswith("# "):
                lines.append(Line(" " * top[0] + body[2:], top[1], top[2], number))
                continue
            if indent == top[0] and body.rstrip() == "#":
                lines.append(Line("", top[1], top[2], number))
                continue
            stack.pop()  # the replaced lines end here; the line belongs to the block around
            if not stack:
                raise MarkerError(path, number, "replaced lines at the top of a file")
            top = stack[-1]
        if indent < top[0] and len(stack) == 1 and top[0] > 0:
            raise MarkerError(path, number, "a line less indented than every marker above it")
        lines.append(Line(raw, top[1], top[2], number))
    return lines


def _keep(line: Line, chapter: str, position: dict) -> bool:
    """A line the snapshot of `chapter` has; every blank line (`_tidy` thins them)."""
    if not line.text.strip():
        return True
    k = position[chapter]
    return position[line.chapter] <= k and (line.until is None or position[line.until] > k)


_TOP_DEFINITION = re.compile(r"(def|class|async def|@)\b")


def _tidy(lines: list[Line]) -> list[Line]:
    """Blank lines as PEP 8 spaces them where left-out lines left theirs: one in a row in
    a block, two around a top-level function or class, none at the ends."""
    out, blanks = [], []
    for line in lines:
        if not line.text.strip():
            blanks.append(line)
            continue
        if out and blanks:
            top_level_break = line.text[:1] != " " and (
                _TOP_DEFINITION.match(line.text) or out[-1].text[:1] == " ")
            out.extend(blanks[:2 if top_level_break else 1])
        blanks = []
        out.append(line)
    return out


def _modules(root) -> list[Path]:
    return sorted(p for p in (Path(root) / PACKAGE).rglob("*.py") if "__pycache__" not in p.parts)


@functools.lru_cache(maxsize=8)
def _engine_lines(root: str, stamps: tuple) -> dict:
    order = chapter_order(root)
    return {Path(path).relative_to(root).as_posix():
            tuple(parse(Path(path).read_text(encoding="utf8"), path, order))
            for path, _, _ in stamps if path.endswith(".py")}


def engine_lines(root=ROOT) -> dict[str, tuple]:
    """{`engine/x.py`: its Lines}, read again when a module or `_toc.yml` changes."""
    root = Path(root).resolve()
    return _engine_lines(str(root), file_stamps(_modules(root) + [root / "_toc.yml"]))


def engine_chapters(root=ROOT) -> list[str]:
    """The chapters that introduce or replace engine lines, in the book's order."""
    used = {chapter for lines in engine_lines(root).values() for line in lines
            for chapter in (line.chapter, line.until)}
    return [chapter for chapter in chapter_order(root) if chapter in used]


def snapshot_lines(chapter: str, root=ROOT) -> dict[str, list[Line]]:
    """{`engine/x.py`: the Lines it has as of `chapter`}, for the modules that have any."""
    order = chapter_order(root)
    if chapter not in order:
        raise KeyError(f"{chapter!r} is not a page of _toc.yml")
    position = {c: i for i, c in enumerate(order)}
    snapshot = {}
    for relative, lines in engine_lines(root).items():
        kept = _tidy([line for line in lines if _keep(line, chapter, position)])
        if any(line.text.strip() for line in kept):
            snapshot[relative] = kept
    return snapshot


def _source(lines) -> str:
    return "\n".join(line.text for line in lines) + "\n"


def snapshot_files(chapter: str, root=ROOT) -> dict[str, str]:
    """{`engine/x.py`: its source as of `chapter`}."""
    return {relative: _source(lines) for relative, lines in snapshot_lines(chapter, root).items()}


def finished_files(root=ROOT) -> dict[str, str]:
    """{`engine/x.py`: the finished module}, the download archive's engine: the last
    chapter's snapshot, read without the toc (a test's probe book names other pages)."""
    files = {}
    for path in _modules(root):
        lines = parse(path.read_text(encoding="utf8"), path, None)
        files[path.relative_to(root).as_posix()] = _source(_tidy(
            [line for line in lines if line.until is None]))
    return files


def snapshot_hash(chapter: str, root=ROOT) -> str:
    """A short hash of the snapshot's files: what a chapter's cached outputs depend on."""
    return content_hash(sorted(snapshot_files(chapter, root).items()))


def write_snapshot(chapter: str, folder, root=ROOT) -> Path:
    """Write the snapshot as `<folder>/engine/...`, importable with `folder` on sys.path."""
    for relative, text in snapshot_files(chapter, root).items():
        path = Path(folder) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf8")
    return Path(folder)


# Imported from PYTHONPATH at start-up, after the .pth files: takes away the finder of an
# editable install (`pip install -e .`), which would answer `import engine.memory` from
# engine/ where the snapshot has no such module.
SITECUSTOMIZE = """\
import sys

sys.meta_path[:] = [finder for finder in sys.meta_path
                    if "engine" not in getattr(sys.modules.get(getattr(finder, "__module__", "")),
                                               "MAPPING", {})]
"""


def snapshot_folder(chapter: str, build_dir, root=ROOT) -> Path:
    """`<build>/snapshots/<chapter>-<hash>`, written if missing: first on a kernel's
    PYTHONPATH, it makes `import engine` (and `engine.x`) the snapshot."""
    folder = Path(build_dir) / "snapshots" / f"{chapter}-{snapshot_hash(chapter, root)}"
    if folder.exists():
        return folder
    # written under a name of this process's, then renamed: other processes asking for the
    # same folder at once must never see it half written
    partial = folder.with_name(f".{folder.name}-{os.getpid()}-{threading.get_ident()}")
    shutil.rmtree(partial, ignore_errors=True)
    write_snapshot(chapter, partial, root)
    (partial / "sitecustomize.py").write_text(SITECUSTOMIZE)
    try:
        partial.rename(folder)
    except OSError:  # another process renamed its copy first: the same files
        shutil.rmtree(partial, ignore_errors=True)
    return folder
