"""Batched decode, Chapter 7: the time of one decode step of B sequences (Eq. 7.2) under its two
assumptions, the throughput it gives, the gain over B = 1, and the KV cache's share of the bytes read.

Eq. (7.2) takes the slower of the memory and the compute limit for the whole step,
``max(bytes / BW, F / π)`` with bytes by Eq. (7.1) and F by Eq. (1.3) times B: it assumes the KV-cache
reads overlap with the weight matmuls' compute (`overlap=True`). Attention over the cache runs at about
one FLOP per byte, far below any ridge point, so it is bandwidth-bound whatever B is; if it does not
overlap with the matmuls, its time adds (`overlap=False`, Eq. 7.3):
``max(N s / BW, F(S=0) / π) + max(B·S·b_token / BW, (F(S) − F(0)) / π)``, up to 2× slower when both
terms are equal.

`decode_step_time` itself is a roofline time and lives in `roofline` (this module builds on it).
"""

from __future__ import annotations

from minigpt.costs._check import _int
from minigpt.costs.roofline import decode_step_time
from minigpt.costs.traffic import decode_step_bytes


def decode_tok_s(
    *, L: int, S: int, d: int, N_params: int, s: float, bandwidth: float, peak_flops: float,
    H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0, B: int = 1,
    ffn_matrices: int = 2, s_kv: int | None = None, overlap: bool = True,
) -> float:
    """Decode throughput ceiling, Eq. (7.2): B / t(B, S) tokens per second over all B sequences."""
    t = decode_step_time(L=L, S=S, d=d, N_params=N_params, s=s, bandwidth=bandwidth, peak_flops=peak_flops,
                         H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices, s_kv=s_kv,
                         overlap=overlap)
    return B / t


def batching_gain(
    *, L: int, S: int, d: int, N_params: int, s: float, bandwidth: float, peak_flops: float,
    H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0, B: int = 1,
    ffn_matrices: int = 2, s_kv: int | None = None, overlap: bool = True,
) -> float:
    """Throughput gain of batching, Eq. (7.2): tok/s(B, S) / tok/s(1, S)."""
    shape = dict(L=L, S=S, d=d, N_params=N_params, s=s, bandwidth=bandwidth, peak_flops=peak_flops, H_kv=H_kv,
                 d_h=d_h, d_ffn=d_ffn, V=V, ffn_matrices=ffn_matrices, s_kv=s_kv, overlap=overlap)
    return decode_tok_s(**shape, B=B) / decode_tok_s(**shape, B=1)


def kv_read_share(*, weight_bytes: int, kv_bytes_per_token: int, S: int, B: int = 1) -> float:
    """Share of a decode step's bytes that are KV-cache reads, Eq. (7.1): B·S·b_token / (N·s + B·S·b_token)."""
    total = decode_step_bytes(weight_bytes=weight_bytes, kv_bytes_per_token=kv_bytes_per_token, S=S, B=B)
    return (total - weight_bytes) / total if total else 0.0


def ideal_batching_tok_s(
    *, L: int, S: int, d: int, N_params: int, s: float, bandwidth: float, peak_flops: float,
    H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0, B: int = 1,
    ffn_matrices: int = 2, s_kv: int | None = None, overlap: bool = True,
) -> float:
    """Linear batching, Eq. (7.2) at B = 1 times B: B / t(1, S), the ceiling if a step of B took as long as one."""
    t1 = decode_step_time(L=L, S=S, d=d, N_params=N_params, s=s, bandwidth=bandwidth, peak_flops=peak_flops,
                          H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=1, ffn_matrices=ffn_matrices, s_kv=s_kv,
                          overlap=overlap)
    return _int("B", B, 1) / t1
