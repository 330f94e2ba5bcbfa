"""Listings of the engine as of the chapter that shows them.

    ```{listing} engine/tensor.py
    :pyobject: Tensor.backward
    ```

shows `Tensor.backward` as it stands in the snapshot of the page's own chapter
(snapshots.py), never a line of a later chapter; without `:pyobject:`, the whole file or
the lines from `:start-at:` up to `:end-before:` (or `:end-at:`). The caption (unless
`:caption:` gives one) names the file and the object; when the listing holds lines of
earlier chapters too, this chapter's lines are highlighted and the caption says so, and
which chapters' lines they replace. `:changes:` shows only this chapter's lines, with a
line of context around each run and `...` for what is left out.

Sphinx's `literalinclude` selects lines the same way, but a listing must know each shown
line's chapter (to highlight, elide and check, in the downloads and the tests too), so the
lines are selected here. `python book/_ext/listings.py [chapter ...]` lists the lines a
chapter introduces that its listings do not show (tests/test_snapshots.py requires none).
"""

from __future__ import annotations

import dataclasses
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
    new: set  # indices into `lines` introduced by `chapter`
    replaced: list  # the chapters whose lines in the range shown `chapter` replaces
    given_caption: str | None = None  # the listing's `:caption:`

    @property
    def text(self) -> str:
        shown = [line.text if line is not None else None for line in self.lines]
        width = min((len(t) - len(t.lstrip()) for t in shown if t and t.strip()), default=0)
        out = []
        for i, text in enumerate(shown):
            if text is None:  # an elision: indented like the next shown line
                after = next((t for t in shown[i + 1:] if t and t.strip()), "")
                out.append(" " * max(len(after) - len(after.lstrip()) - width, 0) + "...")
            else:
                out.append(text[width:])
        return "\n".join(out)

    @property
    def mixed(self) -> bool:
        return 0 < len(self.new) < sum(1 for ln in self.lines if ln is not None and ln.text.strip())

    def caption(self) -> str:
        if self.given_caption:
            return self.given_caption
        notes = [f"highlighted: new in chapter `{self.chapter}`"] if self.mixed else []
        if self.replaced:
            notes.append("replacing lines of " + ", ".join(f"`{c}`" for c in self.replaced))
        where = f"`{self.file}`" + (f", `{self.what}`" if self.what else "")
        return where + (f" ({'; '.join(notes)})" if notes else "")


def _object_range(text: str, name: str):
    """(first, last) 0-based lines of a function, class or method, with its decorators."""
    tags = ModuleAnalyzer.for_string(text, "engine_listing").find_tags()
    if name not in tags:
        raise ListingError(f"no object {name!r} in this snapshot of the file")
    _, first, last = tags[name]
    lines = text.splitlines()
    first, last = first - 1, last - 1
    while first > 0 and lines[first - 1].lstrip().startswith("@"):
        first -= 1
    while last > first and not lines[last].strip():
        last -= 1
    return first, last


def _find(lines, key, options, start):
    found = next((i for i in range(start, len(lines)) if options[key] in lines[i].text), None)
    if found is None:
        raise ListingError(f"{key} {options[key]!r} not found")
    return found


def _changes_only(shown, new, whole_object):
    """This chapter's lines with one line of context, `None` for each run left out."""
    keep = {j for i in new for j in (i - 1, i, i + 1)} | ({0} if whole_object else set())
    keep |= {i for i in range(1, len(shown) - 1) if i - 1 in keep and i + 1 in keep}
    kept, kept_new, previous = [], set(), -1
    for i in sorted(k for k in keep if 0 <= k < len(shown)):
        if i > previous + 1:
            kept.append(None)
        if i in new:
            kept_new.add(len(kept))
        kept.append(shown[i])
        previous = i
    return kept + ([None] if previous < len(shown) - 1 else []), kept_new


def listing_lines(file: str, options: dict, chapter: str, root=ROOT) -> Listing:
    """What a `{listing}` with these options shows in the page of `chapter`."""
    lines = snapshots.snapshot_lines(chapter, root).get(file)
    if lines is None:
        raise ListingError(f"{file} is not in the engine as of chapter {chapter!r}")
    what = options.get("pyobject") or ""
    if what:
        first, last = _object_range("\n".join(line.text for line in lines), what)
    else:
        first = _find(lines, "start-at", options, 0) if options.get("start-at") else 0
        last = len(lines) - 1
        if options.get("end-before"):
            last = _find(lines, "end-before", options, first) - 1
        elif options.get("end-at"):
            last = _find(lines, "end-at", options, first)
    shown = lines[first:last + 1]
    new = {i for i, line in enumerate(shown) if line.chapter == chapter and line.text.strip()}
    numbers = range(shown[0].number, shown[-1].number + 1) if shown else ()
    replaced = dict.fromkeys(line.chapter for line in snapshots.engine_lines(root)[file]
                             if line.number in numbers and line.until == chapter
                             and line.text.strip())
    if "changes" in options:
        shown, new = _changes_only(shown, new, bool(what))
    return Listing(file, chapter, what, shown, new, list(replaced), options.get("caption"))


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
        block = nodes.literal_block(listing.text, listing.text, language="python",
                                    classes=["engine-listing"])
        self.set_source_info(block)
        if listing.mixed:
            block["highlight_args"] = {"hl_lines": sorted(i + 1 for i in listing.new)}
        return [container_wrapper(self, block, listing.caption())]


def _directive():  # notebooks.py reads a listing's options with it
    return ListingDirective


def setup(app):
    app.add_directive("listing", ListingDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def unshown_lines(chapter: str, text: str, root=ROOT):
    """{file: [source line numbers]} of the lines `chapter` introduces that none of the
    listings in `text` (the chapter's page, nested listings too) shows."""
    from cells import fences

    shown = {}
    for fence in fences(text, root):
        if fence.name == "listing":
            listing = listing_lines(fence.arg, fence.parse(ListingDirective)[0], chapter, root)
            shown.setdefault(fence.arg, set()).update(
                line.number for line in listing.lines if line is not None)
    missing = {}
    for file, lines in snapshots.snapshot_lines(chapter, root).items():
        left = [line.number for line in lines if line.chapter == chapter and line.text.strip()
                and line.number not in shown.get(file, set())]
        if left:
            missing[file] = left
    return missing


def main(chapters):
    status = 0
    for chapter in chapters or snapshots.engine_chapters(ROOT):
        text = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf8")
        missing = unshown_lines(chapter, text, ROOT)
        if not missing:
            print(f"{chapter}: its listings show every line it introduces")
        status |= bool(missing)
        for file, numbers in missing.items():
            print(f"{chapter}: {len(numbers)} line(s) of {file} not shown:")
            texts = {line.number: line.text for line in snapshots.engine_lines(ROOT)[file]}
            for n in numbers:
                print(f"    {file}:{n}: {texts[n].strip()[:90]}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
