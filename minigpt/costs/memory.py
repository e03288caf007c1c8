"""Bytes of weights and of the KV cache (Eqs. 2.1–2.3), and what fits a memory budget, Chapter 2."""

from __future__ import annotations

import math

from minigpt.costs._check import _fraction, _int
from minigpt.costs.traffic import decode_step_bytes


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
