"""Chapter 13's cache-aware scheduling sweep: prefix-cache hit rate with the waiting queue served first come,
first served (FCFS) or longest cached prefix first (SGLang's `lpm`, `EngineConfig(cache_aware=True)`).

The workload: K system prompts of 64 tokens (4 blocks of 16), each request one of them (drawn at random, so
the prompts arrive interleaved) plus 8-24 tokens of its own, 8 new tokens; all requests arrive at once, so
the queue is long and its order matters. MiniGPT serves them on the CPU (continuous batching, max_batch 4)
from pools small enough that the cache cannot keep every system prompt while four requests run: blocks
are evicted and a prompt evicted before its next request is prefilled again.

With every request arriving at t = 0 the schedule does not depend on step times: hit rates, prefill tokens,
evictions and waits in steps are exact for a given seed (the spread is over seeds, i.e. workloads), and
the same on any machine or executor. The seconds are reported but not used.

Writes minigpt/measure/data/prefix_cpu.json.

    python scripts/sweeps/sweep_prefix.py --threads 1
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from minigpt import load_pretrained, measure
from minigpt.measure import sweeps
from minigpt.serving import Engine, EngineConfig, Request

BLOCK, SYSTEM, MAX_BATCH, N_REQUESTS, SEEDS = 16, 64, 4, 48, range(5)
SYSTEMS = (2, 4, 8)
POOLS = (24, 28, 36, 48, 64)


def workload(K: int, seed: int, V: int) -> list[Request]:
    """N_REQUESTS requests, each one of K system prompts (random interleaving) + 8-24 own tokens."""
    rng = random.Random(1000 * K + seed)
    systems = [[rng.randrange(V) for _ in range(SYSTEM)] for _ in range(K)]
    reqs = []
    for i in range(N_REQUESTS):
        own = [rng.randrange(V) for _ in range(rng.randint(8, 24))]
        reqs.append(Request(f"r{i}", tuple(systems[rng.randrange(K)] + own), 8))
    return reqs


def ideal_hit_rate(reqs: list[Request]) -> float:
    """Every system prompt prefilled once, each later request finding all of it: the hit rate's ceiling."""
    seen, hits = set(), 0
    for r in reqs:
        head = r.prompt[:SYSTEM]
        hits += SYSTEM if head in seen else 0
        seen.add(head)
    return hits / sum(r.P for r in reqs)


def run(model, reqs: list[Request], num_blocks: int, cache_aware: bool) -> dict[str, Any]:
    """Serve `reqs`; the hit rate, prefill tokens computed, evictions, preemptions, waits in steps."""
    engine = Engine.for_model(model, num_blocks=num_blocks, block_size=BLOCK,
                              config=EngineConfig(max_batch=MAX_BATCH, prefix_caching=True, cache_aware=cache_aware))
    for r in reqs:
        engine.submit(r)
    first_step: dict[str, int] = {}
    steps, prefilled = 0, 0
    started = time.perf_counter()
    while engine.busy:
        decoding = {i for i, t in engine.requests.items() if t.decoding}  # before the step
        chunks = engine.step()
        for c in chunks:
            first_step.setdefault(c.tracked.request.id, steps)
            if c.tracked.request.id not in decoding:
                prefilled += c.T  # prompt (or recomputed context) tokens run through the model
        steps += bool(chunks)
    seconds = time.perf_counter() - started
    out = [engine.requests[r.id] for r in reqs]
    engine.close()
    assert engine.pool.allocator.num_used == 0, "the pool must be empty after a run"
    assert all(len(t.generated) == 8 for t in out)
    waits = sorted(first_step[r.id] for r in reqs)
    return {"hit_rate": engine.prefix_cache.hit_rate, "prompt_tokens_prefilled": prefilled, "steps": steps,
            "evictions": engine.prefix_cache.evictions, "preempted": engine.scheduler.preempted,
            "wait_steps_p50": waits[len(waits) // 2], "wait_steps_p90": waits[9 * len(waits) // 10],
            "wait_steps_max": waits[-1], "seconds": seconds}


def spread(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    args = parser.parse_args()
    device, dtype, path = sweeps.sweep_setup(args, "prefix")
    model = load_pretrained(device=device, dtype=dtype).model
    print(measure.environment(device, dtype))
    started = time.perf_counter()
    rows = []
    for K in SYSTEMS:
        for num_blocks in POOLS:
            runs = {"fcfs": [], "lpm": []}
            ideal = []
            for seed in SEEDS:
                reqs = workload(K, seed, model.config.V)
                ideal.append(ideal_hit_rate(reqs))
                for name, aware in (("fcfs", False), ("lpm", True)):
                    runs[name].append(run(model, reqs, num_blocks, aware))
            row = {"systems": K, "num_blocks": num_blocks, "ideal_hit_rate": spread(ideal)}
            for name, rs in runs.items():
                row[name] = {k: spread([r[k] for r in rs]) for k in rs[0]}
                row[name]["per_seed_hit_rate"] = [r["hit_rate"] for r in rs]
            rows.append(row)
            f, lpm, ideal = row["fcfs"]["hit_rate"], row["lpm"]["hit_rate"], row["ideal_hit_rate"]["mean"]
            print(f"K={K} blocks={num_blocks:3d}: hit rate FCFS {f['mean']:.1%} ({f['min']:.1%}-{f['max']:.1%}), "
                  f"LPM {lpm['mean']:.1%} ({lpm['min']:.1%}-{lpm['max']:.1%}), ideal {ideal:.1%}")
    data = {
        "script": "scripts/sweeps/sweep_prefix.py",
        "environment": measure.environment(device, dtype),
        "config": model.config.to_dict(),
        "workload": {"requests": N_REQUESTS, "system_tokens": SYSTEM, "own_tokens": [8, 24], "new_tokens": 8,
                     "block_size": BLOCK, "max_batch": MAX_BATCH, "arrivals": "all at t=0", "seeds": len(SEEDS)},
        "runs": rows,
        "seconds": time.perf_counter() - started,
    }
    sweeps.write_json(path, data)
    print(f"wrote {path} in {data['seconds']:.0f} s")


if __name__ == "__main__":
    main()
