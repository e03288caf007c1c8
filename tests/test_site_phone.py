"""Every page of the built site on a 390 px phone screen, in headless Chromium: nothing makes the page scroll
sideways, and every explorer's controls and readouts lie inside its box.

One visit per page, all in one phone-sized browser context. The bugs this catches: a long inline code span
or URL in the prose that cannot break (an install line once widened the landing page to 560 px), and an
explorer whose rows keep their desktop layout (a 12em label, a track and a 7em readout) on a phone, pushing
every readout past the right edge, where the output's own scroller hides it. MiniGPT live's own phone
layout is tested by tests/test_minigpt_live_site.py.
"""

from __future__ import annotations

import pytest
from site_browser import CHROMIUM, new_context
from test_site import book_pages

pytestmark = [
    pytest.mark.site,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium "
                       "(apt-get install chromium; .ci/run does)"),
]

WIDTH = 390
PHONE = dict(viewport={"width": WIDTH, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True)

# What sticks out past the screen's right edge: the text that does (a word that cannot break), and every
# explorer control or readout past its box's right edge or the screen's.
OVERFLOW = """(width) => {
    const found = [];
    // Inside a sideways scroller of its own that fits the screen (a table's, a code block's)? (Typeset maths
    // draws no text nodes: the theme fits each equation in the column, clipping a long inline one.)
    const scrolls = (e) => {
        for (let s = e; s; s = s.parentElement) {
            const x = getComputedStyle(s).overflowX;
            if (x === "auto" || x === "scroll") return s.getBoundingClientRect().right <= width + 0.5;
        }
        return false;
    };
    const article = document.querySelector(".bd-article") || document.body;
    const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    while (walker.nextNode() && found.length < 5) {
        const node = walker.currentNode, range = document.createRange();
        // MathJax's hidden copy for screen readers (mjx-assistive-mml) is clipped to nothing.
        if (!node.textContent.trim() || node.parentElement.closest("mjx-assistive-mml")) continue;
        range.selectNodeContents(node);
        const right = Math.max(0, ...[...range.getClientRects()].map((r) => r.right));
        if (right > width + 0.5 && !scrolls(node.parentElement)) {
            found.push(`text "${node.textContent.trim().slice(0, 40)}" reaches ${Math.round(right)} px`);
        }
    }
    for (const box of document.querySelectorAll("div.mgx-explorer")) {
        const edge = Math.min(width, box.getBoundingClientRect().right) + 0.5;
        for (const e of box.querySelectorAll(".mgx-row > *, .mgx-value, svg")) {
            const r = e.getBoundingClientRect();
            if (r.width && r.right > edge) {
                const what = `${e.tagName.toLowerCase()}.${e.getAttribute("class") || ""}`;
                found.push(`${box.dataset.explorer}: ${what} "${e.textContent.trim().slice(0, 30)}" reaches `
                    + `${Math.round(r.right)} px, past ${Math.round(edge)}`);
            }
        }
    }
    return {scroll: document.documentElement.scrollWidth, found};
}"""


@pytest.fixture(scope="module")
def phone(browser):
    """One phone-sized page, visited by every test of this module in turn."""
    context = new_context(browser, **PHONE)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(f"uncaught: {err}"))
    yield page, errors
    context.close()


@pytest.mark.parametrize("name", book_pages())
def test_nothing_widens_the_page_on_a_phone(name: str, server: str, phone) -> None:
    page, errors = phone
    errors.clear()
    page.goto(f"{server}/{name}.html", wait_until="load")
    if page.locator(".math").count():  # typeset equations have their final width
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("() => MathJax.startup.promise")
    got = page.evaluate(OVERFLOW, WIDTH)
    assert got["found"] == [] and got["scroll"] <= WIDTH, f"{name}: the page is {got['scroll']} px wide: {got['found']}"
    assert errors == [], errors
