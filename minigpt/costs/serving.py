"""Serving, Part III (Chapters 12-14): the time of a mixed step, a prompt chunk and running decodes together;
what a static batch wastes (Chapter 12); what a prefix-cache hit saves (Chapter 13).

An engine that chunks its prefills (Chapter 14) runs, in one step, T tokens of a prompt after the
S_prefix of it already cached plus one token for each of B decoding sequences holding S tokens. As one
forward it reads the weights once and every cached K/V it attends to, and computes the chunk's and
the decodes' FLOPs; its time is the roofline's max(bytes / BW, F / π) (Chapter 3). With T = 0 it is a
decode step (Eq. 7.2); with B = 0 a prefill chunk. `minigpt.serving.replay` prices each engine step as
one such forward over all its sequences, as the engine runs it.

A static batch of B requests runs until its longest member is done (Chapter 12): with output lengths
independent and uniform on D_min..D_max, it takes E[max D] steps for B·E[D] tokens (Eq. 12.1), and its
throughput prices each step for the members still running (Eq. 12.2). A prefix-cache hit (Chapter 13)
serves the full blocks of a shared prefix from the cache and prefills only the rest (Eq. 13.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from minigpt.costs._check import _int, _kv_width, _mfu, _positive
from minigpt.costs.flops import layer_flops, lm_head_flops
from minigpt.costs.memory import weight_bytes
from minigpt.costs.roofline import decode_step_time, roofline_time


def mixed_step_time(
    *, L: int, d: int, N_params: int, s: int, bandwidth: float, peak_flops: float, T: int = 0, S_prefix: int = 0,
    B: int = 0, S: int = 0, H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0,
    ffn_matrices: int = 2, mfu: float = 1.0, causal: bool = False,
) -> float:
    """A chunked-prefill step as one forward, Eq. (7.2): max(bytes/BW, F/(mfu·π)) for T prompt tokens after
    S_prefix cached ones plus B decodes at S, F by Eq. (1.1) (`causal`: the chunk's queries against the keys
    they see), bytes = N·s + (S_prefix + B·S)·b_token as in Eq. (3.5). mfu = 1 and dense F: a floor."""
    _int("L", L, 1)
    T, B, S, S_prefix = _int("T", T), _int("B", B), _int("S", S), _int("S_prefix", S_prefix)
    if T == 0 and B == 0:
        raise ValueError("a step needs work: T (prompt tokens) or B (decodes) must be >= 1, got T=0 and B=0")
    shape = dict(d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, ffn_matrices=ffn_matrices)
    flops = L * layer_flops(T=T, S=S_prefix, causal=causal, **shape) if T else 0
    flops += L * layer_flops(T=1, S=S, B=B, **shape) if B else 0
    flops += lm_head_flops(d=d, V=V, T=1, B=B + (1 if T else 0))
    kv_token = 2 * L * _kv_width(d, H_kv, d_h) * _int("s", s, 1)
    moved = weight_bytes(N_params=N_params, s=s) + (S_prefix + B * S) * kv_token
    achieved = _mfu(mfu) * _positive("peak_flops", peak_flops)
    return roofline_time(flops=flops, bytes=moved, peak_flops=achieved, bandwidth=bandwidth)


def _output_range(D_min: int, D_max: int) -> int:
    """n = D_max − D_min + 1 output lengths, each as likely; a ValueError unless 1 <= D_min <= D_max."""
    _int("D_min", D_min, 1)
    _int("D_max", D_max, 1)
    if D_min > D_max:
        raise ValueError(f"D_min must be <= D_max (outputs uniform on D_min..D_max), got D_min={D_min}, D_max={D_max}")
    return D_max - D_min + 1


def static_batch_steps(*, B: int, D_max: int, D_min: int = 1) -> float:
    """Steps of a static batch, Eq. (12.1): E[max of B outputs uniform on D_min..D_max] = D_max − Σ_{j<n} (j/n)^B."""
    n = _output_range(D_min, D_max)
    _int("B", B, 1)
    return D_max - sum((j / n) ** B for j in range(1, n))


def static_batch_utilisation(*, B: int, D_max: int, D_min: int = 1) -> float:
    """Share of a static batch's slots that hold a running request, Eq. (12.1): E[D] / E[max of B D's]."""
    return (D_min + D_max) / 2 / static_batch_steps(B=B, D_max=D_max, D_min=D_min)


def static_batch_tok_s(
    *, L: int, S: int, d: int, N_params: int, s: float, bandwidth: float, peak_flops: float, D_max: int,
    D_min: int = 1, H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0,
    B: int = 1, ffn_matrices: int = 2, s_kv: int | None = None, overlap: bool = True,
) -> float:
    """Output tok/s of static batching, Eq. (12.2): B·E[D] / Σ_k E[t(n_k, S)], step k priced by Eq. (7.2) for the
    n_k ~ Binomial(B, P(D >= k)) members still running, outputs uniform on D_min..D_max."""
    n = _output_range(D_min, D_max)
    B = _int("B", B, 1)
    shape = dict(L=L, S=S, d=d, N_params=N_params, s=s, bandwidth=bandwidth, peak_flops=peak_flops, H_kv=H_kv,
                 d_h=d_h, d_ffn=d_ffn, V=V, ffn_matrices=ffn_matrices, s_kv=s_kv, overlap=overlap)
    t = [0.0] + [decode_step_time(**shape, B=m) for m in range(1, B + 1)]  # t[m]: a step of m members
    seconds = D_min * t[B]  # steps 1..D_min: every member runs
    for j in range(1, n):  # a later step, with P(D >= k) = j/n
        p = j / n
        log_p, log_q, log_c = math.log(p), math.log1p(-p), 0.0
        for m in range(B + 1):  # Binomial(B, p) members still running
            if m:
                log_c += math.log(B - m + 1) - math.log(m)
                seconds += math.exp(log_c + m * log_p + (B - m) * log_q) * t[m]
    return B * (D_min + D_max) / 2 / seconds


@dataclass(frozen=True)
class PrefixHit:
    """The terms of Eq. (13.1): tokens served from the cache, TTFT floor without and with the hit, the saving (< 0
    when the hit's read of the cached K/V costs more than the miss recomputes), the speedup miss/hit, and the bytes
    of K/V the cached prefix holds once for every request that shares it."""

    cached_tokens: int
    miss_s: float
    hit_s: float
    saved_s: float
    speedup: float
    cached_bytes: int


def prefix_hit_ttft(
    *, L: int, d: int, N_params: int, s: int, bandwidth: float, peak_flops: float, S_prefix: int, T: int,
    block_size: int = 16, H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0,
    ffn_matrices: int = 2, mfu: float = 1.0, causal: bool = False,
) -> PrefixHit:
    """TTFT floor of S_prefix shared + T own prompt tokens, Eq. (13.1): a hit serves b·⌊S_prefix/b⌋ tokens from the
    cache and prefills the rest after them; each prefill priced as one forward (`mixed_step_time`, Eq. 7.2, with
    its `mfu` and `causal`: a floor at their defaults)."""
    S_prefix, T, b = _int("S_prefix", S_prefix), _int("T", T, 1), _int("block_size", block_size, 1)
    cached = S_prefix // b * b  # only full blocks are shared
    shape = dict(L=L, d=d, N_params=N_params, s=s, bandwidth=bandwidth, peak_flops=peak_flops, H_kv=H_kv, d_h=d_h,
                 d_ffn=d_ffn, V=V, ffn_matrices=ffn_matrices, mfu=mfu, causal=causal)
    miss = mixed_step_time(**shape, T=S_prefix + T)
    hit = mixed_step_time(**shape, T=S_prefix + T - cached, S_prefix=cached)
    return PrefixHit(cached_tokens=cached, miss_s=miss, hit_s=hit, saved_s=miss - hit, speedup=miss / hit,
                     cached_bytes=cached * 2 * L * _kv_width(d, H_kv, d_h) * s)
