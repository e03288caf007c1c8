"""Every page of both editions as a reader gets it: no Markdown left raw, one numbering, what it weighs,
its figures described.

Static checks of `_build/html` and `_build/html/es` (`make book` builds both). The browser checks of each
page, what it weighs included, run in its one visit per edition (tests/test_site.py and
tests/test_site_es_english.py, with tests/site_checks.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup
from site_text import parsed, text_outside
from test_site import book_pages

from minigpt.book import sphinx_icons
from minigpt.book.sphinx_numbering import chapter_labels

ROOT = Path(__file__).resolve().parent.parent
PAGES = book_pages()
EDITIONS = ("", "es/")  # the English site's root, the Spanish one's folder in it

pytestmark = pytest.mark.site

# Where Markdown syntax is the content: code, printed output, maths, scripts.
CODE = ["pre", "code", "script", "style", ".highlight", ".math", "mjx-container", "svg"]
# A Markdown table printed as text: a rule row ("|---|", which smart quotes turn into "|—|") or a row of
# three cells; a Markdown link that was not parsed ("[Eq. (1.4)](#eq-1-4)" written inside another link).
RAW_MARKDOWN = re.compile(r"\|\s*:?[-—–]+:?\s*\||\|[^|\n]{1,200}\|[^|\n]{1,200}\||\]\(#")




def raw_markdown(html: str | BeautifulSoup) -> list[str]:
    """Markdown syntax shown as text in a page's article (outside code, output and maths), with context."""
    text = text_outside(html, CODE)
    return [text[max(0, m.start() - 40):m.end() + 40] for m in RAW_MARKDOWN.finditer(text)]


@pytest.fixture(scope="module")
def site(built_site: Path) -> Path:
    if not (built_site / "es" / "index.html").is_file():
        pytest.fail(f"{built_site / 'es'} is missing: `make book` builds both editions")
    return built_site


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("page", PAGES)
def test_no_markdown_is_left_raw(site: Path, edition: str, page: str) -> None:
    """A table printed with IPython.display.Markdown renders as a table (not as "| a | b | |---|---|"), and
    no link shows its markup (a link nested in another is left as text by the Markdown parser)."""
    found = raw_markdown(parsed(site / f"{edition}{page}.html"))
    assert not found, f"{edition}{page}: raw Markdown on the page: {found[:3]}"


def test_the_raw_markdown_check_can_fail() -> None:
    assert raw_markdown("<main><p>| quantity | prefill | |—|—| | FLOPs | 2 |</p></main>")
    assert raw_markdown("<main><p>| a | b | |---|---|</p></main>")
    assert raw_markdown("<main><p>Las sumas ([Ecs. (1.4) ](#eq-1-4) y (1.5))</p></main>")
    assert not raw_markdown('<main><p>a <a href="#eq-1-4">(1.4)</a></p><pre>"|---|---|"</pre>'
                            '<table><tr><td>a</td><td>b</td></tr></table></main>')


# --- Numbering -----------------------------------------------------------------------------------------

def top_level_pages() -> list[str]:
    """The pages `_toc.yml` lists as a part's chapters (not as a chapter's sections), in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [entry["file"] for part in toc["parts"] for entry in part["chapters"]]


LABELS = chapter_labels(top_level_pages())


def _number(text: str) -> str | None:
    """The section number a title starts with ("9. GQA" -> "9", "1.9. MiniGPT live" -> "1.9"), or None."""
    m = re.match(r"^\s*((?:\d+|[A-Z])(?:\.\d+)*)\.\s", text)
    return m.group(1) if m else None


@pytest.mark.parametrize("edition", EDITIONS)
def test_chapters_are_numbered_by_their_files_everywhere(site: Path, edition: str) -> None:
    """Chapter 11 is "11." in the sidebar and in its own title, its figures are Fig. 11.k, and no two pages
    share a number: the prose says "Chapter 11", and the exercises and appendices do not take 9, 10, 11."""
    soup = parsed(site / f"{edition}intro.html")
    sidebar = {}
    for link in soup.select(".bd-sidebar-primary nav a.reference.internal"):
        page = link["href"].split("#")[0].removesuffix(".html")
        sidebar[page] = _number(link.get_text(" ", strip=True))
    numbers = [n for n in sidebar.values() if n]
    assert len(numbers) == len(set(numbers)), f"two pages share a number: {sorted(numbers)}"
    for page in PAGES:
        if page == "intro":
            continue
        wanted = str(LABELS[page]) if page in LABELS else None
        title = parsed(site / f"{edition}{page}.html").find("title").get_text()
        if page.startswith("chapters/") and page not in LABELS:
            wanted = _number(title)  # a chapter's section page (1.9): numbered under its chapter
            assert wanted and wanted.split(".")[0] == str(int(page.split("/")[1][:2])), f"{page}: {title!r}"
        assert sidebar.get(page) == wanted, f"{edition}{page}: sidebar number {sidebar.get(page)}, not {wanted}"
        assert _number(title) == wanted, f"{edition}{page}: title {title!r}, wanted number {wanted}"
        if page in LABELS and page.startswith("chapters/"):
            for caption in parsed(site / f"{edition}{page}.html").select("span.caption-number"):
                figure = caption.get_text(" ", strip=True).split()[-1]
                assert figure.split(".")[0] == wanted, f"{page}: figure {figure} in Chapter {wanted}"


def test_exercises_carry_their_own_number_only(site: Path) -> None:
    """An exercise page is "Exercise N: ...", not "9.3. Exercise 1: ..."."""
    for page in PAGES:
        if page.startswith("exercises/ex"):
            title = parsed(site / f"{page}.html").find("title").get_text()
            assert re.match(rf"Exercise {int(page[12:14])}\b", title), f"{page}: {title!r}"


def test_labels_follow_the_files() -> None:
    labels = chapter_labels(["chapters/09_gqa_mqa", "chapters/21_latent_attention", "chapters/12_serving_engine",
                             "decoder_ring/index", "exercises/index", "appendices/notation", "appendices/glossary"])
    assert labels == {"chapters/09_gqa_mqa": 9, "chapters/21_latent_attention": 21,
                      "chapters/12_serving_engine": 12, "appendices/notation": "A", "appendices/glossary": "B"}


# --- Weight --------------------------------------------------------------------------------------------

# --- Figures and favicon ---------------------------------------------------------------------------------

@pytest.mark.parametrize("edition", EDITIONS)
def test_figures_say_what_they_show(site: Path, edition: str) -> None:
    """Every figure's image has alt text, and it is the caption's first sentence (the finding), not the
    image's file path, which Sphinx writes when none is given."""
    figures = 0
    for page in PAGES:
        for figure in parsed(site / f"{edition}{page}.html").select("main figure"):
            caption = " ".join(figure.select_one(".caption-text").get_text(" ").split())
            for image in figure.select("img"):
                figures += 1
                alt = " ".join(image.get("alt", "").split())
                assert alt and "_images/" not in alt and not re.search(r"\.(png|svg|jpe?g)$", alt), \
                    f"{edition}{page}: alt text {alt!r}"
                # (maths reads differently in the two: "X" in the alt text, "\\(X\\)" in the caption's HTML)
                assert re.findall(r"\w+", alt)[:3] == re.findall(r"\w+", caption)[:3], \
                    f"{edition}{page}: alt {alt!r} is not the caption's {caption[:80]!r}"
    assert figures >= 50, f"only {figures} figures found: the check looks in the wrong place"


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_page_has_the_favicon(site: Path, edition: str) -> None:
    for page in PAGES:
        path = site / f"{edition}{page}.html"
        icon = parsed(path).select_one('link[rel="icon"]')
        assert icon is not None, f"{edition}{page}: no favicon"
        assert (path.parent / icon["href"]).resolve().is_file(), f"{edition}{page}: {icon['href']} missing"


@pytest.mark.parametrize("edition", EDITIONS)
def test_icon_fonts_hold_every_icon_shown(site: Path, edition: str) -> None:
    """The icon fonts are cut to the icons the pages show (minigpt.book.sphinx_icons): every `fa-*` icon of a
    page, and every icon the stylesheets draw (admonition titles), is in the subset the page loads."""
    from fontTools.ttLib import TTFont

    root = site / edition
    codes = sphinx_icons.icon_codepoints((root / sphinx_icons.THEME_CSS).read_text(encoding="utf-8"))
    fonts = {}
    for stem, _family, _weight in sphinx_icons.FACES:
        path = root / sphinx_icons.WEBFONTS / f"{stem}.subset.woff"
        fonts[stem] = set(TTFont(path).getBestCmap())
        assert path.stat().st_size < 20_000, f"{path}: {path.stat().st_size} bytes, not a subset"
    shown = {codes[name] for page in PAGES
             for name in re.findall(r"\bfa-[a-z0-9-]+", (root / f"{page}.html").read_text(encoding="utf-8"))
             if name in codes}
    missing = {hex(c) for c in shown | sphinx_icons.stylesheet_glyphs(root) if not any(c in f for f in fonts.values())}
    assert len(shown) >= 10 and not missing, f"{edition}: icons missing from the subset fonts: {sorted(missing)}"
    css = (root / "_static" / sphinx_icons.ICONS_CSS).read_text(encoding="utf-8")
    assert css.count("@font-face") == len(sphinx_icons.FACES) and ".subset.woff" in css


def test_the_weight_check_can_fail() -> None:
    """The per-page weight check of every visit (tests/site_checks.py): a 1.5 MB script added to a typical
    page fails it, a page's own figures and MiniGPT's weights do not count against the shell, and a page
    over 4 MB in all fails whatever it holds."""
    from site_checks import weight_problems

    typical = {"http://127.0.0.1:1/_static/theme.css": 400_000, "http://127.0.0.1:1/_static/mathjax.js": 900_000}
    assert weight_problems(typical) == []
    assert weight_problems({}), "a visit that counted nothing passes"
    assert weight_problems({**typical, "http://127.0.0.1:1/_static/icons.js": 1_500_000})
    content = {"http://127.0.0.1:1/_images/fig%201.png": 1_200_000,
               "http://127.0.0.1:1/minigpt-web/minigpt_weights.js": 1_300_000}
    assert weight_problems({**typical, **content}) == []
    assert weight_problems({**typical, **content, "http://127.0.0.1:1/_images/big.png": 1_000_000})


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_bibliography_shows_no_latex(site: Path, edition: str) -> None:
    """The reference list as printed: no LaTeX command left as text (pybtex keeps an unknown one, "\\texttt",
    as words), and a command-line flag keeps its two hyphens ("--page-size"; pybtex turns "--" into an en
    dash unless each hyphen is braced, `{-}{-}`, in references.bib)."""
    soup = parsed(site / f"{edition}appendices/references.html")
    entries = [e.get_text(" ", strip=True) for e in soup.select("div.citation, [role=doc-biblioentry]")]
    assert len(entries) > 50, f"{edition}: {len(entries)} entries found: the check would read nothing"
    latex = [e[:120] for e in entries if re.search(r"\\[A-Za-z]+", e)]
    assert not latex, f"{edition}: LaTeX shown as text: {latex}"
    dashed = [e[:120] for e in entries if re.search(r"[–—](?:page-size|block-size|kv-cache-dtype|schedule)", e)]
    assert not dashed, f"{edition}: a flag's '--' printed as a dash: {dashed}"
