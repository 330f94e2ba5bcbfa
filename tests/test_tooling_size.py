"""The book's tooling stays small (issue "The machinery, lighter"): book/_ext holds at most
2,300 lines of code, counted as the issue's review counted them (no docstrings, comments or
blank lines: 2,631 when the issue was filed), and no file of more than 300 lines."""

import ast
import io
import tokenize
from pathlib import Path

EXT = Path(__file__).resolve().parents[1] / "book" / "_ext"
CODE_LINES, FILE_LINES = 2300, 300


def code_lines(source):
    """How many lines hold code: a token other than a comment, outside every docstring."""
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if ast.get_docstring(node, clean=False) is not None:
            first = node.body[0]
            docstrings.update(range(first.lineno, first.end_lineno + 1))
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
               tokenize.DEDENT, tokenize.ENDMARKER}
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skipped:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def test_code_lines_are_counted_without_docstrings_comments_or_blank_lines():
    source = '"""Module."""\n\nimport os  # why\n\n\ndef f(x):\n    """Doc,\n    two lines."""\n' \
             '    return (x +\n            1)\n'
    assert code_lines(source) == 4  # import, def, and the return's two lines


def test_the_tooling_stays_within_its_line_budget():
    files = sorted(EXT.glob("*.py"))
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in files}
    assert max(sizes.values()) <= FILE_LINES, {n: s for n, s in sizes.items() if s > FILE_LINES}
    total = sum(code_lines(path.read_text(encoding="utf-8")) for path in files)
    assert total <= CODE_LINES, f"book/_ext: {total} lines of code, more than {CODE_LINES}"
