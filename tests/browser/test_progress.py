"""The reader's path (book/_ext/reader_path.py, engine-site.js item 9), used as a reader would,
at phone (375 px) and desktop (1280 px) width.

* Under every chapter's title, one line: level, reading time, interactive figures,
  exercises and a link to the chapter's notebook. The reading time is recomputed here from
  the page (its source's prose words, the words of the code it shows) and must agree.
* "Mark this chapter done" is a real button with aria-pressed; pressed, it survives a
  reload, shows on the intro's map of chapters (with the chapter to read next), and a
  control on the map clears it all; from the site opened as files, the same.
* Each chapter names the chapters that build on it: exactly those whose "Before this
  chapter" section links it, read here from their pages.
No console error, no request off the site (the fixtures record both).
"""

import re

import pytest

import reader_path
from myst_reader import prose_words
from site_pages import DESKTOP, PHONE, ROOT, chapter_docnames, page_id

pytestmark = pytest.mark.browser

CHAPTERS = [d for d in chapter_docnames() if d not in ("book/report", "book/speed", "book/catalogue")]
WIDTHS = {"phone": PHONE, "desktop": DESKTOP}
PLAN = re.compile(r"(Introductory|Intermediate|Advanced) · (\d+) min · (\d+) interactive figures? · "
                  r"(\d+) exercises? · notebook")
SHOWN_CODE = """() => Array.from(document.querySelectorAll('article pre'))
    .filter(pre => !pre.closest('.cell_output'))
    .map(pre => pre.textContent.split(/\\s+/).filter(Boolean).length)
    .reduce((a, b) => a + b, 0)"""


@pytest.mark.parametrize("width", WIDTHS, ids=str)
@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_every_chapter_shows_its_plan_line_under_the_title(seen_page, docname, width):
    loaded = seen_page(docname, WIDTHS[width])
    page = loaded.page
    line = page.locator("article h1 + p.reader-plan")
    assert line.count() == 1 and line.is_visible(), f"{docname}: no plan line under the title"
    match = PLAN.fullmatch(line.inner_text().strip())
    assert match, line.inner_text()
    source = (ROOT / f"{docname}.md").read_text(encoding="utf-8")
    minutes = reader_path.reading_minutes(prose_words(source, ROOT), page.evaluate(SHOWN_CODE))
    assert int(match.group(2)) == minutes, (docname, match.group(0), minutes)
    exercises = page.locator("article .exercise").count()
    assert int(match.group(4)) == exercises, (docname, match.group(0), exercises)
    href = line.locator("a.reader-notebook").get_attribute("href")
    status = page.evaluate("async (h) => (await fetch(h)).status", href)
    assert status == 200, f"{docname}: the notebook link {href} gives {status}"
    assert not loaded.problems, loaded.problems


def _button(page):
    return page.locator("button.reader-done")


def _map_row(page, slug):
    return page.locator(f"#map-of-the-chapters tbody tr:has(a[href^='{slug}.html'])")


def _mark_reload_map_clear(page, chapter_url, intro_url, shots=None, tag=""):
    page.goto(chapter_url)
    button = _button(page)
    assert button.count() == 1
    assert button.get_attribute("aria-pressed") == "false"
    button.scroll_into_view_if_needed()
    button.click()
    assert button.get_attribute("aria-pressed") == "true"
    page.reload()
    assert _button(page).get_attribute("aria-pressed") == "true", "forgotten on reload"
    page.goto(intro_url)
    assert "reader-is-done" in (_map_row(page, "tensors").get_attribute("class") or "")
    first = page.locator("#map-of-the-chapters tbody tr").first
    assert "reader-is-next" in (first.get_attribute("class") or "")  # chain-rule is not done
    assert "1 of" in page.locator(".reader-map-progress [role=status]").inner_text()
    if shots is not None:
        page.locator("#map-of-the-chapters").screenshot(path=str(shots / f"progress-map-{tag}.png"))
    page.locator("button.reader-clear").click()
    assert page.locator("#map-of-the-chapters tr.reader-is-done").count() == 0
    page.goto(chapter_url)
    assert _button(page).get_attribute("aria-pressed") == "false", "not cleared"


@pytest.mark.parametrize("width", WIDTHS, ids=str)
def test_a_chapter_marked_done_survives_a_reload_and_shows_on_the_map(open_page, server, width,
                                                                     screenshots):
    loaded = open_page("book/tensors.html", WIDTHS[width])
    page = loaded.page
    note = page.locator(".reader-progress p").inner_text()
    assert "this browser only" in note and "without notes" in note
    _mark_reload_map_clear(page, server + "book/tensors.html", server + "book/intro.html",
                           screenshots, width)
    assert not loaded.problems, loaded.problems


def test_progress_works_in_the_site_opened_from_disk(browser, site):
    """The downloaded site, opened as files: local storage works there too."""
    context = browser.new_context(viewport=DESKTOP)
    problems = []
    page = context.new_page()
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    base = site.resolve().as_uri() + "/"
    _mark_reload_map_clear(page, base + "book/tensors.html", base + "book/intro.html")
    context.close()
    assert not problems, problems


def test_each_chapter_names_the_chapters_that_build_on_it(seen_page):
    before = {}
    for docname in CHAPTERS:
        page = seen_page(docname, DESKTOP).page
        before[docname] = set(page.evaluate("""() => {
            const h = Array.from(document.querySelectorAll('article h2'))
                .find(h => h.textContent.includes('Before this chapter'));
            if (!h) return [];
            return Array.from(h.closest('section').querySelectorAll('a.reference.internal'))
                .map(a => a.getAttribute('href').split('#')[0].replace(/\\.html$/, ''));
        }"""))
    for docname in CHAPTERS:
        slug = docname.split("/")[-1]
        expected = {d.split("/")[-1] for d in CHAPTERS if slug in before[d]}
        page = seen_page(docname, DESKTOP).page
        shown = set(page.evaluate("""() => Array.from(document.querySelectorAll(
            'p.reader-unlocks a.reference.internal')).map(
            a => a.getAttribute('href').split('#')[0].replace(/\\.html$/, ''))"""))
        assert shown == expected, (docname, shown, expected)
