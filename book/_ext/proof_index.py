"""sphinx-proof's index, "Definitions and theorems": each chapter's definitions and
theorems by the number and title the page shows ("Theorem 3.1 (Chain rule)"), in the
book's order; sphinx-proof's own lists them by label."""

import re

from book_config import toc_docnames


def _proof_titles(env, docname):
    """{label: the title a proof directive was given (`{prf:theorem} Chain rule`)}."""
    titles = {}
    for node in env.get_doctree(docname).findall(
            lambda n: "proof" in n.get("classes", []) if hasattr(n, "get") else False):
        match = re.search(r"\((.*)\)\s*$", node.children[0].astext() if node.children else "")
        titles.update(dict.fromkeys(node["ids"], match[1] if match else None))
    return titles


def setup(app):
    from sphinx.domains import Index
    from sphinx_proof.domain import ProofDomain

    class TitledProofIndex(Index):
        name = "prf"
        localname = shortname = "Definitions and theorems"

        def generate(self, docnames=None):
            env = self.domain.env
            by_page = {}
            for label, proof in getattr(env, "proof_list", {}).items():
                if proof["realtype"] != "proof" and (not docnames or proof["docname"] in docnames):
                    by_page.setdefault(proof["docname"], []).append(label)
            content = []
            for docname in [d for d in toc_docnames(env.srcdir) if d in by_page]:
                titles, entries = _proof_titles(env, docname), []
                for label in by_page[docname]:
                    proof = env.proof_list[label]
                    number = env.toc_fignumbers.get(docname, {}).get(
                        proof["countertype"], {}).get(label)
                    text = proof["realtype"].capitalize() + (
                        " " + ".".join(map(str, number)) if number else "")
                    text += f" ({titles[label]})" if titles.get(label) else ""
                    entries.append((text, 0, docname, label, "", "", ""))
                content.append((env.titles[docname].astext(), entries))
            return content, False

    ProofDomain.indices = [TitledProofIndex]
    return {"parallel_read_safe": True, "parallel_write_safe": True}
