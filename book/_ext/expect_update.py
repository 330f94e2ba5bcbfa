"""Update mode: rewrite a chapter's `expect:` blocks in place, every other byte left alone,
and read the result back with myst-nb to check that only those options moved."""

import re

from book_config import ROOT
from myst_reader import Chapter, code_cell_fences, options_block, read_chapter, same_line_ends
from expect_match import canonical_expectation


def expect_block_lines(text: str, indentation: str = "") -> list[str]:
    """`expect: |` plus the text indented two spaces, as YAML block-scalar lines."""
    lines = canonical_expectation(text).splitlines()
    header = "expect: |2" if lines and lines[0].startswith(" ") else "expect: |"
    return [indentation + header] + [indentation + "  " + line if line else "" for line in lines]


def _expect_key_span(lines: list[str], first: int, stop: int, pad: str):
    """(key, end): the lines of the `expect:` key and its value among the options between
    `first` and `stop`, or (stop, stop), where a new one goes."""
    key = next((i for i in range(first, stop) if re.match(rf"{pad}expect\s*:", lines[i])), stop)
    deeper = (pad + " ", pad + "\t")  # the value's lines are indented deeper than its key
    end = next((i for i in range(key + 1, stop)
                if lines[i].strip() and not lines[i].startswith(deeper)), stop)
    while end > key + 1 and not lines[end - 1].strip():
        end -= 1  # trailing blank lines belong to the block around, not the value
    return key, end


def rewrite_expectations(text: str, updates: dict[int, str | None], root=ROOT) -> str:
    """Set the `expect:` of the cells fenced at these 1-based lines to the new text, or
    delete it for None (adding a `---` block where needed, removing an emptied one)."""
    lines = text.splitlines()
    cells = {fence.line: fence for fence in code_cell_fences(text, root)}
    # from the bottom up, so that the fences above stay where they are
    for fence_line in sorted(updates, reverse=True):
        new, block = updates[fence_line], options_block(lines, cells[fence_line])
        if new is None and (block is None or block[0] == "colon"):
            continue  # no `---` block, so no `expect: |` to delete
        if block is None:  # no options yet: an empty `---` block to fill
            lines[fence_line:fence_line] = ["---", "---"]
            block = "yaml", fence_line + 1, fence_line + 1
        kind, first, stop = block  # not "unclosed": read_chapter refuses that
        if kind == "colon":
            raise ValueError(f"line {fence_line}: this cell's options are `:key: value` lines, "
                             "which cannot hold a multi-line expect:; turn them into a `---` "
                             "YAML block first")
        # the indentation myst-parser dedents the block by
        body = [line for line in lines[first:stop] if line.strip()]
        pad = " " * min((len(line) - len(line.lstrip(" ")) for line in body), default=0)
        key, key_stop = _expect_key_span(lines, first, stop, pad)
        lines[key:key_stop] = expect_block_lines(new, pad) if new is not None else []
        if lines[first].startswith("---"):  # the block is now empty: remove it
            del lines[first - 1 : first + 1]
    return same_line_ends(text, lines)


def updated_text(chapter: Chapter, updates: dict[int, str | None], root=ROOT) -> str:
    """The chapter's text with these cells' `expect:` rewritten, read back to check that
    only those options moved."""
    new_text = rewrite_expectations(chapter.text, updates, root)
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
