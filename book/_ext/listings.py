"""Listings of the engine as of the chapter that shows them.

    ```{listing} engine/tensor.py
    :pyobject: Tensor.backward
    ```

shows `Tensor.backward` as it stands in the snapshot of the page's own chapter
(book/_ext/snapshots.py), never a line of a later chapter. Its caption names the
file and the object. When the object holds lines of earlier chapters too, the lines
this chapter adds are highlighted and the caption says so (and which chapter's lines
they replace, if any); `:changes:` shows only those lines, with a line of context
around each run and `...` for what is left out. Without `:pyobject:` the listing is
the whole file, or the lines from `:start-at:` up to `:end-before:` (or `:end-at:`).
`:chapter:` shows another chapter's snapshot (an appendix showing the final engine).

`listing_lines` resolves a listing outside Sphinx too: the downloads (notebooks.py)
and the test that every line a chapter introduces is shown in that chapter
(tests/test_snapshots.py) read listings through it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import snapshots

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = ("pyobject", "start-at", "end-before", "end-at", "changes", "chapter", "caption")


class ListingError(ValueError):
    pass


@dataclasses.dataclass
class Listing:
    file: str  # engine/tensor.py
    chapter: str  # whose snapshot it shows
    what: str  # "Tensor.backward", or "" for a part of the file
    lines: list  # snapshots.Line shown, `None` where `...` stands for lines left out
    new: set  # indices into `lines` introduced by `chapter`
    replaced: dict  # chapter -> count of its lines this chapter replaces, in the range shown

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
        return bool(self.new) and len(self.new) < sum(
            1 for line in self.lines if line is not None and line.text.strip())

    def caption(self) -> str:
        where = f"`{self.file}`" + (f", `{self.what}`" if self.what else "")
        notes = []
        if self.mixed:
            notes.append(f"highlighted: new in chapter `{self.chapter}`")
        if self.replaced:
            notes.append("replacing lines of " + ", ".join(
                f"`{c}`" for c in self.replaced))
        return where + (f" ({'; '.join(notes)})" if notes else "")


def _tag_range(text: str, name: str):
    """(first, last) 0-based line indices of a function, class or method in `text`."""
    from sphinx.pycode import ModuleAnalyzer

    tags = ModuleAnalyzer.for_string(text, "engine_listing").find_tags()
    if name not in tags:
        raise ListingError(f"no object {name!r} in this snapshot of the file")
    _, start, end = tags[name]
    first = start - 1
    lines = text.splitlines()
    while first > 0 and lines[first - 1].lstrip().startswith("@"):  # its decorators
        first -= 1
    last = end - 1
    while last > first and not lines[last].strip():
        last -= 1
    return first, last


def listing_lines(file: str, options: dict, chapter: str, root=ROOT) -> Listing:
    """What a `{listing}` with these options shows in the page of `chapter`."""
    chapter = options.get("chapter") or chapter
    files = snapshots.snapshot_lines(chapter, root)
    if file not in files:
        raise ListingError(f"{file} is not in the engine as of chapter {chapter!r}")
    lines = files[file]
    text = "\n".join(line.text for line in lines)
    what = options.get("pyobject") or ""
    if what:
        first, last = _tag_range(text, what)
    else:
        first, last = 0, len(lines) - 1
        if options.get("start-at"):
            first = next((i for i, line in enumerate(lines)
                          if options["start-at"] in line.text), None)
            if first is None:
                raise ListingError(f"start-at {options['start-at']!r} not found")
        for key, shift in (("end-before", -1), ("end-at", 0)):
            if options.get(key):
                found = next((i for i in range(first, len(lines))
                              if options[key] in lines[i].text), None)
                if found is None:
                    raise ListingError(f"{key} {options[key]!r} not found")
                last = found + shift
    shown = lines[first:last + 1]
    new = {i for i, line in enumerate(shown) if line.chapter == chapter and line.text.strip()}
    numbers = [line.number for line in shown]
    replaced = {}
    if numbers:
        for line in snapshots.engine_lines(root)[file]:
            if min(numbers) <= line.number <= max(numbers) and line.until == chapter \
                    and line.text.strip():
                replaced[line.chapter] = replaced.get(line.chapter, 0) + 1
    if "changes" in options:
        keep = set()
        for i in new:
            keep |= {i - 1, i, i + 1}
        if what:
            keep.add(0)  # the def line: where the additions go
        for i in range(1, len(shown) - 1):  # no `...` for one line left out
            if i - 1 in keep and i + 1 in keep:
                keep.add(i)
        kept, new_kept, previous = [], set(), -1
        for i, line in enumerate(shown):
            if i in keep:
                if i > previous + 1:  # lines left out before this one
                    kept.append(None)
                if i in new:
                    new_kept.add(len(kept))
                kept.append(line)
                previous = i
        if previous < len(shown) - 1:
            kept.append(None)
        shown, new = kept, new_kept
    return Listing(file, chapter, what, shown, new, replaced)


def page_chapter(docname: str) -> str:
    return Path(docname).name


# -- Sphinx ---------------------------------------------------------------------------


def _directive():
    from docutils import nodes
    from docutils.parsers.rst import directives
    from sphinx.directives.code import container_wrapper
    from sphinx.util.docutils import SphinxDirective

    class ListingDirective(SphinxDirective):
        required_arguments = 1
        has_content = False
        option_spec = {"pyobject": directives.unchanged_required,
                       "start-at": directives.unchanged_required,
                       "end-before": directives.unchanged_required,
                       "end-at": directives.unchanged_required,
                       "changes": directives.flag,
                       "chapter": directives.unchanged_required,
                       "caption": directives.unchanged}

        def run(self):
            root = Path(self.env.srcdir)
            file = self.arguments[0]
            for path in (root / snapshots.PACKAGE).rglob("*.py"):
                self.env.note_dependency(str(path))
            try:
                listing = listing_lines(file, self.options, page_chapter(self.env.docname),
                                        root)
            except (ListingError, snapshots.MarkerError, KeyError) as error:
                raise self.error(f"listing {file}: {error}")
            code = listing.text
            block = nodes.literal_block(code, code, language="python")
            self.set_source_info(block)
            if listing.mixed:
                block["highlight_args"] = {"hl_lines": sorted(i + 1 for i in listing.new)}
            block["classes"].append("engine-listing")
            caption = self.options.get("caption") or listing.caption()
            return [container_wrapper(self, block, caption)]

    return ListingDirective


def setup(app):
    app.add_directive("listing", _directive())
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# -- which lines a chapter's listings show --------------------------------------------


def listings_in(text: str, root=ROOT):
    """[(line, file, options)] of every `{listing}` in a chapter's text, nested ones too,
    its options read as the directive reads them."""
    from cells import fences

    return [(fence.line, fence.arg, fence.parse(_directive())[0])
            for fence in fences(text, root) if fence.name == "listing"]


def unshown_lines(chapter: str, text: str, root=ROOT):
    """{file: [source line numbers]} of the lines `chapter` introduces that none of the
    listings in `text` (the chapter's page) shows."""
    shown = {}
    for _, file, options in listings_in(text, root):
        listing = listing_lines(file, options, chapter, root)
        if listing.chapter == chapter:
            shown.setdefault(file, set()).update(
                line.number for line in listing.lines if line is not None)
    missing = {}
    for file, lines in snapshots.snapshot_lines(chapter, root).items():
        left = [line.number for line in lines if line.chapter == chapter and line.text.strip()
                and line.number not in shown.get(file, set())]
        if left:
            missing[file] = left
    return missing


def main(argv=None):
    """python book/_ext/listings.py CHAPTER: the lines it introduces that its page does not show."""
    import sys

    chapters = (argv or sys.argv[1:]) or snapshots.engine_chapters(ROOT)
    status = 0
    for chapter in chapters:
        page = ROOT / "book" / f"{chapter}.md"
        missing = unshown_lines(chapter, page.read_text(encoding="utf8"), ROOT)
        if not missing:
            print(f"{chapter}: its listings show every line it introduces")
            continue
        status = 1
        lines = snapshots.engine_lines(ROOT)
        for file, numbers in missing.items():
            print(f"{chapter}: {len(numbers)} line(s) of {file} not shown:")
            by_number = {line.number: line for line in lines[file]}
            for n in numbers:
                print(f"    {file}:{n}: {by_number[n].text.strip()[:90]}")
    return status


if __name__ == "__main__":
    import sys

    sys.exit(main())
