"""Watch the engine on the built site, in headless Chromium: a preset's run shows, step by step, what the Python
engine decides for the same trace (the fused batch, every block table, the queues, the pool's references and
free stack, the prefix tree); stepping back shows the same states again; the meters at the end equal
`minigpt.serving.meters`' summary; every control changes the run; it fits a 390 px screen, works from the
keyboard, and no request leaves the page. With MiniGPT's own tokens, the text each request shows at a step is
what the Python engine's MiniGPT has generated for it by that step.

The scripting time of 2,000 steps of the default trace, and of the runs with MiniGPT's own tokens, is printed
(run with -s), never asserted.
"""

from __future__ import annotations

import json
import math

import pytest
from site_browser import CHROMIUM, Visit
from site_checks import axe_problems
from test_engine_js import MARGIN, smallest_margins

from minigpt import load_pretrained
from minigpt.serving.schedule_log import run_schedule

PAGE = "decoder_ring/watch_engine"
pytestmark = [
    pytest.mark.site,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium"),
]
PHONE = dict(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True)

# The page's views as plain data (each view keeps what it draws in data- attributes).
VIEWS = """() => {
  const box = document.querySelector("[data-watch-engine]"), q = (s) => box.querySelector(s);
  const ids = (s) => (q(s).dataset.ids || "").split(" ").filter(Boolean);
  const tables = {};
  for (const li of box.querySelectorAll(".we-tables li[data-rid]")) {
    tables[li.dataset.rid] = li.dataset.blocks.split(" ").filter(Boolean).map(Number);
  }
  return {step: +box.dataset.step, chunks: q(".we-batch").dataset.chunks, tables, waiting: ids(".we-waiting"),
    swapped: ids(".we-swapped"), free: q(".we-free").dataset.free, refs: q(".we-pool").dataset.refs,
    tree: q(".we-tree").dataset.tree || ""};
}"""
W = "WatchEngine.instances[0]"


def expected(rec: dict, step: int) -> dict:
    """What the views must show for Python's record of step `step`."""
    return {"step": step, "chunks": " ".join(f"{rid}:{T}" for rid, T, _ in rec["chunks"]), "tables": rec["tables"],
            "waiting": rec["waiting"], "swapped": rec["swapped"], "free": " ".join(map(str, rec["free"])),
            "refs": " ".join(map(str, rec["refs"])), "tree": " ".join(f"{b}<{p}" for b, p, _ in rec["tree"])}


@pytest.fixture
def watch(browser, server):
    visit = Visit(browser, f"{server}/{PAGE}.html")
    visit.page.wait_for_function("window.WatchEngine && WatchEngine.instances.length === 1")
    yield visit
    visit.close()


def python_run(page) -> dict:
    """The Python engine's run of the trace and settings the page holds now."""
    trace, settings = page.evaluate(f"[{W}.trace, {W}.settings()]")
    return run_schedule(trace, settings)


@pytest.mark.parametrize("preset", ["preempt", "prefix"])
def test_a_preset_shows_what_the_python_engine_decides_step_by_step(watch, preset: str) -> None:
    """Catches a view that draws another step's state or misreads a record (a table, a queue, the free stack,
    the tree), a control the page does not pass to the engine, and step back showing a state not recorded."""
    page = watch.page
    page.click(f"[data-preset={preset}]")
    assert page.inner_text(".we-note").strip()  # the preset says what to watch
    py = python_run(page)
    steps = py["steps"]
    kinds = {e[1] for s in steps for e in s["events"]}
    assert ("recompute" if preset == "preempt" else "hit") in kinds, f"preset {preset} never shows its point: {kinds}"
    for k in range(1, 13):  # the buttons
        page.click(".we-forward")
        assert page.evaluate(VIEWS) == expected(steps[k], k)
    page.focus("[data-watch-engine]")
    for k in range(13, 16):  # the keyboard
        page.keyboard.press("ArrowRight")
        assert page.evaluate(VIEWS) == expected(steps[k], k)
    interesting = [i for i, s in enumerate(steps) if s["events"]][:6] + [len(steps) // 2, len(steps) - 1]
    for k in interesting:
        page.evaluate(f"{W}.show({k})")
        assert page.evaluate(VIEWS) == expected(steps[k], k), f"step {k} of {len(steps)}"
    summary = json.loads(page.get_attribute(".we-summary", "data-summary"))  # at the last step: every request
    for key, value in py["summary"].items():
        got = summary.get(key)
        assert (math.isnan(value) and got is None) or math.isclose(value, got, rel_tol=1e-9), key
    for k in range(len(steps) - 2, len(steps) - 6, -1):  # step back: the recorded states again
        page.click(".we-back")
        assert page.evaluate(VIEWS) == expected(steps[k], k)
    assert not watch.problems(), watch.problems()


# A base with pressure on the pool, shared prompts and a budget, so that every control has something to change.
BASE = {"n": 60, "rate": 30, "P_lo": 64, "D_lo": 64, "num_blocks": 64, "systems": 2, "prefix_caching": True}
CHANGES = {"rate": "60", "n": "40", "P_lo": "32", "P_hi": "200", "D_lo": "32", "D_hi": "200", "systems": "1",
           "system_len": "32", "num_blocks": "80", "block_size": "8", "budget": "128", "max_batch": "4",
           "preemption": "swap", "reservation": "max_tokens", "watermark": "10", "prefix_caching": False,
           "policy": "lpf", "model": "Llama-3-8B", "hardware": "H100 SXM", "seed": "1", "tokens": True}
# The mode "MiniGPT's own tokens" runs only for MiniGPT, a small trace and a small token budget.
TEXT_BASE = {**BASE, "model": "MiniGPT", "n": 12, "rate": 1e6, "P_lo": 8, "P_hi": 40, "D_lo": 8, "D_hi": 40,
             "system_len": 16, "budget": 64}
FINGERPRINT = f"""() => {{ const w = {W}; w.show(1e9);
  return JSON.stringify([w.trace, w.engine.records.map((r) => [r.end, r.chunks, r.events, Array.from(r.free)])]); }}"""


def test_every_control_changes_the_run(watch) -> None:
    """Catches a control that is drawn but never reaches the trace or the engine."""
    page = watch.page
    fields = page.evaluate("Array.from(document.querySelectorAll('.we-form [name]')).map((e) => e.name)")
    assert sorted(fields) == sorted(CHANGES), "a control without a check here, or a check without a control"
    for name, value in CHANGES.items():
        base = TEXT_BASE if name == "tokens" else BASE
        page.evaluate(f"{W}.values = Object.assign({{}}, WatchEngine.DEFAULTS, {json.dumps(base)}); "
                      f"{W}.sync(); {W}.rebuild()")
        before = page.evaluate(FINGERPRINT)
        field = page.locator(f".we-form [name={name}]")
        if isinstance(value, bool):
            field.set_checked(value)
        elif field.evaluate("(e) => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
            field.dispatch_event("change")
        if name == "tokens":  # MiniGPT's weights load first
            page.wait_for_function(f"{W}.text !== null && {W}.text !== undefined")
        assert page.evaluate(FINGERPRINT) != before, f"changing {name} to {value} left the run as it was"
    assert not watch.problems(), watch.problems()


def test_phone_keyboard_and_play(browser, server) -> None:
    """Catches a page wider than a phone, a preset or play that the keyboard cannot reach, and play that never
    stops at the end; prints the scripting time of 2,000 steps (never asserted)."""
    visit = Visit(browser, f"{server}/{PAGE}.html", **PHONE)
    page = visit.page
    page.wait_for_function("window.WatchEngine && WatchEngine.instances.length === 1")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.focus("[data-preset=stall]")
    page.keyboard.press("Enter")
    assert "token budget" in page.inner_text(".we-note")
    page.select_option("select[name=speed]", "64")
    page.focus(".we-play")
    page.keyboard.press("Enter")
    page.wait_for_function(f"!{W}.playing")  # it stops by itself at the last step
    assert page.evaluate(f"{W}.cursor === {W}.engine.records.length - 1 && !{W}.engine.busy")
    page.focus("[data-preset=text]")  # MiniGPT's own tokens: the text view fits the phone too
    page.keyboard.press("Enter")
    page.wait_for_function(f"{W}.text && {W}.show(40) === 40")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    timing = page.evaluate(f"{W}.values = Object.assign({{}}, WatchEngine.DEFAULTS); {W}.sync(); {W}.benchmark(2000)")
    print(f"\n2,000 steps of the default trace: the engine alone {timing['engine_ms']:.0f} ms; played at 64 steps "
          f"per frame {timing['played_ms']:.0f} ms; every step drawn {timing['rendered_ms']:.0f} ms")
    assert timing["steps"] == 2000
    assert not visit.problems(), visit.problems()
    visit.close()


# The text view as plain data: [request, state, the generated words it holds, the text it shows].
TEXTS = """() => Array.from(document.querySelectorAll(".we-texts li[data-rid]")).map((li) =>
  [li.dataset.rid, li.dataset.state, li.dataset.generated, li.textContent])"""
# The whole run of the page's settings, step by step, timed: total and longest step (ms), tokens fed to MiniGPT.
TIMED = f"""() => {{ const w = {W}; w.rebuild(); const e = w.engine; let longest = 0; const t0 = performance.now();
  while (e.busy) {{ const t = performance.now(); e.step(); longest = Math.max(longest, performance.now() - t); }}
  return {{steps: e.records.length, ms: performance.now() - t0, longest_ms: longest, fed: w.text.fed}}; }}"""


def test_minigpt_own_tokens_show_the_python_engines_text(watch) -> None:
    """Catches a token the page computes otherwise than the Python engine serving the same trace with the shipped
    MiniGPT (greedy), a text view that shows another step's words, drops a running request or restarts the text
    of a preempted one, a schedule the real tokens change (prefix keys hash them), and a text view axe-core finds
    serious faults in; prints how long runs with MiniGPT's own tokens take in Chromium (never asserted)."""
    page = watch.page
    page.click("[data-preset=text]")
    page.wait_for_function(f"{W}.text && {W}.engine.settings.tokens === 'minigpt'")
    assert page.evaluate(f"getComputedStyle({W}.textSection).display") != "none"
    trace, settings = page.evaluate(f"[{W}.trace, {W}.settings()]")
    py = run_schedule(trace, settings)
    steps, requests = py["steps"], py["requests"]
    kinds = {e[1] for s in steps for e in s["events"]}
    assert {"recompute", "hit"} <= kinds, kinds
    pretrained = load_pretrained()
    tokens = {rid: r["tokens"] for rid, r in requests.items()}
    near = {rid: m for rid, m in smallest_margins(pretrained.model, trace, tokens).items() if m <= MARGIN}
    assert not near, f"a near tie that rounding could flip: {near}"

    def by(rid: str, k: int) -> list[int]:  # the tokens request rid has generated by the end of step k
        return tokens[rid][:sum(t <= steps[k]["end"] for t in requests[rid]["token_s"])]

    recomputes = [i for i, s in enumerate(steps) if any(e[1] == "recompute" for e in s["events"])]
    hits = [i for i, s in enumerate(steps) if any(e[1] == "hit" for e in s["events"])]
    check = sorted({1, 5, *hits[:2], *(i + d for i in recomputes[:3] for d in (0, 1, 4)), len(steps) // 2,
                    len(steps) - 1} & set(range(len(steps))))
    preempted_seen = 0
    for k in [*check, *reversed(check[:-1])]:  # forward, then back over steps already run
        page.evaluate(f"{W}.show({k})")
        rows = page.evaluate(TEXTS)
        assert [r[0] for r in rows if r[1] == "running"] == list(steps[k]["tables"]), f"step {k}"
        queued = [rid for rid in steps[k]["waiting"] + steps[k]["swapped"] if by(rid, k)]
        assert [r[0] for r in rows if r[1] == "preempted"] == queued, f"step {k}"
        preempted_seen += len(queued)
        done = [rid for rid in requests if len(by(rid, k)) == len(tokens[rid])]
        shown = [r[0] for r in rows if r[1] == "finished"]
        assert set(shown) <= set(done) and len(shown) == min(12, len(done)), f"step {k}"
        for rid, _, generated, text in rows:
            want = pretrained.tokenizer.decode(by(rid, k))
            assert generated == want, f"step {k}, {rid}: the page shows {generated!r}, Python generated {want!r}"
            assert want in text and pretrained.tokenizer.decode(trace[int(rid[1:])]["prompt"]) in text
    assert preempted_seen, "no preempted request with text was shown"
    page.evaluate(f"{W}.show({len(steps) // 2})")
    assert not axe_problems(page), axe_problems(page)  # the text view as a reader meets it
    for preset, extra in (("text", {}), ("limit", {"n": 100, "budget": 64, "P_lo": 8, "P_hi": 64, "D_lo": 16,
                                                   "D_hi": 64, "num_blocks": 64, "max_batch": 16})):
        page.evaluate(f"{W}.values = Object.assign({W}.values, {json.dumps(extra)}); {W}.sync()")
        timing = page.evaluate(TIMED)
        print(f"\nMiniGPT's own tokens, {preset} ({timing['steps']} steps, {timing['fed']} tokens fed): the whole "
              f"run {timing['ms']:.0f} ms in Chromium, the longest step {timing['longest_ms']:.1f} ms")
    assert not watch.problems(), watch.problems()
