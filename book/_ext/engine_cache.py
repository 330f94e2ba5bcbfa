"""The build's execution cache. jupyter-cache keys a notebook on its code cells alone;
a chapter's outputs depend on its engine snapshot, the pins and its data files too
(`run_key`). So before myst-nb reads the pages, each chapter not cached under its key runs
here (execution.execute, as in the verifier) and is stored with that key and the
machine's numerics, and myst-nb only finds it ("Using cached notebook")."""

import os
from pathlib import Path

import execution
import snapshots
from book_config import ROOT, RUNTIME_PINS, content_hash, data_files, is_notebook
from myst_reader import ChapterError, read_chapter, comment_out_bad_options

KEY = "engine_run"  # in a cache record's data: what the outputs were made with
NUMERICS = "numerics"  # and the numbers of the machine that made them (execution.numerics_json)


def cache_dir(build_dir) -> Path:
    return Path(build_dir) / ".jupyter_cache"


def open_cache(build_dir):
    from jupyter_cache import get_cache

    return get_cache(str(cache_dir(build_dir)))


def _hash_files(paths, root) -> str:
    return content_hash((p.relative_to(root).as_posix(), p.read_bytes())
                        for p in paths if p.is_file())


def run_key(path, root=ROOT) -> str:
    """What the outputs of the page at `path` depend on besides its cells."""
    root = Path(root).resolve()
    chapter = execution.snapshot_chapter(path, root)
    if chapter is not None:
        engine = f"{chapter}-{snapshots.snapshot_hash(chapter, root)}"
    else:
        files = sorted(p for p in (root / "engine").rglob("*") if "__pycache__" not in p.parts)
        engine = "installed-" + _hash_files(files, root)
    pins = [root / "requirements.txt", root / RUNTIME_PINS]  # the second is included by the first
    return f"{engine}/{_hash_files([*pins, *data_files(path)], root)}"


def cached_run(chapter, build_dir, root=ROOT, any_run=False):
    """(executed notebook, record data) from the cache if it ran to its end on what the page
    needs now (a run cut short is stored for myst-nb to show, and runs again next time),
    else (None, {}). With `any_run`, the run myst-nb shows (it matches cells only)."""
    cache = open_cache(build_dir)
    try:
        data = cache.match_cache_notebook(chapter.nb).data or {}
    except KeyError:
        return None, {}
    if not any_run and data.get(KEY) != run_key(chapter.path, root):
        return None, {}
    _, nb = cache.merge_match_into_notebook(chapter.nb)
    nb.metadata["source_map"] = chapter.nb.metadata.get("source_map")
    return nb, data


def read_as_built(path, root=ROOT):
    """The chapter as the build reads it: options that do not read commented out
    (build_warnings.py warns at them), or None if it is no notebook myst-nb can read."""
    text = Path(path).read_text("utf8")
    if not is_notebook(text):
        return None
    try:
        # read_chapter checks the cleaned text again: a block that never closes keeps its
        # `---` line, so the problem stays, and the chapter is not run
        return read_chapter(path, root, text=comment_out_bad_options(text, root)[0])
    except (ChapterError, ValueError):
        return None


def read_page_run(path, build_dir, root=ROOT):
    """(notebook, run seconds) the build shows for the page at `path`, as myst-nb merges
    it from the cache, or (None, None); the seconds only if the run is the one the page
    needs now."""
    chapter = read_as_built(path, root)
    if chapter is None:
        return None, None
    nb, data = cached_run(chapter, build_dir, root, any_run=True)
    return nb, data.get("execution_seconds") if data.get(KEY) == run_key(path, root) else None


def store(chapter, executed, build_dir, seconds, root=ROOT, failed=False):
    """Cache an executed notebook as myst-nb would, with its key and this machine's numerics."""
    from jupyter_cache.base import CacheBundleIn

    key = run_key(chapter.path, root) + (" (cut short)" if failed else "")
    data = {"execution_seconds": seconds, KEY: key, NUMERICS: execution.numerics_json()}
    return open_cache(build_dir).cache_notebook_bundle(
        CacheBundleIn(executed, str(chapter.path), data=data),
        check_validity=False, overwrite=True)


# -- Sphinx ---------------------------------------------------------------------------

ENV_KEYS = "engine_run_keys"  # {docname: run key} of the chapters as last read


def _build_dir(app) -> Path:
    return Path(app.outdir).parent  # jupyter-book writes html to <build>/html


def once_per_build(app, name, docname, make):
    """`make(app, docname)`, made once per build and kept for the rest of it."""
    made = app.__dict__.setdefault(f"_engine_{name}", {})
    if docname not in made:
        made[docname] = make(app, docname)
    return made[docname]


def _page_run_with_glue(app, docname):
    from myst_nb.ext.glue import extract_glue_data_cell  # `display=False` values leave the cell

    nb, seconds = read_page_run(app.env.doc2path(docname), _build_dir(app), app.srcdir)
    glue = {}
    for index, cell in enumerate(nb.cells if nb is not None else []):
        for key, output in extract_glue_data_cell(cell):  # only code cells have outputs
            output.setdefault("metadata", {})["engine_cell_index"] = index
            glue[key] = output
    return nb, glue, seconds


def page_run(app, docname):
    """`read_page_run` with the glue moved out as myst-nb does, once per build (the
    checks, the report and the downloads all read it)."""
    return once_per_build(app, "shown", docname, _page_run_with_glue)


def _set_cache_path(app, config):
    config.nb_execution_cache_path = str(cache_dir(_build_dir(app)))


def _outdated(app, env, added, changed, removed):
    """Chapters whose engine snapshot (or data files) changed since they were read: read
    them again."""
    keys = getattr(env, ENV_KEYS, {})
    return sorted(docname for docname in env.found_docs & set(keys)
                  if keys[docname] != run_key(env.doc2path(docname), app.srcdir))


def _run_chapters(app, env, docnames):
    """Before myst-nb reads them: run the chapters to be read whose outputs are not cached."""
    import concurrent.futures
    import multiprocessing

    from sphinx.util import logging

    root, build = Path(app.srcdir), _build_dir(app)
    keys = env.__dict__.setdefault(ENV_KEYS, {})
    to_run = []
    for docname in sorted(docnames):
        chapter = read_as_built(env.doc2path(docname), root)
        if chapter is not None:
            keys[docname] = run_key(chapter.path, root)
            if cached_run(chapter, build, root)[0] is None:
                to_run.append((docname, chapter))
    if not to_run:
        return
    workers = min(len(to_run), os.cpu_count() or 1, 2)
    # two kernels on two cores: one BLAS thread each, or OpenBLAS's threads spin against
    # each other (the book verifies under 1 and 2 threads: tests/numerics.py)
    kernel_variables = {"OPENBLAS_NUM_THREADS": "1"} if workers > 1 and (
        "OPENBLAS_NUM_THREADS" not in os.environ) else None
    # a process per kernel client, as jupyter_client's sockets are not for sharing threads;
    # a spawned worker gets this sys.path
    with concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        runs = {pool.submit(execution.execute, chapter, root, build, kernel_variables):
                (docname, chapter) for docname, chapter in to_run}
        for future in concurrent.futures.as_completed(runs):
            docname, chapter = runs[future]
            executed, _, failures, seconds = future.result()
            store(chapter, executed, build, seconds, root, failed=bool(failures))
            logging.getLogger(__name__).info(
                f"engine_cache: ran {docname} on {keys[docname]} in {seconds:.1f} s")


def setup(app):
    app.connect("config-inited", _set_cache_path)
    app.connect("env-get-outdated", _outdated)
    app.connect("env-before-read-docs", _run_chapters)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
