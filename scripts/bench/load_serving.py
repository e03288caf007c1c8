"""A load run of the serving engine on the trained MiniGPT: thousands of requests, every one accounted for.

Poisson arrivals above the engine's capacity, a shared system prompt, multi-turn chats, a few cancelled
requests and a few that can never be served, on a pool small enough to preempt; prefix caching and
chunked prefill on. At the end every request is finished, rejected with a reason or cancelled, a sample
of the finished ones equals its generation alone, and the KV pool is empty. Exits non-zero otherwise.

    python scripts/bench/load_serving.py --requests 3000 --threads 1 [--preemption swap]

The pool is small enough that requests are preempted (by recompute, or by swap to a host pool); the
run fails if none was.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time

import torch

from minigpt import generate, load_pretrained
from minigpt.serving import Engine, EngineConfig, Request, Status, latency_summary
from minigpt.serving.trace import chat_trace, poisson_trace


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rate", type=float, default=150.0, help="arrivals per second (engine time)")
    parser.add_argument("--preemption", choices=["recompute", "swap"], default="recompute")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = load_pretrained().model
    n_chat = args.requests // 5
    reqs = poisson_trace(args.requests - n_chat - 4, rate=args.rate, seed=7, P=(4, 40), D=(1, 40), system_prompt=24,
                         cancel_share=0.01)
    chats = chat_trace(n_chat // 4, 4, rate=args.rate / 20, think_s=0.5, seed=8, system_prompt=24)
    reqs += [Request(f"x{r.id}", r.prompt, r.max_new_tokens, arrival_s=r.arrival_s) for r in chats]
    end = max(r.arrival_s for r in reqs)
    reqs += [Request("too_long", tuple([1] * 129), 4, arrival_s=end / 2),  # S_max = 128
             Request("past_end", tuple([1] * 100), 40, arrival_s=end / 3),
             Request("bad_token", (1, 2, 600), 4, arrival_s=end / 4),
             Request("cancel_early", (5, 6, 7), 30, arrival_s=end / 5, cancel_s=end / 5)]
    engine = Engine.for_model(model, num_blocks=48, block_size=16,
                              config=EngineConfig(max_batch=16, chunk_size=64, prefix_caching=True, log_interval_s=2.0,
                                                  preemption=args.preemption, watermark=0.01),
                              echo=True)
    started = time.perf_counter()
    out = engine.run(sorted(reqs, key=lambda r: r.arrival_s))
    wall = time.perf_counter() - started
    engine.close()
    counts = collections.Counter(t.status for t in out)
    tally = ", ".join(f"{s.value} {c}" for s, c in counts.items())
    print(f"{len(out)} requests in {wall:.1f} s of wall clock: {tally}")
    for t in out:
        if t.status is Status.REJECTED:
            print(f"  rejected {t.request.id}: {t.reason}")
    s = latency_summary(out)
    print(f"output {s['output_tok_s']:.0f} tok/s; TTFT p50 {1e3 * s['ttft_p50_s']:.1f} ms, "
          f"p99 {1e3 * s['ttft_p99_s']:.1f} ms; "
          f"TPOT p50 {1e3 * s['tpot_p50_s']:.2f} ms, p99 {1e3 * s['tpot_p99_s']:.2f} ms; "
          f"preemptions {engine.scheduler.preempted} ({engine.scheduler.swapped_out} by swap); "
          f"prefix hit rate {engine.prefix_cache.hit_rate:.1%}")
    ok = sum(counts[s] for s in (Status.FINISHED, Status.REJECTED, Status.CANCELLED)) == len(reqs)
    ok &= engine.pool.allocator.num_used == 0 and not engine.pool.sequences
    host = engine.scheduler.swap_pool
    ok &= host is None or host.allocator.num_used == 0
    ok &= engine.scheduler.preempted > 0 and (engine.scheduler.swapped_out > 0) == (args.preemption == "swap")
    sample = random.Random(0).sample([t for t in out if t.status is Status.FINISHED], 50)
    same = sum(t.tokens == generate(model, list(t.request.prompt), t.request.max_new_tokens).tokens[0] for t in sample)
    print(f"every request accounted for and the pool empty: {ok}; {same}/50 sampled requests equal alone")
    return 0 if ok and same == len(sample) else 1


if __name__ == "__main__":
    sys.exit(main())
