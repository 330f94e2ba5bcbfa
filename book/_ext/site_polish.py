"""Small fixes to what the theme sends a browser, found by the browser tests.

* pydata-sphinx-theme reads the colour mode from `html_context["default_mode"]`;
  left unset, every page logs "Got invalid theme mode" to the console. Use "auto"
  (follow the reader's system setting) unless the book sets one.
* Scripts that extensions add once the builder exists (sphinx-thebe's config,
  sphinx-togglebutton's selector) reach the page twice with Sphinx 7.4, and the
  second `const THEBE_JS_URL = ...` is a JavaScript error on every page. Each
  script and stylesheet is kept once, at its first place.
* matplotlib's JavaScript player (`to_jshtml`, behind `engine.figures.interactive`)
  links Font Awesome 4 from a CDN for its button icons: a request off the site that
  fails offline. The theme already ships Font Awesome (which draws the same
  `fa fa-play` icons), so the link is dropped from the page body.
* `site_static/engine-site.css` makes those players fit a 375 px phone.
* The book's PDF (book/_ext/book_pdf.py prints it to `<build>/pdf/book.pdf`) is
  added to a built site by one step, `link_pdf`: it copies the file to the site's
  top folder and adds a link to it to the intro's paragraph about the PDF. It runs
  when an HTML build finishes and the PDF is there, and when the PDF command has
  printed a PDF and the site is already built, so a site carries the link exactly
  when it carries the file, whichever was made first. A build reads its own build
  folder's PDF only (not the repository's), so two builds in separate folders differ
  only if one of them was given a PDF. No page asks the server whether a file exists.
* sphinx-proof's index page lists each chapter's definitions and theorems by number
  and title, in the book's order, instead of label names (the intro links it).
* The footer names the version (pyproject.toml's), which the theme's footer lacked.
* `site_static/engine-site.js` (with rules in engine-site.css): the sidebar buttons
  work (pydata-sphinx-theme #2451), a solution's title opens it, inline math wraps
  at its operators and keeps its punctuation, and display equations and tables that
  scroll sideways are marked as such. Its header comment says why each is needed.
* Sphinx adds a checksum (`?v=...`) to a page's link to a stylesheet or script
  from the file in `_static` when the page is written, and copies the static files
  after the pages: a clean build wrote links without a checksum (the files were not
  there yet), and a rebuild after an edit of a static file alone wrote the OLD
  file's checksum on the pages it rewrote and left the others as they were, so a
  browser kept its cached copy of the old script. When the build finishes, every
  local `_static` link of every page gets the checksum of the file now beside it,
  the one Sphinx would give it on a clean rebuild. A rebuild in which no page is out
  of date stops before Sphinx copies the static files; when a file of
  `html_static_path` differs from its copy, the root page counts as updated, so
  the build goes on and copies it.
"""

import os
import re
import shutil
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "site_static"

_CDN_FONT_AWESOME = re.compile(
    r"<link\b[^>]*href=[\"']https?://[^\"']*font-?awesome[^\"']*[\"'][^>]*>", re.I)


PDF_LINK = ('<p class="eng-pdf-link">This copy of the site carries it: '
            '<a class="reference external" href="{href}">book.pdf</a> ({size}).</p>')
_PDF_PARAGRAPH = re.compile(r"<p>[^<]*\bas one PDF\b.*?</p>", re.S)


def link_pdf(html, pdf):
    """Copy `pdf` to the site at `html` (its top folder) and link it from the intro,
    after the intro's paragraph about the PDF. Returns whether the site links it.
    Doing it twice changes nothing; without a PDF or a built intro nothing is done."""
    html, pdf = Path(html), Path(pdf)
    intro = html / "book" / "intro.html"
    if not pdf.is_file() or not intro.is_file():
        return False
    _replace(html / "book.pdf", lambda part: shutil.copyfile(pdf, part))  # before its link
    text = intro.read_text(encoding="utf-8")
    text = re.sub(r'\n?<p class="eng-pdf-link">.*?</p>', "", text, flags=re.S)  # an older link
    paragraph = _PDF_PARAGRAPH.search(text)
    if paragraph is None:
        return False
    size = f"{pdf.stat().st_size / 2**20:.1f} MiB"
    link = PDF_LINK.format(href="../book.pdf", size=size)
    text = text[:paragraph.end()] + "\n" + link + text[paragraph.end():]
    _replace(intro, lambda part: part.write_text(text, encoding="utf-8"))
    return True


def _replace(path, write):
    """Write `path` whole or not at all: a reader of the site (a browser test, a server)
    that opens it meanwhile gets the old file or the new one, never half of one."""
    part = path.with_name(path.name + ".part")
    write(part)
    os.replace(part, path)


def _link_pdf_if_printed(app, exception):
    if exception is None and app.builder.name == "html":  # not the PDF's own one-page build
        link_pdf(app.outdir, Path(app.outdir).parent / "pdf" / "book.pdf")


def _version(root):
    import tomllib

    try:
        return tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, ValueError):
        return None


def _defaults(app, config):
    config.html_context.setdefault("default_mode", "auto")
    config.html_static_path.append(str(STATIC))
    # the footer names the book's version (the engine package's, from pyproject.toml)
    version = _version(Path(app.srcdir))
    if version and not config.html_theme_options.get("extra_footer"):
        config.version = config.release = version
        config.html_theme_options["extra_footer"] = (
            f'<p class="engine-version">Version {version} of the book and its '
            "<code>engine</code> package. Every number on these pages was printed by the "
            "code beside it when this site was built.</p>")


def _singlehtml_renders_like_html(app):
    """sphinx-proof and sphinx-exercise register their nodes' HTML visitors for the
    `html` builder only, and Sphinx looks up the `singlehtml` builder's visitors by its
    own name first: the one-page build the PDF is printed from failed on the first
    theorem. Give `singlehtml` every `html` visitor it has no visitor of its own for."""
    if app.builder.name != "singlehtml":
        return
    handlers = app.registry.translation_handlers
    single = handlers.setdefault("singlehtml", {})
    for node_name, visitors in handlers.get("html", {}).items():
        single.setdefault(node_name, visitors)


def _proof_index_with_titles(app):
    """sphinx-proof's index page (prf-prf.html) lists label names ("thm-chain-rule")
    in alphabetical order. List each chapter's definitions and theorems by the text
    the page shows, "Theorem 3 (Chain rule)", in the book's order."""
    try:
        from sphinx.domains import Index
        from sphinx_proof.domain import ProofDomain
    except ImportError:
        return

    class TitledProofIndex(Index):
        name = "prf"
        localname = "Definitions and theorems"
        shortname = "Definitions and theorems"

        def generate(self, docnames=None):
            env = self.domain.env
            proofs = getattr(env, "proof_list", {})
            order = {d: i for i, d in enumerate(_toc_order(env))}
            titles = {}
            for label, values in proofs.items():
                if values["realtype"] == "proof" or (docnames and values["docname"] not in docnames):
                    continue
                titles.setdefault(values["docname"], []).append(label)
            content = []
            for docname in sorted(titles, key=lambda d: order.get(d, len(order))):
                chapter = env.titles[docname].astext() if docname in env.titles else docname
                entries = []
                for label in titles[docname]:
                    values = proofs[label]
                    number = env.toc_fignumbers.get(docname, {}).get(
                        values["countertype"], {}).get(label)
                    kind = values["realtype"].capitalize()
                    text = kind + (" " + ".".join(map(str, number)) if number else "")
                    heading = _proof_heading(env, docname, label)
                    if heading:
                        text += f" ({heading})"
                    entries.append((text, 0, docname, label, "", "", ""))
                content.append((chapter, entries))
            return content, False

    ProofDomain.indices = [TitledProofIndex]


def _toc_order(env):
    """Docnames in the order of the table of contents."""
    seen = []

    def visit(docname):
        if docname in seen:
            return
        seen.append(docname)
        for child in env.toctree_includes.get(docname, []):
            visit(child)

    visit(env.config.root_doc)
    return seen


def _proof_heading(env, docname, label):
    """The title a directive was given (`{prf:theorem} Chain rule`), or None."""
    cache = env.__dict__.setdefault("_engine_proof_titles", {})
    if docname not in cache:
        found = {}
        try:
            doctree = env.get_doctree(docname)
        except Exception:  # noqa: BLE001 - an index entry without a title is still an entry
            doctree = None
        for node in doctree.findall() if doctree is not None else ():
            ids = node.get("ids") if hasattr(node, "get") else None
            if ids and "proof" in node.get("classes", []):
                title = node.children[0].astext() if node.children else ""
                match = re.search(r"\((.*)\)\s*$", title)
                for node_id in ids:
                    found[node_id] = match[1] if match else None
        cache[docname] = found
    return cache[docname].get(label)


def _key(asset):
    attributes = getattr(asset, "attributes", {}) or {}
    filename = getattr(asset, "filename", str(asset)) or ""  # None and "" both mean inline
    return (filename, tuple(sorted((k, str(v)) for k, v in attributes.items())))


def _dedupe_assets(app, pagename, templatename, context, doctree):
    for name in ("script_files", "css_files"):
        assets = context.get(name)
        if not assets:
            continue
        seen, kept = set(), []
        for asset in assets:
            key = _key(asset)
            if key not in seen:
                seen.add(key)
                kept.append(asset)
        assets[:] = kept  # in place: handlers after this one may still add assets


def _drop_cdn_links(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if body and "awesome" in body:
        context["body"] = _CDN_FONT_AWESOME.sub("", body)


_STATIC_LINK = re.compile(
    r'(?P<attr>(?:href|src)=")(?P<uri>(?:\.\./)*_static/[^"?#]+)(?:\?v=[0-9a-f]*)?"')


def _static_changed(app, env):
    """[the root page] when a file of `html_static_path` differs from its copy in the
    output's `_static`, so that a rebuild with no page out of date still copies it."""
    if app.builder.format != "html":
        return []
    out = Path(app.outdir) / "_static"
    if not out.is_dir():
        return []  # a first build copies everything anyway
    for folder in app.config.html_static_path:
        folder = Path(app.confdir, folder)
        files = folder.rglob("*") if folder.is_dir() else [folder]
        for file in files:
            if not file.is_file() or file.name.endswith("_t"):  # _t: a template, rendered
                continue
            copy = out / (file.relative_to(folder) if folder.is_dir() else file.name)
            if not copy.is_file() or copy.read_bytes() != file.read_bytes():
                return [app.config.root_doc]
    return []


def _checksum_every_static_link(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.builders.html._assets import _file_checksum

    outdir = Path(app.outdir)
    for page in outdir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")

        def stamp(match):
            target = (page.parent / match["uri"]).resolve()
            try:
                relative = target.relative_to(outdir.resolve())
            except ValueError:
                return match[0]
            checksum = _file_checksum(outdir, relative)
            return f'{match["attr"]}{match["uri"]}?v={checksum}"' if checksum else match[0]

        fixed = _STATIC_LINK.sub(stamp, text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def setup(app):
    app.connect("config-inited", _defaults)
    app.connect("builder-inited", _singlehtml_renders_like_html)
    _proof_index_with_titles(app)
    app.connect("env-get-updated", _static_changed)
    app.connect("build-finished", _checksum_every_static_link, priority=900)  # after theirs
    app.connect("build-finished", _link_pdf_if_printed, priority=910)
    app.add_css_file("engine-site.css")
    app.add_js_file("engine-site.js", loading_method="defer")  # after MathJax's (defer too)
    # before the themes' handlers: html-page-context stops at the first that returns
    # a template name
    app.connect("html-page-context", _dedupe_assets, priority=450)
    app.connect("html-page-context", _drop_cdn_links, priority=450)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
