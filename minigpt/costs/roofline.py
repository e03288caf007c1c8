"""The roofline, Chapter 3: bytes per step, arithmetic intensity (Eq. 3.1), the ridge (Eq. 3.2), the
roof (Eq. 3.3), the decode ceiling (Eq. 3.4), and where a workload lands under a machine's two ceilings.

Pure functions over the book's symbols (no torch): the formulas, the prefill and decode-step points
of a model preset, measured points (FLOPs and bytes of a timed call), and the achieved bandwidth of
a decode rate (Eq. (3.4) read backwards). FLOPs are counted 2 per multiply-add.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from minigpt.costs._check import _int, _kv_width, _positive
from minigpt.costs.flops import decode_step_flops, layer_flops, lm_head_flops, prefill_flops
from minigpt.costs.memory import kv_bytes_per_token, weight_bytes
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.costs.shape import evaluate
from minigpt.costs.traffic import decode_step_bytes, prefill_bytes


def arithmetic_intensity(*, flops: float, bytes: float) -> float:
    """Arithmetic intensity, Eq. (3.1): FLOPs per byte moved."""
    if isinstance(flops, bool) or not isinstance(flops, (int, float)) or flops < 0:
        raise ValueError(f"flops must be a number >= 0, got {flops!r}")
    return flops / _positive("bytes", bytes)


def ridge_point(*, peak_flops: float, bandwidth: float) -> float:
    """Ridge point, Eq. (3.2): peak_flops / bandwidth, the intensity where compute and memory limits meet."""
    return _positive("peak_flops", peak_flops) / _positive("bandwidth", bandwidth)


def attainable_flops(*, intensity: float, peak_flops: float, bandwidth: float) -> float:
    """Roofline, Eq. (3.3): min(peak_flops, intensity·bandwidth)."""
    if isinstance(intensity, bool) or not isinstance(intensity, (int, float)) or intensity < 0:
        raise ValueError(f"intensity must be a number >= 0, got {intensity!r}")
    return min(_positive("peak_flops", peak_flops), intensity * _positive("bandwidth", bandwidth))


def decode_tok_s_ceiling(*, bandwidth: float, bytes_per_step: float, B: int = 1) -> float:
    """Decode ceiling, Eq. (3.4): B·bandwidth / bytes_per_step tokens per second."""
    return _int("B", B, 1) * _positive("bandwidth", bandwidth) / _positive("bytes_per_step", bytes_per_step)


def prefill_intensity(
    *, L: int, P: int, d: int, s: int, N_params: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> float:
    """Prefill intensity, Eq. (3.1) with Eq. (1.2) over `prefill_bytes` (weights at s bytes per value)."""
    flops = prefill_flops(L=L, P=P, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices)
    moved = prefill_bytes(weight_bytes=weight_bytes(N_params=N_params, s=s), P=P, d=d, s=s, B=B)
    return arithmetic_intensity(flops=flops, bytes=moved)


def decode_intensity(
    *, L: int, S: int, d: int, s: int, N_params: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> float:
    """Decode-step intensity, Eq. (3.1): Eq. (1.3) over Eq. (3.5), weights and KV at s bytes per value."""
    flops = decode_step_flops(L=L, S=S, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices)
    kv_token = 2 * _int("L", L, 1) * _kv_width(d, H_kv, d_h) * _int("s", s, 1)
    moved = decode_step_bytes(
        weight_bytes=weight_bytes(N_params=N_params, s=s), kv_bytes_per_token=kv_token, S=S, B=B
    )
    return arithmetic_intensity(flops=flops, bytes=moved)


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
    return [attainable_flops(intensity=i, peak_flops=peak_flops, bandwidth=bandwidth) for i in intensities]


def roofline_point(label: str, *, flops: float, bytes: float, peak_flops: float, bandwidth: float) -> RooflinePoint:
    """Place a workload of `flops` FLOPs moving `bytes` bytes under the roofline, Eqs. (3.1)–(3.3)."""
    intensity = arithmetic_intensity(flops=flops, bytes=bytes)
    attainable = attainable_flops(intensity=intensity, peak_flops=peak_flops, bandwidth=bandwidth)
    bound = roofline_bound(intensity=intensity, peak_flops=peak_flops, bandwidth=bandwidth)
    time_s = roofline_time(flops=flops, bytes=bytes, peak_flops=peak_flops, bandwidth=bandwidth)
    return RooflinePoint(
        label=label, flops=flops, bytes=bytes, intensity=intensity, attainable_flops=attainable,
        bound=bound, time_s=time_s,
    )


def model_step_flops(model: ModelPreset, *, T: int, S: int, B: int = 1) -> int:
    """FLOPs of one forward over T new tokens per sequence after S cached ones: Eq. (1.1) summed over
    L layers, plus the LM head at the last position (Eq. 1.6), as `prefill_flops` counts it."""
    return model.L * evaluate(layer_flops, model, T=T, S=S, B=B) + lm_head_flops(d=model.d, V=model.V, B=B)


def _kv_token(model: ModelPreset, s: int) -> int:
    return kv_bytes_per_token(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=s)


def prefill_point(
    model: ModelPreset, *, P: int, peak_flops: float, bandwidth: float, s: int = 2, B: int = 1,
) -> RooflinePoint:
    """Prefill of B prompts of P tokens: `model_step_flops` over `prefill_bytes` (K/V written)."""
    flops = model_step_flops(model, T=P, S=0, B=B)
    moved = prefill_bytes(
        weight_bytes=weight_bytes(N_params=model.N_params, s=s), P=P, d=model.d, s=s, B=B,
        kv_bytes_per_token=_kv_token(model, s),
    )
    return roofline_point(f"{model.name} prefill P={P:,}, B={B}", flops=flops, bytes=moved,
                          peak_flops=peak_flops, bandwidth=bandwidth)


def decode_point(
    model: ModelPreset, *, S: int, peak_flops: float, bandwidth: float, s: int = 2, B: int = 1,
) -> RooflinePoint:
    """One decode step of B sequences with S cached tokens: FLOPs over Eq. (3.5)'s bytes."""
    flops = model_step_flops(model, T=1, S=S, B=B)
    moved = decode_step_bytes(
        weight_bytes=weight_bytes(N_params=model.N_params, s=s), kv_bytes_per_token=_kv_token(model, s),
        S=S, B=B,
    )
    return roofline_point(f"{model.name} decode S={S:,}, B={B}", flops=flops, bytes=moved,
                          peak_flops=peak_flops, bandwidth=bandwidth)


def measured_point(label: str, *, flops: float, bytes: float, seconds: float) -> MeasuredPoint:
    """A timed call on the roofline: intensity = flops/bytes (Eq. 3.1), rates = flops/seconds, bytes/seconds."""
    intensity = arithmetic_intensity(flops=flops, bytes=bytes)
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


def attention_flops(*, L: int, T: int, S: int, d: int, B: int = 1) -> int:
    """Attention-over-the-cache FLOPs, the numerator of Eq. (3.6): 4·L·B·T·(S+T)·d (QKᵀ and weights·V).

    The attention term of Eq. (1.1) summed over L layers: T new queries per sequence against S cached
    plus T new keys, 2 FLOPs per multiply-add, no saving from the causal mask (MiniGPT computes the
    whole score matrix and masks it).
    """
    return 4 * _int("L", L, 1) * _int("B", B, 1) * _int("T", T, 1) * (_int("S", S) + T) * _int("d", d, 1)


def attention_bytes(
    *, L: int, T: int, S: int, d: int, s: int, H_kv: int | None = None, d_h: int | None = None, B: int = 1,
) -> int:
    """Attention's bytes, the denominator of Eq. (3.6): L·B·(2·(S+T)·H_kv·d_h + 2·T·d)·s.

    Per layer and sequence: the keys and values of all S+T positions read from the cache, the T queries
    read and the T attention outputs written. The weights of the projections are not attention's bytes.
    """
    kv = _kv_width(d, H_kv, d_h)
    per_layer = 2 * (_int("S", S) + _int("T", T, 1)) * kv + 2 * T * d
    return _int("L", L, 1) * _int("B", B, 1) * per_layer * _int("s", s, 1)


def attention_intensity(
    *, T: int, S: int, d: int, s: int, H_kv: int | None = None, d_h: int | None = None,
) -> float:
    """Attention's intensity with a cache, Eq. (3.6): 2·T·(S+T)·d / (s·((S+T)·H_kv·d_h + T·d)).

    L and B cancel: every sequence reads its own cache, so batching adds bytes as fast as FLOPs. For
    multi-head attention it is 2·T·(S+T) / (s·(S+2T)), i.e. T·K/(K+T) in bf16 with K = S+T keys.
    """
    flops = attention_flops(L=1, T=T, S=S, d=d)
    return flops / attention_bytes(L=1, T=T, S=S, d=d, s=s, H_kv=H_kv, d_h=d_h)


def decode_intensity_limit(model: ModelPreset, *, S: int, s: int = 2) -> float:
    """The B → ∞ limit of a decode step's intensity: F₁ / (S·b_token), one sequence's FLOPs over its KV bytes.

    F₁ ≈ 2N + 4·L·S·d (Eq. 1.3 at B = 1); the weight bytes of Eq. (3.5), shared by the batch, drop out.
    """
    _int("S", S, 1)
    return model_step_flops(model, T=1, S=S, B=1) / (S * _kv_token(model, s))


def roofline_time(*, flops: float, bytes: float, peak_flops: float, bandwidth: float) -> float:
    """Lower bound on a workload's time under the roofline, Eq. (3.3): max(flops / peak_flops, bytes / bandwidth)."""
    if isinstance(flops, bool) or not isinstance(flops, (int, float)) or flops < 0:
        raise ValueError(f"flops must be a number >= 0, got {flops!r}")
    if isinstance(bytes, bool) or not isinstance(bytes, (int, float)) or bytes < 0:
        raise ValueError(f"bytes must be a number >= 0, got {bytes!r}")
    return max(flops / _positive("peak_flops", peak_flops), bytes / _positive("bandwidth", bandwidth))


def roofline_bound(*, intensity: float, peak_flops: float, bandwidth: float) -> str:
    """Which roof of Eq. (3.3) binds: "memory" below the ridge point (Eq. 3.2), "compute" at or above it."""
    if isinstance(intensity, bool) or not isinstance(intensity, (int, float)) or intensity < 0:
        raise ValueError(f"intensity must be a number >= 0, got {intensity!r}")
    return "memory" if intensity < ridge_point(peak_flops=peak_flops, bandwidth=bandwidth) else "compute"


# ---------------------------------------------------------------------------------------------
# Chapter 7: a batched decode step in time (Eqs. 7.2–7.4)


def critical_batch(
    *, L: int, S: int, d: int, N_params: int, s: int, bandwidth: float, peak_flops: float,
    H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0, ffn_matrices: int = 2,
) -> int | None:
    """B_crit, Eq. (7.4) with the KV term: the smallest B whose decode intensity reaches the ridge point,
    ⌈R·N·s / (F(1, S) − R·S·b_token)⌉ with R = peak/bandwidth; None when F(1, S) ≤ R·S·b_token (never)."""
    ridge = ridge_point(peak_flops=peak_flops, bandwidth=bandwidth)
    flops_1 = decode_step_flops(L=L, S=S, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, ffn_matrices=ffn_matrices)
    kv_seq = _int("S", S) * 2 * L * _kv_width(d, H_kv, d_h) * _int("s", s, 1)
    margin = flops_1 - ridge * kv_seq
    if margin <= 0:
        return None
    return max(1, math.ceil(ridge * weight_bytes(N_params=N_params, s=s) / margin))


def decode_step_time(
    *, L: int, S: int, d: int, N_params: int, s: float, bandwidth: float, peak_flops: float,
    H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0, B: int = 1,
    ffn_matrices: int = 2, s_kv: int | None = None, overlap: bool = True,
) -> float:
    """Decode-step time: Eq. (7.2) max(bytes/BW, F/π) (`overlap=True`, the KV reads overlap the weights'
    arithmetic), or Eq. (7.3) max(N·s/BW, F(S=0)/π) + max(B·S·b_token/BW, (F(S) − F(0))/π) (`overlap=False`);
    weights at s, the cache at s_kv (default s) bytes per value."""
    if s_kv is None:
        if not isinstance(s, int):
            raise ValueError(f"s_kv must be given (an integer >= 1) when s is fractional, got s={s!r}")
        s_kv = s
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True (Eq. 7.2's max) or False (the additive form), got {overlap!r}")
    flops = decode_step_flops(L=L, S=S, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices)
    kv_token = 2 * L * _kv_width(d, H_kv, d_h) * _int("s_kv", s_kv, 1)
    weights = weight_bytes(N_params=N_params, s=s)
    if overlap:
        moved = decode_step_bytes(weight_bytes=weights, kv_bytes_per_token=kv_token, S=S, B=B)
        return roofline_time(flops=flops, bytes=moved, peak_flops=peak_flops, bandwidth=bandwidth)
    # Eq. (7.3): the weights' part and the attention over the S cached tokens, each under its own roof, added.
    dense = decode_step_flops(L=L, S=0, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices)
    kv = B * S * kv_token
    return (roofline_time(flops=dense, bytes=weights, peak_flops=peak_flops, bandwidth=bandwidth)
            + roofline_time(flops=flops - dense, bytes=kv, peak_flops=peak_flops, bandwidth=bandwidth))


def step_time_on(
    model: ModelPreset, hardware: HardwarePreset, *, S: int, B: int = 1, s: int = 2, overlap: bool = True,
) -> float:
    """`decode_step_time`, Eq. (7.2) (overlap) or (7.3) (additive), for a preset model on a preset chip."""
    return evaluate(decode_step_time, model, S=S, B=B, N_params=model.N_params, s=s, bandwidth=hardware.bandwidth,
                    peak_flops=hardware.peak_flops, overlap=overlap)


def critical_batch_on(model: ModelPreset, hardware: HardwarePreset, *, S: int, s: int = 2) -> int | None:
    """`critical_batch`, Eq. (7.4) with the KV term, for a preset model on a preset chip (None: never)."""
    return evaluate(critical_batch, model, S=S, N_params=model.N_params, s=s, bandwidth=hardware.bandwidth,
                    peak_flops=hardware.peak_flops)
