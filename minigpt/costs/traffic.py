"""Bytes moved per step, Chapter 3 (Eq. 3.5) and the traffic table of Chapter 1: what prefill and a
decode step must read and write at least."""

from __future__ import annotations

from minigpt.costs._check import _int, _positive
from minigpt.costs.params import kv_heads_params, non_embedding_matrix_params


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


def last_decode_step_floor_s(*, L: int, d: int, V: int, P: int, D: int, bandwidth: float, s: int = 2) -> float:
    """Memory floor of the last decode step, Chapter 1's traffic table: the bytes it must read over bandwidth.

    A MiniGPT-shaped model (MHA, d_ffn = 4d) of 12·L·d² + V·d parameters at s bytes each, plus the
    cache of S = P + D − 2 tokens at 2·L·d·s bytes each (Eq. 3.5); 0.0 when D = 1 (no decode step).
    """
    _int("P", P, 1)
    if _int("D", D, 1) == 1:
        _positive("bandwidth", bandwidth)
        return 0.0
    weights = (non_embedding_matrix_params(L=L, d=d) + _int("V", V) * d) * _int("s", s, 1)
    moved = decode_step_bytes(weight_bytes=weights, kv_bytes_per_token=2 * L * d * s, S=P + D - 2)
    return moved / _positive("bandwidth", bandwidth)


def gqa_decode_gain(
    *, N_params: int, L: int, d: int, d_h: int, H_kv: int, s: int, S: int, B: int = 1, biases: bool = False,
) -> float:
    """The decode-step bytes of the multi-head model over those with H_kv key/value heads, Eq. (9.2):
    (N·s + B·S·2·L·H·d_h·s) / (N'·s + B·S·2·L·H_kv·d_h·s), with H = d/d_h, N = N_params the multi-head
    model's parameters and N' the GQA model's, Eq. (9.3).

    Both the cache and the K/V projections shrink; the query, output and FFN weights do not.
    """
    _int("s", s, 1)
    H = _int("d", d, 1) // _int("d_h", d_h, 1)
    N_gqa = kv_heads_params(N_params=N_params, L=L, d=d, d_h=d_h, H_kv=H, H_kv_new=H_kv, biases=biases)

    def step(N: int, heads: int) -> int:
        return decode_step_bytes(weight_bytes=N * s, kv_bytes_per_token=2 * L * heads * d_h * s, S=S, B=B)

    return step(N_params, H) / step(N_gqa, H_kv)
