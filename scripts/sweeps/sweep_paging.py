"""Chapter 12's equal-memory sweep: the same trace served by pools that reserve and by paging, same KV memory.

Three pools of the same blocks, one scheduler (`EngineConfig.reservation`):

- (a) "S_max":      every request is given S_max tokens of blocks on admission (a slot per request);
- (b) "max_tokens": it is given prompt + max_new_tokens − 1 tokens (the request's own bound);
- (c) "paged":      blocks as the sequence grows; preemption (recompute) when they run out; watermark 1 %.

The trace has ShareGPT-like lengths: log-normal prompt and output lengths (σ = 1) with the means of the
vLLM paper's ShareGPT set (input 161, output 338 tokens, Kwon et al. 2023, Fig. 11), clipped to the
model's positions. Every request generates exactly its max_new_tokens (no stop), so (b) knows each
output length in advance: it is the vLLM paper's "Orca (Oracle)", the best a reserving pool can do;
(a) is its "Orca (Max)". In replay (b) is also run as clients use it: each request asks for
max_tokens = 2 × the tokens it will use and a stop ends it, so (b) reserves twice what it needs, as
the vLLM paper's "Orca (Pow2)" does up to 2×. Requests arrive together (an offline throughput run).

- MiniGPT (measured here, step times on this CPU's clock): lengths scaled by S_max / 2048, a pool of
  `--blocks` blocks of 16 tokens; each pool run `--repeats` times: throughput's median and range.
- Llama-2-7B on an A100 80GB and an H100 SXM, and Llama-2-13B on an A100 40GB (replayed: step times
  from the formulas, one fused forward per step): the pool is the memory beside the weights (Eq. 2.4's
  budget, 10 % reserve), the trace the ShareGPT-like one at Llama-2's 4096 positions, the batch bound
  vLLM's default `max_num_seqs` on that chip (1024 on the H100, 256 on an A100).
- Preemption, replayed: a pool of a quarter of that memory, recompute against swap over PCIe Gen4
  (A100), PCIe Gen5 (H100) and NVLink-C2C (an H100 on a GH200-like link), each at the rate a copy
  achieves (`ACHIEVED_HOST_LINKS`), swap overlapped or not.
  And measured on MiniGPT: both modes on a pool tight enough to preempt.

Writes minigpt/measure/data/paging_<device>.json.

    python scripts/sweeps/sweep_paging.py --threads 1 --clock thread   # what the book's CPU data used
    python scripts/sweeps/sweep_paging.py --replay-only   # the replay alone (no measurement), into the same file
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from typing import Any

from minigpt import Sampling, load_pretrained, measure
from minigpt.costs.preset_types import HardwarePreset
from minigpt.costs.presets import ACHIEVED_HOST_LINKS, HARDWARE, MODELS
from minigpt.measure import sweeps
from minigpt.measure.sweep_files import PRESETS_KEY, preset_record
from minigpt.serving import Engine, EngineConfig, Request, Status, latency_summary
from minigpt.serving.replay import replay_blocks

LLAMA = MODELS["Llama-2-7B"]
CHIPS = {"A100 80GB": "PCIe Gen4 x16", "H100 SXM": "PCIe Gen5 x16"}
TIGHT = (MODELS["Llama-2-13B"], HARDWARE["A100 40GB"])  # the vLLM paper's OPT-13B on one A100 40GB, in spirit
SHAREGPT = {"input_mean": 161, "output_mean": 338, "source": "Kwon et al. 2023 (vLLM), Fig. 11: ShareGPT"}
ALPACA = {"input_mean": 19.3, "output_mean": 58.5, "source": "Kwon et al. 2023 (vLLM), Fig. 11: Alpaca"}
POOLS = ("S_max", "max_tokens", "paged")
REPLAY_POOLS = ("S_max", "max_tokens", "max_tokens_oracle", "paged")
CAP = 2  # replay: clients ask for max_tokens = CAP x the tokens they use (the oracle asks for exactly those)
VLLM_SEQS_LARGE, VLLM_SEQS = 1024, 256


def vllm_max_num_seqs(hw: HardwarePreset) -> int:
    """vLLM's default `max_num_seqs` for an online server on `hw` (the claims ledger's
    `vllm-max-num-seqs-default`, v0.33.0): 1024 on a GPU of at least 70 GiB that is not an A100, else 256."""
    return VLLM_SEQS_LARGE if hw.memory_bytes >= 70 * 2**30 and "A100" not in hw.name else VLLM_SEQS


KEYS = ("output_tok_s", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "requests")


def lognormal_lengths(rng: random.Random, n: int, mean: float, hi: int, sigma: float = 1.0) -> list[int]:
    """n lengths, log-normal with this mean (before clipping to 1..hi)."""
    mu = math.log(mean) - sigma**2 / 2
    return [min(hi, max(1, round(rng.lognormvariate(mu, sigma)))) for _ in range(n)]


def sharegpt_like(n: int, *, S_max: int, V: int, seed: int, scale: float = 1.0, means: dict = SHAREGPT,
                  rate: float | None = None) -> list[Request]:
    """n requests with log-normal prompt/output lengths of `means` (times `scale`), P + D − 1 <= S_max."""
    rng = random.Random(seed)
    P = lognormal_lengths(rng, n, means["input_mean"] * scale, S_max // 2)
    D = lognormal_lengths(rng, n, means["output_mean"] * scale, S_max)
    t, out = 0.0, []
    for i, (p, d) in enumerate(zip(P, D, strict=True)):
        if rate is not None:
            t += rng.expovariate(rate)
        d = min(d, S_max - p + 1)
        out.append(Request(f"r{i}", tuple(rng.randrange(V) for _ in range(p)), d, arrival_s=t))
    return out


def capped(reqs: list[Request], S_max: int) -> list[Request]:
    """The same requests asking for max_new_tokens = CAP·D (within S_max) and stopping after their D tokens.

    Replay samples token 0 every time, so a stop sequence of D zeros ends a request after exactly D tokens."""
    return [Request(r.id, r.prompt, min(CAP * r.max_new_tokens, S_max - r.P + 1), arrival_s=r.arrival_s,
                    sampling=Sampling(stop=((0,) * r.max_new_tokens,), include_stop=True)) for r in reqs]


def summary(engine: Engine, out: list) -> dict[str, Any]:
    s = {k: v for k, v in latency_summary(out).items() if k in KEYS}
    sch = engine.scheduler
    s.update(preempted=sch.preempted, swapped_out=sch.swapped_out, peak_running=sch.peak_running,
             not_finished=sum(t.status is not Status.FINISHED for t in out))
    engine.close()
    assert engine.pool.allocator.num_used == 0, "the pool must be empty after a run"
    return s


def pool_config(pool: str, **extra: Any) -> EngineConfig:
    pool = pool.removesuffix("_oracle")
    return EngineConfig(reservation=pool, watermark=0.01 if pool == "paged" else 0.0, **extra)  # type: ignore[arg-type]


def trace_stats(reqs: list[Request]) -> dict[str, float]:
    return {"requests": len(reqs), "input_mean": statistics.fmean(r.P for r in reqs),
            "output_mean": statistics.fmean(r.max_new_tokens for r in reqs),
            "input_max": max(r.P for r in reqs), "output_max": max(r.max_new_tokens for r in reqs)}


def replayed(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """The replayed section (predicted: step times from the formulas), each chip's batch bound vLLM's
    default there (`vllm_max_num_seqs`), and the record of the presets it read (`preset_record`)."""
    used = [LLAMA, *TIGHT]
    # Llama-2-7B, replayed: (a), (b), (c) on the memory beside the weights -----------------------
    S_max = LLAMA.S_max or 4096
    llama_reqs = sharegpt_like(args.replay_requests, S_max=S_max, V=LLAMA.V, seed=1)
    replay: dict[str, Any] = {"model": LLAMA.name, "s": 2, "block_size": 16, "fused": True,
                              "max_batch": {chip: vllm_max_num_seqs(HARDWARE[chip]) for chip in CHIPS} | {
                                  TIGHT[1].name: vllm_max_num_seqs(TIGHT[1])},
                              "chunk_size": 2048, "trace": trace_stats(llama_reqs), "sharegpt": SHAREGPT,
                              "alpaca": ALPACA}
    llama_capped = capped(llama_reqs, S_max)
    replay["cap"] = CAP

    def equal_memory(model, hw, reqs, exact) -> dict[str, Any]:
        blocks = replay_blocks(model, hw, block_size=16, s=2)
        row: dict[str, Any] = {"model": model.name, "num_blocks": blocks, "kv_tokens": blocks * 16}
        for pool in REPLAY_POOLS:
            e = Engine.replay(model, hw, num_blocks=blocks, fused=True,
                              config=pool_config(pool, max_batch=vllm_max_num_seqs(hw), chunk_size=2048))
            row[pool] = summary(e, e.run(exact if pool.endswith("_oracle") else reqs))
            print(f"{model.name} on {hw.name} {pool:>17}: {row[pool]['output_tok_s']:7.0f} tok/s, "
                  f"peak in flight {row[pool]['peak_running']}, preempted {row[pool]['preempted']}")
        return row

    for chip, link in CHIPS.items():
        hw = HARDWARE[chip]
        used.append(hw)
        row = equal_memory(LLAMA, hw, llama_capped, llama_reqs)
        row["host_link"] = link
        blocks = row["num_blocks"]
        # preemption: a quarter of the memory, so that paging must preempt
        small = blocks // 4
        # each link at the rate a host-device copy achieves, not its nominal rate
        links = {link: ACHIEVED_HOST_LINKS[link]} | (
            {"NVLink-C2C (GH200)": ACHIEVED_HOST_LINKS["NVLink-C2C (GH200)"]} if chip == "H100 SXM" else {})
        used.extend(links.values())
        row["host_link_bytes_per_s"] = {name: lk.bandwidth_per_direction for name, lk in links.items()}
        pre: dict[str, Any] = {"num_blocks": small}
        e = Engine.replay(LLAMA, hw, num_blocks=small, fused=True,
                          config=pool_config("paged", max_batch=vllm_max_num_seqs(hw), chunk_size=2048))
        pre["recompute"] = summary(e, e.run(llama_capped))
        for name, lk in links.items():
            for overlap in (True, False):
                e = Engine.replay(LLAMA, hw, num_blocks=small, fused=True, host_link=lk, swap_overlap=overlap,
                                  config=pool_config("paged", max_batch=vllm_max_num_seqs(hw), chunk_size=2048,
                                                    preemption="swap"))
                pre[f"swap {name}{'' if overlap else ' serial'}"] = summary(e, e.run(llama_capped))
        for k, v in pre.items():
            if isinstance(v, dict):
                print(f"{chip} quarter pool, {k}: {v['output_tok_s']:.0f} tok/s, preempted {v['preempted']}")
        row["preemption"] = pre
        replay[chip] = row
    model, hw = TIGHT
    few = llama_reqs[: args.replay_requests // 3]
    replay["tight"] = equal_memory(model, hw, capped(few, S_max), few)
    replay["tight"]["hardware"] = hw.name

    return replay, preset_record(*used, script="scripts/sweeps/sweep_paging.py")


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--requests", type=int, default=240)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--blocks", type=int, default=32)
    parser.add_argument("--replay-requests", type=int, default=1000)
    parser.add_argument("--replay-only", action="store_true",
                        help="recompute only the replayed (predicted) section of the existing file")
    args = parser.parse_args()
    device, dtype, path = sweeps.sweep_setup(args, "paging")
    if args.replay_only:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["replay"], data[PRESETS_KEY] = replayed(args)
        sweeps.write_json(path, data)
        print(f"rewrote the replay of {path}")
        return
    clock = time.thread_time if args.clock == "thread" else time.perf_counter
    model = load_pretrained(device=device, dtype=dtype).model
    c = model.config
    print(measure.environment(device, dtype))
    started = time.perf_counter()

    # -- MiniGPT, measured: (a), (b), (c) on the same blocks ----------------------------------------
    reqs = sharegpt_like(args.requests, S_max=c.S_max, V=c.V, seed=0, scale=c.S_max / 2048)
    minigpt: dict[str, Any] = {"trace": trace_stats(reqs), "pool": {"num_blocks": args.blocks, "block_size": 16,
                                                                     "tokens": args.blocks * 16}}
    for pool in POOLS:
        runs = []
        for _ in range(args.repeats):
            e = Engine.for_model(model, num_blocks=args.blocks, block_size=16, clock=clock,
                                 config=pool_config(pool, max_batch=64, chunk_size=256))
            runs.append(summary(e, e.run(reqs)))
        tok = [r["output_tok_s"] for r in runs]
        minigpt[pool] = {**runs[len(runs) // 2], "output_tok_s_runs": tok,
                         "output_tok_s_median": statistics.median(tok)}
        print(f"MiniGPT {pool:>10}: {statistics.median(tok):7.0f} tok/s (runs {min(tok):.0f}-{max(tok):.0f}), "
              f"peak in flight {runs[0]['peak_running']}, preempted {runs[0]['preempted']}")

    # -- MiniGPT, measured: recompute against swap on a tight pool ----------------------------------
    tight = max(8, args.blocks // 2)
    preempt: dict[str, Any] = {"pool": {"num_blocks": tight, "block_size": 16}}
    for mode in ("recompute", "swap"):
        runs = []
        for _ in range(args.repeats):
            e = Engine.for_model(model, num_blocks=tight, block_size=16, clock=clock,
                                 config=pool_config("paged", max_batch=64, chunk_size=256, preemption=mode))
            runs.append(summary(e, e.run(reqs)))
        tok = [r["output_tok_s"] for r in runs]
        preempt[mode] = {**runs[len(runs) // 2], "output_tok_s_runs": tok,
                         "output_tok_s_median": statistics.median(tok)}
        print(f"MiniGPT tight pool, {mode:>9}: {statistics.median(tok):7.0f} tok/s, preempted {runs[0]['preempted']}")
    minigpt["preemption"] = preempt

    replay, record = replayed(args)

    data = {"script": "scripts/sweeps/sweep_paging.py", "environment": measure.environment(device, dtype),
            "clock": args.clock, "config": c.to_dict(), "minigpt": minigpt, "replay": replay,
            PRESETS_KEY: record, "seconds": time.perf_counter() - started}
    sweeps.write_json(path, data)
    print(f"wrote {path} in {data['seconds']:.0f} s")


if __name__ == "__main__":
    main()
