"""Serving, Part III (Chapters 12-14): the time of a mixed step, a prompt chunk and running decodes together.

An engine that chunks its prefills (Chapter 14) runs, in one step, T tokens of a prompt after the
S_prefix of it already cached plus one token for each of B decoding sequences holding S tokens. As one
forward it reads the weights once and every cached K/V it attends to, and computes the chunk's and
the decodes' FLOPs; its time is the roofline's max(bytes / BW, F / π) (Chapter 3). With T = 0 it is a
decode step (Eq. 7.2); with B = 0 a prefill chunk. `minigpt.serving.replay` prices each forward of a
step the same way.
"""

from __future__ import annotations

from minigpt.costs._check import _int, _kv_width
from minigpt.costs.flops import layer_flops, lm_head_flops
from minigpt.costs.memory import weight_bytes
from minigpt.costs.roofline import roofline_time


def mixed_step_time(
    *, L: int, d: int, N_params: int, s: int, bandwidth: float, peak_flops: float, T: int = 0, S_prefix: int = 0,
    B: int = 0, S: int = 0, H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0,
    ffn_matrices: int = 2,
) -> float:
    """A chunked-prefill step as one forward, Eq. (7.2): max(bytes/BW, F/π) for T prompt tokens after S_prefix
    cached ones plus B decodes at S, F by Eq. (1.1), bytes = N·s + (S_prefix + B·S)·b_token as in Eq. (3.5)."""
    _int("L", L, 1)
    T, B, S, S_prefix = _int("T", T), _int("B", B), _int("S", S), _int("S_prefix", S_prefix)
    if T == 0 and B == 0:
        raise ValueError("a step needs work: T (prompt tokens) or B (decodes) must be >= 1, got T=0 and B=0")
    shape = dict(d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, ffn_matrices=ffn_matrices)
    flops = L * layer_flops(T=T, S=S_prefix, **shape) if T else 0
    flops += L * layer_flops(T=1, S=S, B=B, **shape) if B else 0
    flops += lm_head_flops(d=d, V=V, T=1, B=B + (1 if T else 0))
    kv_token = 2 * L * _kv_width(d, H_kv, d_h) * _int("s", s, 1)
    moved = weight_bytes(N_params=N_params, s=s) + (S_prefix + B * S) * kv_token
    return roofline_time(flops=flops, bytes=moved, peak_flops=peak_flops, bandwidth=bandwidth)
