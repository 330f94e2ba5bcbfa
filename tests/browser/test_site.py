"""The built site, in headless Chromium, page by page from the table of contents.

Every page loads with no console error or warning, no failed request and no
request off localhost; math is typeset; every image loads; the page fits a 375 px
phone with no horizontal scroll; search finds each chapter by a word of its body;
the download menu's .ipynb is a valid executed notebook; every interactive player
(matplotlib `to_jshtml`, made by `engine.figures.interactive`) changes when its
"Next frame" button is clicked. Screenshots of each page at desktop and phone width
are kept in `_build/screenshots/`.
"""

import io
import re
import zipfile
from urllib.parse import urljoin

import nbformat
import pytest

from site_pages import DESKTOP, PHONE, ROOT, chapter_docnames, page_id, toc_docnames

pytestmark = pytest.mark.browser

PAGES = toc_docnames()
CHAPTERS = chapter_docnames()


def _url(docname):
    return f"{docname}.html"


# text of the article without code, scripts or typeset math: what is left of
# math delimiters there is math MathJax did not typeset
ARTICLE_TEXT = """() => {
  const main = document.querySelector('article') || document.querySelector('main') || document.body;
  const copy = main.cloneNode(true);
  copy.querySelectorAll('pre, code, script, style, mjx-container, .highlight, .animation,'
                        + ' .engine-interactive, .output').forEach(n => n.remove());
  return copy.innerText;
}"""


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_loads_clean_and_fits_a_phone(seen_page, screenshots, docname):
    loaded = seen_page(docname)
    # the first screen only: a whole chapter is 30,000 px tall at 375 px, too tall to look
    # at, and encoding it took a third of this test; the reader tests shoot what they open
    loaded.page.screenshot(path=str(screenshots / f"{page_id(docname)}-desktop.png"))
    assert not loaded.problems, "\n".join(loaded.problems)

    phone = seen_page(docname, PHONE)
    phone.page.screenshot(path=str(screenshots / f"{page_id(docname)}-phone.png"))
    assert not phone.problems, "\n".join(phone.problems)
    widths = phone.page.evaluate(
        "() => ({doc: document.documentElement.scrollWidth, body: document.body.scrollWidth,"
        " view: window.innerWidth})")
    assert widths["doc"] <= widths["view"] and widths["body"] <= widths["view"], (
        f"horizontal scroll at {PHONE['width']} px: {widths}")
    # the article's text wraps: no element of the article sticks out of the viewport
    # unless it sits in something that scrolls on its own (code, tables, players)
    wide = phone.page.evaluate("""() => {
      const out = [];
      const main = document.querySelector('article') || document.body;
      const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) {
          const s = getComputedStyle(p); if (s.overflowX === 'auto' || s.overflowX === 'scroll'
          || s.overflowX === 'hidden') return true; } return false; };
      for (const el of main.querySelectorAll('p, li, h1, h2, h3, dt, dd, img, figure')) {
        const r = el.getBoundingClientRect();
        if (r.width && r.right > window.innerWidth + 1 && !scrolls(el))
          out.push(el.tagName + ': ' + (el.innerText || el.src || '').slice(0, 60));
      }
      return out;
    }""")
    assert not wide, f"sticks out at {PHONE['width']} px: {wide[:5]}"


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_math_is_typeset(seen_page, docname):
    loaded = seen_page(docname)
    page = loaded.page
    math = page.locator(".math").count()
    untypeset = page.evaluate(
        "() => [...document.querySelectorAll('.math')].filter("
        "  m => !m.querySelector('mjx-container') && m.tagName !== 'MJX-CONTAINER').length")
    assert untypeset == 0, f"{untypeset} of {math} math elements were not typeset"
    if math:
        assert page.locator("mjx-container").count() >= math
    errors = page.locator("mjx-merror").count()
    assert errors == 0, f"MathJax could not typeset {errors} formula(s)"
    text = page.evaluate(ARTICLE_TEXT)
    # outside code and typeset math, prose has no dollar sign and no TeX command
    raw = [text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ")
           for m in re.finditer(r"\$|\\[A-Za-z]+|\\[()\[\]]", text)]
    assert not raw, "raw math left in the text:\n" + "\n".join(raw[:8])


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_every_image_loads(seen_page, docname):
    loaded = seen_page(docname)
    page = loaded.page
    page.evaluate("async () => { for (const img of document.images) {"
                  " img.loading = 'eager'; try { await img.decode(); } catch (e) {} } }")
    broken = page.evaluate(
        "() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))"
        ".map(i => i.getAttribute('src') ? i.getAttribute('src').slice(0, 80) : i.id)")
    # a to_jshtml player's <img> gets its frame from JavaScript: it must have one too
    assert not broken, f"images that did not load: {broken}"
    reprs = page.evaluate(
        "() => [...document.querySelectorAll('.output.text_plain, figure pre')]"
        ".map(e => e.innerText.trim()).filter(t => /^<(Figure size |matplotlib[.])|"
        " object at 0x[0-9a-f]+>/.test(t))")
    assert not reprs, f"figures that reached the page as text, not as an image: {reprs}"
    assert not loaded.problems, "\n".join(loaded.problems)


def _body_word(page):
    """A long word of the chapter's prose that is not in its title (deterministic)."""
    title = page.evaluate("() => (document.querySelector('article h1') || {}).innerText || ''")
    text = page.evaluate(
        "() => [...document.querySelectorAll('article section p')].map(p => p.innerText)"
        ".join(' ')")
    words = [w for w in re.findall(r"[A-Za-z]{7,}", text) if w.lower() not in title.lower()]
    assert words, ("no prose found under `article section p`: every chapter has some, so the "
                   "theme's markup changed and this selector needs updating")
    counts = {}
    for w in words:
        counts[w.lower()] = counts.get(w.lower(), 0) + 1
    return max(sorted(counts), key=lambda w: (len(w), counts[w]))


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_search_finds_the_chapter(seen_page, seen_search, docname):
    chapter = seen_page(docname)
    word = _body_word(chapter.page)
    loaded = seen_search(word)
    page = loaded.page
    page.wait_for_selector("#search-results ul.search li, #search-results p",
                           timeout=20000)
    page.wait_for_function(
        "() => !document.querySelector('#search-progress') ||"
        " document.querySelector('#search-progress').innerText.trim() !== 'Preparing search...'",
        timeout=20000)
    links = page.evaluate(
        "() => [...document.querySelectorAll('#search-results ul.search li a')]"
        ".map(a => a.getAttribute('href'))")
    assert any(docname + ".html" in (href or "") for href in links), (
        f"searching {word!r} did not list {docname}: {links[:10]}")
    assert not loaded.problems, "\n".join(loaded.problems)


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_download_menu_gives_the_executed_notebook(seen_page, docname):
    """The menu opens on a click and closes on Escape, leaving the page it shares with the
    tests that only look as it was."""
    page = seen_page(docname).page
    link = page.locator("a.btn-download-notebook-button")
    assert not link.is_visible(), "the download menu is open before a click"
    page.click("button[aria-label='Download this page']")
    link.wait_for(state="visible", timeout=5000)
    assert ".ipynb" in link.inner_text()
    url = urljoin(page.url, link.get_attribute("href"))
    page.keyboard.press("Escape")
    page.mouse.move(0, 0)  # the theme also opens the menu under a resting pointer
    link.wait_for(state="hidden", timeout=5000)
    page.evaluate("document.activeElement.blur()")  # no focus ring in later screenshots
    response = page.request.get(url)
    assert response.ok, f"{url}: HTTP {response.status}"
    nb = nbformat.reads(response.text(), as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "the notebook has no code cells"
    expected = [c for c in code if "expect" in c.metadata]
    assert expected, "no cell of the notebook carries its expect: (metadata), so nothing says "\
        "which cells print"
    silent = [c.source.splitlines()[0] for c in expected if not c.outputs]
    assert not silent, ("cells that print in the book but have no output in the downloaded "
                        f"notebook (not the executed one?): {silent[:5]}")
    raw = ("{listing}", "{literalinclude}")
    assert not any(d in c.source for c in nb.cells if c.cell_type == "markdown" for d in raw)
    assert "engine-snapshot" in code[0].metadata.get("tags", []), "no engine in the first cell"


def test_intro_links_the_archive(seen_page):
    loaded = seen_page(PAGES[0])
    page = loaded.page
    link = page.locator("a.book-archive")
    assert link.count() == 1, "the intro has no link to the book's archive"
    response = page.request.get(urljoin(page.url, link.get_attribute("href")))
    assert response.ok
    names = zipfile.ZipFile(io.BytesIO(response.body())).namelist()
    top = names[0].split("/")[0]
    for name in ("requirements.txt", "pyproject.toml", "engine/__init__.py", "README.md"):
        assert f"{top}/{name}" in names
    notebooks = [n for n in names if n.endswith(".ipynb")]
    assert len(notebooks) == len(CHAPTERS), notebooks


PLAYER_CALL = re.compile(r"\binteractive\(")  # engine.figures.interactive: a player


def declared_players(docname):
    """How many places in the chapter's source make a player (calls of `interactive(`)."""
    return len(PLAYER_CALL.findall((ROOT / f"{docname}.md").read_text(encoding="utf8")))


WITH_PLAYERS = [d for d in CHAPTERS if declared_players(d)]


def test_the_book_declares_interactive_players():
    """The chapters that draw a player are read from their source, not from earlier tests."""
    assert WITH_PLAYERS, "no chapter calls engine.figures.interactive: the players are gone"


@pytest.mark.parametrize("docname", WITH_PLAYERS, ids=page_id)
def test_interactive_players_respond(book_page, screenshots, docname):
    loaded = book_page(docname)
    page = loaded.page
    players = page.locator("div.animation")
    count = players.count()
    assert count >= 1, (f"{docname}.md calls interactive( {declared_players(docname)} time(s), "
                        "but its page has no player (div.animation)")
    for i in range(count):
        player = players.nth(i)
        player.scroll_into_view_if_needed()
        page.wait_for_timeout(100)
        before = player.screenshot(path=str(screenshots / f"{page_id(docname)}-player{i}-0.png"))
        after = before
        for _ in range(5):  # two frames in a row may be the same picture (a pause)
            player.locator("button[title='Next frame']").click()
            page.wait_for_timeout(150)
            after = player.screenshot()
            if after != before:
                break
        (screenshots / f"{page_id(docname)}-player{i}-1.png").write_bytes(after)
        assert before != after, f"player {i} of {docname} did not change on 'Next frame'"
    assert not loaded.problems, "\n".join(loaded.problems)


def test_a_request_cut_off_by_leaving_the_page_is_no_problem_of_the_site():
    """Chromium aborts what is still loading when a test reloads or leaves a page (the
    favicon, under load): net::ERR_ABORTED is the test's doing; any other failure of a
    request to the site is the site's (a request to another host is reported by the route
    that refuses it)."""
    from site_pages import failed_request

    local = "127.0.0.1:8000"
    assert failed_request("http://127.0.0.1:8000/_static/favicon.png", "net::ERR_ABORTED",
                          local) is None
    assert failed_request("http://127.0.0.1:8000/book/x.js", "net::ERR_CONNECTION_RESET",
                          local) == ("request failed: http://127.0.0.1:8000/book/x.js "
                                     "(net::ERR_CONNECTION_RESET)")
    assert failed_request("https://example.org/a.js", "net::ERR_FAILED", local) is None
