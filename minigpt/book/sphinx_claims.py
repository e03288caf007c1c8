"""Sphinx extension: the ``{claim}`id` `` role and the ``{claims-ledger}`` directive.

The role renders a sentence's claim about a real system as the version that was checked, "[SGLang
v0.5.6]", linked to its entry in the appendix; an id the ledger (`references/claims.yml`, read by
`minigpt.book.claims`) does not hold is a build error. The directive writes the appendix: each entry
under its system, with its statement, version, date checked, source and quote, and the sentences not
yet checked. The Spanish edition shows each entry's `statement_es` and `source_es`; the quotes stay as
their sources wrote them, and the role shows a version, which has no words to translate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from minigpt.book.claims import Claim, Ledger, load

LEDGER = Path("references") / "claims.yml"
#: The appendix's own words in each edition (the entries themselves quote their sources, in English).
WORDS = {"en": {"checked": "checked", "unchecked": "Not yet checked against a source of late 2026"},
         "es": {"checked": "comprobado el", "unchecked": "Aún sin comprobar contra una fuente de finales de 2026"}}


def _ledger(app: Sphinx) -> Ledger:
    cached = getattr(app, "_claims_ledger", None)
    if cached is None:
        cached = load(Path(app.srcdir) / LEDGER)
        app._claims_ledger = cached  # type: ignore[attr-defined]
    return cached


def claim_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
               options: dict | None = None, content: list | None = None) -> tuple[list, list]:
    """``{claim}`id` ``: the checked version of a claim, linked to its ledger entry."""
    key = text.strip()
    ledger = _ledger(inliner.document.settings.env.app)
    if key not in ledger.claims:
        msg = inliner.reporter.error(f"unknown claim {key!r}: add it to {LEDGER} (minigpt.book.claims)",
                                     line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    claim = ledger.claims[key]
    xref = addnodes.pending_xref("", refdomain="std", reftype="ref", reftarget=claim.anchor, refexplicit=True,
                                 refwarn=True)
    xref += nodes.inline("", f"[{claim.label}]", classes=["claim"])
    return [xref], []


def _fixed(node: nodes.Element) -> nodes.Element:
    """`node` and every text element in it kept out of the catalogs (gettext): generated, not written."""
    for element in node.findall(nodes.TextElement):
        element["translatable"] = False
    return node


def _text(text: str) -> list[nodes.Node]:
    """`text` with its `code` spans as literals (identifiers are code in either edition)."""
    parts = text.split("`")
    return [nodes.literal("", part) if i % 2 else nodes.Text(part) for i, part in enumerate(parts) if part]


def _entry(claim: Claim, words: dict[str, str], language: str) -> list[nodes.Node]:
    target = nodes.target("", "", ids=[claim.anchor], names=[claim.anchor])
    head = nodes.paragraph()
    head += nodes.strong("", "", *_text(claim.statement_in(language)))
    facts = nodes.paragraph(support_smartquotes=False)  # a flag's "--" stays two hyphens, not an en dash
    facts += nodes.Text(f"{claim.system} {claim.version}, {words['checked']} {claim.checked.isoformat()}: ")
    facts += nodes.reference("", claim.source_in(language), refuri=claim.url)
    facts += nodes.Text(" (")
    facts += nodes.literal("", claim.id)
    facts += nodes.Text(")")
    quote = nodes.block_quote()
    quote += nodes.paragraph("", "", nodes.literal("", claim.quote))
    item = nodes.list_item()
    item += [head, facts, quote]
    return [target, item]


class ClaimsLedger(SphinxDirective):
    """``{claims-ledger}``: every entry of the ledger by system, then the sentences not yet checked."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        ledger = _ledger(self.env.app)
        self.env.note_dependency(str(Path(self.env.srcdir) / LEDGER))  # rebuilt when the ledger changes
        language = self.env.config.language or "en"
        words = WORDS.get(language, WORDS["en"])
        out: list[nodes.Node] = []
        for system in sorted({c.system for c in ledger.claims.values()}, key=str.lower):
            out.append(nodes.rubric("", system))
            items = nodes.bullet_list()
            for claim in sorted((c for c in ledger.claims.values() if c.system == system), key=lambda c: c.id):
                target, item = _entry(claim, words, language)
                self.state.document.note_explicit_target(target)
                item.insert(0, target)
                items += item
            out.append(items)
        if ledger.unchecked:
            out.append(nodes.rubric("", words["unchecked"]))
            rest = nodes.bullet_list()
            if language == "es":  # the fragments are the English sentences: the Spanish edition counts them
                pages: dict[str, int] = {}
                for item in ledger.unchecked:
                    pages[item["page"]] = pages.get(item["page"], 0) + 1
                for page, n in pages.items():
                    rest += nodes.list_item("", nodes.paragraph("", "", nodes.literal("", page),
                                                                nodes.Text(f": {n}")))
            else:
                for item in ledger.unchecked:
                    rest += nodes.list_item("", nodes.paragraph("", "", nodes.Text(f"{item['page']}: "),
                                                                nodes.emphasis("", item["text"])))
            out.append(rest)
        return [_fixed(node) for node in out]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_role("claim", claim_role)
    app.add_directive("claims-ledger", ClaimsLedger)
    app.connect("env-before-read-docs", lambda app, env, docnames: setattr(app, "_claims_ledger", None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["ClaimsLedger", "claim_role", "setup"]
