"""Update mode: rewrite a chapter's `expect:` blocks in place, every other byte left alone,
and read the result back with myst-nb to check that only those options moved."""

from __future__ import annotations

import re

from book_config import ROOT
from myst_reader import Chapter, options_block, read_chapter, same_line_ends
from expect_match import canonical_expectation


def expect_block_lines(text: str, indentation: str = "") -> list[str]:
    """`expect: |` plus the text indented two spaces, as YAML block-scalar lines."""
    lines = canonical_expectation(text).splitlines()
    header = "expect: |2" if lines and lines[0].startswith(" ") else "expect: |"
    return [indentation + header] + [indentation + "  " + line if line else "" for line in lines]


def _block_indent(lines: list[str], start: int, end: int) -> str:
    """The indentation myst-parser dedents the YAML block by."""
    body = [line for line in lines[start + 1 : end] if line.strip()]
    return " " * min((len(line) - len(line.lstrip(" ")) for line in body), default=0)


def _expect_key_span(lines: list[str], start: int, end: int, pad: str):
    """(first, stop) of the `expect:` key and its value lines inside a YAML block, or
    (end, end), where a new one goes."""
    for i in range(start + 1, end):
        if re.match(rf"^{pad}expect\s*:", lines[i]):
            stop = i + 1
            while stop < end and (
                lines[stop].startswith((pad + " ", pad + "\t")) or not lines[stop].strip()
            ):
                stop += 1
            while stop > i + 1 and not lines[stop - 1].strip():
                stop -= 1  # trailing blank lines belong to the block around, not the value
            return i, stop
    return end, end


def rewrite_expectations(text: str, fences: dict[int, str | None]) -> str:
    """Set the `expect:` of the cells fenced at these 1-based lines to the new text, or
    delete it for None (adding a `---` block where needed, removing an emptied one)."""
    lines = text.splitlines()
    # rewrite from the bottom up so earlier line numbers stay valid
    for fence_line in sorted(fences, reverse=True):
        new = fences[fence_line]
        fence = fence_line - 1
        block = options_block(lines, fence)
        if block is not None and block[0] == "yaml" and block[2] is not None:
            _, start, end = block
            pad = _block_indent(lines, start, end)
            first, stop = _expect_key_span(lines, start, end, pad)
            lines[first:stop] = expect_block_lines(new, pad) if new is not None else []
            _, start, end = options_block(lines, fence)
            if end == start + 1:  # the block is now empty: remove it
                del lines[start : end + 1]
        elif new is None:
            continue
        elif block is not None and block[0] == "colon":
            raise ValueError(f"line {fence_line}: this cell's options are `:key: value` lines, "
                             "which cannot hold a multi-line expect:; turn them into a `---` "
                             "YAML block first")
        else:
            lines[fence + 1 : fence + 1] = ["---"] + expect_block_lines(new) + ["---"]
    return same_line_ends(text, lines)


def updated_text(chapter: Chapter, updates: dict[int, str | None], root=ROOT) -> str:
    """The chapter's text with these cells' `expect:` rewritten, read back to check that
    only those options moved."""
    new_text = rewrite_expectations(chapter.text, updates)
    again = read_chapter(chapter.path, root, text=new_text)
    if len(again.cells) != len(chapter.cells):
        raise ValueError(f"{chapter.path}: rewriting expect: changed the number of code cells")
    for old, new in zip(chapter.cells, again.cells):
        want = dict(old.options)
        if old.line in updates:
            want.pop("expect", None)
            if updates[old.line] is not None:
                want["expect"] = canonical_expectation(updates[old.line])
        if new.source != old.source or new.options != want:
            raise ValueError(f"{chapter.path}:{old.line}: rewritten expect: does not read back "
                             f"as written (wanted {want!r}, myst-nb read {new.options!r})")
    return new_text
