"""The Spanish edition's own words outside the page catalogs, checked without building the book.

- citations: "Hashimoto y Liang, s. f.", never "and" or "n.d." (`minigpt.book.citations_es`);
- the bibliography: the book's two Spanish sources under their own Spanish titles, a collective author in
  Spanish, the English edition's copy untouched (`editions.translate_bibliography`);
- the Colab badge: the Spanish notebooks carry the Spanish badge, the English ones the English badge
  (`minigpt.book.colab_badge`);
- what the English notebooks print for the reader (the kernel note, the badge) and the language switch, as the
  Spanish pages get them (`sphinx_chrome.edition_outputs`, `add_switch`).

The built pages in a browser: tests/test_site_es_english.py.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from pybtex.database import parse_string
from sphinxcontrib.bibtex.style.referencing import format_references
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.template import SphinxReferenceInfo

from minigpt import i18n
from minigpt.book import (
    bibliography_es,
    citations_es,
    colab_badge,
    edition_notebooks,
    editions,
    notebook,
    sphinx_chrome,
    sphinx_editions,
)

ROOT = Path(__file__).resolve().parent.parent

BIB = parse_string("""
@misc{three, author = {Hashimoto, T. and Liang, P. and Doe, J.}, title = {X}, year = {2025}}
@misc{untitled, title = {{Prefill vs Decode}: dos fases de un mismo forward}}
@misc{two, author = {Hashimoto, T. and Liang, P.}, title = {Y}}
""", "bibtex")


def cite(style, role: str, *keys: str) -> str:
    """A citation as sphinxcontrib-bibtex writes it for `role` ("p": parenthetical, "t": textual, ...), as text."""
    info = SphinxReferenceInfo(None, "", "", "", None, "", "")
    text = format_references(style, role, [(BIB.entries[k], None, info) for k in keys])

    def flat(part) -> str:
        return part if isinstance(part, str) else "".join(flat(p) for p in part.parts)

    return flat(text)


def test_spanish_citations_say_y_and_s_f() -> None:
    """The bug: the Spanish edition citing with sphinxcontrib-bibtex's English "and" and "n.d."."""
    es = citations_es.SpanishAuthorYearReferenceStyle()
    assert cite(es, "p", "two") == "[Hashimoto y Liang, s. f.]"
    assert cite(es, "ps", "three") == "[Hashimoto, Liang y Doe, 2025]"
    assert cite(es, "p", "three", "two") == "[Hashimoto et al., 2025, Hashimoto y Liang, s. f.]"
    assert cite(es, "t", "two") == "Hashimoto y Liang [s. f.]"
    assert cite(es, "p", "untitled") == "[Prefill vs Decode: dos fases de un mismo forward, s. f.]"
    assert cite(es, "year", "untitled") == "s. f."
    assert cite(es, "author", "two") == "Hashimoto y Liang"
    en = AuthorYearReferenceStyle()  # the English edition keeps its own
    assert cite(en, "p", "two") == "[Hashimoto and Liang, n.d.]"


def test_the_spanish_edition_chooses_the_spanish_style() -> None:
    config = SimpleNamespace(language="es", html_theme_options={}, bibtex_reference_style="author_year",
                             bibtex_default_style="plain", bibtex_bibfiles=[], html_title="", author="")
    sphinx_editions.configure_edition(SimpleNamespace(srcdir=str(ROOT)), config)
    assert config.bibtex_reference_style == citations_es.STYLE
    assert config.bibtex_default_style == bibliography_es.STYLE


def test_the_spanish_reference_list_writes_its_own_words_in_spanish() -> None:
    """pybtex's `plain` writes words of its own between an entry's fields ("A, B, and C", "and others", "In"
    before a proceedings' title, "October 2023"); the Spanish edition's style writes them in Spanish. The
    titles stay as published (English), so the check reads what the style adds, around the fields."""
    from pybtex.database import parse_string
    from pybtex.style.formatting.plain import Style

    text, missing = editions.translate_bibliography((ROOT / "references.bib").read_text(encoding="utf-8"), "es")
    assert missing == []
    entries = parse_string(text, "bibtex").entries
    spanish = {e.key: e.text.render_as("text") for e in bibliography_es.SpanishPlainStyle().format_entries(
        entries.values())}
    english = {e.key: e.text.render_as("text") for e in Style().format_entries(entries.values())}
    assert len(spanish) == len(entries) > 50
    for key, shown in spanish.items():
        title = entries[key].fields.get("title", "")  # a title may say ", and " ("easy, fast, and cheap")
        assert (", and " not in shown or ", and " in title) and " and others" not in shown, (key, shown[:160])
        assert not re.search(r"\b(January|February|March|April|May|June|July|August|September|October|"
                             r"November|December) \d{4}", shown), (key, shown[:160])
    proceedings = [k for k, e in entries.items() if e.type == "inproceedings"]
    assert proceedings and all(". En " in spanish[k] and ". In " in english[k] for k in proceedings)
    assert "Amanda Askell y otros." in spanish["brown2020gpt3"]
    assert "octubre de 2023" in spanish["dao2023flashdecoding"]
    assert any(" y " in spanish[k] and ", and " in english[k] for k in spanish)


def test_spanish_sources_keep_their_spanish_titles() -> None:
    """The two Spanish source texts are cited under their own titles in Spanish, not the English glosses."""
    text = (ROOT / "references.bib").read_text(encoding="utf-8")
    spanish, missing = editions.translate_bibliography(text, "es")
    assert missing == []
    assert "title        = {{Prefill vs Decode}: dos fases de un mismo forward}" in spanish
    assert "title        = {{Prefill} vs decodificación: cómo se ejecuta la generación}" in spanish
    assert "two phases of one forward" not in spanish and "how generation runs" not in spanish
    assert "{colaboradores de ggml}" in spanish and "ggml contributors" not in spanish
    assert "title  = {Gaussian Error Linear Units ({GELUs})}" in spanish  # other titles as published
    assert editions.translate_bibliography(text, "en") == (text, [])


def test_spanish_notebooks_carry_the_spanish_badge() -> None:
    """Every Spanish Colab notebook shows "Abrir en Colab" (image and alt), none the English badge."""
    english_img, spanish_img = colab_badge.badge_img("en"), colab_badge.badge_img("es")
    assert "Open in" in colab_badge.badge_svg("en") and "Abrir en" in colab_badge.badge_svg("es")
    pages = edition_notebooks_pages()
    assert len(pages) > 30
    for path in pages:
        text = path.read_text(encoding="utf-8")
        assert spanish_img in text and 'alt=\\"Abrir en Colab\\"' in text, path
        assert english_img not in text and "Open In Colab" not in text, path
    with pytest.raises(ValueError, match="lang must be one of"):
        colab_badge.badge_alt("fr")


def edition_notebooks_pages() -> list[Path]:
    return sorted(edition_notebooks.edition_notebook_path("x", "es").parent.parent.rglob("*.ipynb"))


def test_spanish_pages_get_the_notebooks_fixed_output_in_spanish() -> None:
    """The kernel note and the badge that the English notebooks print, as a Spanish page shows them."""
    page = (f'<div class="minigpt-kernel-note">&#9888; {html.escape(notebook.KERNEL_NOTE)}</div>'
            f'<a href="x"><img src="{colab_badge.badge_img("en")}" alt="{colab_badge.badge_alt("en")}"></a>')
    spanish = sphinx_chrome.edition_outputs(page, "es")
    assert html.escape(i18n.gettext_in("es", notebook.KERNEL_NOTE)) in spanish
    assert notebook.KERNEL_NOTE not in spanish and "Mover estos deslizadores" in spanish
    assert colab_badge.badge_img("es") in spanish and 'alt="Abrir en Colab"' in spanish
    assert sphinx_chrome.edition_outputs(page, "en") == page


@pytest.mark.parametrize(("lang", "label", "name"), [("es", "Lee esta página en", "inglés"),
                                                     ("en", "Read this page in", "Spanish")])
def test_the_language_switch_names_the_language_in_the_page_language(lang: str, label: str, name: str) -> None:
    """The bug: "Lee esta página en English" (the other language's own name)."""
    app = SimpleNamespace(config=SimpleNamespace(language=lang))
    context: dict = {"body": "<p>x</p>"}
    sphinx_editions.add_switch(app, "chapters/01_prefill_vs_decode", "page.html", context, None)
    assert f"{label} <a " in context["body"] and f">{name}</a></p>" in context["body"]
