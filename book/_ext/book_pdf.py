"""The whole book as one PDF, printed by the Chromium the browser tests use.

    .venv/bin/python book/_ext/book_pdf.py          (the README's PDF command)

1. Builds the book as one HTML page (`jupyter-book build . --builder singlehtml
   -W -n --keep-going` into `_build/singlehtml`). It uses the same execution cache as
   the site, so after a site build no cell runs again; on a fresh clone it executes
   the chapters once, as the site build would.
2. Serves that page on localhost and loads it in headless Chromium (Debian's
   `/usr/bin/chromium`, driven by Playwright), waits for MathJax to typeset it, and
   prepares it for paper: every solution, dropdown and folded block is opened, each
   chapter's solutions move to a "Solutions" section at the chapter's end, and the
   players' buttons are hidden (a player prints the frame it shows).
3. Prints it (`page.pdf`, A4) to `_build/pdf/book.pdf`.

4. If the site is built (`_build/html`), copies the PDF into it and links it from the
   intro (`site_polish.link_pdf`, the step an HTML build runs when it finds the PDF),
   so the site carries the link exactly when it carries the file, whichever of the
   two was made first. tests/test_pdf.py checks the PDF and the link.
"""

import functools
import http.server
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SINGLE = ROOT / "_build" / "singlehtml"
PDF = ROOT / "_build" / "pdf" / "book.pdf"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
BUILD = ["build", ".", "--builder", "singlehtml", "-W", "-n", "--keep-going"]

# Run in the page before printing.
PREPARE_FOR_PAPER = r"""() => {
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  document.querySelectorAll('.toggle-button').forEach(b => b.remove());
  document.querySelectorAll('div.animation .anim-buttons, div.animation .anim-state,'
      + ' div.animation input.anim-slider').forEach(e => e.style.display = 'none');
  // the one-page build marks where each document starts: <span id="document-book/...">
  const chapters = Array.from(document.querySelectorAll('span[id^="document-"]'))
    .map(span => span.nextElementSibling).filter(s => s && s.tagName === 'SECTION');
  let moved = 0;
  chapters.forEach(chapter => {
    const solutions = Array.from(chapter.querySelectorAll('div.solution'));
    if (!solutions.length) return;
    const end = document.createElement('section');
    end.className = 'pdf-solutions';
    const title = document.createElement('h3');
    title.textContent = 'Solutions to the exercises of this chapter';
    end.appendChild(title);
    solutions.forEach(s => { end.appendChild(s); moved += 1; });
    chapter.appendChild(end);
  });
  return {chapters: chapters.map(c => c.querySelector('h1, h2').textContent
                                  .replace(/[#\u00b6]$/, '').trim()),
          solutions: moved};
}"""

PRINT_CSS = """
@page { size: A4; margin: 16mm 14mm 18mm 14mm; }
span[id^="document-"] + section { break-before: page; }
.pdf-solutions { break-before: page; }
div.math mjx-container, .pst-scrollable-table-container { overflow: visible !important; }
div.math mjx-container[display="true"] { max-width: 100%; }
figure, .cell_output img, div.solution, .proof, .theorem, .definition { break-inside: avoid; }
a.headerlink { display: none !important; }
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def build_single_page(root=ROOT):
    """The book as one HTML page, the site's build command with the singlehtml builder."""
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    result = subprocess.run([str(jupyter_book), *BUILD], cwd=root, capture_output=True,
                            text=True, timeout=1800)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).splitlines()[-40:]
        raise SystemExit("the one-page build failed:\n" + "\n".join(tail))
    page = next((root / "_build" / "singlehtml").rglob("intro.html"), None)
    if page is None:
        raise SystemExit(f"the one-page build wrote no intro.html under {SINGLE}")
    return page


def print_pdf(page, out=PDF):
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    # Sphinx writes the one page at book/intro.html (the root document's path) but
    # links its _static and _images as if it stood at the top: serve a copy from there
    site = page.parents[1] if page.parent.name == "book" else page.parent
    (site / "book.html").write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/book.html"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                 args=CHROMIUM_ARGS)
            tab = browser.new_page(viewport={"width": 1000, "height": 1400})
            tab.goto(url, wait_until="load", timeout=120000)
            tab.wait_for_load_state("networkidle", timeout=120000)
            tab.wait_for_function(
                "() => window.MathJax && window.MathJax.startup && window.MathJax.startup.promise",
                timeout=300000)
            tab.evaluate("async () => { await window.MathJax.startup.promise; }")
            tab.emulate_media(media="print")
            summary = tab.evaluate(PREPARE_FOR_PAPER)
            tab.add_style_tag(content=PRINT_CSS)
            tab.wait_for_timeout(300)
            out.parent.mkdir(parents=True, exist_ok=True)
            tab.pdf(path=str(out), format="A4", print_background=True,
                    display_header_footer=True, header_template="<span></span>",
                    footer_template='<div style="font-size:8px;width:100%;text-align:center">'
                    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>',
                    margin={"top": "16mm", "bottom": "18mm", "left": "14mm", "right": "14mm"})
            browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    return summary


def main():
    start = time.monotonic()
    page = build_single_page()
    built = time.monotonic()
    summary = print_pdf(page)
    done = time.monotonic()
    print(f"{PDF.relative_to(ROOT)}: {PDF.stat().st_size // 1024} KiB, "
          f"{len(summary['chapters'])} chapters, {summary['solutions']} solutions at "
          f"chapter ends (one-page build {built - start:.0f} s, printing {done - built:.0f} s)")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import site_polish

    if site_polish.link_pdf(ROOT / "_build" / "html", PDF):
        print("_build/html: the intro links book.pdf")


if __name__ == "__main__":
    main()
