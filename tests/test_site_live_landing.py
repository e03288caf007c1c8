"""MiniGPT live on the landing page, in headless Chromium on the built site: operated from the keyboard alone,
and paced by the model, not by redrawing.

One visit of intro.html. From the prompt field, Tab reaches every control of the form in order, each with a
visible focus ring, and Enter on Generate runs a generation that gives what Python gives. Then 100 tokens
with the cache and no pause: the page redraws at most once per turn it gives the browser, and it gives the
browser a turn only after at least SLICE_MS (minigpt_live.js) of stepping, so the number of redraws is
bounded by the model's own measured time. The bug this catches: a page that redraws after every step and
waits for a frame before the next (100 cached tokens then take 100 frames and more, whatever the model
costs; it once took 5.1 s for 61-82 ms of model time). No wall time is asserted: the bound is a count of
redraws against the step times the same run measured.
"""

from __future__ import annotations

import pytest
from site_browser import CHROMIUM, Visit
from test_minigpt_live_site import fill_and_generate, python_text, wait_done

pytestmark = [
    pytest.mark.site,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]

SLICE_MS = 12  # minigpt_live.js: the least model time between two turns of the browser with no pause

# The form's controls in Tab order (Stop is disabled until a generation runs).
FORM = ["mgl-prompt", *["mgl-example"] * 4, "mgl-D", "mgl-mode", "mgl-temperature", "mgl-topk", "mgl-seed",
        "mgl-pace", "mgl-generate"]

FOCUSED = """() => {
    const e = document.activeElement, style = getComputedStyle(e);
    return {cls: e.className, visible: e.matches(":focus-visible"),
            ring: (style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0) || style.boxShadow !== "none"};
}"""


@pytest.fixture(scope="module")
def shipped():
    from minigpt import load_pretrained

    return load_pretrained()


def test_the_landing_page_runs_minigpt_from_the_keyboard_paced_by_the_model(shipped, server, browser) -> None:
    visit = Visit(browser, f"{server}/intro.html")
    page, box = visit.page, visit.page.locator("div.mgl")
    try:
        page.wait_for_selector('div.mgl[data-state="ready"]')
        box.locator("input.mgl-prompt").fill("Every day she")
        box.locator("input.mgl-D").fill("6")
        box.locator("input.mgl-prompt").focus()
        seen = [page.evaluate(FOCUSED)]
        for _ in FORM[1:]:
            page.keyboard.press("Tab")
            seen.append(page.evaluate(FOCUSED))
        assert [s["cls"] for s in seen] == FORM, "Tab order of the form"
        assert all(s["visible"] and s["ring"] for s in seen), [s for s in seen if not (s["visible"] and s["ring"])]
        page.keyboard.press("Enter")  # on Generate
        wait_done(page)
        assert box.get_attribute("data-output") == python_text(shipped, "Every day she", 6)

        page.evaluate("""() => {
            const box = document.querySelector("div.mgl");
            window.__draws = 0;
            new MutationObserver((records) => { window.__draws += records.length; })
                .observe(box, {attributes: true, attributeFilter: ["data-steps"]});
        }""")
        fill_and_generate(page, "Every day she", 100, pace="0")
        wait_done(page)
        assert box.get_attribute("data-output") == python_text(shipped, "Every day she", 100)
        # Two frames later the status still tells the run's end: no redraw left over from the run writes the
        # last step's line over it.
        page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
        status = box.locator(".mgl-status").text_content()
        assert status.startswith("Done: 100 new tokens in ") and status.endswith(" s."), status
        draws, model_ms = page.evaluate(
            "() => [window.__draws, document.querySelector('div.mgl').live.steps.reduce((a, s) => a + s.ms, 0)]")
        # reset() writes data-steps once, the last draw once; in between, one draw per turn of the browser, and a
        # turn after at least SLICE_MS of stepping (the forward passes measured here, and the sampling and
        # counting around them: hence the factor 2).
        assert draws <= 3 + 2 * model_ms / SLICE_MS, (draws, model_ms)
        assert visit.errors == [], f"console errors: {visit.errors}"
        assert visit.external == [] and visit.failed == [], (visit.external, visit.failed)
    finally:
        visit.close()
