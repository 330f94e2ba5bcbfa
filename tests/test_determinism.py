"""Two builds of the same sources agree: executed outputs, chapter pages and downloads.

The slow test builds the real book ONCE more, from clean, into a folder of its own
(`_build/determinism`, started in the background as the session starts: see
`start_in_background`) with its own fresh execution cache (engine_cache puts it in
`<build>/.jupyter_cache`), and compares it with the session's build of `_build` (tests/browser/site_pages.py,
shared with the browser and round-trip tests; in CI, a fresh clone, that one is from
clean too). What may differ, and why, is declared in tests/determinism_check.py:
values a chapter measures (wall-clock time, tracemalloc in a live kernel) and the
execution report page. Everything else must be byte-identical.

The fast tests pin each fix of a source of difference on its own.
"""

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

import book_config
import book_pdf
import myst_reader
import determinism_check as dc
import engine_cache
import execution
import verifier
from site_pages import BUILD_COMMAND, BuildFailed, build_site
from support import background, books, pdf_job
from support.side_jobs import Job
from support.books import FRONT

ROOT = verifier.ROOT


# -- the fixes, one by one ---------------------------------------------------------------

PLAYER = """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from engine.figures import interactive

def player():
    fig, ax = plt.subplots(figsize=(2, 2))
    line, = ax.plot([0, 1], [0, 0])
    return interactive(fig, lambda k: line.set_ydata([0, k]), range(3), alt="a line")

first, second = player(), player()
print(repr(first))
print(first.html == second.html)
print(first.html, end="")
"""


def test_players_are_the_same_in_every_run_and_unique_on_a_page():
    runs = [subprocess.run([sys.executable, "-c", PLAYER], capture_output=True, text=True,
                           timeout=120, cwd=ROOT) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout == runs[1].stdout, "a player's HTML changed from one run to the next"
    rep, same, html = runs[0].stdout.split("\n", 2)
    assert rep == "<engine.figures.Interactive player, 3 frames>"  # no memory address
    assert same == "False", "two players in one notebook would share element ids"
    assert 'id="_anim_img' in html and "uuid" not in html
    assert '<img alt="a line" id="_anim_img' in html  # the frame says what it shows


def test_stable_ids_rename_every_occurrence():
    from engine.figures import _stable_ids

    uuid = "0123456789abcdef0123456789abcdef"
    html = f'<img id="_anim_img{uuid}"><input id="_anim_slider{uuid}"> anim{uuid}.play()'
    renamed = _stable_ids(html)
    assert uuid not in renamed
    new = renamed.split('id="_anim_img')[1][:32]
    assert renamed.count(new) == 3 and len(new) == 32
    assert _stable_ids("<p>no player</p>") == "<p>no player</p>"


CHATTY = [
    nbformat.v4.new_code_cell(
        "import time\nprint('before', flush=True)\ntime.sleep(0.6)\nprint('after')"),
]


def test_the_executor_joins_a_cells_streams_into_one_output(tmp_path):
    """A pause longer than the kernel's flush interval splits stdout in two outputs; the
    one executor of the build and the verifier (execution.execute) joins them.
    (tests/test_build_cache.py shows the build runs nothing through myst-nb's own.)"""
    path = tmp_path / "chatty.md"
    path.write_text(FRONT + "\n# Chatty\n\n```{code-cell} ipython3\n" + CHATTY[0].source
                    + "\n```\n")
    chapter = myst_reader.read_chapter(path, ROOT)
    executed, _, failures, _ = execution.execute(chapter, ROOT, tmp_path)
    assert not failures
    [cell] = [c for c in executed.cells if c.cell_type == "code"]
    assert [o["text"] for o in cell.outputs] == ["before\nafter\n"]


@pytest.mark.slow
def test_a_rebuild_after_a_static_file_edit_restamps_every_page():
    """A warm rebuild after an edit of engine-site.js alone rewrites no page (no source
    changed), and Sphinx stamped the pages it does write with the checksum of the OLD
    copy in _static, which it replaces only afterwards: every page must still link the
    new file's checksum, or a browser keeps the cached old script."""
    STATIC_EDITS.result()


def static_edits(folder):
    """The probe's three builds, checked as they go (in the side thread: `side_jobs`)."""
    from sphinx.builders.html._assets import _file_checksum

    book = books.make_book(folder / "probe", books.SITE_POLISH_CONFIG,
                           {"one": "# One\n\nText.\n", "two": "# Two\n\nMore text.\n"})
    shutil.copytree(ROOT / "book" / "_ext", book / "book" / "_ext",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code, log = books.run_build(book)
    assert code == 0, log[-3000:]
    script = book / "book" / "_ext" / "site_static" / "engine-site.js"
    html = book / "_build" / "html"
    # once with no source changed (Sphinx writes nothing), once with one page changed
    for edit, changed in ((1, None), (2, "two")):
        script.write_text(script.read_text() + f"\n// edit {edit}: the rebuild must re-stamp\n")
        if changed:
            page = book / "book" / f"{changed}.md"
            page.write_text(page.read_text() + "\nAnd an edit.\n")
        code, log = books.run_build(book)  # warm: the same _build
        assert code == 0, log[-3000:]
        new = _file_checksum(script.parent, "engine-site.js")  # the edited source
        assert _file_checksum(html, "_static/engine-site.js") == new, (
            f"edit {edit}: the site kept the old engine-site.js")
        pages = [p for p in html.rglob("*.html") if "_static" not in p.parts
                 and 'http-equiv="Refresh"' not in p.read_text()]  # index.html: a redirect
        assert len(pages) >= 3, pages
        stale = {str(p.relative_to(html)): found for p in pages
                 if (found := set(re.findall(r"engine-site\.js\?v=([0-9a-f]+)", p.read_text())))
                 != {new}}
        assert not stale, f"edit {edit}: pages not linking engine-site.js?v={new}: {stale}"


STATIC_EDITS = Job("static-edits", static_edits, guess=10)


def side_jobs(item):
    """The test process only waits on the probe's builds: they run beside the session
    (tests/support/side_jobs.py)."""
    return [STATIC_EDITS] if item.originalname == (
        "test_a_rebuild_after_a_static_file_edit_restamps_every_page") else []


# -- masking exactly the measured values ---------------------------------------------------

CHAPTER = """\
Timed {glue:text}`elapsed:.2f` s for {glue:text}`count` steps.

```{glue:figure} fig-time
:name: fig-time
:alt: times

Times.
```
"""


def page(elapsed, count, image):
    return (f'<p>Timed <span class="pasted-text">{elapsed}</span> s for '
            f'<span class="pasted-text">{count}</span> steps.</p>\n'
            f'<figure class="align-default" id="fig-time">\n<img alt="times" '
            f'src="../_images/{image}.png" />\n<figcaption>Times.</figcaption></figure>')


def test_masking_hides_measured_values_and_nothing_else():
    measured = {"elapsed": "wall-clock", "fig-time": "wall-clock"}
    a = dc.masked_page(page("0.12", 7, "aaa"), CHAPTER, measured)
    b = dc.masked_page(page("0.31", 7, "bbb"), CHAPTER, measured)
    assert a == b
    assert "[elapsed]" in a and 'src="[fig-time]"' in a and ">7<" in a
    c = dc.masked_page(page("0.12", 8, "aaa"), CHAPTER, measured)
    assert c != a, "an unmeasured glued value that changes must still show"


def test_masking_refuses_a_page_it_cannot_map():
    with pytest.raises(dc.CannotMask):
        dc.masked_page(page("0.12", 7, "aaa").replace('<span class="pasted-text">7</span>', "7"),
                       CHAPTER, {"elapsed": "wall-clock"})


def test_masked_outputs_keep_everything_but_the_measured_glue_record():
    glue = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "elapsed"}},
            "data": {"application/papermill.record/text/plain": "0.123"}}
    printed = {"output_type": "stream", "name": "stdout", "text": "7 steps\n"}
    cell = nbformat.v4.new_code_cell("...")
    cell.outputs = [nbformat.from_dict(printed), nbformat.from_dict(glue)]
    nb = nbformat.v4.new_notebook(cells=[cell])
    other = nbformat.from_dict(nb)
    other.cells[0].outputs[1]["data"]["application/papermill.record/text/plain"] = "0.456"
    assert dc.output_differences(nb, other, {"elapsed"}) == []
    assert dc.output_differences(nb, other, set()) != []
    other.cells[0].outputs[0]["text"] = "8 steps\n"
    assert dc.output_differences(nb, other, {"elapsed"}) != []


def test_measured_values_are_declared_for_real_chapters_and_names():
    """Every declared name is glued by its chapter: a stale entry would mask nothing
    today and hide a difference tomorrow."""
    for slug, names in dc.MEASURED.items():
        text = (ROOT / "book" / f"{slug}.md").read_text()
        for name in names:
            assert f'glue("{name}"' in text, f"book/{slug}.md glues no {name!r}"


# -- two builds ------------------------------------------------------------------------------


class SecondBuild:
    """The second clean build, run in a thread into `<out>/_build`."""

    def __init__(self, out):
        self.out = Path(out)
        shutil.rmtree(self.out, ignore_errors=True)
        self.out.mkdir(parents=True)
        # the condition the session's build will find: a build links the PDF of its own
        # build folder (book_pdf.link_pdf); a PDF printed later is linked by two_builds
        pdf = ROOT / "_build" / "pdf" / "book.pdf"
        if pdf.exists():
            (self.out / "_build" / "pdf").mkdir(parents=True)
            shutil.copyfile(pdf, self.out / "_build" / "pdf" / "book.pdf")
        self.future = background.start(self._run)

    def _run(self):
        start = time.perf_counter()
        code, log = books.run_build(
            ROOT, command=["--path-output", str(self.out), *BUILD_COMMAND[3:]], timeout=1800)
        return code, log, time.perf_counter() - start

    def wait(self):
        return self.future.result()


_background = []


def reads_background(item):
    """Tests that compare the two builds (tests/conftest.py runs them last)."""
    return "two_builds" in getattr(item, "fixturenames", ())


def start_in_background(build):
    """Start the second clean build as the session starts: it runs beside the tests that
    use one core (tests/conftest.py calls this once the session is collected)."""
    if not _background:
        _background.append(SecondBuild(Path(build) / "determinism"))


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    """(session build, second clean build, seconds the second took)."""
    try:
        first = build_site(ROOT).parent
    except BuildFailed as error:
        pytest.fail(str(error), pytrace=False)
    second = _background[0] if _background else SecondBuild(tmp_path_factory.mktemp("second"))
    code, log, seconds = second.wait()
    assert code == 0, log[-5000:]
    print(f"second clean build: {seconds:.0f} s")
    # a PDF printed after the second build began is linked by the step the PDF command
    # runs on a site already built, so both sites are in the same condition; the command
    # may still be running in its thread (support/pdf_job.py), writing into the first
    pdf_job.wait_if_started()
    pdf = first / "html" / "book.pdf"
    if pdf.exists():
        book_pdf.link_pdf(second.out / "_build" / "html", pdf)
    return first, second.out / "_build", seconds


def chapters():
    return [(path, book_config.slug(path, ROOT)) for path in book_config.chapter_paths(ROOT)]


@pytest.mark.slow
def test_no_page_carries_the_day_it_was_built():
    """A build date differs between two builds either side of midnight (CI failed so).

    Sphinx stamps "Last updated on <date>" and the theme a docbuild:last-update meta
    unless html_last_updated_fmt is None; an empty string means "the default format".
    """
    try:
        html = build_site(ROOT)
    except BuildFailed as error:
        pytest.fail(str(error), pytrace=False)
    stamped = [str(page.relative_to(html)) for page in sorted(html.rglob("*.html"))
               if re.search(r"docbuild:last-update|Last updated on", page.read_text())]
    assert not stamped, f"pages stamped with their build date: {stamped}"


@pytest.mark.slow
def test_second_clean_build_executed_every_chapter_itself(two_builds):
    _, second, _ = two_builds
    cache = engine_cache.open_cache(second)
    assert len(cache.list_cache_records()) == len(chapters()), "the cache was not fresh"


@pytest.mark.slow
def test_executed_outputs_are_byte_identical(two_builds):
    first, second, _ = two_builds
    problems = []
    for path, slug in chapters():
        a = dc.executed_notebook(path, first, ROOT)
        b = dc.executed_notebook(path, second, ROOT)
        assert a is not None and b is not None, f"{slug}: not executed in both builds"
        problems += [f"book/{slug}.md: {p}"
                     for p in dc.output_differences(a, b, dc.MEASURED.get(slug, {}))]
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_every_page_is_identical(two_builds):
    first, second, _ = two_builds
    slugs = [slug for _, slug in chapters()]
    problems = dc.page_differences(first / "html", second / "html", ROOT, slugs)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_downloads_are_identical(two_builds):
    first, second, _ = two_builds
    slugs = [slug for _, slug in chapters()]
    problems = dc.download_differences(first / "html", second / "html", slugs)
    assert not problems, "\n".join(problems)
