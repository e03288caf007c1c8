"""Bytes of weights and of the KV cache (Eqs. 2.1–2.8, 2.10), and what fits a memory budget (Eq. 2.9), Chapter 2."""

from __future__ import annotations

import math
from dataclasses import dataclass

from minigpt.costs._check import _ffn_matrices, _fraction, _int, _positive
from minigpt.costs.traffic import decode_step_bytes


def weight_bytes(*, N_params: int, s: float) -> int:
    """Weight bytes, Eq. (2.3): N·s; a fractional s (int4: 0.5 bytes per value) rounds up to whole bytes."""
    _int("N_params", N_params)
    if isinstance(s, int) and not isinstance(s, bool):
        return N_params * _int("s", s, 1)
    return math.ceil(N_params * _positive("s", s))


def kv_bytes_per_token(*, L: int, H_kv: int, d_h: int, s: int, s_scale: int = 0) -> int:
    """KV-cache bytes per token, Eq. (2.1): 2·L·H_kv·d_h·s (a key and a value per layer per KV head).

    A quantized cache stores an s_scale-byte scale with each d_h-vector: 2·L·H_kv·(d_h·s + s_scale).
    """
    per_vector = _int("d_h", d_h, 1) * _int("s", s, 1) + _int("s_scale", s_scale)
    return 2 * _int("L", L, 1) * _int("H_kv", H_kv, 1) * per_vector


def kv_cache_bytes(*, L: int, H_kv: int, d_h: int, s: int, S: int, B: int = 1, s_scale: int = 0) -> int:
    """KV-cache bytes for B sequences of S tokens, Eq. (2.2): B·S·2·L·H_kv·d_h·s (+ scales, see Eq. 2.1)."""
    return _int("B", B, 1) * _int("S", S) * kv_bytes_per_token(L=L, H_kv=H_kv, d_h=d_h, s=s, s_scale=s_scale)


def int8_kv_bytes(*, L: int, H_kv: int, d_h: int, S: int, B: int = 1, s_scale: int = 2) -> int:
    """Int8 KV bytes, Eq. (2.10): Eq. (2.2) with s = 1 plus an s_scale-byte scale per token, layer, KV head and K/V.

    One scale (default 2 bytes, fp16) per d_h-vector: B·S·2·L·H_kv·(d_h + s_scale).
    """
    return kv_cache_bytes(L=L, H_kv=H_kv, d_h=d_h, s=1, S=S, B=B, s_scale=s_scale)


def _budget(memory_bytes: int, reserve: float) -> int:
    return memory_budget(memory_bytes=memory_bytes, reserve=reserve)


def fits_in_memory(
    *, memory_bytes: int, weight_bytes: int, kv_bytes_per_token: int, S: int, B: int = 1,
    reserve: float = 0.0,
) -> bool:
    """Whether the budget of Eq. (2.9) holds: N·s + B·S·kv_bytes_per_token ≤ (1 − reserve)·memory_bytes."""
    used = decode_step_bytes(weight_bytes=weight_bytes, kv_bytes_per_token=kv_bytes_per_token, S=S, B=B)
    return used <= _budget(memory_bytes, reserve)


def max_context(
    *, memory_bytes: int, weight_bytes: int, kv_bytes_per_token: int, B: int = 1, reserve: float = 0.0,
) -> int:
    """Largest S within the budget of Eq. (2.9): ⌊(budget − N·s) / (B·kv_bytes_per_token)⌋, 0 if none."""
    _int("weight_bytes", weight_bytes)
    _int("kv_bytes_per_token", kv_bytes_per_token, 1)
    free = _budget(memory_bytes, reserve) - weight_bytes
    return max(0, free // (_int("B", B, 1) * kv_bytes_per_token))


def max_batch(
    *, memory_bytes: int, weight_bytes: int, kv_bytes_per_token: int, S: int, reserve: float = 0.0,
) -> int:
    """Largest B within the budget of Eq. (2.9): ⌊(budget − N·s) / (S·kv_bytes_per_token)⌋, 0 if none."""
    _int("weight_bytes", weight_bytes)
    _int("kv_bytes_per_token", kv_bytes_per_token, 1)
    free = _budget(memory_bytes, reserve) - weight_bytes
    return max(0, free // (_int("S", S, 1) * kv_bytes_per_token))


def memory_budget(*, memory_bytes: int, reserve: float = 0.0) -> int:
    """Bytes left for weights and Eq. (2.2)'s cache, Chapter 2: ⌊(1 − reserve)·memory_bytes⌋."""
    return math.floor(_int("memory_bytes", memory_bytes) * (1 - _fraction("reserve", reserve)))


#: The share of a chip's memory a fit check leaves free, Eq. (9.4): vLLM's default
#: `gpu_memory_utilization = 0.9` lets the engine use 90 % (the rest: CUDA context, activations, fragmentation).
FIT_RESERVE = 0.10


def chips_needed(
    *, memory_bytes: int, weight_bytes: int, kv_bytes_per_token: int, S: int, B: int = 1,
    reserve: float = FIT_RESERVE,
) -> int:
    """Chips of memory_bytes each that hold the weights and B caches of S tokens, Eq. (9.4):
    ⌈(N·s + B·S·b) / ⌊(1 − reserve)·memory_bytes⌋⌉; 1 means it fits on one chip (Eq. 2.9's budget holds).

    More than one chip assumes the bytes split evenly (tensor parallelism shards the weights and the
    K/V heads); what each chip adds (replicated embeddings, activations, communication buffers) is left out.
    """
    used = decode_step_bytes(weight_bytes=weight_bytes, kv_bytes_per_token=kv_bytes_per_token, S=S, B=B)
    budget = _budget(memory_bytes, reserve)
    if budget < 1:
        raise ValueError(f"memory_bytes·(1 − reserve) must be at least 1 byte, got {memory_bytes} and {reserve}")
    return max(1, -(-used // budget))


KV_HEAD_SCHEMES = ("published", "mha", "gqa", "gqa4", "mqa")


def kv_heads(*, H: int, H_kv: int, scheme: str = "published") -> int:
    """The H_kv of Eq. (2.1) under an attention scheme, Chapters 2 and 9: the published H_kv, MHA (H),
    GQA with groups of 8 query heads (max(1, H // 8)) or of 4 ("gqa4": max(1, H // 4)), or MQA (1)."""
    _int("H", H, 1)
    _int("H_kv", H_kv, 1)
    if scheme not in KV_HEAD_SCHEMES:
        raise ValueError(f"scheme must be one of {list(KV_HEAD_SCHEMES)}, got {scheme!r}")
    return {"published": H_kv, "mha": H, "gqa": max(1, H // 8), "gqa4": max(1, H // 4), "mqa": 1}[scheme]


@dataclass(frozen=True)
class MemoryFit:
    """One device against a model and a workload, Chapter 2: do the weights fit, do weights + Eq. (2.2)
    fit, and the longest context (at B) and the largest batch (at S) that do."""

    weights_fit: bool
    fits: bool
    max_context: int
    max_batch: int


def memory_fit(
    *, memory_bytes: int, weight_bytes: int, kv_bytes_per_token: int, S: int, B: int = 1,
    reserve: float = 0.0,
) -> MemoryFit:
    """A device row of Chapter 2's budget, Eq. (2.9) (weights + Eq. (2.2) in budget): `fits_in_memory`, `max_context`,
    `max_batch`."""
    budget = dict(memory_bytes=memory_bytes, weight_bytes=weight_bytes, kv_bytes_per_token=kv_bytes_per_token,
                  reserve=reserve)
    return MemoryFit(
        weights_fit=weight_bytes <= memory_budget(memory_bytes=memory_bytes, reserve=reserve),
        fits=fits_in_memory(**budget, S=S, B=B),
        max_context=max_context(**budget, B=B),
        max_batch=max_batch(**budget, S=S),
    )
# ---------------------------------------------------------------------------------------------
# Architectures whose cache or weight traffic is not Eqs. (2.1)–(2.3) as they stand (Chapter 2's table)


def window_kv_cache_bytes(*, L: int, H_kv: int, d_h: int, s: int, S: int, window: int, B: int = 1) -> int:
    """Sliding-window KV bytes, Eq. (2.4): B·min(S, window)·2·L·H_kv·d_h·s (a rolling buffer of `window` tokens)."""
    S_kept = min(_int("S", S), _int("window", window, 1))
    return kv_cache_bytes(L=L, H_kv=H_kv, d_h=d_h, s=s, S=S_kept, B=B)


def latent_kv_bytes_per_token(*, L: int, d_c: int, d_rope: int, s: int) -> int:
    """Latent-attention (MLA) KV bytes per token, Eq. (2.5): L·(d_c + d_rope)·s (one latent and one RoPE key)."""
    return _int("L", L, 1) * (_int("d_c", d_c, 1) + _int("d_rope", d_rope)) * _int("s", s, 1)


def moe_active_params(
    *, N_params: int, L: int, d: int, d_ffn: int, experts: int, active_experts: int, ffn_matrices: int = 3,
) -> int:
    """Parameters one token uses in a mixture of experts, Eq. (2.6): N − L·(E − k)·ffn_matrices·d·d_ffn."""
    E, k = _int("experts", experts, 1), _int("active_experts", active_experts, 1)
    if k > E:
        raise ValueError(f"active_experts must be <= experts = {E}, got {k}")
    idle = _int("L", L, 1) * (E - k) * _ffn_matrices(ffn_matrices) * _int("d", d, 1) * _int("d_ffn", d_ffn, 1)
    if idle > _int("N_params", N_params):
        raise ValueError(f"N_params must hold the {idle:,} parameters of the idle experts, got {N_params:,}")
    return N_params - idle


def moe_expected_experts(*, experts: int, active_experts: int, B: int = 1) -> float:
    """Experts a layer reads for B tokens routed uniformly at random, Eq. (2.7): E·(1 − (1 − k/E)^B)."""
    E, k = _int("experts", experts, 1), _int("active_experts", active_experts, 1)
    if k > E:
        raise ValueError(f"active_experts must be <= experts = {E}, got {k}")
    return E * (1 - (1 - k / E) ** _int("B", B, 1))


def moe_decode_params(
    *, N_params: int, L: int, d: int, d_ffn: int, experts: int, active_experts: int, B: int = 1,
    ffn_matrices: int = 3,
) -> float:
    """Parameters a decode step of B tokens reads, uniform routing, Eq. (2.8): N − L·m·d·d_ffn·E·(1 − k/E)^B.

    Eq. (2.6) at B = 1; every expert a layer's B tokens reach is read once (Eq. 2.7 experts per layer).
    """
    idle = experts - moe_expected_experts(experts=experts, active_experts=active_experts, B=B)
    active = moe_active_params(N_params=N_params, L=L, d=d, d_ffn=d_ffn, experts=experts,
                               active_experts=active_experts, ffn_matrices=ffn_matrices)
    per_expert = L * ffn_matrices * d * d_ffn
    return active + (experts - active_experts - idle) * per_expert
