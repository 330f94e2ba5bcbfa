"""Fixtures for the browser tests: the built site, a local server, headless Chromium.

* `site` builds the book once per session with the README's build command
  (`jupyter-book build . -W -n --keep-going`, default `_build`, so the execution
  cache of earlier builds is reused) and returns `_build/html`.
* `server` serves it (or the site BOOK_SITE_DIR names) with `http.server` on a free
  localhost port.
* `browser` is Debian's Chromium (`/usr/bin/chromium`) driven by Playwright. Without
  it the browser tests SKIP, unless BOOK_REQUIRE_BROWSER=1 (CI), where they fail.
* `book_page(docname, width)` is a page of the book, fresh for each test (the tests
  that click); `seen_page` the same page loaded once per session, for the tests that
  only look, and `seen_search(word)` the search page for a word; `open_page(path,
  width)` loads any path. Each records what went wrong:
  console errors and warnings, page errors, failed requests, HTTP errors, and any
  request to a host other than localhost (blocked).
"""

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

from site_pages import (CHROMIUM, CHROMIUM_ARGS, DESKTOP, BuildFailed, build_site,
                        failed_request)


@pytest.fixture(scope="session")
def site():
    """Build the book (README command) and return its `_build/html` folder."""
    try:
        return build_site()
    except BuildFailed as error:
        pytest.fail(str(error), pytrace=False)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def server(request):
    """http://127.0.0.1:<free port>/ serving the built site, or the site BOOK_SITE_DIR
    names (a site built elsewhere: how a test is checked to fail on a site before a fix)."""
    given = os.environ.get("BOOK_SITE_DIR")
    site = Path(given) if given else request.getfixturevalue("site")
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        reason = (f"{CHROMIUM} is not installed (apt-get install -y chromium; "
                  ".ci/run installs it)")
        if os.environ.get("BOOK_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " and BOOK_REQUIRE_BROWSER=1", pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def screenshots(site):
    folder = site.parent / "screenshots"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


class LoadedPage:
    """A loaded page and everything that went wrong while loading it."""

    def __init__(self, page, context):
        self.page = page
        self.context = context
        self.problems = []

    def wait_for_math(self):
        """Wait until MathJax has typeset the page (when the page has math)."""
        if not self.page.locator(".math").count():
            return
        self.page.wait_for_function(
            "() => window.MathJax && window.MathJax.startup && window.MathJax.startup.promise",
            timeout=30000)
        self.page.evaluate("async () => { await window.MathJax.startup.promise; }")
        self.page.wait_for_timeout(100)  # the site's own script runs after typesetting


def _load(browser, server, path, viewport):
    context = browser.new_context(viewport=viewport, device_scale_factor=1,
                                  service_workers="block")
    page = context.new_page()
    loaded = LoadedPage(page, context)
    local = urlparse(server).netloc

    def route(route_):
        url = urlparse(route_.request.url)
        if url.scheme in ("data", "blob") or url.netloc == local:
            route_.continue_()
        else:
            loaded.problems.append(f"request to another host: {route_.request.url}")
            route_.abort()

    context.route("**/*", route)
    page.on("console", lambda m: loaded.problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: loaded.problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: loaded.problems.append(problem)
            if (problem := failed_request(r.url, r.failure, local)) else None)
    page.on("response", lambda r: loaded.problems.append(f"HTTP {r.status}: {r.url}")
            if r.status >= 400 else None)
    page.goto(server + path, wait_until="load")
    page.wait_for_load_state("networkidle")
    loaded.wait_for_math()
    return loaded


@pytest.fixture
def open_page(browser, server):
    """Load a page in a fresh browser context (closed after the test)."""
    contexts = []

    def _open(path, viewport=DESKTOP):
        loaded = _load(browser, server, path, viewport)
        contexts.append(loaded.context)
        return loaded

    yield _open
    for context in contexts:
        context.close()


def _pages(browser, server, path=lambda docname: f"{docname}.html"):
    cache = {}

    def _get(name, viewport=DESKTOP):
        key = (name, viewport["width"])
        if key not in cache:
            cache[key] = _load(browser, server, path(name), viewport)
        return cache[key]

    return cache, _get


@pytest.fixture
def book_page(browser, server):
    """A page of the book, loaded afresh for this test (one per viewport, closed after it).

    Every test that clicks, types or presses a key uses this one: its clicks (a menu, a
    player's frame) cannot change what another test sees, nor land in its problems list.
    """
    cache, get = _pages(browser, server)
    yield get
    for loaded in cache.values():
        loaded.context.close()


@pytest.fixture(scope="session")
def seen_page(browser, server):
    """A page of the book loaded once per session and viewport, for tests that only look.

    Typesetting the math takes a second or two per load on a small machine, and most
    tests only read the page (its size, its text, its images): they share one load,
    whose problems list holds what its loading caused, nothing else. A test that
    clicks takes `book_page` instead, unless it leaves the page as it found it (the
    download menu, opened and closed again).
    """
    cache, get = _pages(browser, server)
    yield get
    for loaded in cache.values():
        loaded.context.close()


@pytest.fixture(scope="session")
def seen_search(browser, server):
    """`search.html?q=<word>`, loaded once per session and word, for tests that only read
    its results: several chapters share the word they are searched by."""
    cache, get = _pages(browser, server, lambda word: f"search.html?q={word}")
    yield get
    for loaded in cache.values():
        loaded.context.close()
