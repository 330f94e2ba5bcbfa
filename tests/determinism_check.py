"""Compare two builds of the book: executed outputs, chapter pages, downloads.

Used by tests/test_determinism.py. Two builds of the same sources must agree byte
for byte, with ONE declared exception: quantities a chapter MEASURES on the machine
that builds it (wall-clock time, memory traced in a live kernel). Those differ from
run to run by nature; each is named below with its reason, and only those values
are masked, in the notebook (the glue record) and on the page (the pasted text, the
figure's image file). Everything else, every other glued value and figure included,
must be identical.

Sources of difference found and fixed where they arise (not masked here):
- matplotlib's `to_jshtml` player names its elements with a random uuid4:
  `engine.figures.interactive` renames them after the player's content and place.
- the text/plain of a player output was `<engine.figures.Interactive at 0x7f...>`:
  `Interactive.__repr__` no longer shows a memory address.
- a slow cell's stdout reached the notebook as one, two or three stream outputs,
  cut by the kernel's flush timer: the one executor of the build and the verifier
  (book/_ext/execution.py) runs nbclient with `coalesce_streams`.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import nbformat

# {chapter slug: {glue name: why it cannot be the same twice}}
MEASURED = {
    "forward-mode": {
        "fig-forward-cost": "wall-clock time of n forward sweeps and one backward sweep",
        "cost_ratio_256": "ratio of two wall-clock times",
        "backward_cheaper_from": "the n from which one measured wall-clock time stays below another",
    },
    "memory": {
        "fig-memory-growth": "tracemalloc in a live kernel also counts the kernel's own "
                             "threads (IOPub, heartbeat), a few KiB that vary",
        "fig-memory-checkpoint": "tracemalloc peaks (as above) and wall-clock times",
        "peak_plain": "tracemalloc peak, as above",
        "peak_best": "tracemalloc peak, as above",
        "time_plain": "wall-clock time",
        "time_min": "wall-clock time",
        "time_max": "wall-clock time",
    },
    "fast": {
        "chain_gc_share": "the cycle collector's wall-clock time over the forward pass's",
    },
}

EXCLUDED_PAGES = {
    # the execution report shows each notebook's run time and when it ran
    "book/report.html": "run times and execution dates (book/_ext/report.py, nb-exec-table)",
}


class CannotMask(AssertionError):
    """A measured value is used in a way this module cannot mask exactly."""


# -- notebooks -------------------------------------------------------------------------


def executed_notebook(path: Path, build: Path, root: Path):
    """The executed notebook of a chapter in `build`, as the build shows it (None if none)."""
    import engine_cache

    return engine_cache.read_page_run(path, build, root)[0]


def glue_name(output) -> str | None:
    return (output.get("metadata") or {}).get("scrapbook", {}).get("name")


def masked_outputs(nb, measured=()) -> list[str]:
    """One JSON text per code cell: its outputs, with the glue records of `measured`
    names replaced by a marker (what the cell printed stays as it is)."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for output in cell.get("outputs", []):
            name = glue_name(output)
            if name in measured:
                output = {"measured glue value": name}
            outputs.append(output)
        cells.append(json.dumps(outputs, sort_keys=True, ensure_ascii=False))
    return cells


def output_differences(first_nb, second_nb, measured=()) -> list[str]:
    """Code cells (by fence line) whose outputs differ, masked values aside."""
    source_map = first_nb.metadata.get("source_map") or []
    code_lines = [source_map[i] if i < len(source_map) else "?"
                  for i, c in enumerate(first_nb.cells) if c.cell_type == "code"]
    a, b = masked_outputs(first_nb, measured), masked_outputs(second_nb, measured)
    if len(a) != len(b):
        return [f"{len(a)} code cells against {len(b)}"]
    problems = []
    for line, x, y in zip(code_lines, a, b):
        if x != y:
            at = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            problems.append(f"cell at line {line}: outputs differ at character {at}: "
                            f"{x[max(0, at - 60):at + 40]!r} against {y[max(0, at - 60):at + 40]!r}")
    return problems


# -- pages -------------------------------------------------------------------------------

_GLUE_ROLE = re.compile(r"\{glue(?::(?P<kind>text|any|md))?\}`(?P<body>[^`]+)`")
_PASTED_TEXT = re.compile(r'<span class="pasted-text">[^<]*</span>')
_GLUE_FIGURE = re.compile(r"^\s*(`{3,}|:{3,})\{glue:figure\}\s+(?P<key>\S+)\s*$")


def glue_text_keys(markdown: str) -> list[str]:
    """The glue name of each `{glue:text}` role of a chapter, in page order."""
    keys = []
    for match in _GLUE_ROLE.finditer(markdown):
        body = match["body"]
        key = body.rsplit(":", 1)[0] if match["kind"] == "text" and ":" in body else body
        key = key.split("::")[-1]
        if match["kind"] == "text":
            keys.append(key)
        elif key in MEASURED_NAMES:
            raise CannotMask(f"{{glue:{match['kind'] or 'any'}}}`{body}` shows a measured "
                             "value in a form this comparison does not mask: use {glue:text}")
    return keys


def glue_figure_names(markdown: str) -> dict[str, str]:
    """{glue name: the figure's :name: (its id on the page)} for every ```{glue:figure}```."""
    names, lines = {}, markdown.splitlines()
    for i, line in enumerate(lines):
        match = _GLUE_FIGURE.match(line)
        if not match:
            continue
        for option in lines[i + 1:]:
            named = re.match(r"^\s*:name:\s*(\S+)", option)
            if named:
                names[match["key"]] = named[1]
                break
            if not option.strip().startswith(":"):
                break
    return names


def masked_page(html: str, markdown: str, measured) -> str:
    """The page with the measured values blanked: their pasted text and their figure's
    image file name (a hash of the image); nothing else changes."""
    if not measured:
        return html
    keys = glue_text_keys(markdown)
    spans = list(_PASTED_TEXT.finditer(html))
    if len(spans) != len(keys):
        raise CannotMask(f"{len(keys)} {{glue:text}} roles in the chapter but {len(spans)} "
                         "pasted values on its page: cannot tell which are measured")
    for match, key in reversed(list(zip(spans, keys))):
        if key in measured:
            html = html[:match.start()] + f'<span class="pasted-text">[{key}]</span>' + html[match.end():]
    figures = glue_figure_names(markdown)
    for key in measured:
        if key not in figures:
            continue
        start = html.find(f'<figure class="align-default" id="{figures[key]}">')
        if start < 0:
            start = html.find(f'id="{figures[key]}"')
        if start < 0:
            raise CannotMask(f"figure {figures[key]!r} (glue {key!r}) not found on the page")
        end = html.find("</figure>", start)
        block = re.sub(r'src="[^"]*"', f'src="[{key}]"', html[start:end], count=1)
        html = html[:start] + block + html[end:]
    return html


MEASURED_NAMES = {name for names in MEASURED.values() for name in names}


def page_differences(first_html: Path, second_html: Path, root: Path, slugs) -> list[str]:
    """Every HTML page of the two sites that differs (measured values masked on the
    chapters that declare them; EXCLUDED_PAGES skipped)."""
    problems = []
    first_pages = sorted(p.relative_to(first_html).as_posix() for p in first_html.rglob("*.html"))
    second_pages = sorted(p.relative_to(second_html).as_posix() for p in second_html.rglob("*.html"))
    if first_pages != second_pages:
        problems.append(f"different pages: {sorted(set(first_pages) ^ set(second_pages))}")
    for page in sorted(set(first_pages) & set(second_pages)):
        if page in EXCLUDED_PAGES:
            continue
        a = (first_html / page).read_text(encoding="utf8")
        b = (second_html / page).read_text(encoding="utf8")
        slug = page[len("book/"):-len(".html")] if page.startswith("book/") else None
        measured = MEASURED.get(slug, {})
        if measured:
            markdown = (root / "book" / f"{slug}.md").read_text(encoding="utf8")
            a, b = masked_page(a, markdown, measured), masked_page(b, markdown, measured)
        if a != b:
            at = next((i for i, (p, q) in enumerate(zip(a, b)) if p != q), min(len(a), len(b)))
            line = a.count("\n", 0, at) + 1
            problems.append(f"{page} differs from line {line}: {a[max(0, at - 80):at + 60]!r} "
                            f"against {b[max(0, at - 80):at + 60]!r}")
    return problems


# -- downloads ----------------------------------------------------------------------------


def download_differences(first_html: Path, second_html: Path, slugs) -> list[str]:
    """The reader's notebooks (_sources/book/<slug>.ipynb) and the archive.

    A chapter with measured values pastes them into its Markdown cells and attaches
    their figures, so its notebook is compared on its code cells (sources and
    outputs) only; every other notebook and archive member must be byte-identical.
    """
    problems = []
    for slug in slugs:
        a = (first_html / "_sources" / "book" / f"{slug}.ipynb").read_bytes()
        b = (second_html / "_sources" / "book" / f"{slug}.ipynb").read_bytes()
        if slug not in MEASURED:
            if a != b:
                problems.append(f"_sources/book/{slug}.ipynb differs")
            continue
        code = [[(c.source, c.get("outputs")) for c in nbformat.reads(x.decode(), 4).cells
                 if c.cell_type == "code"] for x in (a, b)]
        if code[0] != code[1]:
            problems.append(f"_sources/book/{slug}.ipynb: code cells differ")
    archive = Path("downloads") / "autodiff-book.zip"
    with zipfile.ZipFile(first_html / archive) as za, zipfile.ZipFile(second_html / archive) as zb:
        infos_a, infos_b = za.infolist(), zb.infolist()
        if [i.filename for i in infos_a] != [i.filename for i in infos_b]:
            problems.append("the archives hold different files")
        for ia, ib in zip(infos_a, infos_b):
            if ia.date_time != ib.date_time:
                problems.append(f"{archive}:{ia.filename}: dates {ia.date_time} {ib.date_time}")
            measured = any(ia.filename.endswith(f"/notebooks/{slug}.ipynb") for slug in MEASURED)
            if not measured and za.read(ia) != zb.read(ib):
                problems.append(f"{archive}:{ia.filename} differs")
    return problems
