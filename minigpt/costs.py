"""The book's cost formulas: FLOPs, parameters, bytes, roofline and wall clock, as pure functions.

Every function takes keyword arguments named by the notation table (L, H_kv, d_h, d, d_ffn, V, B,
P, D, S, s, bandwidth, peak_flops), returns an exact ``int`` where the quantity is a count, and
names the book equation it implements. ``minigpt/web/costs.js`` mirrors these functions for the
browser sliders; ``tests/test_costs_js.py`` keeps the two equal.

Counting convention: a multiply-add counts as 2 FLOPs (as hardware peak rates and
``torch.utils.flop_counter.FlopCounterMode`` do). Seed 002 counts 1 per multiply-add; its boxed
formulas are the ``*_macs`` functions. LayerNorm, softmax, GELU, embedding lookups, residual adds
and biases count 0 (the FLOP counter does not count them either).

Optional model symbols default to the seed's case: ``H_kv=None, d_h=None`` is multi-head attention
(H_kv·d_h = d; give both or neither), ``d_ffn=None`` is 4·d, ``V=0`` leaves the LM head out (as the
seed does), ``B=1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

# ---------------------------------------------------------------------------------------------
# Validation


def _int(name: str, value: object, minimum: int = 0) -> int:
    """`value` as an int >= minimum, or a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


def _positive(name: str, value: object) -> float:
    """`value` as a finite number > 0, or a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def _fraction(name: str, value: object) -> float:
    """`value` as a number in [0, 1), or a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
    return value


def _kv_width(d: int, H_kv: int | None, d_h: int | None) -> int:
    """Width of the keys (or values) of one token, H_kv·d_h; d for multi-head attention."""
    _int("d", d, 1)
    if H_kv is None and d_h is None:
        return d
    if H_kv is None or d_h is None:
        raise ValueError("give both H_kv and d_h, or neither (neither is multi-head attention, H_kv·d_h = d)")
    _int("H_kv", H_kv, 1)
    _int("d_h", d_h, 1)
    if d % d_h != 0:
        raise ValueError(f"d_h must divide d = H·d_h; got d={d}, d_h={d_h}")
    H = d // d_h
    if H % H_kv != 0:
        raise ValueError(f"H_kv must divide H = d/d_h = {H}; got H_kv={H_kv}")
    return H_kv * d_h


def _ffn(d: int, d_ffn: int | None) -> int:
    return 4 * d if d_ffn is None else _int("d_ffn", d_ffn, 1)


def _ffn_matrices(ffn_matrices: int) -> int:
    if ffn_matrices not in (2, 3) or isinstance(ffn_matrices, bool):
        raise ValueError(
            f"ffn_matrices must be 2 (GELU MLP, MiniGPT/GPT) or 3 (SwiGLU, Llama/Mistral), got {ffn_matrices!r}"
        )
    return ffn_matrices


def _token_matrix_flops(
    d: int, H_kv: int | None, d_h: int | None, d_ffn: int | None, ffn_matrices: int = 2
) -> int:
    """FLOPs of one layer's weight matrices on one token: QKV, output projection, FFN (24·d² for MHA, 4d GELU)."""
    kv = _kv_width(d, H_kv, d_h)
    return 2 * d * (d + 2 * kv) + 2 * d * d + 2 * _ffn_matrices(ffn_matrices) * d * _ffn(d, d_ffn)


# ---------------------------------------------------------------------------------------------
# Chapter 1: FLOPs (2 per multiply-add)


def layer_flops(
    *, T: int, S: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """Per-layer FLOPs, Eq. (1.1): B·T·(2d(d+2·H_kv·d_h) + 2d² + 4d·d_ffn) + 4·B·T·(S+T)·d."""
    _int("T", T, 1)
    _int("S", S)
    _int("B", B, 1)
    return B * T * _token_matrix_flops(d, H_kv, d_h, d_ffn, ffn_matrices) + 4 * B * T * (S + T) * d


def lm_head_flops(*, d: int, V: int, T: int = 1, B: int = 1) -> int:
    """LM-head FLOPs, Eq. (1.6): 2·B·T·d·V for T positions whose logits are computed."""
    return 2 * _int("B", B, 1) * _int("T", T) * _int("d", d, 1) * _int("V", V)


def prefill_flops(
    *, L: int, P: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """Prefill FLOPs, Eq. (1.2): L layers on P tokens, empty cache, plus the LM head at one position."""
    _int("L", L, 1)
    _int("P", P, 1)
    layers = L * layer_flops(T=P, S=0, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, B=B, ffn_matrices=ffn_matrices)
    return layers + lm_head_flops(d=d, V=V, T=1, B=B)


def decode_step_flops(
    *, L: int, S: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """Decode-step FLOPs, Eq. (1.3): one new token per sequence against S cached tokens, plus the LM head."""
    _int("L", L, 1)
    layers = L * layer_flops(T=1, S=S, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, B=B, ffn_matrices=ffn_matrices)
    return layers + lm_head_flops(d=d, V=V, T=1, B=B)


def decode_flops(
    *, L: int, P: int, D: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """Total decode FLOPs, Eq. (1.4): the D−1 decode steps of a D-token generation, S = P..P+D−2."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("D", D, 1)
    _int("B", B, 1)
    n = D - 1  # decode steps; the prefill produced token 1
    # Step t attends over S+1 = P+t keys: sum over t=1..n of (P+t) = n·P + n(n+1)/2.
    keys = n * P + n * (n + 1) // 2
    per_token = L * _token_matrix_flops(d, H_kv, d_h, d_ffn, ffn_matrices) + 2 * d * _int("V", V)
    return B * (n * per_token + 4 * L * d * keys)


def generation_flops(
    *, L: int, P: int, D: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """Generation FLOPs with a KV cache, Eq. (1.2) + Eq. (1.4): one prefill and D−1 decode steps."""
    model = dict(d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices)
    return prefill_flops(L=L, P=P, **model) + decode_flops(L=L, P=P, D=D, **model)


def no_cache_flops(
    *, L: int, P: int, D: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> int:
    """No-cache FLOPs, Eq. (1.5): step t = 0..D−1 recomputes a full forward over P+t tokens."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("D", D, 1)
    _int("B", B, 1)
    tokens = D * P + D * (D - 1) // 2  # sum of (P+t)
    squares = D * P * P + P * D * (D - 1) + (D - 1) * D * (2 * D - 1) // 6  # sum of (P+t)²
    matrices = L * _token_matrix_flops(d, H_kv, d_h, d_ffn, ffn_matrices)
    return B * (matrices * tokens + 4 * L * d * squares + D * 2 * d * _int("V", V))


def cache_saving_factor(
    *, L: int, P: int, D: int, d: int, H_kv: int | None = None, d_h: int | None = None,
    d_ffn: int | None = None, V: int = 0, B: int = 1, ffn_matrices: int = 2,
) -> float:
    """Eq. (1.5) / (Eq. (1.2) + Eq. (1.4)): how many times more FLOPs generation costs without the cache."""
    args = dict(L=L, P=P, D=D, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices)
    return no_cache_flops(**args) / generation_flops(**args)


# ---------------------------------------------------------------------------------------------
# Chapter 1: seed 002's convention (1 FLOP per multiply-add, MHA, d_ffn = 4d, no LM head)


def prefill_macs(*, L: int, P: int, d: int) -> int:
    """Seed prefill, Eq. (1.2) in multiply-adds: 12·L·P·d² + 2·L·P²·d."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("d", d, 1)
    return 12 * L * P * d**2 + 2 * L * P**2 * d


def decode_step_macs(*, L: int, S: int, d: int) -> int:
    """Seed decode step, Eq. (1.3) in multiply-adds: 12·L·d² + 2·L·S·d."""
    _int("L", L, 1)
    _int("S", S)
    _int("d", d, 1)
    return 12 * L * d**2 + 2 * L * S * d


def decode_macs_seed(*, L: int, P: int, D: int, d: int) -> int:
    """Seed total decode, Eq. (1.4), D steps S = P..P+D−1: 12·L·D·d² + 2·L·d·(D·P + D(D−1)/2)."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("D", D, 1)
    _int("d", d, 1)
    return 12 * L * D * d**2 + 2 * L * d * (D * P + D * (D - 1) // 2)


def no_cache_macs_seed(*, L: int, P: int, D: int, d: int) -> int:
    """Seed no-cache total, Eq. (1.5): sum over t = 0..D−1 of 12·L·(P+t)·d² + 2·L·(P+t)²·d."""
    _int("L", L, 1)
    _int("P", P, 1)
    _int("D", D, 1)
    _int("d", d, 1)
    tokens = D * P + D * (D - 1) // 2
    squares = D * P * P + P * D * (D - 1) + (D - 1) * D * (2 * D - 1) // 6
    return 12 * L * d**2 * tokens + 2 * L * d * squares


def prefill_attention_share(*, P: int, d: int) -> float:
    """Attention's share of prefill, from Eq. (1.2): 2·P²·d / (12·P·d² + 2·P²·d) = P / (6d + P)."""
    _int("P", P, 1)
    _int("d", d, 1)
    return P / (6 * d + P)


def prefill_crossover_P(*, d: int) -> int:
    """Prompt length where the two terms of Eq. (1.2) are equal: 12·P·d² = 2·P²·d at P = 6·d."""
    return 6 * _int("d", d, 1)


# ---------------------------------------------------------------------------------------------
# Parameters


def params_by_component(
    *, L: int, d: int, V: int, S_max: int, d_ffn: int | None = None, H_kv: int | None = None,
    d_h: int | None = None, biases: bool = True,
) -> dict[str, int]:
    """Parameters of the GPT-2-style MiniGPT by component (tied LM head), the terms of Eq. (2.3)'s N."""
    _int("L", L, 1)
    _int("V", V, 1)
    _int("S_max", S_max, 1)
    kv, ffn, b = _kv_width(d, H_kv, d_h), _ffn(d, d_ffn), int(bool(biases))
    qkv = d * (d + 2 * kv) + b * (d + 2 * kv)
    out = d * d + b * d
    mlp = d * ffn + b * ffn + ffn * d + b * d
    return {
        "token_embedding": V * d,
        "position_embedding": S_max * d,
        "attention": L * (qkv + out),
        "mlp": L * mlp,
        "layer_norms": L * 2 * (2 * d) + 2 * d,
        "lm_head": 0,  # tied to the token embedding
    }


def param_count(
    *, L: int, d: int, V: int, S_max: int, d_ffn: int | None = None, H_kv: int | None = None,
    d_h: int | None = None, biases: bool = True,
) -> int:
    """Total parameters N of the GPT-2-style MiniGPT (tied LM head), the N of Eq. (2.3)."""
    parts = params_by_component(L=L, d=d, V=V, S_max=S_max, d_ffn=d_ffn, H_kv=H_kv, d_h=d_h, biases=biases)
    return sum(parts.values())


def non_embedding_matrix_params(
    *, L: int, d: int, d_ffn: int | None = None, H_kv: int | None = None, d_h: int | None = None,
) -> int:
    """Weight-matrix parameters outside the embeddings, the seed's 12·L·d² (MHA, d_ffn = 4d) of Eq. (2.3)."""
    _int("L", L, 1)
    kv = _kv_width(d, H_kv, d_h)
    return L * (d * (d + 2 * kv) + d * d + 2 * d * _ffn(d, d_ffn))


# ---------------------------------------------------------------------------------------------
# Chapter 2: bytes


def weight_bytes(*, N_params: int, s: int) -> int:
    """Weight bytes, Eq. (2.3): N·s."""
    return _int("N_params", N_params) * _int("s", s, 1)


def kv_bytes_per_token(*, L: int, H_kv: int, d_h: int, s: int) -> int:
    """KV-cache bytes per token, Eq. (2.1): 2·L·H_kv·d_h·s (a key and a value per layer per KV head)."""
    return 2 * _int("L", L, 1) * _int("H_kv", H_kv, 1) * _int("d_h", d_h, 1) * _int("s", s, 1)


def kv_cache_bytes(*, L: int, H_kv: int, d_h: int, s: int, S: int, B: int = 1) -> int:
    """KV-cache bytes for B sequences of S tokens, Eq. (2.2): B·S·2·L·H_kv·d_h·s."""
    return _int("B", B, 1) * _int("S", S) * kv_bytes_per_token(L=L, H_kv=H_kv, d_h=d_h, s=s)


def int8_kv_bytes(*, L: int, H_kv: int, d_h: int, S: int, B: int = 1, s_scale: int = 2) -> int:
    """Int8 KV bytes, Eq. (2.2) with s = 1 plus an s_scale-byte scale per token, layer, KV head and K/V.

    One scale (default 2 bytes, fp16) per d_h-vector: B·S·2·L·H_kv·(d_h + s_scale).
    """
    _int("s_scale", s_scale)
    per_token = 2 * _int("L", L, 1) * _int("H_kv", H_kv, 1) * (_int("d_h", d_h, 1) + s_scale)
    return _int("B", B, 1) * _int("S", S) * per_token


# ---------------------------------------------------------------------------------------------
# Chapter 3: roofline


def decode_step_bytes(*, weight_bytes: int, kv_bytes_per_token: int, S: int, B: int = 1) -> int:
    """Bytes per decode step, Eq. (3.5): weights read once + B·S·(KV bytes per token) read.

    Left out: activations (a few B·d values per layer) and the write of the new token's K/V.
    """
    _int("weight_bytes", weight_bytes)
    _int("kv_bytes_per_token", kv_bytes_per_token)
    return weight_bytes + _int("B", B, 1) * _int("S", S) * kv_bytes_per_token


def prefill_bytes(
    *, weight_bytes: int, P: int, d: int, s: int, B: int = 1, kv_bytes_per_token: int = 0,
) -> int:
    """Minimal prefill traffic for Eq. (3.1): weights once + B·P·d activations in and out (+ K/V written).

    Intermediate activations are assumed to stay on chip; a lower bound on real traffic.
    """
    _int("weight_bytes", weight_bytes)
    _int("kv_bytes_per_token", kv_bytes_per_token)
    tokens = _int("B", B, 1) * _int("P", P, 1)
    return weight_bytes + 2 * tokens * _int("d", d, 1) * _int("s", s, 1) + tokens * kv_bytes_per_token


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


# ---------------------------------------------------------------------------------------------
# Chapter 2: memory budget (weights + KV ≤ (1 − reserve)·memory)


def _budget(memory_bytes: int, reserve: float) -> int:
    return math.floor(_int("memory_bytes", memory_bytes) * (1 - _fraction("reserve", reserve)))


def fits_in_memory(
    *, memory_bytes: int, weight_bytes: int, kv_bytes_per_token: int, S: int, B: int = 1,
    reserve: float = 0.0,
) -> bool:
    """Whether weights + Eq. (2.2) fit: N·s + B·S·kv_bytes_per_token ≤ (1 − reserve)·memory_bytes."""
    used = decode_step_bytes(weight_bytes=weight_bytes, kv_bytes_per_token=kv_bytes_per_token, S=S, B=B)
    return used <= _budget(memory_bytes, reserve)


def max_context(
    *, memory_bytes: int, weight_bytes: int, kv_bytes_per_token: int, B: int = 1, reserve: float = 0.0,
) -> int:
    """Largest S with weights + Eq. (2.2) in budget: ⌊(budget − N·s) / (B·kv_bytes_per_token)⌋, 0 if none."""
    _int("weight_bytes", weight_bytes)
    _int("kv_bytes_per_token", kv_bytes_per_token, 1)
    free = _budget(memory_bytes, reserve) - weight_bytes
    return max(0, free // (_int("B", B, 1) * kv_bytes_per_token))


def max_batch(
    *, memory_bytes: int, weight_bytes: int, kv_bytes_per_token: int, S: int, reserve: float = 0.0,
) -> int:
    """Largest B with weights + Eq. (2.2) in budget: ⌊(budget − N·s) / (S·kv_bytes_per_token)⌋, 0 if none."""
    _int("weight_bytes", weight_bytes)
    _int("kv_bytes_per_token", kv_bytes_per_token, 1)
    free = _budget(memory_bytes, reserve) - weight_bytes
    return max(0, free // (_int("S", S, 1) * kv_bytes_per_token))


# ---------------------------------------------------------------------------------------------
# Chapter 4: wall clock


@dataclass(frozen=True)
class WallClock:
    """The terms of Eq. (4.1): time to first token, decode time, their sum, and decode's share."""

    ttft_s: float
    decode_s: float
    total_s: float
    decode_share: float


def wall_clock(*, P: int, D: int, prefill_tok_s: float, decode_tok_s: float) -> WallClock:
    """Wall clock, Eq. (4.1): P / prefill_tok_s + D / decode_tok_s (seed 000's accounting).

    Engines report decode tok/s over the generated tokens, so D (not D − 1) divides it here.
    """
    ttft = _int("P", P) / _positive("prefill_tok_s", prefill_tok_s)
    decode = _int("D", D) / _positive("decode_tok_s", decode_tok_s)
    total = ttft + decode
    share = decode / total if total else 0.0
    return WallClock(ttft_s=ttft, decode_s=decode, total_s=total, decode_share=share)


# ---------------------------------------------------------------------------------------------
# Formatting for the prose


def _fixed(x: float, decimals: int) -> str:
    """`x` with `decimals` decimals, ties away from zero on the exact binary value (as JS toFixed)."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


def _scaled(n: float, base: int, units: list[str], whole: str) -> str:
    """n in the largest unit of `units` (powers of `base`) that keeps it >= 1."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n < 0:
        raise ValueError(f"n must be a finite number >= 0, got {n!r}")
    if n < base:
        return whole
    value, unit = float(n), 0
    while value >= base and unit < len(units) - 1:
        value, unit = value / base, unit + 1
    return f"{_fixed(value, 1 if value < 100 else 0)} {units[unit]}"


def fmt_bytes(n: float, binary: bool = True) -> str:
    """Bytes for Ch. 2 prose: "512 KiB", "2.0 GiB". The book uses binary units (KiB, MiB, GiB) for memory
    and SI units (GB/s) for bandwidth; binary=False gives SI ("1.6 GB")."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] if binary else ["B", "kB", "MB", "GB", "TB", "PB"]
    whole = f"{_fixed(n, 0) if isinstance(n, float) else n} B"
    return _scaled(n, 1024 if binary else 1000, units, whole)


def fmt_flops(n: float) -> str:
    """FLOPs for Ch. 1 prose, SI prefixes: "393.2 kFLOP", "5.73 TFLOP" (2 decimals below 10, else 1)."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n < 0:
        raise ValueError(f"n must be a finite number >= 0, got {n!r}")
    prefixes = ["", "k", "M", "G", "T", "P", "E", "Z"]
    value, unit = float(n), 0
    while value >= 1000 and unit < len(prefixes) - 1:
        value, unit = value / 1000, unit + 1
    if unit == 0:
        return f"{_fixed(value, 0)} FLOP"
    return f"{_fixed(value, 2 if value < 10 else 1)} {prefixes[unit]}FLOP"


def fmt_count(n: float) -> str:
    """Counts for prose: exact below a million ("196,608"), else "6.74 B", "70.6 B", "175 B"."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n < 0:
        raise ValueError(f"n must be a finite number >= 0, got {n!r}")
    if n < 1_000_000:
        return f"{round(n):,}"
    value, unit = float(n), 0
    suffixes = ["", "K", "M", "B", "T"]
    while value >= 1000 and unit < len(suffixes) - 1:
        value, unit = value / 1000, unit + 1
    decimals = 2 if value < 10 else 1 if value < 100 else 0
    return f"{_fixed(value, decimals)} {suffixes[unit]}"
