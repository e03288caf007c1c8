"""Every Spanish page in headless Chromium, once (`test_spanish_page`): no English on screen after its scripts
ran, and the other checks of the page's one visit (its docstring).

What a reader of `_build/html/es` sees, or hears from a screen reader, is read from the live page: the text of
every element (hidden ones too: the "Hide ..." half of a toggle, a `<noscript>` message) and the attributes
`alt`, `title`, `aria-label` and `placeholder`. A block of text (a paragraph, a list item, a button) fails when
it holds a common English function word or interface word (`ENGLISH_WORDS`: "the", "and", "of", "Show",
"Repository", ...); Spanish never writes them. What may stay English is left out: code, printed outputs,
maths, quotations (`blockquote`, `q`, text between « », “ ” or " "), the bibliography's list and the
citation links' tooltips (which quote its entries), the words MiniGPT live generates (its corpus is
English), and the few English names the Spanish text keeps (`KEPT`: titles of works, terms of
locales/es/terminology.yml written in English).

The plausible bugs: a string of the theme or of a plug-in that no table translates (myst-nb's "Show code cell
source", the header's "Repository"), an `alt` text left in English ("Colab logo", the Colab badge), a
citation written "A and B, n.d.", a note a notebook prints in English. `test_the_detector_finds_injected_english`
shows that the check fails on a page with English injected, and passes it inside code and quotations.

Static checks of the same pages (English sentences in the article, the theme's attributes) are in
tests/test_editions_site.py; the explorers and MiniGPT live in Spanish in tests/test_site_es.py.
"""

from __future__ import annotations

import functools

import pytest
import site_checks
from site_browser import CHROMIUM, Visit
from test_site import book_pages
from test_site_es import _typeset, check_spanish_explorers

from minigpt.book.catalogs import pages_with_own_maths

pytestmark = [
    pytest.mark.site,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]

PAGES = book_pages()

#: English function words and the interface's words: none is also a Spanish word (no "a", "no", "me", "he", "has",
#: "son"), so a Spanish sentence holds none of them.
ENGLISH_WORDS = (
    "the", "and", "of", "with", "for", "from", "this", "that", "these", "those", "which", "what", "when", "where",
    "your", "you", "is", "are", "was", "were", "been", "have", "does", "not", "it", "its", "an", "or", "by",
    "on", "at", "to", "in", "into", "than", "then", "there", "their", "they", "we", "our", "will", "would",
    "can", "could", "should", "must", "but", "if", "each", "every", "only", "also", "how", "why", "who", "about",
    "after", "before", "between", "through", "one", "two", "three",
    "Show", "Hide", "Open", "Close", "Repository", "Download", "Search", "Toggle", "Contents", "Previous", "Next",
    "Print", "Launch", "Copy", "Copied", "Click", "Edit", "Issue", "Back", "Skip", "Home", "Settings", "Page",
    "Source", "Light", "Dark", "Mode", "System", "Theme", "Read", "Chapter", "Exercise", "Figure", "Table",
    "Equation", "Warning", "See", "Run", "Loading", "Enter", "Submit", "Generate", "Stop", "Step", "logo",
    "Moving", "sliders", "needs", "running", "enable", "here",
    r"n\.d\.",  # a citation's "no date" (Spanish: "s. f.")
)

#: English the Spanish edition keeps on purpose (regular expressions): the titles of works it names, a term
#: glossed in English ("(En inglés, block table.)", "(beam search)"), Latin ("in situ"), a Python call's name,
#: a GitHub issue named as GitHub names it ("issue #27").
KEPT = (
    r"How to Scale Your Model", r"Build a Large Language Model \(From Scratch\)", r"Language Modeling from Scratch",
    r"Making Deep Learning Go Brrrr From First Principles", r"Guide to LLM Inference and Performance",
    r"LLMs from Scratch",
    r"\(En inglés, [^)]*\)", r"\(beam search\)", r"\bin situ\b", r"\bprint\b", r"\bissue #\d+",
)

#: Where English may stand: code, outputs, maths, quotations, the bibliography, MiniGPT live's generated words.
SKIP = (
    "pre", "code", "kbd", "samp", "script", "style", "template", ".highlight", ".cell_output", ".output",
    "mjx-container", ".math", "math", "blockquote", "q", "div.citation", "[role=doc-biblioentry]",
    ".mgl-text", ".mgl-word", ".mgl-cand-word", ".mgl-example", ".mgl-examples", ".mgl-suggestion",
)
#: A page's own: the claims ledger names each source's place as the source writes it (a file, a commit's note).
PAGE_SKIP = {"appendices/claims": ("a.reference.external",)}

ATTRIBUTES = ("alt", "title", "aria-label", "placeholder")

# The English found on the page, after its scripts ran: "where: text" for each block or attribute that holds an
# English word once quotations and the kept names are removed. A citation link's title quotes the bibliography.
FIND_ENGLISH = r"""([words, kept, skip, attributes]) => {
    const word = new RegExp("(?<![\\p{L}\\d_-])(" + words.join("|") + ")(?![\\p{L}\\d_-])", "iu");
    const skipped = skip.join(",");
    const quoted = /«[^»]*»|“[^”]*”|"[^"]*"|‘[^’]*’/g;
    const english = (text) => {  // the first English word of a text, or null
        let rest = text.replace(/\s+/g, " ").replace(quoted, " ");
        for (const name of kept) rest = rest.replace(new RegExp(name, "gu"), " ");
        const found = rest.match(word);
        return found && found[1];
    };
    const found = [];
    const blocks = new Map();
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const parent = node.parentElement;
        if (!parent || parent.closest(skipped)) continue;
        let text = node.nodeValue;
        if (parent.closest("noscript")) {  // with scripts on, its content is raw HTML: read it as a page would
            text = new DOMParser().parseFromString(text, "text/html").body.textContent;
        }
        const block = parent.closest("p, li, dt, dd, td, th, h1, h2, h3, h4, h5, h6, figcaption, caption, " +
                                     "summary, label, button, a, option, legend, noscript, div") || parent;
        blocks.set(block, (blocks.get(block) || "") + text);
    }
    for (const [block, text] of blocks) {
        const shown = text.trim().replace(/\s+/g, " ").slice(0, 120);
        const hit = english(text);
        if (hit) found.push(`"${hit}" in <${block.tagName.toLowerCase()}> ${shown}`);
    }
    for (const el of document.body.querySelectorAll(attributes.map((a) => `[${a}]`).join(","))) {
        if (el.closest(skipped)) continue;
        const citation = el.matches("a[href*='references.html#'], a[href^='#id']");
        for (const name of attributes) {
            const value = el.getAttribute(name);
            if (!value || (name === "title" && citation)) continue;
            const hit = english(value);
            if (hit) found.push(`"${hit}" in @${name}="${value.slice(0, 120)}"`);
        }
    }
    return found;
}"""


def english_on(page, name: str = "") -> list[str]:
    """The English a loaded page shows (after its explorers are ready), outside what may stay English."""
    page.wait_for_function("() => !document.querySelector('.mgx-explorer:not([data-ready])')")
    skip = [*SKIP, *PAGE_SKIP.get(name, ())]
    return page.evaluate(FIND_ENGLISH, [list(ENGLISH_WORDS), list(KEPT), skip, list(ATTRIBUTES)])


@pytest.mark.parametrize("name", PAGES)
def test_spanish_page(name: str, server: str, browser) -> None:
    """One visit per Spanish page with all its checks: no English on screen (above); its maths typeset where
    it differs from the English page's (`catalogs.pages_with_own_maths`: the words of a `\\text{}` that is not
    a subscript are translated; elsewhere the maths is the English page's character for character,
    tests/test_translations.py, typeset by tests/test_site.py); its explorers in Spanish, recomputing
    (tests/test_site_es.py); its weight, errata and figures, axe-core's rules but the colour ones (the same
    stylesheet and markup as the English page, whose visit checks them), and its width on a phone
    (tests/site_checks.py); nothing from outside, no missing file, no console error."""
    visit = Visit(browser, f"{server}/es/{name}.html", count_bytes=True)
    try:
        found = english_on(visit.page, name)
        assert not found, f"es/{name}: English on screen ({len(found)}): {found[:6]}"
        problems = _typeset(visit.page) if name in _own_maths() else []
        if visit.page.locator("div.mgx-explorer").count():
            check_spanish_explorers(visit, name)
        problems += site_checks.reader_view(visit.page) + site_checks.weight_problems(visit.sizes)
        problems += site_checks.axe_problems(visit.page, colours=False)
        problems += site_checks.phone_problems(visit.page) + visit.problems()
    finally:
        visit.close()
    assert problems == [], f"es/{name}:\n" + "\n".join(problems)


@functools.cache
def _own_maths() -> frozenset[str]:
    own = pages_with_own_maths("es")
    assert own, "no page with translated maths: the typesetting check would check nothing"
    return frozenset(own)


def _inject(page, markup: str) -> None:
    page.evaluate("(markup) => (document.querySelector('main') || document.body)"
                  ".insertAdjacentHTML('beforeend', markup)", markup)


def test_the_detector_finds_injected_english(server: str, browser) -> None:
    """A mutant page: English injected into text, a button, an alt and an aria-label is found; the same words in
    code, an output, a quotation or the bibliography are not."""
    visit = Visit(browser, f"{server}/es/intro.html")
    try:
        assert english_on(visit.page) == []
        _inject(visit.page, '<pre>for the cache</pre><div class="cell_output">Show the output</div>'
                            '<blockquote>the source text</blockquote><p>La guía dice «the cache grows».</p>'
                            '<div class="citation">Dao and Ré, n.d.</div>')
        assert english_on(visit.page) == []
        _inject(visit.page, '<p>El caché crece con el contexto, <em>which</em> importa.</p>'
                            '<button>Repository</button><img alt="Colab logo" src="data:,">'
                            '<span aria-label="Toggle navigation">☰</span>')
        found = english_on(visit.page)
    finally:
        visit.close()
    assert len(found) == 4, found
    assert found[0].startswith('"which" in <p> El caché crece') and found[1] == '"Repository" in <button> Repository'
    assert found[2:] == ['"logo" in @alt="Colab logo"', '"Toggle" in @aria-label="Toggle navigation"']
