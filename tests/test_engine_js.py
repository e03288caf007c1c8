"""minigpt/web/engine/ (the page "Watch the engine") decides exactly what minigpt/serving/ decides.

For seeded traces drawn by the twin's own generator (`MiniGPTEngine.trace`), node runs the JavaScript engine
and Python runs `Engine.replay` on the same requests (`minigpt.serving.schedule_log`); every step's schedule
must be identical, field by field: the chunks (request, T, tokens computed before), every block table,
the waiting and swapped queues, preemptions (and how), prefix hits, reference counts, the free stack, the
prefix tree with each block's last use, the host blocks, the clock; and the meters equal within rounding.
Each trace must exercise what it is there for (a trace with no preemption would check nothing about it).

With MiniGPT's own tokens (the page's mode: prompts of corpus text, every token computed by minigpt_forward.js,
greedy, `minigpt/web/engine/minigpt_tokens.js`) Python serves the same trace with the shipped MiniGPT (`tokens=
"minigpt"`): the tokens of every request must be identical, and so the schedule, whose prefix keys hash them.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from node import NODE, WEB, run_node
from test_minigpt_js import TOL

from minigpt import MiniGPT, Pretrained, load_pretrained
from minigpt.book.web_export import ENGINE_TWIN, export_web_assets
from minigpt.costs.presets import HOST_LINKS
from minigpt.serving.schedule_log import SETTINGS, run_schedule

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed; the engine twin is checked with node")

DRIVER = """
const [web, files] = [process.argv[1], JSON.parse(process.argv[2])];
for (const f of files) require(web + "/" + f);
const E = globalThis.MiniGPTEngine;
const job = JSON.parse(require("fs").readFileSync(0, "utf8"));
const model = job.weights ? MiniGPTForward.loadModel(require(job.weights)) : null;  // MiniGPT's own tokens
const trace = model ? E.textTrace(job.trace, model) : E.trace(job.trace);
let log;
try {
  const steps = job.max_steps === null ? undefined : job.max_steps;
  log = E.runSchedule(trace, job.settings, steps, model ? new E.MiniGPTTokens(model) : undefined);
} catch (err) {
  process.stdout.write(JSON.stringify({error: err.message}));
  process.exit(0);
}
process.stdout.write(JSON.stringify({trace, log, links: E.HOST_LINKS, settings: E.SETTINGS}));
"""

TRACE = dict(n=40, rate=40.0, P=[8, 60], D=[4, 48], systems=3, system_len=32)
# name -> (trace options, engine settings, what the trace must exercise)
CASES: dict[str, tuple[dict, dict, set[str]]] = {
    "recompute-prefix-fcfs": ({**TRACE, "seed": 1}, dict(num_blocks=20, prefix_caching=True),
                              {"recompute", "hit", "eviction"}),
    "swap-small-host": ({**TRACE, "seed": 2}, dict(num_blocks=16, preemption="swap", swap_blocks=4,
                                                   model="Llama-3-8B", hardware="H100 SXM", swap_overlap=False),
                        {"swap", "recompute"}),
    "lpf-chunked-evicting": ({**TRACE, "seed": 3, "systems": 4}, dict(num_blocks=24, prefix_caching=True,
                                                                     cache_aware=True, chunk_size=32),
                             {"hit", "eviction", "chunk", "reorder"}),
    "chunked-decodes": ({**TRACE, "seed": 4, "P": [40, 200], "systems": 0},
                        dict(num_blocks=64, chunk_size=48, max_batch=6), {"chunk"}),
    "watermark-max-tokens": ({**TRACE, "seed": 5}, dict(num_blocks=40, reservation="max_tokens", watermark=0.1,
                                                        chunk_size=64), {"watermark"}),
    "s-max-minigpt": ({**TRACE, "seed": 6, "P": [4, 40], "D": [4, 40], "system_len": 16},
                      dict(num_blocks=40, block_size=8, reservation="S_max", model="MiniGPT", hardware="A100 40GB"),
                      set()),
    "repeats-copy-on-write": ({**TRACE, "seed": 10, "repeats": 0.4, "systems": 0, "rate": 10.0},
                              dict(num_blocks=48, block_size=4, prefix_caching=True, chunk_size=32),
                              {"hit", "cow", "recompute", "eviction"}),
    "swap-prefix-lpf-watermark": ({**TRACE, "seed": 7, "rate": 60.0},
                                  dict(num_blocks=24, prefix_caching=True, cache_aware=True, chunk_size=64,
                                       preemption="swap", watermark=0.05, host_link="PCIe Gen5 x16"),
                                  {"swap", "hit", "eviction"}),
}


def run_js(trace: dict, settings: dict, web: Path = WEB, weights: Path | None = None,
           max_steps: int | None = None) -> dict[str, Any]:
    job = json.dumps({"trace": trace, "settings": settings, "weights": str(weights) if weights else None,
                      "max_steps": max_steps})
    return run_node(DRIVER, job, str(web), json.dumps(list(ENGINE_TWIN)))  # type: ignore[return-value]


def test_both_engines_refuse_a_run_past_the_step_limit_alike() -> None:
    """A run that has not ended after `max_steps` steps is an error in both, with the same words, not a schedule
    silently cut short in the browser's twin while Python refuses it. Catches the limit dropped from either side,
    or moved by one (the run below ends in exactly `n` steps: `n` passes, `n - 1` is refused)."""
    opts, settings, _ = CASES["chunked-decodes"]
    js = run_js(opts, settings)
    n = len(js["log"]["steps"])
    trace = js["trace"]
    assert run_js(opts, settings, max_steps=n)["log"]["steps"] == js["log"]["steps"]
    assert first_difference(run_schedule(trace, {**settings}, max_steps=n), js["log"]) is None
    refused = run_js(opts, settings, max_steps=n - 1)
    with pytest.raises(ValueError) as python:
        run_schedule(trace, {**settings}, max_steps=n - 1)
    assert refused == {"error": str(python.value)} == {"error": f"the run did not end within max_steps={n - 1} steps"}


def first_difference(py: dict[str, Any], js: dict[str, Any]) -> str | None:
    """The first step (and field) where the two schedules differ, described; None if they are identical."""
    for i, (a, b) in enumerate(zip(py["steps"], js["steps"], strict=False)):
        for field in a:
            if a[field] != b.get(field):
                return (f"step {i} (t = {a['start']:.6f} s), field {field!r}:\n  Python: {a[field]}\n  JS:     "
                        f"{b.get(field)}\n  chunks there: Python {a['chunks']}, JS {b['chunks']}")
    if len(py["steps"]) != len(js["steps"]):
        return f"Python ran {len(py['steps'])} steps, JS {len(js['steps'])}"
    return None


def exercised(log: dict[str, Any], trace: list[dict], block_size: int = 16) -> set[str]:
    """What a run exercised: preemption kinds, hits, evictions, chunked prompts, a waiting queue reordered, and
    copy-on-write (a hit that ends inside a block: its shared last block is copied on the first write)."""
    seen = {e[1] for s in log["steps"] for e in s["events"]}
    if any(e[1] == "hit" and e[2] % block_size for s in log["steps"] for e in s["events"]):
        seen.add("cow")
    if log["steps"][-1]["evictions"]:
        seen.add("eviction")
    P = {r["id"]: len(r["prompt"]) for r in trace}
    for s in log["steps"]:
        if any(T > 1 and T + done < P[rid] for rid, T, done in s["chunks"]):
            seen.add("chunk")
        order = [int(r[1:]) for r in s["waiting"]]
        if order != sorted(order):
            seen.add("reorder")
    return seen


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_js_engine_schedules_every_step_as_python(name: str) -> None:
    """Catches any decision of the twin that differs: admission order, the budget, chunk lengths, block growth,
    copy-on-write, which request is preempted and how, swap-in timing, hits, LRU eviction, the watermark."""
    trace_opts, settings, wanted = CASES[name]
    js = run_js(trace_opts, settings)
    py = run_schedule(js["trace"], settings)
    diff = first_difference(py, js["log"])
    assert diff is None, f"{name}: the schedules differ at {diff}"
    seen = exercised(py, js["trace"], settings.get("block_size", 16))
    if "watermark" in wanted and first_difference(run_schedule(js["trace"], {**settings, "watermark": 0.0}), py):
        seen.add("watermark")  # the watermark held an admission back: without it the schedule differs
    missing = wanted - seen
    assert not missing, f"{name}: the trace never exercised {missing}; pick a seed or settings that do"
    for rid, r in py["requests"].items():
        j = js["log"]["requests"][rid]
        assert (r["status"], r["preemptions"], r["swaps"], r["cached_tokens"]) == (
            j["status"], j["preemptions"], j["swaps"], j["cached_tokens"]), rid
        assert len(r["token_s"]) == len(j["token_s"]) and r["tokens"] == j["tokens"]
        assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(r["token_s"], j["token_s"], strict=True)), rid
    for key, value in py["summary"].items():
        assert math.isclose(value, js["log"]["summary"][key], rel_tol=1e-12) or (
            math.isnan(value) and js["log"]["summary"][key] is None), f"{name}: meter {key}"


def test_the_twin_links_and_settings_are_pythons() -> None:
    """Catches a host link's bandwidth copied wrong (swap times) or a default that drifted from schedule_log's."""
    js = run_js({"n": 1, "rate": 1.0, "P": [1, 1], "D": [1, 1]}, {})
    assert js["links"] == {name: link.bandwidth_per_direction for name, link in HOST_LINKS.items()}
    assert js["settings"] == SETTINGS


MUTANTS = {
    "eviction order (most recently used leaf first)": (
        "engine/prefix_cache.js", "if (heap[i][0] < heap[k][0]) k = i;", "if (heap[i][0] > heap[k][0]) k = i;",
        "recompute-prefix-fcfs"),
    "budget rule (decodes not charged to the token budget)": (
        "engine/scheduler.js", "chunks.push({ t: t, T: T }); budget -= T;",
        "chunks.push({ t: t, T: T }); if (T > 1) budget -= T;", "chunked-decodes"),
    "copy-on-write (a shared last block written in place)": (
        "engine/core.js", "if (S % b && this.allocator.refs[table[table.length - 1]] > 1) {\n        const old",
        "if (false) {\n        const old", "repeats-copy-on-write"),
}


def mutant_web(tmp_path: Path, path: str, old: str, new: str) -> Path:
    """A copy of minigpt/web with `old` replaced by `new` in `path` (the line must be there once)."""
    web = tmp_path / "web"
    shutil.copytree(WEB, web)
    source = (web / path).read_text(encoding="utf-8")
    assert source.count(old) == 1, f"the mutant's line is gone from {path}: update the mutants"
    (web / path).write_text(source.replace(old, new), encoding="utf-8")
    return web


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_the_comparison_catches_a_mutant_twin(mutant: str, tmp_path: Path) -> None:
    """The equality test is not vacuous: a twin that evicts in the wrong order, lets decodes ride outside the
    token budget, or writes into a shared block, produces a different schedule on the traces above."""
    path, old, new, case = MUTANTS[mutant]
    trace_opts, settings, _ = CASES[case]
    js = run_js(trace_opts, settings, mutant_web(tmp_path, path, old, new))
    assert first_difference(run_schedule(js["trace"], settings), js["log"]) is not None


# MiniGPT's own tokens: a trace of corpus text on a small pool (preemptions by recompute), two shared system prompts
# (prefix hits), requests a microsecond apart (MiniGPT's predicted step is shorter) so that up to six share a batch.
TEXT_CASES: dict[str, tuple[dict, dict, set[str]]] = {
    "minigpt-text-recompute-prefix": (
        dict(n=10, rate=1e6, P=[8, 48], D=[16, 48], systems=2, system_len=20, seed=0),
        dict(model="MiniGPT", num_blocks=12, block_size=8, prefix_caching=True, max_batch=6, tokens="minigpt"),
        {"recompute", "hit"}),
    "minigpt-text-swap-chunked": (
        dict(n=8, rate=1e6, P=[8, 48], D=[16, 48], systems=1, system_len=24, seed=11),
        dict(model="MiniGPT", num_blocks=16, block_size=8, prefix_caching=True, max_batch=6, chunk_size=16,
             preemption="swap", tokens="minigpt"),
        {"swap", "hit", "chunk"}),
}
#: Above this gap between the two largest logits, no rounding of the JavaScript forward can change the argmax:
#: its logits are within TOL of PyTorch's (test_minigpt_js.TOL, checked there), so two logits move by 2·TOL at most.
MARGIN = 2 * TOL


@pytest.fixture(scope="module")
def shipped() -> Pretrained:
    return load_pretrained()


@pytest.fixture(scope="module")
def weights(shipped: Pretrained, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniGPT's weights and sentences as the site ships them (`minigpt.book.web_export`)."""
    return export_web_assets(tmp_path_factory.mktemp("web"), shipped)


def smallest_margins(model: MiniGPT, trace: list[dict], tokens: dict[str, list[int]]) -> dict[str, float]:
    """Each request's smallest gap between PyTorch's two largest logits over the positions that chose its tokens
    (one plain forward of its prompt and tokens; each chosen token must be that position's argmax)."""
    out = {}
    for r in trace:
        out_tokens = tokens[r["id"]]
        with torch.no_grad():
            logits = model(torch.tensor([[*r["prompt"], *out_tokens[:-1]]]))[0, len(r["prompt"]) - 1:]
        assert logits.argmax(-1).tolist() == out_tokens, f"{r['id']}: a token is not PyTorch's greedy choice"
        top = logits.topk(2, dim=-1).values
        out[r["id"]] = (top[:, 0] - top[:, 1]).min().item()
    return out


@pytest.mark.parametrize("name", sorted(TEXT_CASES))
def test_minigpt_own_tokens_are_pythons_and_so_is_the_schedule(name: str, weights: Path, shipped: Pretrained) -> None:
    """Catches a token the JavaScript executor computes from the wrong position or from a context that lost a
    token, a preempted request whose text restarts, a token that depends on the batch, and any schedule decision
    that the real tokens change (prefix keys hash them) while the twin decides otherwise."""
    trace_opts, settings, wanted = TEXT_CASES[name]
    js = run_js(trace_opts, settings, weights=weights)
    py = run_schedule(js["trace"], settings)
    diff = first_difference(py, js["log"])
    assert diff is None, f"{name}: the schedules differ at {diff}"
    missing = wanted - exercised(py, js["trace"], settings["block_size"])
    assert not missing, f"{name}: the trace never exercised {missing}"
    assert max(len(s["chunks"]) for s in py["steps"]) > 1, f"{name}: no step batched two requests"
    tokens = {rid: r["tokens"] for rid, r in py["requests"].items()}
    assert all(r["status"] == "finished" and r["tokens"] for r in py["requests"].values())
    assert {rid: r["tokens"] for rid, r in js["log"]["requests"].items()} == tokens
    words = shipped.tokenizer.decode(tokens["r0"]).split()
    assert len(set(words)) > 2, f"{name}: r0's text is one word repeated: {words}"
    margins = smallest_margins(shipped.model, js["trace"], tokens)
    near = {rid: m for rid, m in margins.items() if m <= MARGIN}
    assert not near, f"{name}: a near tie that rounding could flip (pick another seed): {near}"


TEXT_MUTANTS = {
    "the next token from the chunk's first position, not its last": (
        "engine/minigpt_tokens.js", "ctx.slice(cache.S, end), cache, true);",
        "ctx.slice(cache.S, end), cache, false).subarray(0, this.model.config.V);",
        "minigpt-text-recompute-prefix"),
    "the token of the context without its last generated token": (
        "engine/minigpt_tokens.js", "const t = c.t, ctx = E.context(t), end = t.computed + c.T;",
        "const t = c.t, ctx = E.context(t).slice(0, -1).concat([0]), end = t.computed + c.T;",
        "minigpt-text-recompute-prefix"),
}


@pytest.mark.parametrize("mutant", sorted(TEXT_MUTANTS))
def test_the_token_comparison_catches_a_mutant_executor(mutant: str, weights: Path, tmp_path: Path) -> None:
    """The comparison of MiniGPT's tokens is not vacuous: each hand-made bug above changes a token or the schedule."""
    path, old, new, case = TEXT_MUTANTS[mutant]
    trace_opts, settings, _ = TEXT_CASES[case]
    js = run_js(trace_opts, settings, mutant_web(tmp_path, path, old, new), weights)
    py = run_schedule(js["trace"], settings)
    tokens = {rid: r["tokens"] for rid, r in py["requests"].items()}
    assert first_difference(py, js["log"]) is not None or tokens != {
        rid: r["tokens"] for rid, r in js["log"]["requests"].items()}
