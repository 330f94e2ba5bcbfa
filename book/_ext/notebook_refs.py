"""References as the site shows them, for the notebook a reader downloads.

`Resolver` answers, from the build's own environment, what the page shows for a
reference: a page's title ({doc}), a figure's, theorem's or exercise's number
({numref}, {prf:ref}, {ref}), an equation's ({eq}), and a citation as "Author et
al., year" (the bibliography of `bibtex_bibfiles`, through pybtex), with a References
cell for the notebook's end.
"""

import posixpath
import re
from pathlib import Path

import nbformat

from notebook_archive import notebook_name


class Resolver:
    """The text the site shows for a reference, from the build's environment."""

    def __init__(self, env, docname, root):
        self.env = env
        self.docname = docname
        self.root = Path(root)
        self.cited = []  # bibliography keys in order of first citation
        self._bib = None

    # labels and numbers
    def number(self, docname, kind, label):
        number = self.env.toc_fignumbers.get(docname, {}).get(kind, {}).get(label)
        return ".".join(map(str, number)) if number else None

    def _target_doc(self, target):
        target = target.strip()
        if target.startswith("/"):
            return target.lstrip("/")
        return posixpath.normpath(posixpath.join(posixpath.dirname(self.docname), target))

    def doc(self, text, target):
        docname = self._target_doc(target)
        title = self.env.titles[docname].astext() if docname in self.env.titles else target
        shown = text or title
        if "kernelspec" in self.env.metadata.get(docname, {}):
            return f"[{shown}]({posixpath.basename(notebook_name(docname))})"
        return shown

    def numref(self, text, label):
        std = self.env.domaindata["std"]["labels"].get(label)
        if std is None:
            return self.prf_ref(text, label)
        docname, labelid, _ = std
        numfig = self.env.config.numfig_format
        for kind, fmt in (("figure", None), ("table", None), ("code-block", None),
                          ("exercise", None)):
            number = self.number(docname, kind, labelid)
            if number:
                if text:
                    return text.replace("{number}", number).replace("{name}", "")
                return (numfig.get(kind) or (kind.capitalize() + " %s")).replace("%s", number)
        return text or std[2]

    def prf_ref(self, text, label):
        proof = getattr(self.env, "proof_list", {}).get(label)
        if proof is None:
            return text or label
        if text:
            return text
        number = self.number(proof["docname"], proof["countertype"], label)
        return proof["realtype"].capitalize() + (f" {number}" if number else "")

    def exercise(self, label):
        registry = getattr(self.env, "sphinx_exercise_registry", {})
        entry = registry.get(label)
        if entry is None:
            return None
        return self.number(entry["docname"], "exercise", label)

    def ref(self, text, label):
        if text:
            return text
        number = self.exercise(label)
        if number:
            return f"Exercise {number}"
        std = self.env.domaindata["std"]["labels"].get(label)
        if std is not None:
            return std[2]
        if label in getattr(self.env, "proof_list", {}):
            return self.prf_ref("", label)
        return label

    def eq(self, text, label):
        math = self.env.domaindata.get("math", {}).get("objects", {})
        entry = math.get(label)
        number = self.env.toc_fignumbers.get(entry[0], {}).get("displaymath", {}).get(
            entry[0] and label) if entry else None
        if entry and not number and len(entry) > 1:
            number = entry[1]
        if isinstance(number, tuple):
            number = ".".join(map(str, number))
        return text or f"({number})"

    # citations
    def bibliography(self):
        if self._bib is None:
            from pybtex.database import parse_file

            self._bib = {}
            for name in self.env.config.bibtex_bibfiles or []:
                self._bib.update(parse_file(str(Path(self.env.srcdir) / name)).entries)
        return self._bib

    def _entry(self, key):
        """The bibliography entry of a key, also under a chapter's `:keyprefix:` (cr-)."""
        bib = self.bibliography()
        if key in bib:
            return bib[key]
        prefix, _, rest = key.partition("-")
        return bib.get(rest) if rest else None

    @staticmethod
    def _plain(text):
        import codecs

        import latexcodec  # noqa: F401  (registers the codec)

        text = codecs.decode(text, "ulatex")
        return re.sub(r"[{}]", "", text)

    def cite(self, keys):
        shown = []
        for key in [k.strip() for k in keys.split(",") if k.strip()]:
            entry = self._entry(key)
            if key not in self.cited:
                self.cited.append(key)
            if entry is None:
                shown.append(key)
                continue
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = [self._plain(" ".join(p.last_names)) for p in people]
            if not names:
                who = self._plain(entry.fields.get("title", key))
            elif len(names) == 1:
                who = names[0]
            elif len(names) == 2:
                who = f"{names[0]} and {names[1]}"
            else:
                who = f"{names[0]} et al."
            year = entry.fields.get("year", "")
            shown.append(f"[{who}, {year}](#ref-{key})" if year else f"[{who}](#ref-{key})")
        return "[" + "; ".join(shown) + "]"

    def references_cell(self):
        if not self.cited:
            return None
        from pybtex.plugin import find_plugin

        style = find_plugin("pybtex.style.formatting", "plain")()
        lines = ["## References", ""]
        for key in self.cited:
            entry = self._entry(key)
            if entry is None:
                continue
            formatted = style.format_entry(key, entry)
            text = self._plain(formatted.text.render_as("text"))
            lines.append(f'- <a id="ref-{key}"></a>{text}')
        return nbformat.v4.new_markdown_cell("\n".join(lines),
                                             metadata={"tags": ["engine-references"]})
