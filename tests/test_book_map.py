"""The book's promises about itself hold: the chapter map, the commands, the module docstrings."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [chapter["file"] for chapter in part["chapters"]]
    return files


def intro_map():
    """{chapter slug: [engine modules]} from the table on the intro page."""
    rows = {}
    for line in (ROOT / "book" / "intro.md").read_text().splitlines():
        match = re.match(r"\| \{doc\}`([\w-]+)` \|.*\|(.*)\|$", line)
        if match:
            rows[match.group(1)] = re.findall(r"`engine/(\w+)\.py`", match.group(2))
    return rows


APPENDICES = ("report", "errors", "speed", "catalogue", "notation")  # pages off the map


def test_every_chapter_of_the_toc_is_on_the_map_in_order():
    chapters = [f.split("/")[-1] for f in toc_files()[1:]
                if f.split("/")[-1] not in APPENDICES]
    assert list(intro_map()) == chapters


def test_each_module_on_the_map_names_its_chapter_in_its_docstring():
    for chapter, modules in intro_map().items():
        assert modules, chapter
        for module in modules:
            source = (ROOT / "engine" / f"{module}.py").read_text()
            docstring = source.split('"""')[1]
            assert f"chapter `{chapter}`" in " ".join(docstring.split()), (module, chapter)


def test_every_engine_module_is_on_the_map_or_names_its_appendix():
    """A module off the map is an appendix's (engine/catalogue.py): its docstring says which."""
    mapped = {m for modules in intro_map().values() for m in modules}
    modules = {p.stem for p in (ROOT / "engine").glob("*.py")} - {"__init__", "figures"}
    assert mapped <= modules, mapped - modules
    for module in sorted(modules - mapped):
        docstring = " ".join((ROOT / "engine" / f"{module}.py").read_text().split('"""')[1].split())
        assert any(f"appendix `{page}`" in docstring for page in APPENDICES), (
            f"engine/{module}.py is not on the intro's map, and its docstring names no appendix")


def readme_commands():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(python3 -m venv .*)\n```", text)


def test_readme_has_a_build_and_a_test_command_and_ci_runs_the_test_command():
    build, test = readme_commands()[:2]
    assert "jupyter-book build . -W -n --keep-going" in build
    assert test.endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test in ci, ".ci/run must run the README's test command verbatim"


def test_the_intro_quotes_the_readme_test_command():
    test = readme_commands()[1]
    assert test in (ROOT / "book" / "intro.md").read_text()


def test_each_chapter_imports_only_engine_modules_introduced_by_it_or_earlier():
    """The rule of the book: a reader can run chapter k with chapters 1..k of the engine."""
    from myst_reader import read_chapter
    from report import engine_modules

    allowed = {"engine", "engine.figures"}  # the package itself and the drawing helpers
    problems = []
    for chapter, modules in intro_map().items():
        allowed |= {f"engine.{m}" for m in modules}
        nb = read_chapter(ROOT / "book" / f"{chapter}.md").nb
        early = set(engine_modules(nb, ROOT)) - allowed
        if early:
            problems.append(f"book/{chapter}.md imports {sorted(early)} before its chapter")
    assert not problems, "\n".join(problems)


def test_no_page_imports_what_the_downloads_do_not_install():
    """A downloaded notebook runs with the runtime pins alone (book/runtime-requirements.txt);
    PyTorch and autograd are the tests' references, checked in tests/, never on a page."""
    for page in sorted((ROOT / "book").glob("*.md")):
        found = re.findall(r"^\s*(?:import|from)\s+(torch|autograd)\b", page.read_text(), re.M)
        assert not found, f"{page.name} imports {found}"
