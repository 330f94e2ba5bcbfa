"""What the theme sends a browser, fixed where the browser tests found it wanting: the
colour mode follows the system; each script and stylesheet is linked once (Sphinx 7.4
adds some twice, and a second `const THEBE_JS_URL` is an error); Font Awesome from a CDN
is dropped (the theme ships the icons); `site_static/` on every page, its hash a config
value so that an edit of it alone rewrites every page; every `_static` link carries its
`?v=` checksum (a clean build leaves some without); the footer names the version."""

import re
import tomllib
from pathlib import Path

from book_config import content_hash

STATIC = Path(__file__).resolve().parent / "site_static"
_CDN_FONT_AWESOME = re.compile(
    r"<link\b[^>]*href=[\"']https?://[^\"']*font-?awesome[^\"']*[\"'][^>]*>", re.I)


def _defaults(app, config):
    config.html_context.setdefault("default_mode", "auto")
    config.html_static_path.append(str(STATIC))
    folders = [Path(app.confdir, f) for f in config.html_static_path]  # absolute ones stay
    files = [f for d in folders for f in (sorted(d.rglob("*")) if d.is_dir() else [d])]
    config.html_context["engine_static_files"] = content_hash(
        (f.name, f.read_bytes()) for f in files if f.is_file())
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


def _key(asset):  # a filename of None and of "" both mean an inline script
    return (asset.filename or "", tuple(sorted((k, str(v)) for k, v in asset.attributes.items())))


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


def setup(app):
    app.connect("config-inited", _defaults)
    app.connect("build-finished", _checksum_every_static_link, priority=900)  # after theirs
    app.setup_extension("book_pdf")  # links the PDF (priority 910: after the checksums)
    app.add_css_file("engine-site.css")
    app.add_js_file("engine-site.js", loading_method="defer")  # after MathJax's (defer too)
    # before the themes' handlers: html-page-context stops at the first that returns a template
    app.connect("html-page-context", _links_once_and_on_site, priority=450)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
