"""The Spanish site (_build/html/es) in headless Chromium: the explorers and MiniGPT live speak Spanish.

The explorers of every Spanish page show their title, labels, options, plot axes and legend from
locales/es/ui.yml, their values with Spanish numbers (decimal comma, a narrow no-break space from five digits
on); on six pages (one per family of formulas) they recompute in Spanish when a slider moves
(`check_spanish_explorers`, run in each page's one visit by tests/test_site_es_english.py; every explorer's
strings are checked against the table without a browser, in tests/test_ui_strings.py). MiniGPT live
(es/chapters/01_minigpt_live) generates what Python generates with its buttons, headings, status lines,
messages and plots in Spanish. An English page still has no table and shows the English.

Runs after `make book` (which builds both editions); skipped only without Debian's /usr/bin/chromium.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from site_browser import CHROMIUM, SCREENSHOTS, Visit
from test_site import EXPLORER_CHECKS, check_explorer
from test_ui_strings import explorer_boxes, spec_of, translated, ui_table

from minigpt import generate, load_pretrained
from minigpt.book.editions import ENGLISH_NUMBER

ROOT = Path(__file__).resolve().parent.parent
SPANISH = ROOT / "_build" / "html" / "es"
LIVE = "es/chapters/01_minigpt_live"
THIN = "\u202f"

pytestmark = [
    pytest.mark.site,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]

# English-style numbers (minigpt.book.editions.ENGLISH_NUMBER). Equation numbers ("Ec. (3.5)") keep their
# point in Spanish: texts are checked with them removed. (Outputs are also compared exactly with Python's
# text, translated.)
EQUATION = re.compile(r"(?:Ecs?\.|Eqs?\.)?\s*\(\d+\.\d+\)")


# What a box shows that a reader reads, as the page has it after explorer.js ran.
BOX_TEXTS = """(box) => ({
    title: box.querySelector(".mgx-title").innerHTML,
    labels: [...box.querySelectorAll(".mgx-row > label")].map((l) => l.innerHTML),
    options: [...box.querySelectorAll("option")].map((o) => o.textContent),
    values: [...box.querySelectorAll(".mgx-value")].map((v) => v.textContent),
    outputs: Object.fromEntries([...box.querySelectorAll("[data-output]")].map(
        (o) => [o.getAttribute("data-output"), [o.getAttribute("data-value"), o.textContent]])),
    svg: [...box.querySelectorAll("svg.mgx-plot text")].map((t) => t.textContent),
    ready: box.getAttribute("data-ready"),
    static: box.querySelectorAll(".mgx-static").length,
})"""


def _english_box(page: str, explorer_id: str) -> str:
    [box] = [b for nb, b in explorer_boxes() if nb == page + ".ipynb" and spec_of(b)["id"] == explorer_id]
    return box


def _english_shown(box: str) -> dict[str, str]:
    import html

    found = re.findall(r'data-output="([^"]+)" data-value="[^"]*">([^<]*)</span>', box)
    return {name: html.unescape(text) for name, text in found}


# The explorers moved in the browser: one per family of formulas (the same six as the English check's
# first cases). Every explorer's strings are in the table (tests/test_ui_strings.py, which also runs each
# explorer under node at its sliders' ends); here the page's script applies them, and recomputes.
RECOMPUTE = [c for c in EXPLORER_CHECKS
             if c[1] in {"prefill", "ch2-budget", "ch4-wall-clock", "ch7-batching", "ch15-flash", "ch20-tp"}]
BROWSER_PAGES = sorted({c[0] for c in RECOMPUTE})


def _typeset(page) -> list[str]:
    """The page's maths typeset by MathJax, without a TeX error: the problems found."""
    if not page.locator(".math").count():
        return []
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")
    problems = []
    if page.locator("mjx-container").count() < page.locator(".math").count():
        problems.append("maths not typeset")
    if page.locator("mjx-merror").count():
        problems.append("MathJax reports a TeX error")
    return problems


def check_spanish_explorers(visit, page: str) -> None:
    """On a loaded Spanish page with explorers (its one visit: tests/test_site_es_english.py): title, labels,
    options, axes and legend from the table; values in Spanish (the table's template and Spanish numbers
    applied to what Python printed for the notebook); no English label left. Then, on the pages of
    RECOMPUTE, the sliders move and the outputs recompute in Spanish (`_recompute`)."""
    table = ui_table()
    spanish = set(table.values())
    assert visit.page.evaluate("() => globalThis.MiniGPTStrings && MiniGPTStrings.lang") == "es"
    boxes = visit.page.locator("div.mgx-explorer").all()
    assert boxes, f"no explorer on es/{page}"
    for box in boxes:
        explorer_id = box.get_attribute("data-explorer")
        english = _english_box(page, explorer_id)
        spec = spec_of(english)
        got = box.evaluate(BOX_TEXTS)
        assert got["ready"] == "1" and got["static"] == 0, f"{explorer_id}: explorer.js did not run"
        fixed = [got["title"], *got["labels"]]
        untranslated = [t for t in fixed if t not in spanish]
        assert not untranslated, f"{explorer_id}: labels not from the table: {untranslated}"
        assert [t for t in got["options"] if re.search(r"[A-Za-z]", t) and t not in spanish] == []
        assert got["title"] != re.search(r'<div class="mgx-title">(.*?)</div>', english).group(1) \
            or table.get(got["title"]) == got["title"], f"{explorer_id}: the title stayed English"
        # Each output as Python printed it in the notebook, translated as explorer.js does.
        for name, text in _english_shown(english).items():
            shown = got["outputs"][name][1]
            assert shown == translated(text, table), (explorer_id, name, text, shown)
        for text in got["values"] + [v[1] for v in got["outputs"].values()] + got["svg"]:
            assert not ENGLISH_NUMBER.search(EQUATION.sub("", text)), f"{explorer_id}: English number in {text!r}"
        if spec["plot"]:
            plot = spec["plot"]
            for label in (plot["x_label"], plot["y_label"], *(s["label"] for s in plot["series"])):
                assert table[label] in got["svg"], f"{explorer_id}: plot label {label!r} not shown in Spanish"
    if page == "chapters/01_prefill_vs_decode":
        _thin_space(visit)
    for case in RECOMPUTE:
        if case[0] == page:
            _recompute(visit, table, *case[1:6])


def _recompute(visit, table, explorer_id, slider, fraction, output, fn) -> None:
    """A slider moved on the Spanish page: the output is Python's value (data-value as in English), shown
    as Python's formatted text translated (Spanish numbers, words from the table); the plot is redrawn."""
    box = visit.page.locator(f'div.mgx-explorer[data-explorer="{explorer_id}"]')
    svg_before = box.evaluate("(b) => b.querySelector('svg.mgx-plot') && b.querySelector('svg.mgx-plot').innerHTML")
    check_explorer(visit.page, explorer_id, slider, fraction, output, fn, lambda text: translated(text, table))
    moved = box.locator(f'[data-slider="{slider}"] .mgx-value')
    if moved.count():
        assert not ENGLISH_NUMBER.search(moved.text_content()), moved.text_content()
    if svg_before is not None:
        assert box.evaluate("(b) => b.querySelector('svg.mgx-plot').innerHTML") != svg_before, "plot not redrawn"


def _thin_space(visit) -> None:
    """Chapter 1's prefill FLOPs print "867,328 (867.3 kFLOP)" in English: "867 328 (867,3 kFLOP)" here
    (checked on the page as loaded, before any slider moves)."""
    out = visit.page.locator('div.mgx-explorer[data-explorer="prefill"] [data-output="prefill_flops"]')
    assert out.get_attribute("data-value") == "867328"
    assert out.text_content() == f"867{THIN}328 (867,3 kFLOP)"
    label = visit.page.locator('div.mgx-explorer[data-explorer="prefill"] label[for="mgx-prefill-P"]')
    assert label.inner_html() == "tokens del prompt <i>P</i>"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    visit.page.locator('div.mgx-explorer[data-explorer="prefill"]').screenshot(
        path=str(SCREENSHOTS / "es__explorer_prefill.png"))


def test_english_pages_have_no_table(server, browser):
    visit = Visit(browser, f"{server}/chapters/01_prefill_vs_decode.html")
    try:
        assert visit.page.evaluate("() => typeof globalThis.MiniGPTStrings") == "undefined"
        label = visit.page.locator('div.mgx-explorer[data-explorer="prefill"] label[for="mgx-prefill-P"]')
        assert label.inner_html() == "prompt tokens <i>P</i>"
        out = visit.page.locator('div.mgx-explorer[data-explorer="prefill"] [data-output="prefill_flops"]')
        assert out.text_content() == "867,328 (867.3 kFLOP)"
    finally:
        visit.close()


# ---- MiniGPT live ----

@pytest.fixture(scope="module")
def shipped():
    return load_pretrained()


def _open_live(browser, server):
    visit = Visit(browser, f"{server}/{LIVE}.html")
    visit.page.wait_for_selector('div.mgl[data-state="ready"]')
    return visit


def _generate(page, prompt: str, D: int, mode: str = "cache") -> None:
    box = page.locator("div.mgl")
    box.locator("input.mgl-prompt").fill(prompt)
    box.locator("input.mgl-D").fill(str(D))
    box.locator("select.mgl-mode").select_option(mode)
    box.locator("select.mgl-pace").select_option("0")
    box.locator("button.mgl-generate").click()


def test_minigpt_live_generates_with_a_spanish_interface(shipped, server, browser):
    table = ui_table()
    visit = _open_live(browser, server)
    page, box = visit.page, visit.page.locator("div.mgl")
    try:
        assert box.locator("button.mgl-generate").text_content() == "Generar"
        assert box.locator("button.mgl-stop").text_content() == "Detener"
        assert [o.text_content() for o in box.locator("select.mgl-mode option").all()] == \
            [table["with the KV cache"], table["no cache: recompute every step"]]
        heads = [th.text_content() for th in box.locator("table.mgl-steps th").all()]
        assert heads[:2] == ["paso", "fase"] and "siguiente palabra" in heads, heads
        assert box.locator("table.mgl-steps th").first.get_attribute("title") == table["0 is the prefill"]
        assert box.locator(".mgl-cache-title").first.text_content().startswith("caché KV [L, H_kv, S, d_h]")
        prompt, D = "Yesterday I worked and he", 12
        _generate(page, prompt, D)
        page.wait_for_selector('div.mgl[data-state="done"]')
        expected = generate(shipped.model, prompt, D, tokenizer=shipped.tokenizer).text
        assert box.get_attribute("data-output") == expected  # MiniGPT's own words stay English
        status = box.locator(".mgl-status").text_content()  # with the run's wall clock, in seconds
        assert re.fullmatch(rf"Hecho: {D} tokens nuevos en \d+,\d\d s\.", status), status
        phases = box.locator("table.mgl-steps tbody tr td:nth-child(2)").all_text_contents()
        assert phases == ["prefill"] + ["decodificación"] * (D - 1)
        cells = " ".join(box.locator("table.mgl-steps tbody").all_text_contents())
        assert not ENGLISH_NUMBER.search(cells), cells[:300]
        assert re.search(r"\d,\d\d ms", cells), "times are not written with a decimal comma"
        totals = box.locator(".mgl-totals").text_content()
        assert totals.startswith("Total: ") and "contados en" in totals and "Sin la caché:" in totals, totals
        assert not ENGLISH_NUMBER.search(totals), totals
        legend = box.locator("svg.mgl-flops text").all_text_contents()
        ours = [t for t in legend if t.startswith("— caché KV (esta ejecución): ")]
        assert len(ours) == 1 and ours[0].endswith(f"para D = {D}"), legend
        assert table["step (0 = prefill)"] in legend and table["cumulative FLOPs"] in legend
        assert table["measured ms per step"] in box.locator("svg.mgl-times text").all_text_contents()
        assert box.locator(".mgl-dist small").text_content() == table[
            "greedy: the most likely word is taken; probabilities are softmax(logits)"]
        assert box.locator(".mgl-cache-bytes").text_content().startswith("S = ")
        assert " filas × " in box.locator(".mgl-cache-bytes").text_content()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        box.screenshot(path=str(SCREENSHOTS / "es__minigpt_live.png"))
        # Bad input: the messages in Spanish, the page keeps working.
        _generate(page, "Yesterday I wrked and he", 5)
        message = box.locator(".mgl-message")
        assert "No están en el vocabulario de" in message.text_content() and "«wrked»: ¿quisiste decir" in \
            message.text_content(), message.text_content()
        _generate(page, prompt, 200)
        assert message.text_content().startswith("No se puede generar: D=200 no cabe:"), message.text_content()
        assert "permitido: D <= " in message.text_content()
        _generate(page, prompt, 4, mode="nocache")
        page.wait_for_selector('div.mgl[data-state="done"]')
        assert box.locator(".mgl-cache-bytes").text_content() == table[
            "No cache in this mode: every step recomputes the keys and values of all tokens and drops them."]
        assert "Con la caché:" in box.locator(".mgl-totals").text_content()
        assert visit.errors == [] and visit.external == [] and visit.failed == []
    finally:
        visit.close()
