"""The book's archive, `downloads/autodiff-book.zip` (the intro links it): every chapter
notebook as its page offers it, the finished `engine` with pyproject.toml, the runtime pins
as requirements.txt and archive_README.txt (its README.md); the same bytes every time."""

import io
import posixpath
import zipfile
from pathlib import Path

import snapshots

from book_config import RUNTIME_PINS

ARCHIVE = "downloads/autodiff-book.zip"
ARCHIVE_TOP = "autodiff-book"
STAMP = (2026, 1, 1, 0, 0, 0)
README = Path(__file__).with_name("archive_README.txt")


def zip_bytes(files: dict) -> bytes:
    """A zip of {name: text or bytes} that is the same bytes every time."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=STAMP)
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name], compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def write_archive(out_zip, notebooks, root):
    """Write the zip; `notebooks` maps a docname to its notebook's text, which goes in
    notebooks/ (`book/tensors` as `notebooks/tensors.ipynb`)."""
    root, out_zip = Path(root), Path(out_zip)
    files = {"README.md": README.read_text(encoding="utf-8"),
             "pyproject.toml": (root / "pyproject.toml").read_text(),
             "requirements.txt": (root / RUNTIME_PINS).read_text(),
             **snapshots.finished_files(root),  # as the wheel has them: no markers
             **{f"notebooks/{docname.removeprefix('book/')}.ipynb": text
                for docname, text in notebooks.items()}}
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_zip.with_suffix(".zip.tmp")
    tmp.write_bytes(zip_bytes({f"{ARCHIVE_TOP}/{k}": v for k, v in files.items()}))
    tmp.replace(out_zip)


def book_archive_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{book-archive}`Download everything (.zip)``: a link to the archive of the book."""
    from docutils import nodes

    env = inliner.document.settings.env
    uri = posixpath.relpath(ARCHIVE, posixpath.dirname(env.docname) or ".")
    return [nodes.reference(rawtext, text or posixpath.basename(ARCHIVE), refuri=uri,
                            classes=["book-archive"])], []
