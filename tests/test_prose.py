"""The prose keeps two promises of the book: every chapter reads in about 45 minutes (at most
9,000 prose words, the count the execution report prints), and a chapter is named by a link,
never by its bare file name."""

import re
from pathlib import Path

import pytest

import book_config
from myst_reader import markdown_parser, prose_words

ROOT = Path(__file__).resolve().parents[1]
WORD_LIMIT = 9000  # 45 minutes at 200 words a minute

PAGES = [Path(ROOT / f"{name}.md") for name in book_config.toc_docnames(ROOT)]
SLUGS = {page.stem for page in PAGES}
# "chapter `memory`", "Chapters `shapes`", "appendix errors": a page named by its file name
BARE = re.compile(r"\b(chapters?|appendix|appendices|page)\s*$", re.I)
AFTER = re.compile(r"\s+(chapters?|appendix|page)\b", re.I)  # "the `memory` chapter"


def bare_slugs(text: str) -> list[str]:
    """Each place where the prose names a page of the book by its slug instead of linking it,
    as `line: words`."""
    found = []

    def walk(tokens, first_line):
        for token in tokens:
            if token.type == "inline" and token.map:
                line = first_line + token.map[0]
                before = ""
                children = token.children or []
                for i, child in enumerate(children):
                    after = children[i + 1].content if i + 1 < len(children) else ""
                    if child.type == "code_inline" and child.content in SLUGS:
                        if BARE.search(before):
                            found.append(f"{line}: {before.split()[-1]} `{child.content}`")
                        elif AFTER.match(after):
                            found.append(f"{line}: `{child.content}`{AFTER.match(after).group(0)}")
                    if child.type == "text":
                        words = re.finditer(r"\b(chapters?|appendix)\s+([a-z][\w-]*)\b",
                                            child.content, re.I)
                        found.extend(f"{line}: {m.group(0)}" for m in words if m.group(2) in SLUGS)
                    before = child.content if child.type == "text" else ""
                    line += child.content.count("\n") + (child.type == "softbreak")
            if token.type in ("fence", "colon_fence") and token.info.strip().startswith("{"):
                name = token.info.strip()[1:].split("}")[0]
                if name not in ("code-cell", "listing", "math", "code", "code-block"):
                    body = token.content.split("\n")
                    skip = next((i for i, l in enumerate(body) if l and not l.startswith(":")), 0)
                    walk(markdown_parser(ROOT).parse("\n".join(body[skip:])),
                         first_line + token.map[0] + 1 + skip)

    walk(markdown_parser(ROOT).parse(text), 1)
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_no_page_is_named_by_its_bare_slug(page):
    found = bare_slugs(page.read_text(encoding="utf-8"))
    assert not found, f"{page.relative_to(ROOT)}: link these pages ({{doc}}`slug`): {found}"


def test_bare_slugs_are_found_in_prose_and_in_directives():
    text = ("Chapter `memory` frees it; see {doc}`memory`.\n\n"
            ":::{dropdown} Why\nAs in chapter tensors, and\nchapter `shapes`.\n:::\n"
            "```{code-cell} ipython3\n# chapter `memory`\n```\n"
            "The module `engine.memory`, a `memory` error, the `fast` chapter.\n")
    assert bare_slugs(text) == ["1: Chapter `memory`", "4: chapter tensors", "5: chapter `shapes`",
                                "10: `fast` chapter"]


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_every_page_reads_within_the_word_limit(page):
    words = prose_words(page.read_text(encoding="utf-8"), ROOT)
    assert words <= WORD_LIMIT, f"{page.relative_to(ROOT)}: {words:,} prose words, over {WORD_LIMIT:,}"


def test_prose_words_count_prose_and_math_not_code():
    text = ("# Two words\n\nOne two three $a + b$ `x.grad`.\n\n"
            "```{code-cell} ipython3\nprint('not counted at all')\n```\n"
            "```{prf:theorem} Title\nFour five.\n```\n"
            "$$\ny = 1\n$$\n"
            "Glued {glue:text}`value:.2f` here.\n")
    # 2 + (3 + 2 + 1) + 2 + 2 + 2: "+", "=" and "." alone are not words; the glued value and
    # the code cell are not read
    assert prose_words(text, ROOT) == 14
