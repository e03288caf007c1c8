"""Every control of every explorer, driven from the keyboard in headless Chromium on the built site.

Driven in each page's one visit (tests/test_site.py, `test_page`, with tests/site_checks.py). Each range
slider and each select is focused and taken with the keyboard to its first position (Home) and its last
(End), then set to its middle position; at each the slider must show the value its spec declares (its `min`
and `max`, its first and last option, a middle value strictly between), the focused control must show a
visible focus ring, and moving the control must change at least one output (or, for the slider a plot
sweeps, the plot), and the plot's texts (tick labels, axis titles, legend) must lie inside the picture with
no two overlapping. The bugs this catches: a control that does not move (a log slider whose step is wider
than its range snaps every position to its minimum, Chapter 20's α once did), one that never reaches an end
of its range, one wired to nothing, a control the keyboard cannot operate, a focus ring removed by a style,
and tick labels written over the axis title or cut off at the plot's edge (Chapters 1, 3 and 7 had both).
MiniGPT live's form: every control is reached by Tab with a visible focus ring, and Generate works from the
keyboard.

The values each position computes are checked against Python by tests/test_site.py (EXPLORER_CHECKS).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from site_browser import CHROMIUM, Visit

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.site,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium "
                       "(apt-get install chromium; .ci/run does)"),
]


def explorer_pages() -> list[str]:
    """The pages (docnames) whose committed notebook outputs hold an explorer."""
    return sorted(
        str(nb.relative_to(ROOT).with_suffix(""))
        for folder in ("chapters", "exercises", "decoder_ring")
        for nb in (ROOT / folder).glob("*.ipynb")
        if 'class=\\"mgx-explorer\\"' in nb.read_text(encoding="utf-8")
    )


def test_every_explorer_page_is_visited() -> None:
    """The controls are driven in each page's one visit (tests/test_site.py, `test_page`, through
    tests/site_checks.py): a page with explorers that the book's table of contents left out would be
    driven by no test."""
    from test_site import book_pages

    assert explorer_pages(), "no page with explorers found: the check would drive nothing"
    assert set(explorer_pages()) <= set(book_pages())


# The colours an explorer is read in: the first opaque background behind it, its text's colour, and the
# stroke of its plot's gridlines, each as a relative luminance (WCAG: 0 black, 1 white).
COLOURS = """(box) => {
    const lum = (css) => {
        const [r, g, b] = css.match(/[\\d.]+/g).slice(0, 3).map((v) => +v / 255)
            .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    let e = box;
    while (e && /rgba\\(.*, 0\\)|transparent/.test(getComputedStyle(e).backgroundColor)) e = e.parentElement;
    const grid = box.querySelector("svg .mgx-grid");
    return {background: lum(getComputedStyle(e || document.body).backgroundColor),
            text: lum(getComputedStyle(box.querySelector(".mgx-out")).color),
            grid: grid ? lum(getComputedStyle(grid).stroke) : null};
}"""


def test_explorers_follow_the_dark_theme(server: str, browser) -> None:
    """In the dark theme an explorer sits on the page's dark background, its text light enough to read (a
    contrast ratio of at least 4.5, WCAG AA) and its gridlines dim. The bug: the notebook output that holds
    it kept the light background the theme gives HTML outputs, a light box in a dark page."""
    visit = Visit(browser, f"{server}/chapters/03_decode_memory_bound.html", color_scheme="dark")
    try:
        assert visit.page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        for box in visit.page.locator("div.mgx-explorer").all():
            c = box.evaluate(COLOURS)
            assert c["background"] < 0.1, f"the explorer's background is light (luminance {c['background']:.2f})"
            assert (c["text"] + 0.05) / (c["background"] + 0.05) >= 4.5, c
            assert c["grid"] is None or c["grid"] < 0.2, f"bright gridlines on a dark plot: {c}"
        assert visit.errors == [], f"console errors: {visit.errors}"
    finally:
        visit.close()


def test_axe_reports_what_it_must(server: str, browser) -> None:
    """The accessibility check of every page (`site_checks.axe_problems`, axe-core) on a built page with four
    defects written in: an image with no alt text, a button with no name, grey text too faint to read, and
    an explorer plot whose name was dropped. Each is reported by its rule (the check would pass every page if
    axe never ran, or ran on an empty document; the page as built passes, in tests/test_site.py). The Spanish
    pages' run (`colours=False`) still reports the three that are not colours, and not the faint text."""
    import site_checks

    visit = Visit(browser, f"{server}/chapters/03_decode_memory_bound.html")
    try:
        page = visit.page
        page.evaluate("""() => {
          const a = document.querySelector("article");
          a.insertAdjacentHTML("afterbegin", '<img src="../_static/favicon.svg"><button></button>' +
            '<p style="color:#bbb;background:#fff">faint</p>');
          document.querySelector("svg.mgx-plot").removeAttribute("aria-label");
        }""")
        found = " ".join(site_checks.axe_problems(page))
        for rule in ("image-alt", "button-name", "color-contrast", "svg-img-alt"):
            assert f"axe {rule} " in found, (rule, found)
        found = " ".join(site_checks.axe_problems(page, colours=False))
        for rule in ("image-alt", "button-name", "svg-img-alt"):
            assert f"axe {rule} " in found, (rule, found)
        assert "axe color-contrast " not in found, found
    finally:
        visit.close()
