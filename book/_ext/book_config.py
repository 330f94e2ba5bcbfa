"""The book's configuration, its pages' front matter and its table of contents, read as
the build reads them (jupyter-book's config, myst-parser, sphinx-external-toc)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# what the notebooks need to run, pinned: requirements.txt includes it, the downloads ship it
RUNTIME_PINS = "book/runtime-requirements.txt"


@functools.lru_cache(maxsize=None)
def book_config(root=ROOT) -> dict:
    """The Sphinx configuration jupyter-book derives from `<root>/_config.yml`."""
    from jupyter_book.config import get_final_config

    config, _ = get_final_config(user_yaml=Path(root) / "_config.yml", sourcedir=Path(root),
                                 cli_config={"latex_individualpages": False})
    return config


def md_parser_config(root=ROOT):
    """The MdParserConfig myst-parser builds from the book's `myst_*` settings."""
    from myst_parser.config.main import MdParserConfig

    names = {name for name, _, _ in MdParserConfig().as_triple()}
    values = {k[5:]: v for k, v in book_config(root).items()
              if k.startswith("myst_") and k[5:] in names}
    return MdParserConfig(**values)


def default_timeout(root=ROOT):
    """`execute: timeout:` of `_config.yml` (seconds; None or -1 means no limit)."""
    return book_config(root).get("nb_execution_timeout", 30)


def file_stamps(paths) -> tuple:
    """(path, modification time, size) of each file: what an edit of one changes."""
    return tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths)


def content_hash(named_contents) -> str:
    """A short hash of (name, str or bytes) pairs: what cached outputs are keyed on."""
    digest = hashlib.sha256()
    for name, content in named_contents:
        content = content.encode() if isinstance(content, str) else content
        digest.update(name.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()[:16]


# -- front matter -------------------------------------------------------------------------

def front_matter(text: str) -> dict:
    """A page's YAML front matter as myst-parser reads it ({} without one, or unreadable)."""
    import yaml
    from myst_parser.config.main import TopmatterReadError, read_topmatter

    try:
        return read_topmatter(text) or {}
    except (TopmatterReadError, yaml.YAMLError):
        return {}


def data_files(path, text=None) -> list[Path]:
    """The files a page's front matter says it reads (`data_files:`), relative to it."""
    text = Path(path).read_text(encoding="utf8") if text is None else text
    files = front_matter(text).get("data_files") or []
    files = [files] if isinstance(files, str) else files
    return [(Path(path).parent / str(name)).resolve() for name in files]


def is_notebook(text: str) -> bool:
    """A MyST notebook as myst-nb sees it, with a kernelspec to run it."""
    from myst_nb.core.read import is_myst_markdown_notebook

    return is_myst_markdown_notebook(text) and "kernelspec" in front_matter(text)


# -- the table of contents ----------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _site_map(stamps: tuple):
    from sphinx_external_toc.parsing import parse_toc_yaml

    return parse_toc_yaml(stamps[0][0])


def site_map(root=ROOT):
    """sphinx-external-toc's site map of `<root>/_toc.yml` (read again when it changes)."""
    return _site_map(file_stamps([Path(root) / "_toc.yml"]))


def toc_docnames(root=ROOT) -> list[str]:
    """Every page of `_toc.yml`, in the book's order."""
    return list(site_map(root))


def chapter_paths(root=ROOT) -> list[Path]:
    """Every MyST notebook `_toc.yml` lists, in the book's order."""
    paths = [Path(root) / f"{docname}.md" for docname in toc_docnames(root)]
    return [p for p in paths if p.is_file() and is_notebook(p.read_text(encoding="utf8"))]


def notebook_docnames(env) -> list[str]:
    """In a Sphinx build: the docnames whose source is a notebook, in the book's order."""
    order = toc_docnames(env.srcdir)
    names = [d for d in env.found_docs if "kernelspec" in env.metadata.get(d, {})]
    return sorted(names, key=lambda d: (order.index(d) if d in order else len(order), d))


def pages_missing_from_toc(root=ROOT) -> list[Path]:
    """Pages in the root page's folder that `_toc.yml` does not list and the configuration
    does not exclude: with `only_build_toc_files: true` the build leaves them out silently."""
    from sphinx.project import Project

    root = Path(root).resolve()
    folder = Path(site_map(root).root.docname).parent.as_posix()
    project = Project(root, (".md", ".ipynb"))  # finds the pages as Sphinx does
    found = project.discover(book_config(root).get("exclude_patterns", []),
                             ["**" if folder == "." else f"{folder}/**"])
    return sorted(Path(project.doc2path(docname, absolute=True))
                  for docname in found - set(site_map(root)))


def book_root(path) -> Path | None:
    """The nearest folder above `path` holding a `_toc.yml` (the book it belongs to)."""
    return next((f for f in Path(path).resolve().parents if (f / "_toc.yml").is_file()), None)


def slug(path, root=ROOT) -> str:
    """`book/tensors.md` -> `tensors` (the chapter's name in test ids)."""
    path, root = Path(path).resolve(), Path(root).resolve()
    for base in (root / "book", root, path.parent):  # the last one always holds it
        if path.is_relative_to(base):
            return path.relative_to(base).with_suffix("").as_posix()


def display_path(path, root=ROOT) -> str:
    """The path a reader types: relative to the repository when inside it."""
    path, root = Path(path).resolve(), Path(root).resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
