"""Chapters 12-14's sweeps: the serving engine on MiniGPT (measured) and Llama-2-7B on an H100 (replayed).

Three experiments, each run by the same scheduler on MiniGPT (step times measured) and in replay
(step times from the book's formulas, `minigpt.serving.replay`):

- batching: Poisson arrivals at several rates (fractions of the measured capacity): throughput and
  P50/P99 of TTFT and time per output token, static vs continuous batching; the same trace replayed.
- prefix: TTFT against the length of a prefix shared by every request, with and without prefix
  caching; hit rate and TTFT for a common system prompt, multi-turn chats, and a system prompt that
  changes with every request.
- chunked: short requests decoding while long prompts arrive: the tail of their inter-token latency
  and the long prompts' TTFT, for whole prefills and several chunk sizes; also on the scaled model
  (L=8, d=512, random weights, S_max=512), whose prefill of 448 tokens costs many decode steps on a CPU.

Every engine runs a step as one fused forward (`ModelExecutor`; replay prices it so); the chunked
experiment also runs the older unfused executor (`fused=False`: one forward per chunk length), replayed
for Llama and measured on the scaled model, for Chapter 14's comparison.

Writes minigpt/measure/data/serving_<device>.json; `--only chunked` runs the chunked experiment alone, at the
rate the committed serving_<device>.json's capacity gives, into minigpt/measure/data/chunked_<device>.json
(Chapter 14's data). `--replay-only` recomputes the replayed (Llama-2-7B on the H100) parts of the existing file
alone, at the rates its measured capacity gave, and keeps every measured number as it is.

    python scripts/sweeps/sweep_serving.py --threads 1 --clock thread   # what the book's CPU data used
    python scripts/sweeps/sweep_serving.py --threads 1 --clock thread --only chunked
    python scripts/sweeps/sweep_serving.py --replay-only   # the replay alone (no measurement), into the same file
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from minigpt import load_pretrained, measure
from minigpt.costs.presets import HARDWARE, MODELS, SCALED
from minigpt.measure import sweeps
from minigpt.measure.sweep_files import PRESETS_KEY, preset_record
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.serving import Engine, EngineConfig, ModelExecutor, Request, Status, latency_summary
from minigpt.serving.trace import chat_trace, poisson_trace

LLAMA, H100 = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
KEYS = ("output_tok_s", "requests_per_s", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
        "itl_p50_s", "itl_p99_s", "e2e_p50_s", "e2e_p99_s", "requests")


def summary(engine: Engine, out: list, ids: set[str] | None = None) -> dict[str, Any]:
    """The run's latency summary (over `ids` only, if given), preemptions, hit rate, rejected and cancelled."""
    chosen = [t for t in out if ids is None or t.request.id in ids]
    s = {k: v for k, v in latency_summary(chosen).items() if k in KEYS}
    s["preempted"] = engine.scheduler.preempted
    s["not_finished"] = sum(t.status is not Status.FINISHED for t in out)
    s["itl_max_s"] = max(b - a for t in chosen for a, b in zip(t.token_s[:-1], t.token_s[1:], strict=True))
    if engine.prefix_cache is not None:
        s["prefix_hit_rate"] = engine.prefix_cache.hit_rate
    return s


def serve(make, reqs: list[Request], **config: Any) -> tuple[Engine, list]:
    engine = make(EngineConfig(**config))
    out = engine.run(reqs)
    engine.close()
    assert engine.pool.allocator.num_used == 0, "the pool must be empty after a run"
    return engine, out


def with_arrivals(reqs: list[Request], scale: float) -> list[Request]:
    """The same requests with arrival times multiplied by `scale` (a trace at another rate)."""
    return [Request(r.id, r.prompt, r.max_new_tokens, arrival_s=r.arrival_s * scale) for r in reqs]


def merged(old: Any, new: Any) -> Any:
    """`old` with `new`'s entries put in: dicts key by key, lists of dicts of one length item by item (how a
    replay-only run's numbers replace the replayed ones and leave the measured ones beside them)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {**old, **{k: merged(old[k], v) if k in old else v for k, v in new.items()}}
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new) and all(
            isinstance(x, dict) for x in old + new):
        return [merged(a, b) for a, b in zip(old, new, strict=True)]
    return new


def batching(real, replay, n: int, max_batch: int, capacity: float | None = None) -> dict[str, Any]:
    """The batching experiment; with `real` None only the replay, at the rates of the given measured `capacity`."""
    if real is not None:
        burst = poisson_trace(n, rate=1e9, seed=0, P=(8, 48), D=(8, 64))
        _, out = serve(real, burst, policy="continuous", max_batch=max_batch)
        capacity = latency_summary(out)["requests_per_s"]  # everything at t = 0: the engine's best rate
    print(f"capacity (continuous, B <= {max_batch}): {capacity:.1f} req/s")
    fractions = [0.25, 0.5, 0.75, 1.0, 1.5]
    runs = []
    for f in fractions:
        reqs = poisson_trace(n, rate=f * capacity, seed=1, P=(8, 48), D=(8, 64))
        row: dict[str, Any] = {"load": f, "rate": f * capacity}
        for policy in ("static", "continuous"):
            for mode, make in (("minigpt", real), ("llama_h100", replay)):
                if make is not None:
                    engine, out = serve(make, reqs, policy=policy, max_batch=max_batch)
                    row[f"{mode}_{policy}"] = summary(engine, out)
        m = row.get("minigpt_static", row["llama_h100_static"]), row.get("minigpt_continuous",
                                                                          row["llama_h100_continuous"])
        print(f"load {f:4.2f}: static {m[0]['output_tok_s']:7.0f} tok/s TTFT p99 {m[0]['ttft_p99_s']:.3f} s | "
              f"continuous {m[1]['output_tok_s']:7.0f} tok/s TTFT p99 {m[1]['ttft_p99_s']:.3f} s")
        runs.append(row)
    # Llama on the H100 at rates of its own capacity, long requests (P up to 2k, D up to 512)
    burst = poisson_trace(n, rate=1e9, seed=0, P=(128, 2048), D=(64, 512), V=LLAMA.V)
    _, out = serve(replay, burst, policy="continuous", max_batch=64)
    cap = latency_summary(out)["requests_per_s"]
    own = []
    for f in fractions:
        reqs = poisson_trace(n, rate=f * cap, seed=1, P=(128, 2048), D=(64, 512), V=LLAMA.V)
        row = {"load": f, "rate": f * cap}
        for policy in ("static", "continuous"):
            engine, out = serve(replay, reqs, policy=policy, max_batch=64)
            row[policy] = summary(engine, out)
        own.append(row)
    return {"requests": n, "max_batch": max_batch, "capacity_req_s": capacity, "P": [8, 48], "D": [8, 64],
            "runs": runs, "llama_h100": {"capacity_req_s": cap, "P": [128, 2048], "D": [64, 512],
                                         "max_batch": 64, "runs": own}}


def prefix(real, replay, n: int, rate: float) -> dict[str, Any]:
    """The prefix experiment; with `real` None only the replay's rows."""
    out: dict[str, Any] = {"rate": rate}
    for mode, make, lengths, own, V in (("minigpt", real, [0, 16, 32, 64, 96], 8, 600),
                                        ("llama_h100", replay, [0, 256, 512, 1024, 2048, 3072], 64, LLAMA.V)):
        if make is None:
            continue
        rows = []
        for shared in lengths:
            reqs = poisson_trace(n, rate=rate, seed=2, P=(own, own), D=(4, 4), system_prompt=shared, V=V)
            row: dict[str, Any] = {"shared": shared, "P": shared + own}
            for caching in (False, True):
                engine, got = serve(make, reqs, max_batch=8, prefix_caching=caching)
                row["cached" if caching else "plain"] = summary(engine, got)
            rows.append(row)
            print(f"{mode} shared {shared:5d}: TTFT p50 {row['plain']['ttft_p50_s'] * 1e3:8.3f} ms -> "
                  f"{row['cached']['ttft_p50_s'] * 1e3:8.3f} ms with prefix caching")
        out[f"{mode}_ttft_by_shared"] = rows
    if real is None:
        return out
    workloads = {
        "system_prompt": poisson_trace(n, rate=rate, seed=3, P=(8, 24), D=(4, 8), system_prompt=64),
        "system_prompt_changing": poisson_trace(n, rate=rate, seed=3, P=(8, 24), D=(4, 8), system_prompt=64,
                                                vary_system=True),
        "chats": chat_trace(max(n // 4, 1), 4, rate=rate / 4, think_s=8 / rate, system_prompt=32),
    }
    out["workloads"] = {}
    for name, reqs in workloads.items():
        row = {}
        for caching in (False, True):
            engine, got = serve(real, reqs, max_batch=8, prefix_caching=caching)
            row["cached" if caching else "plain"] = summary(engine, got)
        out["workloads"][name] = row
        print(f"{name}: hit rate {row['cached']['prefix_hit_rate']:.1%}, TTFT p50 "
              f"{row['plain']['ttft_p50_s'] * 1e3:.3f} -> {row['cached']['ttft_p50_s'] * 1e3:.3f} ms")
    return out


def long_prompts(short: list[Request], long_P: int, every: int, V: int) -> list[Request]:
    """`short` plus a long prompt after every `every`-th short request (its arrival)."""
    out = list(short)
    for k, r in enumerate(short[every::every]):
        out.append(Request(f"long{k}", tuple((7 * j + k) % V for j in range(long_P)), 4, arrival_s=r.arrival_s))
    return out


def chunked(real, scaled, replay, n: int, base_rate: float, replay_unfused=None, scaled_unfused=None) -> dict[str, Any]:
    """The chunked experiment; with `replay_unfused` and `scaled_unfused` also the unfused executor (one forward
    per chunk length), replayed for Llama and measured on the scaled model."""
    out: dict[str, Any] = {}
    llama = ((64, 256), (128, 256), 3500, [None, 256, 512, 1024, 2048], LLAMA.V, 32, base_rate, n)
    big = ((8, 16), (16, 24), 448, [None, 64, 128, 256], 600, 8, 4.0, 24)
    experiments = [
        ("minigpt", real, (8, 16), (48, 64), 112, [None, 8, 16, 32, 64], 600, 8, base_rate, n),
        ("scaled", scaled, *big),
        ("llama_h100", replay, *llama),
    ]
    if scaled_unfused is not None:
        experiments.append(("scaled_unfused", scaled_unfused, *big))
    if replay_unfused is not None:
        experiments.append(("llama_h100_unfused", replay_unfused, *llama))
    experiments = [e for e in experiments if e[1] is not None]  # real and scaled None: the replay alone
    for mode, make, short_P, D, long_P, sizes, V, max_batch, rate, count in experiments:
        short = poisson_trace(count, rate=rate, seed=4, P=short_P, D=D, V=V)
        reqs = long_prompts(short, long_P, every=max(count // 8, 1), V=V)
        ids_short = {r.id for r in short}
        ids_long = {r.id for r in reqs} - ids_short
        rows = []
        for size in sizes:
            engine, got = serve(make, reqs, max_batch=max_batch, chunk_size=size)
            rows.append({"chunk_size": size, "short": summary(engine, got, ids_short),
                         "long": summary(engine, got, ids_long)})
            r = rows[-1]
            print(f"{mode} chunk {size}: short ITL p99 {r['short']['itl_p99_s'] * 1e3:.3f} ms, max "
                  f"{r['short']['itl_max_s'] * 1e3:.3f} ms; long TTFT p50 {r['long']['ttft_p50_s'] * 1e3:.3f} ms")
        out[mode] = {"short_P": list(short_P), "D": list(D), "long_P": long_P, "long_prompts": len(ids_long),
                     "max_batch": max_batch, "rate": rate, "runs": rows}
    return out


def replay_only(args: Any, path: Path, replay, replay_unfused) -> None:
    """`--replay-only`: recompute the replayed parts of the file at `path` at the rates its measured capacity gave,
    keep its measured parts (and their `seconds`) as they are, and record the presets the replay read."""
    old, n = sweeps.read_json(path), args.requests
    if args.only == "chunked":
        capacity = old["capacity_req_s"]
        new = {"chunked": chunked(None, None, replay, n // 2, base_rate=0.3 * capacity, replay_unfused=replay_unfused)}
    else:
        capacity = old["batching"]["capacity_req_s"]
        new = {"batching": batching(None, replay, n, max_batch=16, capacity=capacity),
               "prefix": prefix(None, replay, n // 2, rate=0.2 * capacity),
               "chunked": chunked(None, None, replay, n // 2, base_rate=0.3 * capacity)}
    data = merged(old, new) | {PRESETS_KEY: preset_record(LLAMA, H100, script="scripts/sweeps/sweep_serving.py")}
    sweeps.write_json(path, data)
    print(f"rewrote the replay of {path}")


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--requests", type=int, default=120, help="requests per run")
    parser.add_argument("--only", choices=["chunked"], default=None,
                        help="run one experiment alone (capacity from the committed serving JSON)")
    parser.add_argument("--replay-only", action="store_true",
                        help="recompute only the replayed (predicted) parts of the existing file")
    args = parser.parse_args()
    device, dtype, path = sweeps.sweep_setup(args, "serving")
    served = path
    if args.only == "chunked":
        path = args.out or served.with_name(served.name.replace("serving_", "chunked_"))

    def replay(config: EngineConfig) -> Engine:
        return Engine.replay(LLAMA, H100, block_size=16, config=config)

    def replay_unfused(config: EngineConfig) -> Engine:
        return Engine.replay(LLAMA, H100, block_size=16, config=config, fused=False)

    if args.replay_only:
        replay_only(args, path, replay, replay_unfused)
        return
    clock = time.thread_time if args.clock == "thread" else time.perf_counter
    model = load_pretrained(device=device, dtype=dtype).model

    def real(config: EngineConfig) -> Engine:
        return Engine.for_model(model, num_blocks=160, block_size=16, config=config, clock=clock)

    big = sweeps.random_model(SCALED, device=device, dtype=dtype)  # 26 M parameters, S_max = 512

    def scaled(config: EngineConfig) -> Engine:
        return Engine.for_model(big, num_blocks=320, block_size=16, config=config, clock=clock)

    def scaled_unfused(config: EngineConfig) -> Engine:
        pool = PagedKVCache(big.config, num_blocks=320, block_size=16, dtype=big.dtype, device=big.device)
        return Engine(ModelExecutor(big, pool, fused=False), pool, config, clock=clock)

    print(measure.environment(device, dtype))
    started = time.perf_counter()
    n = args.requests
    record = preset_record(LLAMA, H100, script="scripts/sweeps/sweep_serving.py")
    if args.only == "chunked":
        capacity = sweeps.read_json(served)["batching"]["capacity_req_s"]
        data = {"script": "scripts/sweeps/sweep_serving.py --only chunked",
                "environment": measure.environment(device, dtype), "clock": args.clock,
                "config": model.config.to_dict(), "scaled_config": SCALED.to_dict(),
                "capacity_req_s": capacity, "executor": "fused (one forward per step)",
                "replay": {"model": LLAMA.name, "hardware": H100.name, "s": 2, "block_size": 16},
                "chunked": chunked(real, scaled, replay, n // 2, base_rate=0.3 * capacity,
                                   replay_unfused=replay_unfused, scaled_unfused=scaled_unfused),
                PRESETS_KEY: record}
        data["seconds"] = time.perf_counter() - started
        sweeps.write_json(path, data)
        print(f"wrote {path} in {data['seconds']:.0f} s")
        return
    data = {
        "script": "scripts/sweeps/sweep_serving.py",
        "environment": measure.environment(device, dtype),
        "clock": args.clock,
        "config": model.config.to_dict(),
        "minigpt_pool": {"num_blocks": 160, "block_size": 16},
        "replay": {"model": LLAMA.name, "hardware": H100.name, "s": 2, "block_size": 16},
        "batching": batching(real, replay, n, max_batch=16),
        PRESETS_KEY: record,
    }
    capacity = data["batching"]["capacity_req_s"]
    data["prefix"] = prefix(real, replay, n // 2, rate=0.2 * capacity)
    data["chunked"] = chunked(real, scaled, replay, n // 2, base_rate=0.3 * capacity)
    data["scaled_config"] = SCALED.to_dict()
    data["seconds"] = time.perf_counter() - started
    sweeps.write_json(path, data)
    print(f"wrote {path} in {data['seconds']:.0f} s")

if __name__ == "__main__":
    main()
