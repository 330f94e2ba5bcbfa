"""What the theme sends a browser, fixed where the browser tests found it wanting.

* The colour mode follows the reader's system ("auto"): left unset, pydata-sphinx-theme
  logs "Got invalid theme mode" on every page.
* Each script and stylesheet is linked once: with Sphinx 7.4, scripts that extensions add
  once the builder exists reach a page twice, and a second `const THEBE_JS_URL` is a
  JavaScript error.
* matplotlib's players link Font Awesome 4 from a CDN (a request off the site, failing
  offline); the theme ships the same icons, so the link is dropped.
* `site_static/` (engine-site.js and .css; the script's header says what each part does)
  is added to every page. Its files' hash is a configuration value, so that a rebuild after
  an edit of one of them alone writes every page again (Sphinx 7.4 copies static files
  before it writes pages, but writes only the pages it finds out of date).
* Every local `_static` link carries the checksum (`?v=`) of the file beside it once the
  build is done: on a clean build Sphinx links myst-nb's stylesheet, searchtools.js and
  language_data.js without one (they are not there yet), and a rebuild adds it.
* The footer names the book's version (pyproject.toml's).
* sphinx-proof's index lists each chapter's definitions and theorems by the number and
  title the page shows ("Theorem 3.1 (Chain rule)"), in the book's order, not by label.
* The book's PDF, when there is one, is copied into the site and linked (book_pdf.py).
"""

import hashlib
import re
import tomllib
from pathlib import Path

from book_config import toc_docnames
from book_pdf import link_pdf  # noqa: F401  (tests/test_determinism.py calls it from here)

STATIC = Path(__file__).resolve().parent / "site_static"
_CDN_FONT_AWESOME = re.compile(
    r"<link\b[^>]*href=[\"']https?://[^\"']*font-?awesome[^\"']*[\"'][^>]*>", re.I)


def _defaults(app, config):
    config.html_context.setdefault("default_mode", "auto")
    config.html_static_path.append(str(STATIC))
    digest = hashlib.sha256()
    for folder in map(Path, config.html_static_path):
        folder = folder if folder.is_absolute() else Path(app.confdir, folder)
        for file in sorted(folder.rglob("*")) if folder.is_dir() else [folder]:
            if file.is_file():
                digest.update(file.name.encode() + b"\0" + file.read_bytes())
    config.html_context["engine_static_files"] = digest.hexdigest()
    try:
        version = tomllib.loads(Path(app.srcdir, "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, ValueError):
        return
    if not config.html_theme_options.get("extra_footer"):
        config.version = config.release = version
        config.html_theme_options["extra_footer"] = (
            f'<p class="engine-version">Version {version} of the book and its '
            "<code>engine</code> package. Every number on these pages was printed by the "
            "code beside it when this site was built.</p>")


def _key(asset):
    attributes = getattr(asset, "attributes", {}) or {}
    filename = getattr(asset, "filename", str(asset)) or ""  # None and "" both mean inline
    return (filename, tuple(sorted((k, str(v)) for k, v in attributes.items())))


def _links_once_and_on_site(app, pagename, templatename, context, doctree):
    for name in ("script_files", "css_files"):
        assets, first = context.get(name) or [], {}
        for asset in assets:
            first.setdefault(_key(asset), asset)
        assets[:] = first.values()  # in place: handlers after this one may still add assets
    if "awesome" in (context.get("body") or ""):
        context["body"] = _CDN_FONT_AWESOME.sub("", context["body"])


_STATIC_LINK = re.compile(
    r'(?P<attr>(?:href|src)=")(?P<uri>(?:\.\./)*_static/[^"?#]+)(?:\?v=[0-9a-f]*)?"')


def _checksum_every_static_link(app, exception):
    # a failed build (a check's warning is an error) still leaves its pages to read
    if app.builder.format != "html":
        return
    from sphinx.builders.html._assets import _file_checksum

    outdir = Path(app.outdir).resolve()
    for page in outdir.rglob("*.html"):
        def stamp(match):
            target = (page.parent / match["uri"]).resolve()
            checksum = target.is_relative_to(outdir) and _file_checksum(
                outdir, target.relative_to(outdir))
            return f'{match["attr"]}{match["uri"]}?v={checksum}"' if checksum else match[0]

        text = page.read_text(encoding="utf-8")
        if (fixed := _STATIC_LINK.sub(stamp, text)) != text:
            page.write_text(fixed, encoding="utf-8")


def _proof_titles(env, docname):
    """{label: the title a proof directive was given (`{prf:theorem} Chain rule`)}."""
    titles = {}
    for node in env.get_doctree(docname).findall(
            lambda n: "proof" in n.get("classes", []) if hasattr(n, "get") else False):
        match = re.search(r"\((.*)\)\s*$", node.children[0].astext() if node.children else "")
        titles.update(dict.fromkeys(node["ids"], match[1] if match else None))
    return titles


def _titled_proof_index():
    from sphinx.domains import Index
    try:
        from sphinx_proof.domain import ProofDomain
    except ImportError:
        return

    class TitledProofIndex(Index):
        name = "prf"
        localname = shortname = "Definitions and theorems"

        def generate(self, docnames=None):
            env = self.domain.env
            by_page = {}
            for label, proof in getattr(env, "proof_list", {}).items():
                if proof["realtype"] != "proof" and (not docnames or proof["docname"] in docnames):
                    by_page.setdefault(proof["docname"], []).append(label)
            content = []
            for docname in [d for d in toc_docnames(env.srcdir) if d in by_page]:
                titles, entries = _proof_titles(env, docname), []
                for label in by_page[docname]:
                    proof = env.proof_list[label]
                    number = env.toc_fignumbers.get(docname, {}).get(
                        proof["countertype"], {}).get(label)
                    text = proof["realtype"].capitalize() + (
                        " " + ".".join(map(str, number)) if number else "")
                    text += f" ({titles[label]})" if titles.get(label) else ""
                    entries.append((text, 0, docname, label, "", "", ""))
                content.append((env.titles[docname].astext(), entries))
            return content, False

    ProofDomain.indices = [TitledProofIndex]


def setup(app):
    app.connect("config-inited", _defaults)
    _titled_proof_index()
    app.connect("build-finished", _checksum_every_static_link, priority=900)  # after theirs
    app.setup_extension("book_pdf")  # links the PDF (priority 910: after the checksums)
    app.add_css_file("engine-site.css")
    app.add_js_file("engine-site.js", loading_method="defer")  # after MathJax's (defer too)
    # before the themes' handlers: html-page-context stops at the first that returns a template
    app.connect("html-page-context", _links_once_and_on_site, priority=450)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
