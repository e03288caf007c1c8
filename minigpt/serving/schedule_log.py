"""A replayed run's schedule, step by step, as plain JSON: what the page "Watch the engine" shows, and what its
JavaScript twin (`minigpt/web/engine/`) must decide identically (`tests/test_engine_js.py`).

`run_schedule(trace, settings)` serves `trace` (plain request records) with `Engine.replay` (no model runs: a
step's time is the formulas' prediction, every sampled token is 0; with `tokens="minigpt"` the shipped MiniGPT
computes every token, greedy, on its paged cache, while the step's time is still predicted) and records, right
after each step's `schedule()`, everything the scheduler decided: the chunks (request, T, tokens computed before),
the block table of every running request, the waiting and swapped queues (in order), who was preempted and how,
the prefix hits of the admissions, each block's reference count, the free stack, the prefix tree (block, parent
block, last use) and the host blocks of each swapped request; then the clock after the step. The per-request token
times give the meters (`minigpt.serving.meters`).

Settings (`SETTINGS` names them with their defaults): `model` and `hardware` name presets of
`minigpt.costs.presets`, `host_link` one of its `HOST_LINKS` (prices a swap), the rest are `EngineConfig`'s
fields and the pool's `num_blocks` and `block_size`; `s` is bytes per weight and K/V value; `tokens` is
"replay" (every token 0) or "minigpt" (the model "MiniGPT" only: `load_pretrained()`'s tokens, as the page's
mode "MiniGPT's own tokens" computes them in the browser, `minigpt/web/engine/minigpt_tokens.js`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from minigpt import costs
from minigpt.costs.presets import HARDWARE, HOST_LINKS, MODELS
from minigpt.runtime.checkpoint import load_pretrained
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.serving.engine import Engine, EngineConfig
from minigpt.serving.executor import ModelExecutor
from minigpt.serving.meters import latency_summary
from minigpt.serving.replay import ReplayExecutor
from minigpt.serving.request import Chunk, Request, Tracked

SETTINGS: dict[str, Any] = {
    "model": "Llama-2-7B", "hardware": "A100 80GB", "host_link": "PCIe Gen4 x16", "s": 2,
    "num_blocks": 64, "block_size": 16, "max_batch": 8, "chunk_size": None, "prefix_caching": False,
    "cache_aware": False, "preemption": "recompute", "reservation": "paged", "watermark": 0.0,
    "swap_blocks": None, "swap_overlap": True, "tokens": "replay",
}
_CONFIG = ("max_batch", "chunk_size", "prefix_caching", "cache_aware", "preemption", "reservation", "watermark",
           "swap_blocks")


def requests_of(trace: Sequence[Mapping[str, Any]]) -> list[Request]:
    """`Request`s from plain records {id, prompt, max_new_tokens, arrival_s}."""
    return [Request(str(r["id"]), tuple(int(x) for x in r["prompt"]), int(r["max_new_tokens"]),
                    arrival_s=float(r["arrival_s"])) for r in trace]


class PricedMiniGPT:
    """An executor whose tokens are MiniGPT's (`ModelExecutor`: one fused forward over the paged cache, greedy)
    and whose step time is the replay's prediction (`ReplayExecutor.step_time`), so that the clock, and with it
    every arrival's step, is the replay's whatever the machine."""

    predicts_time = True

    def __init__(self, executor: ModelExecutor, prices: ReplayExecutor) -> None:
        self.executor, self.prices = executor, prices
        self.S_max, self.V, self.device = executor.S_max, executor.V, executor.device

    def step_time(self, chunks: list[Chunk]) -> float:
        return self.prices.step_time(chunks)

    def run(self, chunks: list[Chunk]) -> dict[int, int]:
        return self.executor.run(chunks)


def _minigpt_engine(s: Mapping[str, Any], config: EngineConfig) -> Engine:
    """The engine of `s` serving with the shipped MiniGPT (greedy), each step priced as in replay."""
    if s["model"] != "MiniGPT":
        raise ValueError(f"tokens='minigpt' runs the shipped MiniGPT: model must be 'MiniGPT', got {s['model']!r}")
    model = load_pretrained().model
    preset = MODELS["MiniGPT"]
    if (model.config.S_max, model.config.V) != (preset.S_max, preset.V):
        raise ValueError(f"the shipped MiniGPT {model.config} is not the preset MiniGPT {preset}")
    pool = PagedKVCache(model.config, num_blocks=s["num_blocks"], block_size=s["block_size"], dtype=model.dtype,
                        device=model.device)
    prices = ReplayExecutor(preset, HARDWARE[s["hardware"]], pool, s=s["s"])
    executor = PricedMiniGPT(ModelExecutor(model, pool), prices)
    engine = Engine(executor, pool, config)
    engine.host_link, engine.swap_overlap = HOST_LINKS[s["host_link"]], s["swap_overlap"]
    engine._kv_token = costs.evaluate(costs.kv_bytes_per_token, preset, s=s["s"])  # noqa: SLF001 (as Engine.replay)
    return engine


def build_engine(settings: Mapping[str, Any]) -> Engine:
    """The engine of `settings`, in replay or with MiniGPT's tokens (unknown names are refused, naming the allowed
    ones)."""
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise ValueError(f"unknown settings {unknown}; allowed: {sorted(SETTINGS)}")
    s = {**SETTINGS, **settings}
    for name, table in (("model", MODELS), ("hardware", HARDWARE), ("host_link", HOST_LINKS),
                        ("tokens", {"replay", "minigpt"})):
        if s[name] not in table:
            raise ValueError(f"{name} must be one of {sorted(table)}, got {s[name]!r}")
    config = EngineConfig(**{k: s[k] for k in _CONFIG})
    if s["tokens"] == "minigpt":
        return _minigpt_engine(s, config)
    return Engine.replay(MODELS[s["model"]], HARDWARE[s["hardware"]], num_blocks=s["num_blocks"],
                         block_size=s["block_size"], s=s["s"], config=config,
                         host_link=HOST_LINKS[s["host_link"]], swap_overlap=s["swap_overlap"])


def _state(engine: Engine, chunks: list[Chunk], before: dict[str, tuple[int, int, int, int]]) -> dict[str, Any]:
    """What `schedule()` just decided, as plain data (see the module docstring)."""
    sch, pool = engine.scheduler, engine.pool
    alloc = pool.allocator
    events = []
    for rid, t in engine.requests.items():
        p, sw, hit, rhit = before[rid]  # every request here arrived before this step's schedule() (`Engine.step`)
        if t.preemptions > p:
            events.append([rid, "swap" if t.swaps > sw else "recompute"])
        if t.cached_tokens > hit or t.recompute_hit_tokens > rhit:
            events.append([rid, "hit", t.cached_tokens - hit + t.recompute_hit_tokens - rhit])
    tree = []
    if engine.prefix_cache is not None:
        blocks = {key.digest: block for key, block in engine.prefix_cache.items()}
        used = {n.block: n.used for n in engine.prefix_cache._nodes.values()}  # noqa: SLF001 (inspection)
        tree = sorted([block, blocks.get(key.parent, -1), used[block]] for key, block in engine.prefix_cache.items())
    return {
        "chunks": [[c.tracked.request.id, c.T, c.tracked.computed] for c in chunks],
        "tables": {t.request.id: pool.block_table(t.seq) for t in sch.running if t.seq is not None},
        "waiting": [t.request.id for t in sch.waiting],
        "swapped": [t.request.id for t in sch.swapped],
        "host": {t.request.id: list(t.swapped.blocks) for t in sch.swapped},  # type: ignore[attr-defined]
        "events": events,
        "refs": [alloc.refcount(i) for i in range(alloc.num_blocks)],
        "free": list(alloc._free),  # noqa: SLF001 (the free stack, in the order blocks come out last first)
        "tree": tree,
        "preempted": sch.preempted,
        "kv_usage": sch.kv_usage,
        "evictions": engine.prefix_cache.evictions if engine.prefix_cache is not None else 0,
    }


def _counts(requests: dict[str, Tracked]) -> dict[str, tuple[int, int, int, int]]:
    return {rid: (t.preemptions, t.swaps, t.cached_tokens, t.recompute_hit_tokens) for rid, t in requests.items()}


def run_schedule(trace: Sequence[Mapping[str, Any]], settings: Mapping[str, Any] | None = None, *,
                 max_steps: int = 100_000) -> dict[str, Any]:
    """Serve `trace` in replay with `settings`; every step's decisions, each request's outcome, the summary."""
    engine = build_engine(settings or {})
    steps: list[dict[str, Any]] = []
    schedule = engine.scheduler.schedule

    def recorded() -> list[Chunk]:
        before = _counts(engine.requests)
        chunks = schedule()
        steps.append({"start": engine.now, **_state(engine, chunks, before)})
        return chunks

    engine.scheduler.schedule = recorded  # type: ignore[method-assign]
    for r in requests_of(trace):
        engine.submit(r)
    while engine.busy:
        if len(steps) >= max_steps:
            raise ValueError(f"the run did not end within max_steps={max_steps} steps")
        engine.step()
        steps[-1]["end"] = engine.now
    out = {rid: {"status": t.status.value, "reason": t.reason, "token_s": t.token_s, "admitted_s": t.admitted_s,
                 "preemptions": t.preemptions, "swaps": t.swaps, "cached_tokens": t.cached_tokens,
                 "tokens": list(t.generated)}
           for rid, t in engine.requests.items()}
    done = [t for t in engine.requests.values() if t.token_s and t.status.value == "finished"]
    return {"steps": steps, "requests": out, "summary": latency_summary(done) if done else {}}


def main(argv: list[str] | None = None) -> int:
    """`python -m minigpt.serving.schedule_log < {"trace": [...], "settings": {...}}`: the log as JSON on stdout."""
    del argv
    job = json.load(sys.stdin)
    json.dump(run_schedule(job["trace"], job.get("settings") or {}), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
