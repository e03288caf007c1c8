"""Decode-step timing on any cache (Part III): GQA variants and quantized caches at long S.

A cache is filled with S random rows through its own `update` (a quantized cache quantizes them), so
no prefill is run: the step's time depends on the shapes, not on the values. `step_bytes` is Eq. (3.5)
with the cache's bytes per token; `unfused_step_bytes` adds what this package's dequantize-on-read
costs (the fp32 copy of the prefix, written then read by attention), Eq. (10.5). `read_s` times the
cache's read path alone (every layer's prefix handed back, dequantized where the cache is quantized).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.measure.counting import module_bytes
from minigpt.measure.environment import environment
from minigpt.measure.timing import Clock, time_fn
from minigpt.runtime.generate import decode_step
from minigpt.runtime.kv_cache import KVCache
from minigpt.runtime.model import MiniGPT


def randomly_filled(cache: KVCache, S: int, *, seed: int = 0) -> KVCache:
    """`cache` holding S rows of N(0, 1) keys and values in every layer (written with `update`, then `advance`)."""
    c = cache.config
    g = torch.Generator().manual_seed(seed)
    for layer in range(c.L):
        k, v = (torch.randn(cache.B, c.H_kv, S, c.d_h, generator=g).to(cache.dtype).to(cache.device)
                for _ in range(2))
        cache.update(layer, k, v)
    cache.advance(S)
    return cache


def kv_bytes_per_token_of(cache: KVCache) -> int:
    """Bytes one token occupies in `cache`, all layers, keys and values (Eq. 2.1 or its quantized form)."""
    return cache.nbytes // (cache.B * cache.S_max)


@dataclass(frozen=True)
class CachePoint:
    """One decode step of B sequences at S cached tokens on one kind of cache."""

    kind: str
    H_kv: int
    B: int
    S: int
    step_s: float
    step_median_s: float
    kv_bytes_per_token: int
    step_bytes: int  # Eq. (3.5): weights + B·S·(the cache's bytes per token)
    unfused_step_bytes: int  # Eq. (10.5): plus the dequantized fp32 copy written and read (0 extra for fp32)
    read_s: float = 0.0  # the cache's read path alone: every layer's prefix handed back (dequantized), no model


def unfused_step_bytes(*, weight_bytes: int, kv_bytes_per_token: int, fp_bytes_per_token: int, S: int, B: int,
                       quantized: bool) -> int:
    """Eq. (10.5): Eq. (3.5) plus, for a quantized cache dequantized on read, 2·B·S·(fp bytes per token)."""
    extra = 2 * B * S * fp_bytes_per_token if quantized else 0
    return costs.decode_step_bytes(weight_bytes=weight_bytes, kv_bytes_per_token=kv_bytes_per_token, S=S, B=B) + extra


def time_cache_step(
    model: MiniGPT, new_cache: Callable[[int, int], KVCache], *, kind: str, B: int, S: int, warmup: int = 2,
    repeats: int = 5, clock: Clock = "wall",
) -> CachePoint:
    """Time one decode step on a cache from `new_cache(B, S + 1)` holding S random rows; rewound after each call."""
    cache = randomly_filled(new_cache(B, S + 1), S)
    token = torch.zeros(B, dtype=torch.long, device=model.device)

    def step() -> None:
        decode_step(model, token, cache)
        cache.truncate(S)

    timing = time_fn(step, warmup=warmup, repeats=repeats, device=model.device, clock=clock)
    c = model.config
    empty = torch.zeros(B, c.H_kv, 0, c.d_h, dtype=cache.dtype, device=cache.device)

    def read() -> None:  # what attention is handed each step, and nothing else: update with no new row
        for layer in range(c.L):
            cache.update(layer, empty, empty)

    reading = time_fn(read, warmup=warmup, repeats=repeats, device=model.device, clock=clock)
    per_token = kv_bytes_per_token_of(cache)
    fp = costs.kv_bytes_per_token(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=model.dtype.itemsize)
    w = module_bytes(model)
    return CachePoint(
        kind=kind, H_kv=c.H_kv, B=B, S=S, step_s=timing.min_s, step_median_s=timing.median_s,
        kv_bytes_per_token=per_token,
        step_bytes=costs.decode_step_bytes(weight_bytes=w, kv_bytes_per_token=per_token, S=S, B=B),
        unfused_step_bytes=unfused_step_bytes(weight_bytes=w, kv_bytes_per_token=per_token, fp_bytes_per_token=fp,
                                              S=S, B=B, quantized=kind != "fp32"),
        read_s=reading.min_s,
    )


def point_record(point: CachePoint) -> dict[str, object]:
    """A JSON-ready dict of a point (floats to 4 significant digits)."""
    return {k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in asdict(point).items()}


def sweep_record(script: str, *, device: torch.device, dtype: torch.dtype, clock: str, config: ModelConfig,
                 repeats: int, roofline: dict[str, float], points: list[CachePoint], **extra: object) -> dict:
    """What a Part III sweep script writes: the environment, the shape, the probes and every point."""
    return {"script": script, "environment": environment(device, dtype), "clock": clock,
            "config": config.to_dict(), "repeats": repeats, "roofline": roofline,
            "points": [point_record(p) for p in points], **extra}
