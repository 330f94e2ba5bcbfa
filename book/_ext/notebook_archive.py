"""The book's archive, `downloads/autodiff-book.zip` (the intro links it): every chapter
notebook as its page's download menu offers it, the `engine` package with its
pyproject.toml, and the book's runtime pins (`book/runtime-requirements.txt`) as its
requirements.txt; the same bytes every time (fixed dates and order)."""

import io
import posixpath
import zipfile
from pathlib import Path

import snapshots

from book_config import RUNTIME_PINS

ARCHIVE = "downloads/autodiff-book.zip"
ARCHIVE_TOP = "autodiff-book"
STAMP = (2026, 1, 1, 0, 0, 0)


def zip_bytes(files: dict) -> bytes:
    """A zip of {name: text or bytes} that is the same bytes every time."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()


def notebook_name(docname):
    """`book/tensors` -> `tensors.ipynb` inside the archive's notebooks/ folder."""
    parts = docname.split("/")
    return "/".join(parts[1:] if len(parts) > 1 and parts[0] == "book" else parts) + ".ipynb"


README = """\
# Automatic differentiation, built and checked: the notebooks

Every chapter of the book as a Jupyter notebook, executed (the outputs are the
book's), and the `engine` package the chapters build.

    python3 -m venv .venv
    .venv/bin/pip install -r requirements.txt
    .venv/bin/pip install jupyterlab        # or any Jupyter front end
    .venv/bin/jupyter lab notebooks/

Each notebook carries the engine as of its chapter: its first cell writes that
snapshot beside the notebook (`engine-as-of-<chapter>/`) and imports it from there,
so a chapter runs on the code it has taught so far, whatever else is installed.
Its listings are Markdown cells, shown as the book shows them. The prose is plain
Markdown made from the book's pages: theorems and notes as quotes, solutions folded
under their titles, cross-references as the text the page shows.
To run every notebook top to bottom without a browser:

    .venv/bin/jupyter execute notebooks/*.ipynb

`engine/` with `pyproject.toml` is the finished engine, for your own code:
`.venv/bin/pip install .`
"""


def write_archive(out_zip, notebooks, root):
    """Write the zip: notebooks/{name}.ipynb (`notebooks` maps name to text), engine/,
    pyproject.toml, requirements.txt."""
    root, out_zip = Path(root), Path(out_zip)
    files = {"README.md": README, "pyproject.toml": (root / "pyproject.toml").read_text(),
             "requirements.txt": (root / RUNTIME_PINS).read_text()}
    # the finished engine, as the wheel has it: no chapter markers, no replaced lines
    files.update(snapshots.finished_files(root))
    files.update({f"notebooks/{name}": text for name, text in notebooks.items()})
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_zip.with_suffix(".zip.tmp")
    tmp.write_bytes(zip_bytes({f"{ARCHIVE_TOP}/{k}": v for k, v in files.items()}))
    tmp.replace(out_zip)
    return out_zip


def book_archive_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{book-archive}`Download everything (.zip)``: a link to the archive of the book."""
    from docutils import nodes

    env = inliner.document.settings.env
    uri = posixpath.relpath(ARCHIVE, posixpath.dirname(env.docname) or ".")
    node = nodes.reference(rawtext, text or posixpath.basename(ARCHIVE), refuri=uri,
                           classes=["book-archive"])
    return [node], []
