"""Watch the engine on the built site, in headless Chromium: a preset's run shows, step by step, what the Python
engine decides for the same trace (the fused batch, every block table, the queues, the pool's references and
free stack, the prefix tree); stepping back shows the same states again; the meters at the end equal
`minigpt.serving.meters`' summary; every control changes the run; it fits a 390 px screen, works from the
keyboard, and no request leaves the page.

The scripting time of 2,000 steps of the default trace is printed (run with -s), never asserted.
"""

from __future__ import annotations

import json
import math

import pytest
from site_browser import CHROMIUM, Visit

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
           "policy": "lpf", "model": "Llama-3-8B", "hardware": "H100 SXM", "seed": "1"}
FINGERPRINT = f"""() => {{ const w = {W}; w.show(1e9);
  return JSON.stringify([w.trace, w.engine.records.map((r) => [r.end, r.chunks, r.events, Array.from(r.free)])]); }}"""


def test_every_control_changes_the_run(watch) -> None:
    """Catches a control that is drawn but never reaches the trace or the engine."""
    page = watch.page
    fields = page.evaluate("Array.from(document.querySelectorAll('.we-form [name]')).map((e) => e.name)")
    assert sorted(fields) == sorted(CHANGES), "a control without a check here, or a check without a control"
    for name, value in CHANGES.items():
        page.evaluate(f"{W}.values = Object.assign({{}}, WatchEngine.DEFAULTS, {json.dumps(BASE)}); "
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
    timing = page.evaluate(f"{W}.values = Object.assign({{}}, WatchEngine.DEFAULTS); {W}.sync(); {W}.benchmark(2000)")
    print(f"\n2,000 steps of the default trace: the engine alone {timing['engine_ms']:.0f} ms; played at 64 steps "
          f"per frame {timing['played_ms']:.0f} ms; every step drawn {timing['rendered_ms']:.0f} ms")
    assert timing["steps"] == 2000
    assert not visit.problems(), visit.problems()
    visit.close()
