"""Decode with and without the KV cache against the FLOP model, and batch-1 decode against the bandwidth ceiling."""

from __future__ import annotations

import statistics

import torch

from minigpt import MiniGPT, ModelConfig, costs, generate, measure
from minigpt.measure import sweeps


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
