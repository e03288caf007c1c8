"""MiniGPT live on the built site, in headless Chromium: the page generates what Python generates, its
cache view grows by one row per step, bad input gets a clear message (and the page keeps working),
it fits a 390 px phone screen, it works from file:// too, and no request leaves the page.

Screenshots go to _build/screenshots/. Timings are printed by scripts/bench/bench_browser.py, never asserted.
"""

from __future__ import annotations

import pytest
from site_browser import CHROMIUM, SCREENSHOTS, Visit, new_context

from minigpt import costs, generate, load_pretrained

PAGE = "chapters/01_minigpt_live"
pytestmark = [
    pytest.mark.site,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]


@pytest.fixture(scope="module")
def shipped():
    return load_pretrained()


PHONE = dict(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True)


def open_live(browser, url: str, **context_options) -> Visit:
    """The page, loaded and its model ready (the weights script parsed)."""
    visit = Visit(browser, url, **context_options)
    visit.page.wait_for_selector('div.mgl[data-state="ready"]')
    return visit


@pytest.fixture
def live(browser, server):
    """The page on a desktop-sized screen; closed after the test."""
    visit = open_live(browser, f"{server}/{PAGE}.html")
    yield visit
    visit.close()


def python_text(shipped, prompt: str, D: int, use_cache: bool = True) -> str:
    """What the PyTorch package generates greedily for prompt (D new tokens)."""
    return generate(shipped.model, prompt, D, use_cache=use_cache, tokenizer=shipped.tokenizer).text


def fill_and_generate(page, prompt: str, D: int, *, mode: str = "cache", temperature: str = "0",
                      top_k: str = "", seed: str = "0", pace: str = "0") -> None:
    box = page.locator("div.mgl")
    box.locator("input.mgl-prompt").fill(prompt)
    box.locator("input.mgl-D").fill(str(D))
    box.locator("select.mgl-mode").select_option(mode)
    box.locator("input.mgl-temperature").fill(temperature)
    box.locator("input.mgl-topk").fill(top_k)
    box.locator("input.mgl-seed").fill(seed)
    box.locator("select.mgl-pace").select_option(pace)
    box.locator("button.mgl-generate").click()


def wait_done(page) -> None:
    page.wait_for_selector('div.mgl[data-state="done"]')


def assert_clean(visit: Visit) -> None:
    assert visit.external == [], f"requests left the page: {visit.external}"
    assert visit.failed == [], f"requests failed: {visit.failed}"
    assert visit.errors == [], f"console errors: {visit.errors}"


@pytest.mark.parametrize("prompt, D", [("Yesterday I worked and he", 12), ("Every day she", 24)])
def test_generates_what_python_generates_and_the_cache_grows_row_by_row(prompt, D, shipped, live):
    page, box = live.page, live.page.locator("div.mgl")
    # Record the cache view's drawn rows each time they change (pace 250 ms: one change per step).
    page.evaluate("""() => {
        const cache = document.querySelector("div.mgl .mgl-cache");
        window.__rows = [];
        new MutationObserver(() => window.__rows.push(+cache.getAttribute("data-rows")))
            .observe(cache, {attributes: true, attributeFilter: ["data-rows"]});
    }""")
    fill_and_generate(page, prompt, D, pace="250")
    wait_done(page)
    expected = python_text(shipped, prompt, D)
    assert box.get_attribute("data-output") == expected
    assert box.get_attribute("data-steps") == str(D)
    P = len(shipped.tokenizer.encode(prompt))
    rows = page.evaluate("() => window.__rows.filter((r, i, a) => r > 0 && r !== a[i - 1])")
    assert rows == list(range(P, P + D)), rows  # P rows after the prefill, then one per decode step
    cache = box.locator(".mgl-cache")
    assert cache.get_attribute("data-S") == str(P + D - 1)
    c = shipped.config
    assert cache.get_attribute("data-bytes") == str(costs.kv_cache_bytes(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4,
                                                                         S=P + D - 1))
    # Every step's counts are the book's formulas (minigpt.costs), and so are the plot's totals.
    model = dict(L=c.L, d=c.d, H_kv=c.H_kv, d_h=c.d_h, d_ffn=c.d_ffn, V=c.V)
    weights = costs.weight_bytes(N_params=sum(p.numel() for p in shipped.model.parameters()), s=4)
    kv = costs.kv_bytes_per_token(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4)
    flops = [costs.prefill_flops(P=P, **model)] + [costs.decode_step_flops(S=P + t - 1, **model) for t in range(1, D)]
    moved = [weights] + [costs.decode_step_bytes(weight_bytes=weights, kv_bytes_per_token=kv, S=P + t - 1)
                         for t in range(1, D)]
    steps = box.locator("table.mgl-steps tbody tr").all()
    assert [int(r.get_attribute("data-flops")) for r in steps] == flops
    assert [int(r.get_attribute("data-bytes")) for r in steps] == moved
    plot = box.locator("svg.mgl-flops")
    assert int(plot.get_attribute("data-cached")) == costs.generation_flops(P=P, D=D, **model) == sum(flops)
    assert int(plot.get_attribute("data-uncached")) == costs.no_cache_flops(P=P, D=D, **model)
    assert box.locator("table.mgl-steps tbody tr").count() == D
    assert box.locator("table.mgl-steps tbody tr.mgl-prefill").count() == 1
    assert box.locator(".mgl-cand").count() == 5
    assert box.locator("svg.mgl-flops polyline").count() == 4
    assert expected in " ".join(box.locator(".mgl-text").text_content().split())
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    box.screenshot(path=str(SCREENSHOTS / "minigpt_live__desktop.png"))
    assert_clean(live)


def test_no_cache_mode_recomputes_and_sampling_is_seeded(shipped, live):
    page, box = live.page, live.page.locator("div.mgl")
    prompt = "Yesterday I worked and he"
    fill_and_generate(page, prompt, 20, mode="nocache")
    wait_done(page)
    assert box.get_attribute("data-output") == python_text(shipped, prompt, 20, use_cache=False)
    assert box.locator(".mgl-cache").get_attribute("data-S") == "0"
    T = [int(t) for t in box.locator("table.mgl-steps tbody tr td:nth-child(3)").all_text_contents()]
    assert T == list(range(5, 25)), T  # every step is a full forward over all P + t tokens
    c = shipped.config
    model = dict(L=c.L, d=c.d, H_kv=c.H_kv, d_h=c.d_h, d_ffn=c.d_ffn, V=c.V)
    flops = [int(r.get_attribute("data-flops")) for r in box.locator("table.mgl-steps tbody tr").all()]
    assert flops == [costs.prefill_flops(P=n, **model) for n in T]
    assert sum(flops) == costs.no_cache_flops(P=5, D=20, **model)
    outputs = []
    for seed in ("3", "3", "4"):
        fill_and_generate(page, prompt, 15, temperature="1.3", top_k="40", seed=seed)
        wait_done(page)
        outputs.append(box.get_attribute("data-output"))
    assert outputs[0] == outputs[1] != outputs[2]
    assert_clean(live)


def test_bad_input_gets_a_clear_message_and_the_page_keeps_working(shipped, live):
    page, box = live.page, live.page.locator("div.mgl")
    message = box.locator(".mgl-message")
    for prompt, D, expected in [
        ("   ", 5, "at least one prompt token"),
        ("Yesterday I wrked and he", 5, "“wrked”"),
        ("yesterday I worked.", 5, "Write “.” as its own word"),
        ("Yesterday I worked and he", 200, "S_max is 128; allowed: D <= 124"),
        (" ".join(["he"] * 130), 1, "P=130 tokens but S_max is 128"),
        ("Yesterday I worked and he", 0, "D must be an integer >= 1"),
    ]:
        fill_and_generate(page, prompt, D)
        assert message.get_attribute("data-kind") == "error"
        assert expected in message.text_content(), (prompt, D, message.text_content())
        assert box.get_attribute("data-state") == "ready"  # nothing started, nothing frozen
    fill_and_generate(page, "Yesterday I wrked and he", 5)
    suggestions = box.locator("button.mgl-suggestion").all_text_contents()
    assert suggestions[0] == "worked", suggestions
    box.locator("button.mgl-suggestion", has_text="worked").first.click()
    assert box.locator("input.mgl-prompt").input_value() == "Yesterday I worked and he"
    box.locator("input.mgl-temperature").fill("-1")
    box.locator("button.mgl-generate").click()
    assert "temperature must be a number >= 0" in message.text_content()
    fill_and_generate(page, "Yesterday I worked and he", 6)  # after all that, it still generates
    wait_done(page)
    assert message.get_attribute("data-kind") == ""
    assert box.get_attribute("data-output") == python_text(shipped, "Yesterday I worked and he", 6)
    assert_clean(live)


def test_stop_ends_a_generation_and_the_next_one_runs(shipped, live):
    page, box = live.page, live.page.locator("div.mgl")
    # 120 steps paced 250 ms apart: the click after step 3 has 29 s to land, however busy the machine.
    fill_and_generate(page, "Every day she", 120, pace="250")
    page.wait_for_function("() => +document.querySelector('div.mgl').getAttribute('data-steps') >= 3")
    box.locator("button.mgl-stop").click()
    wait_done(page)
    steps = int(box.get_attribute("data-steps"))
    assert 3 <= steps < 120 and "Stopped after" in box.locator(".mgl-status").text_content()
    assert box.locator(".mgl-cache").get_attribute("data-S") == str(3 + steps - 1)
    fill_and_generate(page, "Every day she", 4)
    wait_done(page)
    assert box.get_attribute("data-output") == python_text(shipped, "Every day she", 4)
    assert box.locator(".mgl-cache").get_attribute("data-S") == str(3 + 4 - 1)
    assert_clean(live)


def test_fits_a_phone_screen(shipped, server, browser):
    visit = open_live(browser, f"{server}/{PAGE}.html", **PHONE)
    page, box = visit.page, visit.page.locator("div.mgl")
    try:
        fill_and_generate(page, "Tomorrow the teachers will", 16)
        wait_done(page)
        assert box.get_attribute("data-output") == python_text(shipped, "Tomorrow the teachers will", 16)
        geometry = box.evaluate("""b => ({right: b.getBoundingClientRect().right, left: b.getBoundingClientRect().left,
            scroll: b.scrollWidth, client: b.clientWidth,
            button: b.querySelector(".mgl-generate").getBoundingClientRect().right})""")
        assert geometry["left"] >= 0 and geometry["right"] <= 390, geometry
        assert geometry["scroll"] <= geometry["client"], geometry  # wide parts scroll inside their own box
        assert geometry["button"] <= 390, geometry
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        box.screenshot(path=str(SCREENSHOTS / "minigpt_live__phone.png"))
        assert_clean(visit)
    finally:
        visit.close()


def test_works_from_file_urls(shipped, built_site, browser):
    """Opened from disk (file://), the page still loads its weights and generates; nothing else is requested."""
    context = new_context(browser)
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(f"uncaught: {err}"))
    try:
        page.goto((built_site / f"{PAGE}.html").as_uri(), wait_until="load")
        page.wait_for_selector('div.mgl[data-state="ready"]')
        fill_and_generate(page, "Every day she", 8)
        wait_done(page)
        assert page.locator("div.mgl").get_attribute("data-output") == python_text(shipped, "Every day she", 8)
        outside = [u for u in requests if not (u.startswith("file://") or u.startswith("data:"))]
        assert outside == [], outside
        assert any(u.endswith("minigpt-web/minigpt_weights.js") for u in requests)
        assert errors == []  # the site loads no thebe any more: no console error is expected
    finally:
        context.close()
