"""Run a chapter, for the build (engine_cache.py) and the verifier alike: one kernel whose
`engine` is the chapter's snapshot (snapshots.py), cell by cell. A timeout or a dead kernel
stops the run and becomes the cell's error output, so the checks find it as they find a
cell that raised."""

import copy
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import snapshots
from book_config import ROOT, default_timeout


def snapshot_chapter(path, root=ROOT):
    """The chapter whose snapshot the page at `path` runs on, or None (installed engine)."""
    if not (Path(root) / "engine" / "__init__.py").is_file():
        return None
    try:
        snapshots.engine_lines(root)  # the markers must name pages of this book
        return Path(path).stem if Path(path).stem in snapshots.chapter_order(root) else None
    except (snapshots.MarkerError, OSError, KeyError):
        return None


def kernel_env(path, build_dir, root=ROOT) -> dict:
    """Variables that make `import engine` in the page's kernel the page's snapshot."""
    chapter = snapshot_chapter(path, root)
    if chapter is None:
        return {}
    folder = snapshots.snapshot_folder(chapter, build_dir, root)
    return {"PYTHONPATH": os.pathsep.join(
        p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)}


_PROBE = r"""
import ctypes, glob, json, os
import numpy as np
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
core = None
libs = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "libscipy_openblas*"))
if libs:
    lib = ctypes.CDLL(libs[0])
    for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                 "openblas_get_corename"):
        if hasattr(lib, name):
            getattr(lib, name).restype = ctypes.c_char_p
            core = getattr(lib, name)().decode()
            break
print(json.dumps({"openblas_core": core, "numpy": np.__version__,
                  "numpy_simd": [f for f in __cpu_dispatch__ if __cpu_features__[f]]}))
"""


def probe(variables: dict) -> dict:
    """What a process with these variables gets: OpenBLAS's core, NumPy's SIMD groups."""
    done = subprocess.run([sys.executable, "-c", _PROBE], env={**os.environ, **variables},
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@functools.lru_cache(maxsize=None)
def numerics_json() -> str:
    """This process's numbers (what its kernels inherit), as one line of JSON."""
    return json.dumps(probe({}), sort_keys=True)


def execute(chapter, root, build_dir, env=None):
    """Run the chapter's notebook in one kernel, cell by cell; keep going after an error.

    The kernel runs on the chapter's snapshot (`kernel_env`), plus `env`. Returns
    (executed notebook, {fence line: seconds}, failures, total seconds), where failures
    holds the timeout or kernel death that stopped the run, if any.
    """
    from nbclient import NotebookClient
    from traitlets.config import Config

    nb = copy.deepcopy(chapter.nb)
    # a chapter may override the timeout in its front matter, as myst-nb allows; nbclient
    # reads None, 0 or -1 as no limit
    timeout = nb.metadata.get("mystnb", {}).get("execution_timeout", default_timeout(root))
    variables = {**os.environ, **kernel_env(chapter.path, build_dir, root), **(env or {})}
    start = time.perf_counter()
    # Unix sockets in a folder of this run's own, not TCP ports: kernels started at the
    # same moment can pick the same "free" port. Short-named: a socket path has ~100 bytes.
    with tempfile.TemporaryDirectory(prefix="k", ignore_cleanup_errors=True) as sockets:
        client = NotebookClient(
            nb, timeout=timeout, allow_errors=True,
            config=Config({"KernelManager": {"transport": "ipc",
                                             "ip": os.path.join(sockets, "s")}}),
            record_timing=False,  # as myst-nb: timings in cell metadata would change the hash
            coalesce_streams=True,  # one stream output per name, however the kernel cut it
            resources={"metadata": {"path": str(chapter.path.parent)}},
        )
        client.timeout_func = lambda cell: cell.metadata.get("timeout", timeout)
        seconds, failures = run_cells(client, chapter.cells, variables)
    return nb, seconds, failures, time.perf_counter() - start


def run_cells(client, code_cells, variables):
    """Start the kernel and run the notebook's code cells (CodeCell) in order, up to a
    timeout or a dead kernel: ({fence line: seconds}, [Failure] of what stopped the run)."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from nbformat.v4 import new_output
    from output_rules import Failure

    seconds, failures = {}, []
    with client.setup_kernel(env=variables):
        info = client.wait_for_reply(client.kc.kernel_info())  # raises on a timeout
        client.nb.metadata["language_info"] = info["content"]["language_info"]
        for code_cell in code_cells:
            cell = client.nb.cells[code_cell.index]
            start = time.perf_counter()
            try:
                client.execute_cell(cell, code_cell.index)
            except (CellTimeoutError, DeadKernelError) as error:
                what = f"kernel died: {error}"
                if isinstance(error, CellTimeoutError):
                    what = (f"cell timed out after {client.timeout_func(cell)} s (set `timeout:` "
                            "in its options if it needs longer); later cells not run")
                name = type(error).__name__  # one of output_rules.STOPPING_ERRORS
                cell.outputs.append(new_output("error", ename=name, evalue=what,
                                               traceback=[f"{name}: {what}"]))
                failures.append(Failure(code_cell.line, what, kind="error"))
            seconds[code_cell.line] = time.perf_counter() - start
            if failures:
                break
        client.set_widgets_metadata()
    return seconds, failures

