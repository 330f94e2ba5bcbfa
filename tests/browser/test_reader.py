"""The built site used as a reader uses it, at phone (375 px) and desktop (1280 px) width.

* The chapter menu opens and one of its links leads to another chapter; on a desktop
  the same button hides and shows the sidebar.
* The page's contents open (a dialog on a phone, the right-hand column on a desktop)
  and one of its links moves to its section.
* A solution opens when its title ("Solution to Exercise 1") is clicked.
* No inline formula sticks out of the paragraph that holds it.
* Every display equation and table wider than the column scrolls sideways and is
  marked as doing so (`eng-overflows`: a shadow at the edge with more to show).
* No figure's text is drawn below a readable size: in an SVG each text's size in
  points is read from the file and scaled to the width it is drawn at; a player's
  frames carry their smallest text size and dpi (engine.figures.interactive).
* In the dark theme a figure is dark with light text, not a white box.
* A pointer resting on a reference to a theorem or a figure previews its target,
  from this page or another, with no request off the site.

`BOOK_SITE_DIR=/path/to/html` runs the tests on an already built site instead of
building one (how the tests were checked to fail on the site before the fixes; see
the `server` fixture).
Screenshots go to `_build/screenshots/reader-*.png`.
"""

import os
import re

import pytest

from site_pages import DESKTOP, PHONE, ROOT, chapter_docnames, page_id

pytestmark = pytest.mark.browser

CHAPTERS = chapter_docnames()
WIDTHS = {"phone": PHONE, "desktop": DESKTOP}
# a chapter with exercises and solutions, long formulas and figures
READER_CHAPTER = "book/chain-rule"
READABLE_PX = 8.0  # smallest label height a reader can read on a screen


@pytest.fixture(scope="module")
def shots(request):
    """_build/screenshots, through the session's `screenshots` fixture (which empties it
    once per session) unless the tests read a site given by BOOK_SITE_DIR."""
    if not os.environ.get("BOOK_SITE_DIR"):
        return request.getfixturevalue("screenshots")
    folder = ROOT / "_build" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def reader(open_page):
    """A page in a fresh browser context (conftest's `open_page`, closed after the test),
    and the list of what went wrong on it: errors, console warnings, failed requests."""

    def _reader(docname, viewport):
        loaded = open_page(f"{docname}.html", viewport)
        return loaded.page, loaded.problems

    return _reader


def _visible(locator):
    return [locator.nth(i) for i in range(locator.count()) if locator.nth(i).is_visible()]


def _header_button(page, kind):
    """The article header's menu (primary) or contents (secondary) button."""
    buttons = _visible(page.locator(f".bd-header-article .{kind}-toggle"))
    assert buttons, f"no visible {kind} sidebar button in the article header"
    return buttons[0]


# -- the chapter menu --------------------------------------------------------------


def test_chapter_menu_on_a_phone_opens_and_a_link_leads_on(reader, shots):
    page, errors = reader(READER_CHAPTER, PHONE)
    _header_button(page, "primary").click()
    dialog = page.locator("#pst-primary-sidebar-modal")
    page.wait_for_timeout(400)
    assert dialog.evaluate("d => d.open"), "the menu button did not open the chapter list"
    link = dialog.locator("nav a.reference.internal[href*='tensors']").first
    assert link.is_visible(), "the chapter list is open but its links are not visible"
    page.screenshot(path=str(shots / "reader-menu-phone.png"))
    link.click()
    page.wait_for_load_state("load")
    assert page.url.split("#")[0].endswith("tensors.html"), page.url
    assert not errors, errors


def test_chapter_menu_on_a_desktop_hides_and_shows_the_sidebar(reader, shots):
    page, errors = reader(READER_CHAPTER, DESKTOP)
    sidebar = page.locator("#pst-primary-sidebar")
    assert sidebar.is_visible()
    button = _header_button(page, "primary")
    button.click()
    page.wait_for_timeout(600)  # the theme's slide-out transition
    assert not sidebar.is_visible(), "the menu button did not hide the sidebar"
    page.screenshot(path=str(shots / "reader-menu-hidden-desktop.png"))
    button.click()
    page.wait_for_timeout(600)
    assert sidebar.is_visible(), "a second click did not bring the sidebar back"
    sidebar.locator("a.reference.internal[href*='tensors']").first.click()
    page.wait_for_load_state("load")
    assert page.url.split("#")[0].endswith("tensors.html"), page.url
    assert not errors, errors


# -- the page's contents -----------------------------------------------------------


def _follow_a_contents_link(page, container):
    links = _visible(container.locator("nav.page-toc a.nav-link"))
    assert len(links) > 3, "the page's contents show no links"
    link = links[3]
    target = link.get_attribute("href")
    link.click()
    page.wait_for_timeout(600)
    assert page.url.endswith(target), (page.url, target)
    section = page.locator(f"[id='{target[1:]}']")
    top = section.evaluate("s => s.getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"] / 2, f"{target} is not in view (top {top})"


def test_page_contents_on_a_phone_open_and_a_link_moves_there(reader, shots):
    page, errors = reader(READER_CHAPTER, PHONE)
    _header_button(page, "secondary").click()
    dialog = page.locator("#pst-secondary-sidebar-modal")
    page.wait_for_timeout(400)
    assert dialog.evaluate("d => d.open"), "the contents button did not open the contents"
    page.screenshot(path=str(shots / "reader-contents-phone.png"))
    _follow_a_contents_link(page, dialog)
    assert not errors, errors


def test_page_contents_on_a_desktop_are_shown_and_a_link_moves_there(reader):
    page, errors = reader(READER_CHAPTER, DESKTOP)
    _follow_a_contents_link(page, page.locator("#pst-secondary-sidebar"))
    assert not errors, errors


# -- solutions ---------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS, ids=str)
def test_a_solution_opens_by_its_title(reader, shots, width):
    page, errors = reader(READER_CHAPTER, WIDTHS[width])
    solution = page.locator("div.solution").first
    content = solution.locator("section#solution-content, :scope > section").first
    assert not content.is_visible(), "the solution is open before it is asked for"
    before = page.url
    solution.locator(":scope > .admonition-title a.reference").click()
    page.wait_for_timeout(400)
    assert content.is_visible(), "clicking the solution's title did not open it"
    assert page.url == before, f"clicking the title jumped away: {page.url}"
    solution.screenshot(path=str(shots / f"reader-solution-{width}.png"))
    assert not errors, errors


# -- math ----------------------------------------------------------------------------


INLINE_MATH_OUTSIDE = """() => {
  const out = [];
  document.querySelectorAll('article span.math mjx-container:not([display])').forEach(c => {
    const block = c.closest('p, li, dd, dt, td, th, figcaption, .admonition-title, div');
    const box = block.getBoundingClientRect();
    const style = getComputedStyle(block);
    const left = box.left + parseFloat(style.paddingLeft) - 1;
    const right = box.right - parseFloat(style.paddingRight) + 1;
    for (const r of c.getClientRects()) {
      if (r.width && (r.left < left || r.right > right)) {
        out.push(`${c.parentElement.textContent.slice(0, 50)}: ${Math.round(r.width)} px`
                 + ` wide, box ${Math.round(left)}..${Math.round(right)}`);
        break;
      }
    }
  });
  return out;
}"""


@pytest.mark.parametrize("width", WIDTHS, ids=str)
@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_no_inline_math_is_wider_than_its_paragraph(seen_page, docname, width):
    page = seen_page(docname, WIDTHS[width]).page
    outside = page.evaluate(INLINE_MATH_OUTSIDE)
    assert not outside, f"{len(outside)} inline formulas stick out:\n" + "\n".join(outside)


WIDE_THINGS = """() => {
  const out = [];
  document.querySelectorAll('article div.math mjx-container, article table').forEach(el => {
    const box = el.tagName === 'TABLE' ? el.parentElement : el;
    const wide = el.tagName === 'TABLE' ? el.getBoundingClientRect().width > box.clientWidth + 1
                                        : box.scrollWidth > box.clientWidth + 1;
    if (!wide) return;
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(box).overflowX);
    out.push({what: el.tagName === 'TABLE' ? 'table' : 'equation',
              text: (el.textContent || '').slice(0, 40), scrolls,
              marked: box.classList.contains('eng-overflows')
                      && getComputedStyle(box).backgroundImage !== 'none'});
  });
  return out;
}"""


@pytest.mark.parametrize("width", WIDTHS, ids=str)
@pytest.mark.parametrize("docname", CHAPTERS + ["book/intro"], ids=page_id)
def test_wide_equations_and_tables_scroll_and_say_so(seen_page, docname, width):
    page = seen_page(docname, WIDTHS[width]).page
    wide = page.evaluate(WIDE_THINGS)
    bad = [w for w in wide if not (w["scrolls"] and w["marked"])]
    assert not bad, (f"{len(bad)} of {len(wide)} wide equations or tables do not scroll "
                     "with a visible mark:\n" + "\n".join(map(str, bad)))


# -- figures -----------------------------------------------------------------------


FIGURE_TEXT = """async () => {
  const out = [];
  const images = Array.from(document.querySelectorAll(
      'article figure img, article .cell_output img')).filter(img => img.naturalWidth > 0
      && img.getBoundingClientRect().width > 0);
  for (const img of images) {
    const src = img.getAttribute('src');
    const shown = img.getBoundingClientRect().width;
    const item = {src: src.split('/').pop().slice(0, 24),
                  alt: (img.getAttribute('alt') || '').slice(0, 40),
                  opens: !!img.closest('a[href]') || img.classList.contains('eng-zoomable')};
    const player = img.closest('div.animation') && img.closest('figure, .cell_output');
    if (src.split('?')[0].endsWith('.svg')) {
      // matplotlib draws each text at translate(x y) scale(s -s), s = size in pt / 100,
      // in a drawing whose user unit is the point (viewBox): px = pt x shown / width
      const text = await (await fetch(img.src)).text();
      const width = parseFloat(text.match(/viewBox="[\\d.]+ [\\d.]+ ([\\d.]+)/)[1]);
      const sizes = Array.from(text.matchAll(/scale\\(([\\d.]+) -[\\d.]+\\)/g),
                               m => 100 * parseFloat(m[1]));
      item.kind = 'svg';
      item.pt = Math.min(...sizes);
      item.px = item.pt * shown / width;
    } else if (player) {
      // a player's frames: PNG at data-dpi, smallest text data-text-pt (engine.figures);
      // a player without them cannot be measured (NaN fails the test)
      const data = img.closest('.engine-interactive') || {dataset: {}};
      item.kind = 'player';
      item.pt = parseFloat(data.dataset.textPt);
      item.px = item.pt * parseFloat(data.dataset.dpi) / 72 * shown / img.naturalWidth;
    } else {
      // a PNG still (a dense figure): engine.figures' smallest label, 8.5 pt at 100 dpi
      item.kind = 'png';
      item.pt = 8.5;
      item.px = 8.5 * 100 / 72 * shown / img.naturalWidth;
    }
    out.push(item);
  }
  return out;
}"""


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_figure_labels_render_at_a_readable_size(seen_page, docname):
    """At desktop width, the smallest text of every figure renders at READABLE_PX or
    more: measured in an SVG (each text's size, ticks and legends included, at the
    drawn width) and in a player's frames (their smallest text and dpi, which the
    player carries); on any screen, a click opens the figure at full size."""
    page = seen_page(docname, DESKTOP).page
    figures = page.evaluate(FIGURE_TEXT)
    small = [f for f in figures if not f["px"] >= READABLE_PX]
    closed = [f for f in figures if not f["opens"]]
    assert not small, "text below a readable size:\n" + "\n".join(
        f"{f['kind']} {f['alt'] or f['src']}: {f['pt']:.1f} pt drawn at {f['px']:.1f} px"
        for f in small)
    assert not closed, "figures a click does not open:\n" + "\n".join(
        f["alt"] or f["src"] for f in closed)


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_raster_figures_are_drawn_at_three_quarters_of_their_size_or_more(seen_page, docname):
    """At 1280 px a PNG (a player's frame) is not shrunk below 75% of its natural width,
    where its text would be drawn smaller than the figure's own font sizes intend."""
    page = seen_page(docname, DESKTOP).page
    shrunk = page.evaluate("""() => Array.from(document.querySelectorAll('article img'))
        .filter(img => !/\\.svg$/.test(img.getAttribute('src') || '') && img.naturalWidth > 0
                && img.getBoundingClientRect().width > 0)
        .map(img => [img.getBoundingClientRect().width / img.naturalWidth, img.naturalWidth])
        .filter(([ratio]) => ratio < 0.75)""")
    assert not shrunk, f"{docname}: drawn at (ratio, natural px) {shrunk}"


def test_still_figures_are_svg_and_players_carry_their_text_size(seen_page):
    """The still figures of a chapter are SVG (sharp when zoomed); its players say how
    small their text is, so the size above is measured, not assumed."""
    page = seen_page(READER_CHAPTER, DESKTOP).page
    kinds = [f["kind"] for f in page.evaluate(FIGURE_TEXT)]
    assert "player" in kinds and "png" not in kinds, kinds
    page = seen_page("book/tensors", DESKTOP).page
    kinds = [f["kind"] for f in page.evaluate(FIGURE_TEXT)]
    assert kinds and set(kinds) == {"svg"}, kinds


DARK = 60  # a pixel darker than this (0-255 luminance) is dark


@pytest.mark.parametrize("width", WIDTHS, ids=str)
def test_figures_follow_the_dark_theme(reader, shots, width):
    """Switched to the dark theme with the theme's own button, a figure is no white box:
    most of it is as dark as the page, and its text and lines are light."""
    from PIL import Image

    page, errors = reader("book/tensors", WIDTHS[width])
    switch = _visible(page.locator(".theme-switch-button"))
    assert switch, "no theme switch"
    for _ in range(3):  # light -> dark -> auto: click until the page is dark
        if page.evaluate("() => document.documentElement.dataset.theme") == "dark":
            break
        switch[0].click()
        page.wait_for_timeout(200)
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    figure = page.locator("article figure img").first
    figure.scroll_into_view_if_needed()
    page.wait_for_timeout(200)
    path = shots / f"reader-dark-figure-{width}.png"
    figure.screenshot(path=str(path))
    page.screenshot(path=str(shots / f"reader-dark-page-{width}.png"))
    grey = Image.open(path).convert("L")
    pixels = sorted(grey.get_flattened_data() if hasattr(grey, "get_flattened_data") else grey.getdata())
    median, light = pixels[len(pixels) // 2], pixels[int(len(pixels) * 0.999)]
    assert median < DARK, f"the figure is a light box in the dark theme (median {median})"
    assert light > 150, f"no light text or lines on it (99.9th percentile {light})"
    assert not errors, errors


@pytest.mark.parametrize("width", WIDTHS, ids=str)
def test_a_click_opens_a_figure_at_full_size(reader, shots, width):
    page, errors = reader("book/memory", WIDTHS[width])
    img = page.locator("article figure img").first
    shrunk = img.evaluate("i => i.getBoundingClientRect().width / i.naturalWidth")
    img.click()
    page.wait_for_timeout(300)
    dialog = page.locator("dialog#eng-zoom")
    assert dialog.count() and dialog.evaluate("d => d.open"), "a click did not open the figure"
    full = dialog.locator("img").evaluate("i => i.getBoundingClientRect().width / i.naturalWidth")
    assert full == pytest.approx(1, abs=0.01), f"opened at {full:.2f} of full size"
    page.screenshot(path=str(shots / f"reader-figure-full-size-{width}.png"))
    page.keyboard.press("Escape")
    page.wait_for_timeout(200)
    assert not dialog.evaluate("d => d.open"), "Escape did not close the full-size figure"
    assert shrunk <= 1.0 and not errors, errors


# -- players -------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS, ids=str)
def test_a_player_counts_its_frames_explains_its_speed_and_keeps_one_row(reader, shots, width):
    page, errors = reader(READER_CHAPTER, WIDTHS[width])
    player = page.locator("div.animation").first
    player.scroll_into_view_if_needed()
    status = player.locator(".eng-player-status")
    assert status.count(), "the player shows no frame counter"
    first = status.locator(".eng-frame").inner_text()
    assert re.fullmatch(r"Frame \d+ of (\d+)(: .+)?", first), first
    player.locator("button[title='First frame']").click()
    player.locator("button[title='Next frame']").click()
    page.wait_for_timeout(100)
    after = status.locator(".eng-frame").inner_text()
    assert after.startswith("Frame 2 of "), f"after First, Next: {after!r}"
    speed = status.locator(".eng-speed").inner_text()
    assert "slower" in speed and "faster" in speed, speed
    player.locator("button[title^='Faster']").click()
    assert status.locator(".eng-speed").inner_text().startswith("speed 1.4"), (
        status.locator(".eng-speed").inner_text())
    tops = player.locator(".anim-buttons button").evaluate_all(
        "bs => bs.map(b => Math.round(b.getBoundingClientRect().top))")
    assert len(set(tops)) == 1, f"the player's buttons wrap onto {len(set(tops))} rows"
    player.screenshot(path=str(shots / f"reader-player-{width}.png"))
    assert not errors, errors


# -- search --------------------------------------------------------------------------


def test_search_lists_each_page_once_with_typeset_snippets(reader):
    page, errors = reader("search", DESKTOP)
    page.goto(page.url.split("?")[0] + "?q=broadcast", wait_until="load")
    page.wait_for_selector("#search-results ul.search > li p.context", timeout=30000)
    page.wait_for_timeout(2500)  # snippets arrive one page at a time, then MathJax
    results = page.evaluate("""() => Array.from(
        document.querySelectorAll('#search-results ul.search > li')).map(li => ({
          page: li.querySelector('a').getAttribute('href').split('#')[0],
          snippet: li.querySelector('p.context') ? li.querySelector('p.context').innerText : ''}))""")
    pages = [r["page"] for r in results]
    assert len(pages) == len(set(pages)), f"a page listed twice: {pages}"
    raw = [r for r in results if "\\(" in r["snippet"] or "\\frac" in r["snippet"]]
    assert not raw, f"raw TeX in snippets: {raw[:2]}"
    contents = [r for r in results if r["snippet"].rstrip(". ").endswith("Contents")]
    assert not contents, f"snippets from the page's header, not its text: {contents[:2]}"
    assert not errors, errors


# -- hover previews ------------------------------------------------------------------

PREVIEW_TARGET = """link => {
  const url = new URL(link.getAttribute('href'), location.href);
  return {id: decodeURIComponent(url.hash.slice(1)), page: url.pathname,
          same: url.pathname === location.pathname};
}"""


def _hover_preview(page, link):
    link.scroll_into_view_if_needed()
    link.hover()
    box = page.locator("#eng-preview")
    box.wait_for(state="visible", timeout=5000)
    page.wait_for_timeout(300)  # a fetched page's math is typeset in the box
    return box


def test_hovering_a_cross_reference_previews_its_target(reader, shots):
    """At 1280 px, a pointer resting on a reference to a theorem shows the theorem's
    title and text; on a figure reference, the figure; on a reference to another
    page's theorem, that theorem (fetched from the site, nothing from elsewhere)."""
    page, errors = reader(READER_CHAPTER, DESKTOP)
    requests, failed = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.on("response", lambda r: failed.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None)

    theorem = page.locator("article a.reference.internal[href^='#thm-']").first
    target = theorem.evaluate(PREVIEW_TARGET)
    title, body = page.evaluate("""id => {
      const t = document.getElementById(id);
      return [t.querySelector('.admonition-title').innerText.trim(),
              t.querySelector('section, .proof-content, p').innerText.trim().slice(0, 30)];
    }""", target["id"])
    box = _hover_preview(page, theorem)
    text = box.inner_text()
    assert title in text and body in text, (title, body, text[:200])
    page.screenshot(path=str(shots / "reader-preview-theorem-desktop.png"))
    page.mouse.move(5, 5)
    box.wait_for(state="hidden", timeout=3000)

    figure = page.locator("article a.reference.internal[href^='#fig-']").first
    target = figure.evaluate(PREVIEW_TARGET)
    src = page.evaluate("id => document.getElementById(id).querySelector('img').src", target["id"])
    box = _hover_preview(page, figure)
    assert box.locator("img").count(), "a figure reference previews no image"
    assert box.locator("img").first.evaluate("i => i.src") == src
    page.screenshot(path=str(shots / "reader-preview-figure-desktop.png"))
    page.mouse.move(5, 5)

    page, errors2 = reader("book/forward-mode", DESKTOP)
    page.on("request", lambda r: requests.append(r.url))
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.on("response", lambda r: failed.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None)
    other = page.locator("article a.reference.internal[href*='.html#thm-'], "
                         "article a.reference.internal[href*='.html#def-']").first
    assert other.count(), "no reference to another page's theorem in forward-mode"
    box = _hover_preview(page, other)
    title = box.locator(".admonition-title").first.inner_text()
    assert re.match(r"(Theorem|Definition) \d+\.\d+", title), title
    assert not box.locator(".math").count() or box.locator("mjx-container").count(), (
        "the fetched theorem's math was not typeset")
    page.screenshot(path=str(shots / "reader-preview-other-page-desktop.png"))

    outside = [u for u in requests if not u.startswith(("http://127.0.0.1", "data:", "blob:"))]
    assert not outside and not failed, (outside, failed)
    assert not errors and not errors2, errors + errors2
