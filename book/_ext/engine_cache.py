"""Key the notebook execution cache on the engine's source as well as the cells.

jupyter-cache keys a notebook only on its own code cells, so an edited `engine/`
would leave old outputs on the page. This extension points myst-nb at a cache
folder named for a hash of everything under `engine/` (and the pinned
requirements): change any of it and every chapter runs again; undo the change
and the old results are found again. The chapter verifier uses the same folder,
so the outputs it checks are the outputs the site shows.
"""

import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def engine_hash(root=ROOT):
    """A short hash of every file under engine/ plus requirements.txt."""
    digest = hashlib.sha256()
    files = sorted(p for p in (root / "engine").rglob("*") if p.is_file())
    files = [p for p in files if "__pycache__" not in p.parts]
    files.append(root / "requirements.txt")
    for path in files:
        if path.exists():
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()[:16]


def cache_dir(build_dir=ROOT / "_build", root=ROOT):
    """The jupyter-cache folder, inside `build_dir`, for the engine as it is now."""
    return Path(build_dir) / ".jupyter_cache" / f"engine-{engine_hash(root)}"


def _set_cache_path(app, config):
    build_dir = Path(app.outdir).parent  # jupyter-book writes html to <build>/html
    config.nb_execution_cache_path = str(cache_dir(build_dir))


def setup(app):
    app.connect("config-inited", _set_cache_path)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
