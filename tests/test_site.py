"""The static site in headless Chromium: every page loads offline, with math typeset, widgets and
analytic explorers working, and no request leaving localhost. Screenshots go to _build/screenshots/.

Runs after `make book` (or builds the book itself when _build/html is missing). Skipped only when
Debian's /usr/bin/chromium is absent; `.ci/run` installs it, so CI always runs this.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import site_checks
import yaml
from site_browser import CHROMIUM, Visit, screenshot

from minigpt import costs
from minigpt.book import cost_scripts
from minigpt.book.explorers import evaluate_spec
from minigpt.costs.presets import HARDWARE


def _plain(value: object) -> object:
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.site,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium "
                       "(apt-get install chromium; .ci/run does)"),
]

# One output of every explorer, checked against Python after a slider moves:
# (page, explorer id, slider moved, fraction of the slider's range to move it to, output, costs function).
EXPLORER_CHECKS = [
    ("chapters/01_prefill_vs_decode", "prefill", "P", 0.7, "prefill_flops", "prefill_flops"),
    ("chapters/01_prefill_vs_decode", "prefill", "D", 0.6, "step_time", "last_decode_step_floor_s"),
    ("chapters/02_kv_cache_memory", "ch2-budget", "S", 0.8, "fit2", "memory_fit"),
    ("chapters/02_kv_cache_memory", "ch2-budget", "B", 0.5, "kv", "kv_cache_bytes"),
    ("chapters/03_decode_memory_bound", "ch3-roofline", "B", 0.6, "tdec", "roofline_time"),
    ("chapters/03_decode_memory_bound", "ch3-roofline", "P", 0.9, "ipre", "arithmetic_intensity"),
    ("chapters/04_wall_clock", "ch4-wall-clock", "P", 0.8, "share", "wall_clock"),
    ("chapters/07_batching_economics", "ch7-batching", "B", 0.9, "toks", "decode_tok_s"),
    ("chapters/07_batching_economics", "ch7-batching", "S", 0.8, "step_additive", "decode_step_time"),
    ("chapters/09_gqa_mqa", "ch9-gqa", "B", 0.7, "chips_mha", "chips_needed"),
    ("chapters/10_quantized_kv_cache", "ch10-quant", "S", 0.6, "cache_q", "kv_storage_bytes"),
    ("chapters/12_serving_engine", "ch12-static", "S", 0.3, "static", "static_batch_tok_s"),
    ("chapters/13_prefix_caching", "ch13-prefix", "S_prefix", 0.6, "hit", "prefix_hit_ttft"),
    ("chapters/14_chunked_prefill", "ch14-chunk", "T", 0.8, "mixed", "mixed_step_time"),
    ("chapters/15_flash_attention", "ch15-flash", "P", 0.8, "saving", "flash_attention_hbm_saving"),
    ("chapters/15_flash_attention", "ch15-flash", "sram", 0.9, "flash", "flash_attention_hbm_bytes"),
    ("chapters/15_flash_attention", "ch15-flash", "b", 0.3, "q_outer", "tiled_attention_hbm_bytes"),
    ("chapters/16_flash_decoding", "ch16-split", "S", 0.3, "best", "flash_decoding_best_splits"),
    ("chapters/16_flash_decoding", "ch16-split", "splits", 0.6, "speedup", "flash_decoding_speedup"),
    ("chapters/16_flash_decoding", "ch16-split", "splits", 0.4, "t_split", "flash_decoding_time"),
    ("chapters/17_speculative_decoding", "ch17-speculative", "alpha", 0.95, "best", "speculative_best_gamma"),
    ("chapters/17_speculative_decoding", "ch17-speculative", "c", 0.2, "speedup", "speculative_speedup"),
    ("chapters/17_speculative_decoding", "ch17-speculative", "B", 0.7, "tokens_B", "speculative_batch_tokens_per_pass"),
    ("chapters/18_overhead_floor", "ch18-overhead", "t_op", 0.8, "step", "overhead_step_time"),
    ("chapters/20_tensor_parallel", "ch20-tp", "alpha", 0.7, "step", "tp_replay_step_time"),
    ("chapters/20_tensor_parallel", "ch20-tp", "W", 0.5, "per_gpu", "tp_per_gpu_bandwidth"),
]
# Every explorer of the book appears above (tests/test_explorers.py finds them in the notebooks).
EXPLORER_IDS = {"prefill", "ch2-budget", "ch3-roofline", "ch4-wall-clock", "ch7-batching", "ch9-gqa"}
EXPLORER_IDS |= {"ch10-quant", "ch12-static", "ch13-prefix", "ch14-chunk"}
EXPLORER_IDS |= {"ch15-flash", "ch16-split", "ch17-speculative", "ch18-overhead"}
EXPLORER_IDS |= {"ch20-tp"}


def book_pages() -> list[str]:
    """Pages of `_toc.yml` whose source exists (docname without suffix)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    names = [toc["root"]]

    def walk(entries: list[dict]) -> None:
        for entry in entries:
            if "file" in entry:
                names.append(entry["file"])
            walk(entry.get("sections", []))
            walk(entry.get("chapters", []))

    walk(toc.get("parts", []))
    walk(toc.get("chapters", []))
    return [n for n in names if any((ROOT / (n + ext)).is_file() for ext in (".md", ".ipynb"))]


@pytest.mark.parametrize("name", book_pages())
def test_page(name: str, server: str, browser) -> None:
    """One visit per page with all its checks: maths typeset, saved widgets drawn, one search box, the
    explorers' scripts from the site and wired, a screenshot, then every EXPLORER_CHECKS row of the page,
    every explorer control driven, the page's weight, its errata and figures, its width on a phone
    (tests/site_checks.py); nothing from outside, no missing file, no console error."""
    visit = Visit(browser, f"{server}/{name}.html", count_bytes=True)
    page = visit.page
    try:
        if page.locator(".math").count():
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
            page.evaluate("() => MathJax.startup.promise")
            assert page.locator("mjx-container").count() >= page.locator(".math").count(), "math not typeset"
            assert page.locator("mjx-merror").count() == 0, "MathJax reports a TeX error"
        if page.locator('script[type="application/vnd.jupyter.widget-state+json"]').count():
            page.wait_for_selector(".jupyter-widgets")
            assert page.locator(".widget-slider, .jupyter-widgets").count() > 0
        # One search box at 1280 px (the sidebar's); the header bar repeated it before.
        visible_search = [b for b in page.locator(".search-button-field").all() if b.is_visible()]
        assert len(visible_search) == 1, f"{len(visible_search)} search boxes visible"
        assert page.locator('script[src*="thebe"], link[href*="thebe"]').count() == 0, "thebe is loaded"
        # The explorers' scripts come from the site, once, and no page carries an inline copy: i18n.js on
        # every page; explorer.js and the cost scripts its explorers call, in load order, on a page with
        # explorers, and on no other.
        static = _static_prefix(name)
        assert page.locator(f'script[src^="{static}i18n.js"]').count() == 1, "i18n.js"
        loaded = [src.split("?")[0][len(static):] for src in page.evaluate(
            "() => [...document.scripts].map(s => s.getAttribute('src') || '')") if src.startswith(static)]
        functions = cost_scripts.page_functions(page.content())
        wanted = [*cost_scripts.scripts_for(functions), "explorer.js"] if functions else []
        assert [s for s in loaded if s.startswith("costs/") or s == "explorer.js"] == wanted
        inline = page.evaluate("() => [...document.scripts].filter(s => !s.src && "
                               "/MiniGPTCosts|MiniGPTExplorer|MiniGPTI18N/.test(s.text)).length")
        assert inline == 0, "an inline copy of a cost script, i18n.js or explorer.js"
        for box in page.locator("div.mgx-explorer").all():
            assert box.get_attribute("data-ready") == "1", "explorer script did not run"
            assert box.locator(".mgx-static").count() == 0, "the static-values note stayed"
            for out in box.locator("[data-output]").all():
                assert out.get_attribute("data-error") is None, out.get_attribute("data-error")
                assert out.get_attribute("data-value"), f"{out.get_attribute('data-output')} has no value"
        screenshot(page, name.replace("/", "__"))
        # Then (after the screenshot: the sliders move) every control reaches its range from the keyboard, the
        # page's explorers recompute as Python does, the page weighs what it should and reads well, and last,
        # narrowed to a phone's width, nothing sticks out (tests/site_checks.py).
        problems = site_checks.control_problems(page)  # each control put back where it started
        for check in EXPLORER_CHECKS:
            if check[0] == name:
                check_explorer(page, *check[1:])
        problems += site_checks.reader_view(page) + site_checks.weight_problems(visit.sizes)
        problems += site_checks.axe_problems(page) + site_checks.phone_problems(page)
        assert problems == [], f"{name}:\n" + "\n".join(problems)
        assert visit.external == [], f"requests left localhost: {visit.external}"
        assert visit.failed == [], f"requests failed (missing files?): {visit.failed}"
        assert visit.errors == [], f"console errors: {visit.errors}"
    finally:
        visit.close()


def _static_prefix(name: str) -> str:
    """The relative URL of _static/ from a page's docname ("chapters/x" -> "../_static/")."""
    return "../" * name.count("/") + "_static/"


def _slider_values(box) -> dict[str, object]:
    values: dict[str, object] = {}
    for holder in box.locator("[data-slider]").all():
        raw = holder.get_attribute("data-value")
        try:
            values[holder.get_attribute("data-slider")] = json.loads(raw)
        except json.JSONDecodeError:
            values[holder.get_attribute("data-slider")] = raw  # a string option is written as itself
    return values


def _move(box, slider: str, fraction: float) -> None:
    control = box.locator(f'[data-slider="{slider}"]').locator("input, select")
    control.evaluate(
        """(input, fraction) => {
            const lo = +input.min, hi = +input.max, step = +input.step || 1;
            input.value = String(lo + Math.round(fraction * (hi - lo) / step) * step);
            input.dispatchEvent(new Event("input", {bubbles: true}));
        }""",
        fraction,
    )


def _same(expected: object, shown: str) -> bool:
    if isinstance(expected, bool) or isinstance(expected, str):
        return json.dumps(expected) == shown or expected == shown
    if isinstance(expected, dict):
        got = json.loads(shown)
        return expected.keys() == got.keys() and all(_same(v, json.dumps(got[k])) for k, v in expected.items())
    return math.isclose(float(shown), float(expected), rel_tol=1e-12)


def test_every_explorer_is_checked() -> None:
    assert {check[1] for check in EXPLORER_CHECKS} == EXPLORER_IDS
    # test_page runs a page's rows: a row whose page is not in the book would never run.
    assert {check[0] for check in EXPLORER_CHECKS} <= set(book_pages())


def check_explorer(page, explorer_id: str, slider: str, fraction: float, output: str, fn: str,
                   translate=lambda text: text) -> None:
    """One row of EXPLORER_CHECKS on a loaded page: the output shows Python's value for the sliders as they
    are, then the slider moves and the output shows Python's value for the new position, formatted as Python
    formats it (`translate`d, on a page of another edition)."""
    box = page.locator(f'div.mgx-explorer[data-explorer="{explorer_id}"]')
    assert box.count() == 1, f"explorer {explorer_id!r} not found"
    spec = json.loads(box.locator("script.mgx-spec").text_content())
    [out_spec] = [o for o in spec["outputs"] if o["name"] == output]
    assert out_spec.get("fn") == fn, f"{output} calls {out_spec.get('fn')}, not {fn}"
    shown = box.locator(f'[data-output="{output}"]')
    before = (shown.get_attribute("data-value"), shown.text_content())
    # Before this slider moves, the page shows the values Python computes for the sliders as they stand.
    initial = evaluate_spec(spec, _slider_values(box))
    assert _same(_plain(initial[output]), before[0]), (before, initial[output])
    _move(box, slider, fraction)
    values = _slider_values(box)
    expected = evaluate_spec(spec, values)[output]
    assert _same(_plain(expected), shown.get_attribute("data-value")), (values, expected)
    fmt = out_spec["fmt"]
    text = getattr(costs, fmt["fn"])(expected, **fmt["args"]) if fmt else expected
    assert shown.text_content() == translate(text), (shown.text_content(), text)
    assert (shown.get_attribute("data-value"), shown.text_content()) != before, "the output did not change"


def test_chip_select_sets_the_roofline_sliders(server, browser):
    visit = Visit(browser, f"{server}/chapters/03_decode_memory_bound.html")
    try:
        box = visit.page.locator('div.mgx-explorer[data-explorer="ch3-roofline"]')
        spec = json.loads(box.locator("script.mgx-spec").text_content())
        [hw] = [s for s in spec["sliders"] if s["name"] == "hw"]
        index = next(i for i, (label, _) in enumerate(hw["options"]) if label == "H100 SXM")
        box.locator('[data-slider="hw"] select').select_option(str(index))
        values = _slider_values(box)
        assert values["bw"] == HARDWARE["H100 SXM"].bandwidth and values["pk"] == HARDWARE["H100 SXM"].peak_flops
        ridge = box.locator('[data-output="ridge"]').get_attribute("data-value")
        assert math.isclose(float(ridge), HARDWARE["H100 SXM"].peak_flops / HARDWARE["H100 SXM"].bandwidth)
        _move(box, "bw", 0.3)  # by hand: the select says "custom"
        assert _slider_values(box)["hw"] is None
        assert visit.errors == []
    finally:
        visit.close()
