"""The Spanish glossary in Spanish alphabetical order (`sphinx_editions.SortGlossary`).

The glossary page lists its terms in English order; the Spanish edition translates the terms when it
builds the page (Sphinx's Locale transform), so the order has to be made after that, by the Spanish
headwords, with the Spanish collation (`editions.collation_key`: case, accents and punctuation aside,
"ñ" after "n").
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from sphinx import addnodes

from minigpt.book.editions import collation_key
from minigpt.book.sphinx_editions import sort_glossaries

ROOT = Path(__file__).resolve().parent.parent
BUILT = ROOT / "_build" / "html" / "es" / "appendices" / "glossary.html"


def spanish_sorted(words: list[str]) -> list[str]:
    return sorted(words, key=lambda w: collation_key(w, "es"))


@pytest.mark.parametrize(
    ("words", "order"),
    [
        (["oro", "ñandú", "nube"], ["nube", "ñandú", "oro"]),  # ñ is a letter after n
        (["Expulsión", "écran", "Decodificación"], ["Decodificación", "écran", "Expulsión"]),  # accents, case aside
        (["Caché KV", "Cadena de hashes", "Caché de prefijos"], ["Caché de prefijos", "Caché KV", "Cadena de hashes"]),
        (["Log-sum-exp", "Lote crítico", "Latencia"], ["Latencia", "Log-sum-exp", "Lote crítico"]),
        (["TPOT", "torch.compile", "Tasa de aceptación"], ["Tasa de aceptación", "torch.compile", "TPOT"]),
    ],
)
def test_spanish_collation(words, order):
    """Bug: code-point order ("Écran" after "Z", "ñ" after "z", capitals before lowercase)."""
    assert spanish_sorted(words) == order


def glossary_doctree(terms: list[str]) -> nodes.document:
    """A doctree with one glossary whose entries carry `terms` (each entry's definition names its term)."""
    document = new_document("<test>", get_default_settings(Parser))
    glossary = addnodes.glossary()
    entries = nodes.definition_list()
    for term in terms:
        entries += nodes.definition_list_item(
            "", nodes.term(term, term, ids=[f"term-{term}"]), nodes.definition("", nodes.paragraph(text=f"def {term}"))
        )
    glossary += entries
    document += glossary
    return document


def entries_of(document: nodes.document) -> list[tuple[str, str]]:
    return [
        (item.next_node(nodes.term).astext(), item.next_node(nodes.paragraph).astext())
        for item in document.findall(nodes.definition_list_item)
    ]


def test_the_glossary_is_sorted_by_its_translated_terms():
    """Bug: the Spanish terms left in the English page's order ("Tasa de aceptación" first, for Acceptance rate)."""
    translated = ["Tasa de aceptación", "All-reduce", "Ñandú", "nube", "Intensidad aritmética", "Ancho de banda"]
    document = glossary_doctree(translated)
    sort_glossaries(document, "es")
    got = entries_of(document)
    assert [t for t, _ in got] == ["All-reduce", "Ancho de banda", "Intensidad aritmética", "nube", "Ñandú",
                                   "Tasa de aceptación"]
    assert all(definition == f"def {term}" for term, definition in got), "a definition left its term"
    assert [t.get("ids") for t in document.findall(nodes.term)][0] == ["term-All-reduce"], "an anchor left its term"


def test_the_english_glossary_keeps_an_english_order():
    document = glossary_doctree(["Bandwidth", "acceptance rate", "All-reduce"])
    sort_glossaries(document, "en")
    assert [t for t, _ in entries_of(document)] == ["acceptance rate", "All-reduce", "Bandwidth"]


@pytest.mark.site
def test_the_built_spanish_glossary_is_in_spanish_order():
    """Bug: the transform not registered for the Spanish build (or run before the terms are translated)."""
    from bs4 import BeautifulSoup

    if not BUILT.is_file():
        pytest.fail(f"{BUILT} is missing: build the Spanish edition (scripts/book/build_book.py --lang es)")
    soup = BeautifulSoup(BUILT.read_text(encoding="utf-8"), "lxml")
    glossary = soup.select_one("dl.glossary")
    assert glossary is not None, "no glossary on the page"
    for link in glossary.select("a.headerlink"):
        link.decompose()
    terms = [" ".join(dt.get_text(" ").split()) for dt in glossary.find_all("dt", recursive=False)]
    assert len(terms) > 50 and "Tasa de aceptación" in terms, terms[:5]
    assert terms == spanish_sorted(terms), [t for t, s in zip(terms, spanish_sorted(terms), strict=True) if t != s][:5]
