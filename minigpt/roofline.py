"""Roofline data for Chapter 3: where a workload lands under a machine's two ceilings.

Pure functions over the book's symbols (no matplotlib, no torch): the roof of Eq. (3.3), the
prefill and decode-step points of a published model (FLOPs over bytes, Eq. (3.1)), measured points
(FLOPs and bytes of a timed call), and the achieved bandwidth of a decode rate (Eq. (3.4) read
backwards). FLOPs are counted 2 per multiply-add, as in `minigpt.costs`.

Published models use SwiGLU FFNs (three matrices) that `minigpt.costs.layer_flops` does not
describe, so the per-token matrix FLOPs here are 2·(the preset's `matrix_params`), which equals
`costs.layer_flops` for the GPT-style MiniGPT (checked in tests/test_roofline.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from minigpt import costs
from minigpt.presets import ModelPreset

__all__ = [
    "RooflinePoint",
    "MeasuredPoint",
    "achieved_bandwidth",
    "decode_point",
    "log_grid",
    "measured_point",
    "model_step_flops",
    "prefill_point",
    "roofline_curve",
    "roofline_point",
]


@dataclass(frozen=True)
class RooflinePoint:
    """A workload under a roofline: FLOPs, bytes, intensity (Eq. 3.1), attainable rate (Eq. 3.3), time."""

    label: str
    flops: float
    bytes: float
    intensity: float
    attainable_flops: float
    bound: str  # "memory" below the ridge point (Eq. 3.2), "compute" at or above it
    time_s: float  # flops / attainable_flops = max(flops / peak_flops, bytes / bandwidth)


@dataclass(frozen=True)
class MeasuredPoint:
    """A timed call placed on the roofline: intensity from counted FLOPs and bytes, rates from the time."""

    label: str
    flops: float
    bytes: float
    seconds: float
    intensity: float
    achieved_flops: float  # FLOP/s
    achieved_bandwidth: float  # bytes/s


def log_grid(lo: float, hi: float, n: int = 200) -> list[float]:
    """`n` points from lo to hi, evenly spaced in log scale (the x axis of a roofline figure)."""
    if not 0 < lo < hi or n < 2:
        raise ValueError(f"need 0 < lo < hi and n >= 2, got lo={lo}, hi={hi}, n={n}")
    step = math.log(hi / lo) / (n - 1)
    return [lo * math.exp(i * step) for i in range(n)]


def roofline_curve(*, peak_flops: float, bandwidth: float, intensities: Iterable[float]) -> list[float]:
    """The roof, Eq. (3.3): min(peak_flops, I·bandwidth) for each intensity I."""
    return [costs.attainable_flops(intensity=i, peak_flops=peak_flops, bandwidth=bandwidth) for i in intensities]


def roofline_point(label: str, *, flops: float, bytes: float, peak_flops: float, bandwidth: float) -> RooflinePoint:
    """Place a workload of `flops` FLOPs moving `bytes` bytes under the roofline, Eqs. (3.1)–(3.3)."""
    intensity = costs.arithmetic_intensity(flops=flops, bytes=bytes)
    attainable = costs.attainable_flops(intensity=intensity, peak_flops=peak_flops, bandwidth=bandwidth)
    ridge = costs.ridge_point(peak_flops=peak_flops, bandwidth=bandwidth)
    time_s = max(flops / peak_flops, bytes / bandwidth)
    return RooflinePoint(
        label=label, flops=flops, bytes=bytes, intensity=intensity, attainable_flops=attainable,
        bound="memory" if intensity < ridge else "compute", time_s=time_s,
    )


def model_step_flops(model: ModelPreset, *, T: int, S: int, B: int = 1) -> int:
    """FLOPs of one forward over T new tokens per sequence after S cached ones, Eq. (1.1) summed over L.

    B·T·2·matrix_params (every weight matrix, SwiGLU included) + 4·B·L·T·(S+T)·d (scores and
    weighted values, the full T×(S+T) block as the FLOP counter sees it) + 2·B·d·V (the LM head at
    the last position only, as `minigpt.costs.prefill_flops` counts it).
    """
    for name, value, minimum in (("T", T, 1), ("S", S, 0), ("B", B, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    matrices = 2 * B * T * model.matrix_params
    attention = 4 * B * model.L * T * (S + T) * model.d
    return matrices + attention + 2 * B * model.d * model.V


def _kv_token(model: ModelPreset, s: int) -> int:
    return costs.kv_bytes_per_token(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=s)


def prefill_point(
    model: ModelPreset, *, P: int, peak_flops: float, bandwidth: float, s: int = 2, B: int = 1,
) -> RooflinePoint:
    """Prefill of B prompts of P tokens: `model_step_flops` over `costs.prefill_bytes` (K/V written)."""
    flops = model_step_flops(model, T=P, S=0, B=B)
    moved = costs.prefill_bytes(
        weight_bytes=costs.weight_bytes(N_params=model.N_params, s=s), P=P, d=model.d, s=s, B=B,
        kv_bytes_per_token=_kv_token(model, s),
    )
    return roofline_point(f"{model.name} prefill P={P:,}, B={B}", flops=flops, bytes=moved,
                          peak_flops=peak_flops, bandwidth=bandwidth)


def decode_point(
    model: ModelPreset, *, S: int, peak_flops: float, bandwidth: float, s: int = 2, B: int = 1,
) -> RooflinePoint:
    """One decode step of B sequences with S cached tokens: FLOPs over Eq. (3.5)'s bytes."""
    flops = model_step_flops(model, T=1, S=S, B=B)
    moved = costs.decode_step_bytes(
        weight_bytes=costs.weight_bytes(N_params=model.N_params, s=s), kv_bytes_per_token=_kv_token(model, s),
        S=S, B=B,
    )
    return roofline_point(f"{model.name} decode S={S:,}, B={B}", flops=flops, bytes=moved,
                          peak_flops=peak_flops, bandwidth=bandwidth)


def measured_point(label: str, *, flops: float, bytes: float, seconds: float) -> MeasuredPoint:
    """A timed call on the roofline: intensity = flops/bytes (Eq. 3.1), rates = flops/seconds, bytes/seconds."""
    intensity = costs.arithmetic_intensity(flops=flops, bytes=bytes)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"seconds must be a number > 0, got {seconds!r}")
    return MeasuredPoint(
        label=label, flops=flops, bytes=bytes, seconds=seconds, intensity=intensity,
        achieved_flops=flops / seconds, achieved_bandwidth=bytes / seconds,
    )


def achieved_bandwidth(*, tok_s: float, bytes_per_step: float, B: int = 1) -> float:
    """Eq. (3.4) read backwards: the bandwidth a measured decode rate implies, bytes_per_step·tok_s/B."""
    if isinstance(B, bool) or not isinstance(B, int) or B < 1:
        raise ValueError(f"B must be an integer >= 1, got {B!r}")
    for name, value in (("tok_s", tok_s), ("bytes_per_step", bytes_per_step)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{name} must be a number > 0, got {value!r}")
    return bytes_per_step * tok_s / B
