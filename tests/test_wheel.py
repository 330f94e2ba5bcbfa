"""What `pip install .` and `pip install -e .` install (setup.py).

- The wheel's engine is the finished engine: each module as the last chapter's snapshot
  has it (book/_ext/snapshots.py), no chapter marker, no replaced line; every module
  compiles, and the engine imported from the wheel alone computes the gradients the
  editable engine computes.
- The editable install maps `engine` to engine/ as it is, and finds the book's tooling
  (book/_ext) by name, after everything on sys.path.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import snapshots

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^\s*#[<>] ")

# chapter tensors' first program (README.md, "Using the engine on its own")
GRADIENTS = """
import json
from engine import Tensor

x1, x2 = Tensor([2.0, 1.0, 0.5]), Tensor([5.0, 0.0, 2.0])
y = x1.log() + x1 * x2 - x2.sin()
y.backward()
print(json.dumps([x1.grad.tolist(), x2.grad.tolist()]))
"""

pytestmark = pytest.mark.slow  # builds two wheels, one in an environment of its own


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """What setup.py reads, copied: building in the tree would leave build/ in it."""
    copy = tmp_path_factory.mktemp("project")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, copy / name)
    ignore = shutil.ignore_patterns("__pycache__", "site_static")
    shutil.copytree(ROOT / "engine", copy / "engine", ignore=ignore)
    shutil.copytree(ROOT / "book" / "_ext", copy / "book" / "_ext", ignore=ignore)
    return copy


@pytest.fixture(scope="module")
def wheel(project, tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    # setuptools' own build hook, as pip calls it, with -S: no site-packages' .pth files,
    # so the editable install's tooling finder cannot stand in for what setup.py loads
    build = ("import sys; from setuptools import build_meta; "
             "print(build_meta.build_wheel(sys.argv[1]))")
    env = {"PYTHONPATH": sysconfig.get_paths()["purelib"]}
    done = subprocess.run([sys.executable, "-S", "-c", build, str(out)], cwd=project,
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = out.glob("*.whl")
    return path


def test_the_wheel_carries_the_finished_engine(wheel):
    with zipfile.ZipFile(wheel) as archive:
        files = {name: archive.read(name).decode() for name in archive.namelist()
                 if name.endswith(".py")}
    last = snapshots.chapter_order(ROOT)[-1]
    assert files == snapshots.snapshot_files(last, ROOT)
    for name, text in files.items():
        markers = [line for line in text.splitlines() if MARKER.match(line)]
        assert not markers, (name, markers)
        compile(text, name, "exec")
    for name, lines in snapshots.engine_lines(ROOT).items():  # as engine/ has them
        source = (ROOT / name).read_text().splitlines()
        replaced = {source[line.number - 1] for line in lines if line.until and line.text}
        kept = {line.text for line in lines if not line.until}
        assert not (replaced - kept) & set(files[name].splitlines()), name


def test_the_wheel_s_engine_computes_what_the_editable_engine_computes(wheel):
    # -S: no site-packages' .pth files, so neither editable finder; NumPy on PYTHONPATH
    env = {"PYTHONPATH": os.pathsep.join([str(wheel), sysconfig.get_paths()["purelib"]])}
    done = subprocess.run([sys.executable, "-S", "-c",
                           "import engine; print(engine.__file__)\n" + GRADIENTS],
                          capture_output=True, text=True, env=env, cwd=wheel.parent)
    assert done.returncode == 0, done.stderr
    where, gradients = done.stdout.splitlines()
    assert where.startswith(str(wheel)), where
    editable = subprocess.run([sys.executable, "-c", GRADIENTS], capture_output=True,
                              text=True, check=True, cwd=ROOT / "tests")
    assert json.loads(gradients) == json.loads(editable.stdout)
    assert json.loads(gradients)[0] == [5.5, 1.0, 4.0]


def test_the_editable_install_reads_engine_as_it_is_and_finds_the_tooling(project, tmp_path):
    build = ("import sys; from setuptools import build_meta; "
             "print(build_meta.build_editable(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-c", build, str(tmp_path)], cwd=project,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(tmp_path / done.stdout.split()[-1]) as archive:
        names = archive.namelist()
        assert not any(name.startswith("engine/") for name in names), names
        [finder] = [n for n in names if n.startswith("__editable__") and n.endswith(".py")]
        assert repr(str(project / "engine")) in archive.read(finder).decode()
        assert archive.read("autodiff_book_tooling.pth") == b"import autodiff_book_tooling\n"
        (tmp_path / "autodiff_book_tooling.py").write_bytes(
            archive.read("autodiff_book_tooling.py"))
    # the tooling is found from any folder, and a folder on sys.path comes first
    other = tmp_path / "other"
    other.mkdir()
    (other / "snapshots.py").write_text("")
    probe = ("import sys, autodiff_book_tooling, snapshots, book_config\n"
             "print(book_config.__file__, snapshots.__file__)")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(other)])}
    done = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(project / "book" / "_ext" / "book_config.py"),
                                   str(other / "snapshots.py")]
