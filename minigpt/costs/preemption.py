"""Preemption, Chapter 12: what a preempted sequence of S tokens costs to bring back, by swap or by recompute.

Swap copies the sequence's K/V to host memory and back over the host link: S · b_token bytes each way
(b_token = 2·L·H_kv·d_h·s, Eq. 2.1), Eq. (12.3). The copy engines of a GPU move those bytes while its
SMs compute, so a swap issued on its own stream overlaps the steps around it; issued on the compute
stream before a step's forward (as vLLM V0's worker does) it adds to the step, Eq. (12.5).
Recompute runs the prefill of the S tokens again: Eq. (1.2)'s FLOPs at a utilisation `mfu` of the
chip's peak, Eq. (12.4). It is work on the SMs, so nothing hides it (it displaces other tokens).
Per token the comparison is b_token / link against ≈ 2·N / (mfu · π): swap wins for big models with a
small KV per parameter (grouped-query attention) on a fast link; recompute wins on a slow link or when
the host has no room for the blocks.
"""

from __future__ import annotations

from minigpt.costs._check import _int, _kv_width, _mfu, _positive
from minigpt.costs.flops import prefill_flops


def swap_time(*, S: int, L: int, d: int, s: int, link_bandwidth: float, H_kv: int | None = None,
              d_h: int | None = None) -> float:
    """One direction of a swap, Eq. (12.3): S · 2·L·H_kv·d_h·s bytes over a link of `link_bandwidth` B/s."""
    S, L, s = _int("S", S), _int("L", L, 1), _int("s", s, 1)
    return S * 2 * L * _kv_width(d, H_kv, d_h) * s / _positive("link_bandwidth", link_bandwidth)


def recompute_time(*, S: int, L: int, d: int, peak_flops: float, mfu: float, H_kv: int | None = None,
                   d_h: int | None = None, d_ffn: int | None = None, V: int = 0, ffn_matrices: int = 2) -> float:
    """Recompute of S tokens, Eq. (12.4): the prefill FLOPs of Eq. (1.2) at `mfu` (0 < mfu <= 1) of `peak_flops`."""
    _mfu(mfu)
    if _int("S", S) == 0:
        return 0.0
    flops = prefill_flops(L=L, P=S, d=d, H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, ffn_matrices=ffn_matrices)
    return flops / (mfu * _positive("peak_flops", peak_flops))


def step_time_with_swap(*, step_time: float, swap_time: float, overlap: bool = True) -> float:
    """A step that also moves swap_time seconds of blocks, Eq. (12.5): max(step, swap) when the copy overlaps
    the forward (its own stream and copy engine), step + swap when it is issued before the forward."""
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True (Eq. 12.5's max) or False (the sum), got {overlap!r}")
    for name, value in (("step_time", step_time), ("swap_time", swap_time)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
            raise ValueError(f"{name} must be a finite number >= 0 (seconds), got {value!r}")
    return max(step_time, swap_time) if overlap else step_time + swap_time
