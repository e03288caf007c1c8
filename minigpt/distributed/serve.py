"""Serve a Poisson trace on MiniGPT with prefill and decode apart (Chapter 19), from the command line:

    python -m minigpt.distributed.serve --prefill-workers 1 --decode-workers 1 --requests 16 --rate 20

Prints the driver's log (one line per interval: the prefill pool's prompt throughput, the decode
pool's generation throughput, the K/V bytes that crossed), then a summary: requests finished or
failed, P90 TTFT and TPOT, the K/V bytes counted against Eq. (19.1), and with both SLOs given, the
run's attainment (Eq. 19.3). It lives here, not in `minigpt.serving`, because `minigpt.distributed`
sits above the serving layer (tests/test_layers.py).
"""

from __future__ import annotations

import argparse
import math

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.distributed.disagg import serve
from minigpt.distributed.disagg_records import DisaggConfig
from minigpt.runtime.checkpoint import load_pretrained
from minigpt.serving import Engine, EngineConfig, Request, goodput
from minigpt.serving.trace import poisson_trace


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minigpt.distributed.serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--prefill-workers", type=int, default=1)
    p.add_argument("--decode-workers", type=int, default=1)
    p.add_argument("--requests", type=int, default=16, help="requests in the Poisson trace")
    p.add_argument("--rate", type=float, default=20.0, help="arrivals per second")
    p.add_argument("--prompt", type=int, nargs=2, default=(8, 100), metavar=("LO", "HI"), help="P range")
    p.add_argument("--output", type=int, nargs=2, default=(8, 28), metavar=("LO", "HI"), help="D range")
    p.add_argument("--chunk-size", type=int, default=None, help="prefill chunk (tokens per step)")
    p.add_argument("--max-batch", type=int, default=8)
    p.add_argument("--blocks", type=int, default=64, help="KV blocks per worker's pool")
    p.add_argument("--log-interval", type=float, default=0.5, help="seconds between log lines")
    p.add_argument("--ttft-slo", type=float, default=None, help="seconds")
    p.add_argument("--tpot-slo", type=float, default=None, help="seconds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for the whole run")
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo", help="nccl needs --device cuda")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cuda: one GPU per worker")
    p.add_argument("--check-colocated", action="store_true",
                   help="also serve the trace on one colocated engine (on the first worker's device) and fail "
                        "unless every finished request has its tokens")
    a = p.parse_args(argv)
    c = ModelConfig()
    if a.prompt[1] + a.output[1] - 1 > c.S_max:
        p.error(f"--prompt HI + --output HI - 1 must be <= S_max = {c.S_max}")
    cfg = DisaggConfig(a.prefill_workers, a.decode_workers, max_batch=a.max_batch, chunk_size=a.chunk_size,
                       num_blocks=a.blocks, log_interval_s=a.log_interval)
    requests = poisson_trace(a.requests, rate=a.rate, seed=a.seed, P=tuple(a.prompt), D=tuple(a.output))
    run = serve(requests, cfg, echo=True, timeout_s=a.timeout, backend=a.backend, device=a.device)
    if run.error:
        print(f"the run failed: {run.error}")
    done = [r for r in run.records if r.status == "finished"]
    failed = [r for r in run.records if r.status == "failed"]
    p90 = goodput.p90(run.records)
    formula = sum(costs.kv_transfer_bytes(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4, P=r.P) for r in done
                  if r.max_new_tokens > 1)
    print(f"finished {len(done)}, failed {len(failed)} of {len(run.records)} in {run.span_s:.2f} s; "
          f"P90 TTFT {1e3 * p90['ttft_p90_s']:.1f} ms, P90 TPOT {1e3 * p90['tpot_p90_s']:.1f} ms")
    print(f"K/V bytes sent {run.kv_bytes:,} (Eq. 19.1 for the finished requests: {formula:,})")
    for r in failed:
        print(f"  {r.id} failed: {r.reason}")
    if run.dead:
        print(f"dead workers: {run.dead}")
    if a.ttft_slo is not None and a.tpot_slo is not None:
        att = goodput.attainment(run.records, ttft_slo=a.ttft_slo, tpot_slo=a.tpot_slo)
        print(f"SLO attainment (TTFT <= {a.ttft_slo} s, TPOT <= {a.tpot_slo} s): {100 * att:.0f} %")
    same = True
    if a.check_colocated:
        model = load_pretrained(device="cuda:0" if a.device == "cuda" else "cpu").model
        engine = Engine.for_model(model, num_blocks=a.blocks, config=EngineConfig(max_batch=a.max_batch))
        want = {t.request.id: t.tokens for t in engine.run([Request(r.id, r.prompt, r.max_new_tokens)
                                                            for r in requests])}
        differ = [r.id for r in done if r.tokens != want[r.id]]
        same = not differ
        print(f"tokens equal to the colocated engine's for {len(done) - len(differ)} of {len(done)} finished "
              f"requests" + (f"; they differ for {differ}" if differ else ""))
    return 0 if not failed and same and math.isfinite(p90["ttft_p90_s"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
