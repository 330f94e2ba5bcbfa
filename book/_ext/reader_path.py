"""The reader's path: under a chapter's title a plan line (level, reading time, interactive
figures, exercises, notebook); after "You are done when", a "Mark this chapter done" button
(engine-site.js keeps it in local storage); before the sources, the chapters whose "Before
this chapter" links this one."""

import math
import posixpath
from pathlib import Path

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import docname_join, logging

from book_config import toc_docnames
from engine_cache import once_per_build, page_run
from myst_reader import fences, prose_words
from report import figures

LEVELS = ("introductory", "intermediate", "advanced")
PROSE_PER_MINUTE, CODE_PER_MINUTE = 200, 100  # code is read more slowly
BEFORE, DONE_WHEN, SOURCES = "Before this chapter", "You are done when", "Sources"


def _section(doctree, title):
    return next((section for section in doctree.findall(nodes.section)
                 if section.children and section[0].astext().strip() == title), None)


def linked_pages(app, docname):
    """The pages a chapter's "Before this chapter" links (by page, section or theorem),
    read from its doctree."""
    section = _section(app.env.get_doctree(docname), BEFORE)
    labels, proofs = app.env.get_domain("std").labels, getattr(app.env, "proof_list", {})
    pages = []
    for xref in section.findall(pending_xref) if section is not None else []:
        kind, target = xref.get("reftype"), xref["reftarget"]
        if kind == "doc":
            pages.append(docname_join(docname, target))
        elif kind in ("ref", "numref") and target in labels:
            pages.append(labels[target][0])
        elif kind == "ref" and target in proofs:  # {prf:ref} reaches the domain as "ref"
            pages.append(proofs[target]["docname"])
    return [p for p in dict.fromkeys(pages) if p != docname]


def code_words(doctree):
    """Words of the code the page shows: listings and code-cell sources (myst-nb leaves
    out those it removes), not outputs."""
    def words(node):
        return sum(len(block.astext().split()) for block in node.findall(nodes.literal_block))

    outputs = [c for c in doctree.findall(nodes.container) if "cell_output" in c["classes"]]
    return words(doctree) - sum(map(words, outputs))


def reading_minutes(prose, code):
    return max(1, math.ceil(prose / PROSE_PER_MINUTE + code / CODE_PER_MINUTE))


def _plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def plan_line(app, docname, doctree):
    """The paragraph under the title, or None for a page that is not a chapter."""
    level = app.env.metadata.get(docname, {}).get("level")
    if level is None:
        return None
    if level not in LEVELS:
        logging.getLogger(__name__).warning(
            f"level: {level!r} is not one of {', '.join(LEVELS)}", location=docname)
    source = Path(app.env.doc2path(docname)).read_text(encoding="utf-8")
    minutes = reading_minutes(prose_words(source, app.srcdir), code_words(doctree))
    nb, glue, _ = page_run(app, docname)
    players = figures(nb, glue)[1] if nb is not None else 0
    exercises = sum(1 for f in fences(source, app.srcdir) if f.name == "exercise")
    notebook = posixpath.relpath(f"_sources/{docname}.ipynb", posixpath.dirname(docname))
    line = nodes.paragraph(classes=["reader-plan"])
    line += nodes.Text(f"{level.capitalize()} · {minutes} min · "
                       f"{_plural(players, 'interactive figure')} · {_plural(exercises, 'exercise')} · ")
    line += nodes.reference("", "notebook", refuri=notebook, classes=["reader-notebook"])
    return line


def done_button(docname):
    return nodes.raw("", (
        f'<div class="reader-progress" data-chapter="{posixpath.basename(docname)}">'
        f'<button type="button" class="reader-done" aria-pressed="false">Mark this chapter done</button>'
        '<p>Press it when you can do all of the above without notes. Your progress is kept in '
        'this browser only (its local storage): no account, nothing sent anywhere. The '
        '<a href="intro.html#map-of-the-chapters">map of the chapters</a> shows it.</p></div>'),
        format="html")


def unlocks_paragraph(app, docname):
    after = [d for d in toc_docnames(app.srcdir)
             if docname in once_per_build(app, "reader_path_before", d, linked_pages)]
    para = nodes.paragraph(classes=["reader-unlocks"])
    if not after:
        para += nodes.Text("No later chapter builds on this one directly.")
        return para
    para += nodes.strong(text="What this chapter unlocks: ")
    for i, d in enumerate(after):
        if i:
            para += nodes.Text(", " if i < len(after) - 1 else " and ")
        para += pending_xref("", nodes.inline(text=d), refdoc=docname, reftype="doc",
                             refdomain="std", reftarget="/" + d, refexplicit=False, refwarn=True)
    para += nodes.Text(f", whose “{BEFORE}” " + ("sections link" if len(after) > 1 else "section links")
                       + " this one.")
    return para


class ReaderPath(SphinxPostTransform):
    """The plan line, the button and what the chapter unlocks, once every page is read
    (the last needs the other chapters' sections) and before links are resolved."""
    default_priority = 8
    formats = ("html",)

    def run(self, **kwargs):
        docname, doctree = self.env.docname, self.document
        line = plan_line(self.app, docname, doctree)
        if line is None:
            return
        title = next(doctree.findall(nodes.title))
        title.parent.insert(title.parent.index(title) + 1, line)
        done = next((para for para in doctree.findall(nodes.paragraph)
                     if para.astext().startswith(DONE_WHEN)), None)
        if done is None:
            logging.getLogger(__name__).warning(f"no '{DONE_WHEN}' paragraph", location=docname)
        else:  # after the paragraph, and after the list it opens
            holder, at = done.parent, done.parent.index(done) + 1
            if at < len(holder) and isinstance(holder[at], nodes.bullet_list):
                at += 1
            holder.insert(at, done_button(docname))
        sources = _section(doctree, SOURCES)
        place = sources.parent if sources is not None else title.parent
        at = place.index(sources) if sources is not None else len(place)
        place.insert(at, unlocks_paragraph(self.app, docname))


def read_all_chapters_again(app, env, added, changed, removed):
    """A chapter's "unlocks" line reads the others' sections: when a chapter is added,
    changed or removed, read them all again (nothing else changes that line)."""
    chapters = [d for d in env.found_docs if env.metadata.get(d, {}).get("level")]
    return chapters if added or removed or set(changed) & set(chapters) else []


def setup(app):
    app.connect("env-get-outdated", read_all_chapters_again)
    app.add_post_transform(ReaderPath)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
