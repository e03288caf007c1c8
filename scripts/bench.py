"""`make bench`: speed and memory figures, reported (never asserted: the machines are shared and noisy).

One run prints one set of tables and writes them, with the environment, to a JSON file
(default `_build/bench/bench_<device>.json`) so that a later run can be compared:

* decode with and without the KV cache, against the FLOP model's prediction;
* batch-1 decode tok/s of the scaled config against the bandwidth ceiling (Eq. 3.4);
* the grammar checker's speed and the shipped checkpoint's load time.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from minigpt import MiniGPT, ModelConfig, costs, generate, load_pretrained, measure
from minigpt.corpus import generate_sentences, is_grammatical
from minigpt.costs.presets import SCALED
from minigpt.measure import sweeps

ROOT = Path(__file__).resolve().parents[1]


def decode_seconds(model: MiniGPT, P: int, D: int, use_cache: bool, repeats: int) -> float:
    """Median wall time of the decode phase (D − 1 steps) of a greedy D-token generation."""
    prompt = torch.randint(0, model.config.V, (1, P), generator=torch.Generator().manual_seed(0)).to(model.device)
    return statistics.median(generate(model, prompt, D, use_cache=use_cache).meters.decode_s for _ in range(repeats))


def predicted_speedup(cfg: ModelConfig, P: int, D: int) -> float:
    """FLOP model: no-cache decode FLOPs over cached decode FLOPs (prefill excluded from both)."""
    c = costs.of(cfg)
    return (c.no_cache_flops(P=P, D=D) - c.prefill_flops(P=P)) / c.decode_flops(P=P, D=D)


def cache_speedups(models: dict[str, MiniGPT], P: int, Ds: list[int], repeats: int) -> list[dict]:
    print(f"{'model':<20} {'D':>5} {'no cache (s)':>13} {'cache (s)':>10} {'speedup':>8} {'FLOP model':>11}")
    rows = []
    for name, model in models.items():
        for D in Ds:
            if P + D - 1 > model.config.S_max:
                print(f"{name:<20} {D:>5}  skipped: P + D - 1 = {P + D - 1} > S_max = {model.config.S_max}")
                rows.append({"model": name, "D": D, "skipped": f"P + D - 1 > S_max = {model.config.S_max}"})
                continue
            generate(model, [[1] * P], 4)  # warm-up
            slow = decode_seconds(model, P, D, False, repeats)
            fast = decode_seconds(model, P, D, True, repeats)
            predicted = predicted_speedup(model.config, P, D)
            print(f"{name:<20} {D:>5} {slow:>13.4f} {fast:>10.4f} {slow / fast:>7.1f}x {predicted:>10.1f}x")
            rows.append({"model": name, "D": D, "no_cache_s": slow, "cache_s": fast, "speedup": slow / fast,
                         "predicted_speedup": predicted})
    return rows


def bandwidth_ceiling(model: MiniGPT, bandwidth: float) -> list[dict]:
    print(f"\nbandwidth probe: {bandwidth / 1e9:.1f} GB/s; scaled config weights "
          f"{measure.module_bytes(model) / 2**20:.1f} MiB")
    print(f"{'S':>5} {'bytes/step (MiB)':>17} {'ceiling tok/s':>14} {'measured tok/s':>15} {'of ceiling':>11}")
    rows = []
    for S in (16, 128, 256):
        t = sweeps.time_decode_step(model, B=1, S=S, warmup=3, repeats=20).median_s
        step_bytes = sweeps.model_decode_bytes(model, B=1, S=S)
        ceiling = costs.decode_tok_s_ceiling(bandwidth=bandwidth, bytes_per_step=step_bytes)
        print(f"{S:>5} {step_bytes / 2**20:>17.1f} {ceiling:>14.0f} {1 / t:>15.0f} {(1 / t) / ceiling:>10.0%}")
        rows.append({"S": S, "bytes_per_step": step_bytes, "ceiling_tok_s": ceiling, "measured_tok_s": 1 / t})
    return rows


def small_timings() -> dict[str, float]:
    sentences = generate_sentences(1000, seed=11)
    checker = measure.time_fn(lambda: all(is_grammatical(s) for s in sentences), warmup=1, repeats=5)
    load_pretrained()  # warm the imports
    start = time.perf_counter()
    load_pretrained()
    load_s = time.perf_counter() - start
    print(f"\ngrammar checker: {checker.median_s * 1e3:.0f} ms per 1,000 sentences; "
          f"checkpoint load: {load_s * 1e3:.0f} ms")
    return {"checker_s_per_1000": checker.median_s, "checkpoint_load_s": load_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--P", type=int, default=16)
    parser.add_argument("--D", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    device = measure.default_device()
    torch.manual_seed(0)
    env = measure.environment(device, torch.float32)
    print(f"# make bench — {env}; P={args.P}; medians of {args.repeats}")
    models = {"MiniGPT (shipped)": load_pretrained(device=device).model,
              "scaled L=8 d=512": sweeps.random_model(SCALED, device=device)}
    result = {
        "script": "scripts/bench.py",
        "environment": env,
        "cache_speedup": cache_speedups(models, args.P, args.D, args.repeats),
    }
    bandwidth = measure.probe_bandwidth(device=device)
    result["bandwidth_probe"] = bandwidth
    result["bandwidth_ceiling"] = bandwidth_ceiling(models["scaled L=8 d=512"], bandwidth)
    result["small"] = small_timings()
    out = args.out or ROOT / "_build" / "bench" / f"bench_{device.type}.json"
    sweeps.write_json(out, result)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
