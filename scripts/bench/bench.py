"""`make bench`: speed and memory figures, reported (never asserted: the machines are shared and noisy).

One run prints one set of tables and writes them, with the environment, to a JSON file
(default `_build/bench/bench_<device>.json`) so that a later run can be compared:

* decode with and without the KV cache, against the FLOP model's prediction;
* batch-1 decode tok/s of the scaled config against the bandwidth ceiling (Eq. 3.4);
* the grammar checker's speed and the shipped checkpoint's load time;
* peers (issue 14): per model, greedy tok/s of MiniGPT eager, MiniGPT compiled (static cache +
  `torch.compile`), `transformers` GPT-2 `generate` and llama.cpp (issue 27: the f32 GGUF file,
  llama-cpp-python, when installed) on the same exported weights, interleaved repeats; the eager
  step's overhead floor; batch-1 achieved bandwidth / the probe's, eager and compiled;
* fused (issue 22): a mixed step (one prompt chunk and B decodes) as one fused forward against the
  unfused executor's one forward per chunk length, B = 1…64, on the scaled config;
* paged (issue 22): a decode step and its attention alone on a ragged batch (400 + 7×60 tokens) and a
  uniform one of equal Σ S_b, through the block table (fused, paged), from slots (fused, slot cache),
  contiguous (`KVCache`), and the old padded ragged paths.

This file is the command line; each section's code is a module beside it: bench_cache.py (cache, bandwidth),
bench_small.py (small), bench_peers.py (peers) and bench_fused_paged.py (fused, paged).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from minigpt import load_pretrained, measure
from minigpt.costs.presets import SCALED
from minigpt.measure import sweeps

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sections, one module each, next to it

from bench_cache import bandwidth_ceiling, cache_speedups, decode_seconds, predicted_speedup  # noqa: E402
from bench_fused_paged import fused_vs_unfused, paged_vs_slot  # noqa: E402
from bench_peers import TARGETS, achieved_bandwidth, peer_models, peers, targets  # noqa: E402
from bench_small import small_timings  # noqa: E402

__all__ = ["bandwidth_ceiling", "cache_speedups", "decode_seconds", "predicted_speedup", "fused_vs_unfused",
           "paged_vs_slot", "TARGETS", "achieved_bandwidth", "peer_models", "peers", "targets", "small_timings",
           "ROOT", "SECTIONS", "main"]

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("cache", "bandwidth", "small", "peers", "fused", "paged")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--P", type=int, default=16)
    parser.add_argument("--D", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--peer-D", type=int, default=64, help="new tokens per generation in the peers table")
    parser.add_argument("--peer-repeats", type=int, default=5)
    args = parser.parse_args()
    device = measure.default_device()
    if device.type == "cpu":
        torch.set_num_threads(1)  # the CPU is shared: one thread per timed job
    torch.manual_seed(0)
    env = measure.environment(device, torch.float32)
    print(f"# make bench — {env}; P={args.P}; medians of {args.repeats}")
    models = {"MiniGPT (shipped)": load_pretrained(device=device).model,
              "scaled L=8 d=512": sweeps.random_model(SCALED, device=device)}
    result = {"script": "scripts/bench/bench.py", "environment": env, "sections": args.sections}
    if "cache" in args.sections:
        result["cache_speedup"] = cache_speedups(models, args.P, args.D, args.repeats)
    bandwidth = measure.probe_bandwidth(device=device)
    result["bandwidth_probe"] = bandwidth
    if "bandwidth" in args.sections:
        result["bandwidth_ceiling"] = bandwidth_ceiling(models["scaled L=8 d=512"], bandwidth)
    if "small" in args.sections:
        result["small"] = small_timings()
    if "peers" in args.sections:
        family = peer_models(device)
        result["peers"] = peers(family, args.P, args.peer_D, args.peer_repeats, device)
        largest = max(family, key=lambda k: measure.module_bytes(family[k]))  # all fit: 0.8 GB at most in fp32
        result["peer_bandwidth"] = achieved_bandwidth(family[largest], largest, bandwidth, S=args.P, repeats=10)
        result["targets"] = targets(result["peers"], result["peer_bandwidth"])
    if "fused" in args.sections:
        print("\n## fused vs unfused mixed step (scaled config, thread CPU time)")
        result["fused"] = fused_vs_unfused(models["scaled L=8 d=512"], [1, 4, 16, 64], args.repeats)
    if "paged" in args.sections:
        print("\n## paged vs slot vs contiguous decode step (scaled config, thread CPU time, x: over fused_slot)")
        result["paged"] = paged_vs_slot(models["scaled L=8 d=512"], args.repeats, {
            "ragged 400 + 7x60": [400] + [60] * 7, "uniform 8x102": [102] * 8})
    out = args.out or ROOT / "_build" / "bench" / f"bench_{device.type}.json"
    sweeps.write_json(out, result)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
