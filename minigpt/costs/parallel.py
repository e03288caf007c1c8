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


# ---------------------------------------------------------------------------------------------
# Chapter 20: the sharded model's collectives counted, and an α–β model of the step


def _world(W: object) -> int:
    return _int("W", W, 1)


def tp_collectives_per_step(*, L: int, W: int) -> int:
    """Collectives of one tensor-parallel forward, Eq. (20.1): 2L + 2 for W > 1, none for W = 1.

    Two all-reduces per layer (after the attention output projection and after the MLP's down
    projection), one all-reduce after the vocab-parallel embedding lookup, one all-gather of the
    LM head's vocabulary slices. With one rank nothing is sent.
    """
    return 0 if _world(W) == 1 else 2 * _int("L", L, 1) + 2


def tp_collective_bytes(*, L: int, B: int, d: int, V: int, s: int, W: int, T: int = 1) -> int:
    """Payload bytes of one tensor-parallel forward over T tokens, Eq. (20.2):
    (2L + 1)·B·T·d·s all-reduced plus B·T·V·s gathered (0 for W = 1).

    Per collective: an all-reduce carries B·T·d·s (the activations), the LM head's all-gather
    B·T·V·s (the full logits, 1/W from each rank).
    """
    if _world(W) == 1:
        return 0
    tokens = _int("B", B, 1) * _int("T", T, 1)
    return (2 * _int("L", L, 1) + 1) * tokens * _int("d", d, 1) * _int("s", s, 1) + tokens * _int("V", V, 1) * s


def tp_kv_heads_per_rank(*, H_kv: int, W: int) -> int:
    """K/V heads each rank holds, Eq. (20.3): H_kv/W, or 1 when H_kv < W (vLLM replicates the head).

    W and H_kv must divide one another (the query heads of one group stay on one rank).
    """
    H_kv, W = _int("H_kv", H_kv, 1), _world(W)
    if H_kv % W and W % H_kv:
        raise ValueError(f"W={W} and H_kv={H_kv}: one must divide the other")
    return max(1, H_kv // W)


def tp_kv_cache_bytes(*, L: int, B: int, S: int, H_kv: int, d_h: int, s: int, W: int) -> int:
    """One rank's KV cache under tensor parallelism, Eq. (20.3): 2·L·B·S·max(1, H_kv/W)·d_h·s.

    Times W, the group holds W/H_kv copies of each K/V head when H_kv < W: the replicas cost memory.
    """
    kv = tp_kv_heads_per_rank(H_kv=H_kv, W=W)
    return 2 * _int("L", L, 1) * _int("B", B, 1) * _int("S", S) * kv * _int("d_h", d_h, 1) * _int("s", s, 1)


def allreduce_time(*, nbytes: int, coll_latency: float, coll_bandwidth: float) -> float:
    """One collective's time in the α–β model, Eq. (20.4): α + nbytes/β.

    α (s) is the fixed cost of a call (launch, synchronisation, the first byte's trip); β (bytes/s)
    the payload rate it reaches on large messages. Both are fitted to measured times.
    """
    if isinstance(coll_latency, bool) or not isinstance(coll_latency, (int, float)) or not coll_latency >= 0:
        raise ValueError(f"coll_latency must be a number >= 0 seconds, got {coll_latency!r}")
    return coll_latency + _int("nbytes", nbytes) / _positive("coll_bandwidth", coll_bandwidth)


def ring_allreduce_beta(*, link_bandwidth: float, W: int) -> float:
    """Payload bytes/s of a ring all-reduce over W ranks, Eq. (20.4): link_bandwidth·W/(2(W−1)).

    Each rank sends and receives 2(W−1)/W of the payload (a reduce-scatter then an all-gather),
    so the payload rate is the link's rate divided by that share. W must be at least 2.
    """
    W = _int("W", W, 2)
    return _positive("link_bandwidth", link_bandwidth) * W / (2 * (W - 1))


def tp_alpha_beta_step_time(
    *, weight_bytes: int, W: int, bandwidth: float, n_coll: int, coll_bytes: float, coll_latency: float,
    coll_bandwidth: float, t_fixed: float = 0.0,
) -> float:
    """A tensor-parallel decode step, Eq. (20.5): t_fixed + weight_bytes/(W·BW) + n_coll·(α + coll_bytes/β).

    Each rank streams its 1/W of the weights at `bandwidth`; the step then pays `n_coll` collectives
    of `coll_bytes` each (Eqs. 20.1–20.2). `t_fixed` is what does not shrink with W: on a GPU ~0
    (CUDA graphs), on this book's CPU the measured one-rank step, which is operator overhead (Ch. 18).
    """
    if isinstance(t_fixed, bool) or not isinstance(t_fixed, (int, float)) or not t_fixed >= 0:
        raise ValueError(f"t_fixed must be a number >= 0 seconds, got {t_fixed!r}")
    if isinstance(coll_bytes, bool) or not isinstance(coll_bytes, (int, float)) or not coll_bytes >= 0:
        raise ValueError(f"coll_bytes must be a number >= 0, got {coll_bytes!r}")
    memory = _int("weight_bytes", weight_bytes) / (_world(W) * _positive("bandwidth", bandwidth))
    one = allreduce_time(nbytes=0, coll_latency=coll_latency, coll_bandwidth=coll_bandwidth)  # α, checked
    return t_fixed + memory + _int("n_coll", n_coll) * (one + coll_bytes / coll_bandwidth)


def tp_per_gpu_bandwidth(*, weight_bytes: int, W: int, step_time: float) -> float:
    """Bandwidth each GPU achieves, Eq. (20.6): (weight_bytes/W)/step_time, as gpt-fast reports it
    (the rank's model bytes times tokens/s). Falls as W grows when the collectives do not shrink."""
    return _int("weight_bytes", weight_bytes) / _world(W) / _positive("step_time", step_time)


def pipeline_time(*, t_one: float, W: int, m: int) -> float:
    """Pipeline parallelism over W stages, Eq. (20.7): (t_one/W)·(m + W − 1)/m for work cut in m pieces.

    `t_one` is the work's time on one device. One decode step of one sequence cannot be cut (m = 1):
    the time stays t_one, no gain. A long prefill cut into m chunks (or m micro-batches) tends to
    t_one/W as m grows. Left out: the per-stage hand-off of activations.
    """
    W, m = _world(W), _int("m", m, 1)
    return _positive("t_one", t_one) / W * (m + W - 1) / m


def tp_replay_step_time(
    *, L: int, B: int, d: int, V: int, s: int, weight_bytes: int, W: int, bandwidth: float, coll_latency: float,
    link_bandwidth: float,
) -> float:
    """A published model's decode step on W GPUs, Eq. (20.5) with Eqs. (20.1), (20.2) and (20.4):
    the weights split W ways, 2L + 2 collectives of the step's payload at a ring's β over the link.

    Every collective is priced as a ring all-reduce (the LM head's all-gather moves half as much per
    byte: an upper bound on a term that is small at B = 1). Left out: the KV cache's reads (short
    contexts), compute, and any overlap of collectives with memory traffic.
    """
    n = tp_collectives_per_step(L=L, W=W)
    if n == 0:
        return _int("weight_bytes", weight_bytes) / _positive("bandwidth", bandwidth)
    payload = tp_collective_bytes(L=L, B=B, d=d, V=V, s=s, W=W)
    beta = ring_allreduce_beta(link_bandwidth=link_bandwidth, W=W)
    return tp_alpha_beta_step_time(weight_bytes=weight_bytes, W=W, bandwidth=bandwidth, n_coll=n,
                                   coll_bytes=payload / n, coll_latency=coll_latency, coll_bandwidth=beta)
