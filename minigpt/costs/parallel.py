"""Decode split over GPUs by tensor parallelism, Chapter 3 (Eqs. 3.7 and 3.8).

Megatron-style tensor parallelism over n GPUs splits every weight matrix (and the KV heads) n ways, so
each GPU reads 1/n of a decode step's bytes; the price is two all-reduces per layer (after the
attention output projection and after the FFN's down projection) of the B·d activations of the step.
"""

from __future__ import annotations

from minigpt.costs._check import _int, _positive


def tp_allreduce_bytes(*, L: int, B: int, d: int, s: int) -> int:
    """Bytes all-reduced per decode step under tensor parallelism, Eq. (3.7): 2·L·B·d·s (two per layer)."""
    return 2 * _int("L", L, 1) * _int("B", B, 1) * _int("d", d, 1) * _int("s", s, 1)


def tp_decode_step_time(
    *, bytes_per_step: int, n_gpus: int, bandwidth: float, allreduce_bytes: int, link_bandwidth: float,
) -> float:
    """Memory-bound decode step on n GPUs, Eq. (3.8): bytes_per_step/(n·BW) + 2(n−1)/n·allreduce_bytes/link_bandwidth.

    Each GPU streams its 1/n of Eq. (3.5)'s bytes; a ring all-reduce sends and receives 2(n−1)/n of the
    payload per GPU, at `link_bandwidth` bytes/s in each direction. Left out: each collective's fixed
    latency, and any overlap of communication with memory traffic. A lower bound while the step is
    memory-bound (below the ridge point).
    """
    n = _int("n_gpus", n_gpus, 1)
    memory = _int("bytes_per_step", bytes_per_step, 1) / (n * _positive("bandwidth", bandwidth))
    link = 2 * (n - 1) / n * _int("allreduce_bytes", allreduce_bytes) / _positive("link_bandwidth", link_bandwidth)
    return memory + link
