"""Both editions of the built site: every page switches to the same page in the other language, and
the Spanish pages show no English outside code, printed output and quotations.

Static checks of `_build/html` and `_build/html/es` (`make book` builds both); the browser checks of
the Spanish site (maths, explorers, MiniGPT live) are in tests/test_site_es.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from site_text import parsed, text_outside
from test_site import book_pages

from minigpt.book import catalogs, edition_notebooks, editions

ROOT = Path(__file__).resolve().parent.parent
LANG = "es"

pytestmark = pytest.mark.site


PAGES = book_pages()

# English function words: a Spanish sentence has none of them, an English one has several.
ENGLISH = re.compile(r"\b(the|and|of|is|are|which|with|that|this|from|to|for|it|its|be|as|on|we|you)\b")
# What may stay in English on a Spanish page: code, printed output, maths, quotations of English
# text, the bibliography's titles, MiniGPT's own (English) words, explorers (translated by their script).
KEEP = [
    "pre", "code", "script", "style", "svg", ".highlight", ".cell_output", ".output", ".math", "mjx-container",
    ".mgx-explorer", "dl.citation", ".citation", ".footnote", ".minigpt-lang-switch", ".minigpt-live", "q",
]
QUOTED = re.compile(r"«[^»]*»|“[^”]*”|\"[^\"]*\"")




def english_sentences(html: str | BeautifulSoup) -> list[str]:
    """Sentences of a page's article (outside what may stay English) with three English function words."""
    text = QUOTED.sub(" ", text_outside(html, KEEP))
    return [s[:120] for s in re.split(r"(?<=[.:;!?])\s+", text) if len(set(ENGLISH.findall(s))) >= 3]


@pytest.fixture(scope="module")
def site(built_site: Path) -> Path:
    if not (built_site / LANG / "index.html").is_file():
        pytest.fail(f"{built_site / LANG} is missing: `make book` builds both editions")
    return built_site


@pytest.mark.parametrize("page", PAGES)
def test_every_page_switches_to_the_same_page_in_the_other_edition(site: Path, page: str) -> None:
    for here, other in ((site / f"{page}.html", site / LANG / f"{page}.html"),
                        (site / LANG / f"{page}.html", site / f"{page}.html")):
        soup = parsed(here)
        links = soup.select("p.minigpt-lang-switch a[hreflang]")
        assert len(links) == 1, f"{here}: no language switch"
        target = (here.parent / links[0]["href"]).resolve()
        assert target == other.resolve(), f"{here}: the switch points to {target}, not {other}"
        assert soup.find("link", rel="alternate", hreflang=links[0]["hreflang"]) is not None


@pytest.mark.parametrize("page", PAGES)
def test_spanish_pages_show_no_english_outside_code_and_quotes(site: Path, page: str) -> None:
    soup = parsed(site / LANG / f"{page}.html")
    assert soup.find("html").get("lang") == LANG, "the page does not declare lang=es"
    found = english_sentences(soup)
    assert not found, f"{page}: English left on the Spanish page: {found[:3]}"
    chrome = {el.get(a) for a in ("title", "aria-label", "placeholder") for el in soup.select(f"[{a}]")}
    left = sorted(chrome & set(editions.theme_strings(LANG)))
    assert not left, f"{page}: the site's interface still says {left}"
    captions = {c.get_text(" ", strip=True) for c in soup.select(".bd-sidebar-primary p.caption")}
    english_parts = {m.id for m in catalogs.read(catalogs.catalog_path("intro", LANG)) if m.id}
    assert not captions & english_parts, f"{page}: untranslated parts in the sidebar: {captions & english_parts}"


def test_what_a_reader_without_javascript_sees_is_spanish(site: Path) -> None:
    """A <noscript> message is hidden from the browser tests, which run JavaScript: read each one here. Guards
    a page's own fixed HTML (the landing page's MiniGPT live) left out of the interface table."""
    found = {}
    for page in PAGES:
        for note in parsed(site / LANG / f"{page}.html").select("noscript"):
            text = " ".join(note.get_text(" ").split())
            if text and (text in editions.theme_strings(LANG) or len(set(ENGLISH.findall(text))) >= 2):
                found[page] = text
    assert not found, f"English shown without JavaScript: {found}"


@pytest.mark.parametrize("page", PAGES)
def test_spanish_glued_values_are_the_english_ones_written_the_spanish_way(site: Path, page: str) -> None:
    """Every glued value on a Spanish page is an English page's value through `editions.localize_glued`.

    (Comparing with the English page, not a pattern: "12,107" is an English thousand and a Spanish
    decimal alike.)
    """
    def values(path: Path) -> list[str]:
        return [s.get_text() for s in parsed(path).select("span.pasted-text")]

    english = values(site / f"{page}.html")
    expected = {editions.localize_glued(v, LANG) for v in english}
    spanish = values(site / LANG / f"{page}.html")
    assert len(spanish) >= len(set(english)) // 2, f"{page}: glued values missing from the Spanish page"
    stray = [v for v in spanish if v not in expected]
    assert not stray, f"{page}: glued values not localized from the English page's: {stray[:5]}"
    unchanged = [v for v in english if editions.localize_glued(v, LANG) != v]
    assert not set(unchanged) & set(spanish), f"{page}: English-style values on the Spanish page"


@pytest.mark.parametrize("page", [p for p in PAGES if (ROOT / f"{p}.ipynb").exists()])
def test_spanish_colab_buttons_open_the_spanish_notebook(site: Path, page: str) -> None:
    html = (site / LANG / f"{page}.html").read_text(encoding="utf-8")
    links = set(re.findall(r'https://colab\.research\.google\.com/github/[^"]+', html))
    want = f"blob/main/locales/{LANG}/{catalogs.NOTEBOOKS}/{page}.ipynb"
    assert links and all(link.endswith(want) for link in links), f"{page}: Colab links {sorted(links)}"
    assert edition_notebooks.edition_notebook_path(page, LANG).is_file()


def test_the_english_detector_can_fail() -> None:
    """The check above is not vacuous: an English sentence in a Spanish page is found, a quoted one is not."""
    page = "<main><p>El caché crece. The cache grows with the context, which is why it matters.</p></main>"
    assert english_sentences(page)
    quoted = '<main><p>La guía dice «the cache grows with the context, which is why».</p><pre>the and of</pre></main>'
    assert not english_sentences(quoted)
