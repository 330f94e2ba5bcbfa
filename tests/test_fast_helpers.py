"""The helpers chapter `fast` defines for itself, run outside the chapter."""

import os
import subprocess
import sys

import myst_reader
import verifier

FAST = verifier.ROOT / "book" / "fast.md"


def _cell_with(chapter, text):
    (cell,) = [c for c in chapter.cells if text in c.source]
    return cell.source


def test_on_engine_leaves_no_folder_behind(tmp_path):
    """Every run of the chapter calls on_engine("before", ...) six times; each call used
    to write the old engine into a new temporary folder, and none was removed."""
    chapter = myst_reader.read_chapter(FAST)
    program = "\n".join([
        _cell_with(chapter, "import tempfile"),
        _cell_with(chapter, "def on_engine("),
        "for _ in range(2):",
        "    assert on_engine('before', 'import json, engine; print(json.dumps(1))') == 1",
        "    assert on_engine('after', 'import json, engine; print(json.dumps(2))') == 2",
    ])
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    done = subprocess.run([sys.executable, "-c", program], cwd=FAST.parent, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in temp.iterdir()) == []
