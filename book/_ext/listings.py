"""Listings of the engine as of the page's chapter (snapshots.py).

    ```{listing} engine/tensor.py
    :pyobject: Tensor.backward
    ```

selects lines as `literalinclude` does (`:pyobject:`, or `:start-at:` up to `:end-before:`
or `:end-at:`), but from the chapter's snapshot, keeping each line's chapter: this chapter's
lines are highlighted among older ones, `:changes:` shows only them (with a line of context,
`...` for the rest), and above the listing a block per earlier chapter shows the lines this
chapter replaces there (Crafting Interpreters' "replace these lines"). `python
book/_ext/listings.py [chapter ...]` lists the lines a chapter introduces or replaces that
its listings do not show (tests/test_snapshots.py requires none).
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.directives.code import container_wrapper
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective

import snapshots
from book_config import ROOT


class ListingError(ValueError):
    pass


@dataclasses.dataclass
class Listing:
    file: str  # engine/tensor.py
    chapter: str  # whose snapshot it shows
    what: str  # "Tensor.backward", or "" for a part of the file
    lines: list  # snapshots.Line shown, `None` where `...` stands for lines left out
    given_caption: str | None  # the listing's `:caption:`
    # {earlier chapter: its Lines that `chapter` replaces here, `None` between runs}
    replaced_lines: dict

    @property
    def text(self) -> str:
        return _render(self.lines)

    def where(self) -> str:
        return f"`{self.file}`" + (f", `{self.what}`" if self.what else "")

    def replaced_blocks(self):
        """[(chapter, text)]: the lines replaced, a block per chapter whose lines they are."""
        return [(c, _render(lines)) for c, lines in self.replaced_lines.items()]

    def replaced_caption(self, chapter, name=lambda c: f"`{c}`") -> str:
        return f"{self.where()}: the lines of {name(chapter)} that this listing replaces"

    @property
    def new(self) -> set:
        """The indices into `lines` of the lines `chapter` introduces."""
        return {i for i, line in enumerate(self.lines) if _introduced(line, self.chapter)}

    @property
    def mixed(self) -> bool:
        return 0 < len(self.new) < sum(1 for ln in self.lines if ln is not None and ln.text.strip())

    def caption(self, name=lambda c: f"chapter `{c}`") -> str:
        if self.given_caption:
            return self.given_caption
        notes = [f"highlighted: new in {name(self.chapter)}"] if self.mixed else []
        if self.replaced_lines:
            notes.append("replacing lines of " + ", ".join(name(c) for c in self.replaced_lines))
        return self.where() + (f" ({'; '.join(notes)})" if notes else "")


_title = "{{doc}}`{}`".format  # on the page a chapter is its title, linked


def _render(lines) -> str:
    """Lines dedented together, `...` (indented like the next line) for each None."""
    shown = [line.text if line is not None else None for line in lines]
    width = min((snapshots.indentation(t) for t in shown if t and t.strip()), default=0)
    out = []
    for i, text in enumerate(shown):
        if text is None:
            after = next((t for t in shown[i + 1:] if t and t.strip()), "")
            out.append(" " * max(snapshots.indentation(after) - width, 0) + "...")
        else:
            out.append(text[width:])
    return "\n".join(out)


def _find(lines, key, options, start):
    found = next((i for i in range(start, len(lines)) if options[key] in lines[i].text), None)
    if found is None:
        raise ListingError(f"{key} {options[key]!r} not found")
    return found


def _introduced(line, chapter):
    return line is not None and line.chapter == chapter and line.text.strip()


def _changes_only(shown, chapter, whole_object):
    """`chapter`'s lines with one line of context, `None` for each run left out."""
    new = [i for i, line in enumerate(shown) if _introduced(line, chapter)]
    keep = {j for i in new for j in (i - 1, i, i + 1)} | ({0} if whole_object else set())
    keep |= {i for i in range(1, len(shown) - 1) if i - 1 in keep and i + 1 in keep}
    kept, previous = [], -1
    for i in sorted(k for k in keep if 0 <= k < len(shown)):
        if i > previous + 1:
            kept.append(None)
        kept.append(shown[i])
        previous = i
    return kept + ([None] if previous < len(shown) - 1 else [])


def _replaced_lines(file, snapshot, whole, shown, chapter, whole_object, root):
    """{earlier chapter: its Lines of `file` that `chapter` replaces among or next to the
    `whole` range a listing selects, `None` between runs apart}: the runs next to a line
    in `shown` (what `:changes:` keeps of the range)."""
    every = snapshots.engine_lines(root)[file]
    at = {line.number: i for i, line in enumerate(every)}
    first, last = at[whole[0].number], at[whole[-1].number]
    in_snapshot = {line.number for line in snapshot if line.text.strip()}
    position = {c: i for i, c in enumerate(snapshots.chapter_order(root))}
    # Old lines right before or after the range (no blank line between) belong to it when
    # as deep as its first line (an old `def` or line above the new), or, after, as its last
    # (an old end of a block) or inside the object; past a later chapter's line, only the
    # object's own lines do.
    before = snapshots.indentation(whole[0].text)
    after = before + 1 if whole_object else snapshots.indentation(
        next(line.text for line in reversed(whole) if line.text.strip()))

    def outside(i, deep):
        return (0 <= i < len(every) and every[i].text.strip() and every[i].number not in in_snapshot
                and snapshots.indentation(every[i].text) >= deep
                and (whole_object or position[every[i].chapter] <= position[chapter]))

    while outside(first - 1, before):
        first -= 1
    while outside(last + 1, after):
        last += 1

    def nearest(i, step):  # the number of the snapshot's nearest line from `i` on
        while 0 <= i < len(every) and every[i].number not in in_snapshot:
            i += step
        return {every[i].number} if 0 <= i < len(every) else set()

    # a run: lines of one chapter that `chapter` replaces, with no other line but blank ones
    # between them; runs of a chapter are apart, so `None` goes between them
    kept = {line.number for line in shown if line is not None}
    solid = [i for i in range(first, last + 1) if every[i].text.strip()]
    grouped = {}
    for old, run in itertools.groupby(
            solid, lambda i: every[i].chapter if every[i].until == chapter else None):
        run = list(run)
        if old is None or not (nearest(run[0] - 1, -1) | nearest(run[-1] + 1, 1)) & kept:
            continue
        lines = grouped.setdefault(old, [])
        lines += [None] if lines else []
        lines += [line for line in every[run[0]:run[-1] + 1] if line.until == chapter]
    return {c: grouped[c] for c in sorted(grouped, key=position.get)}


def listing_lines(file: str, options: dict, chapter: str, root=ROOT) -> Listing:
    """What a `{listing}` with these options shows in the page of `chapter`."""
    lines = snapshots.snapshot_lines(chapter, root).get(file)
    if lines is None:
        raise ListingError(f"{file} is not in the engine as of chapter {chapter!r}")
    what = options.get("pyobject") or ""
    if what:
        tags = ModuleAnalyzer.for_string("\n".join(line.text for line in lines),
                                         "engine_listing").find_tags()
        if what not in tags:
            raise ListingError(f"no object {what!r} in this snapshot of the file")
        first, last = tags[what][1] - 1, tags[what][2] - 1  # decorators in, blank lines out
    else:
        first = _find(lines, "start-at", options, 0) if options.get("start-at") else 0
        last = len(lines) - 1
        if options.get("end-before"):
            last = _find(lines, "end-before", options, first) - 1
        elif options.get("end-at"):
            last = _find(lines, "end-at", options, first)
    whole = lines[first:last + 1]
    shown = _changes_only(whole, chapter, bool(what)) if "changes" in options else whole
    replaced = (_replaced_lines(file, lines, whole, shown, chapter, bool(what), root)
                if whole else {})
    return Listing(file, chapter, what, shown, options.get("caption"), replaced)


class ListingDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"pyobject": directives.unchanged_required,
                   "start-at": directives.unchanged_required,
                   "end-before": directives.unchanged_required,
                   "end-at": directives.unchanged_required,
                   "changes": directives.flag,
                   "caption": directives.unchanged}

    def run(self):
        file, root = self.arguments[0], Path(self.env.srcdir)
        for path in (root / snapshots.PACKAGE).rglob("*.py"):
            self.env.note_dependency(str(path))
        chapter = self.env.docname.rpartition("/")[2]
        try:
            listing = listing_lines(file, self.options, chapter, root)
        except (ListingError, snapshots.MarkerError, KeyError) as error:
            raise self.error(f"listing {file}: {error}")
        shown = []
        for replaced, text in listing.replaced_blocks():  # the old lines, above the new
            old = nodes.literal_block(text, text, language="python", classes=["engine-replaced"])
            self.set_source_info(old)
            # captioned as a listing is, but not numbered: the numbers count the engine's code
            caption = self.parse_text_to_nodes(listing.replaced_caption(replaced, _title))[0]
            shown.append(nodes.container(
                "", nodes.container("", nodes.inline("", "", *caption.children,
                                                     classes=["caption-text"]),
                                    classes=["code-block-caption"]),
                old, classes=["literal-block-wrapper", "engine-replaced-lines"]))
        block = nodes.literal_block(listing.text, listing.text, language="python",
                                    classes=["engine-listing"])
        self.set_source_info(block)
        if listing.mixed:
            block["highlight_args"] = {"hl_lines": sorted(i + 1 for i in listing.new)}
        return shown + [container_wrapper(self, block, listing.caption(_title))]


def setup(app):
    app.add_directive("listing", ListingDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def unshown_lines(chapter: str, text: str, root=ROOT, replaced=False):
    """{file: [line numbers]} of the lines `chapter` introduces (or `replaced`) that no
    listing in `text`, its page, shows (or shows in a block of replaced lines)."""
    from myst_reader import fences

    shown = set()  # (file, line number)
    for fence in fences(text, root):
        if fence.name != "listing":
            continue
        listing = listing_lines(fence.arg, fence.parse(ListingDirective)[0], chapter, root)
        lines = listing.lines if not replaced else [
            line for lines in listing.replaced_lines.values() for line in lines]
        shown.update((listing.file, line.number) for line in lines if line is not None)
    files = snapshots.engine_lines(root) if replaced else snapshots.snapshot_lines(chapter, root)
    missing = {file: [line.number for line in lines if line.text.strip()
                      and (line.until == chapter if replaced else line.chapter == chapter)
                      and (file, line.number) not in shown] for file, lines in files.items()}
    return {file: numbers for file, numbers in missing.items() if numbers}


def describe_unshown(chapter: str, missing: dict, what: str, root=ROOT) -> str:
    """`unshown_lines`' finding, a line of text for each line not shown."""
    out = [f"book/{chapter}.md does not show {sum(map(len, missing.values()))} line(s) it {what}:"]
    for file, numbers in missing.items():
        texts = {line.number: line.text.strip() for line in snapshots.engine_lines(root)[file]}
        out += [f"    {file}:{n}: {texts[n][:90]}" for n in numbers]
    return "\n".join(out)


def main(chapters):
    status = 0
    for chapter in chapters or snapshots.engine_chapters(ROOT):
        text = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf8")
        for replaced, what in ((False, "introduces"), (True, "replaces")):
            missing = unshown_lines(chapter, text, ROOT, replaced)
            print(describe_unshown(chapter, missing, what) if missing
                  else f"{chapter}: its listings show every line it {what}")
            status |= bool(missing)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
