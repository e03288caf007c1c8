"""Exercise 13 (Chapters 15-16, FlashAttention and Flash-Decoding): the log-sum-exp merge of partial softmaxes,
the FLOPs of a tiled causal attention, HBM bytes of standard vs Flash attention, the best chunk count.

The oracles are the package: `minigpt.runtime.attention.combine_chunks` (the merge `flash_decode` uses) and the
formulas of `minigpt.costs.attention_kernels`.
"""

from __future__ import annotations

import random

import torch

from minigpt import costs
from minigpt.exercises.spec import Exercise, Question, close, exact_int, pair, randn, tensor, uniform
from minigpt.runtime.attention import combine_chunks


def _combine_cases(rng: random.Random) -> list[dict]:
    cases = []
    for i in range(6):
        B, H, K, d_h = rng.randint(1, 3), rng.choice([1, 2, 4]), rng.randint(1, 9), rng.choice([4, 8])
        scale = 3.0 if i < 4 else 200.0  # the last two: scores in the hundreds, where exp(m) overflows fp32
        cases.append(dict(m=randn([B, H, K], rng, scale), l=uniform([B, H, K], rng, 1.0, 64.0),
                          o=randn([B, H, K, d_h], rng)))
    return cases


def _combine(m: torch.Tensor, l: torch.Tensor, o: torch.Tensor) -> torch.Tensor:  # noqa: E741
    return combine_chunks(m, l, o)


def _flops_cases(rng: random.Random) -> list[dict]:
    cases = []
    for i in range(8):
        block_q, block_k = rng.choice([4, 8, 16, 32, 64]), rng.choice([4, 8, 16, 32, 64])
        cases.append(dict(T=rng.randint(1, 300), S=0 if i < 4 else rng.randint(1, 200), d_h=rng.choice([16, 64, 128]),
                          block_q=block_q, block_k=block_k, causal=i != 7))
    return cases


def _flops(T: int, S: int, d_h: int, block_q: int, block_k: int, causal: bool) -> int:
    return costs.tiled_attention_flops(T=T, S=S, d_h=d_h, block_q=block_q, block_k=block_k, causal=causal)


def _hbm_cases(rng: random.Random) -> list[dict]:
    cases = []
    for _ in range(8):
        d_h, s = rng.choice([32, 64, 128, 256]), rng.choice([2, 4])
        sram = rng.choice([4 * d_h * s, 16 * 1024, 100_000, 192 * 1024, 228 * 1024 + rng.randint(0, 999)])
        cases.append(dict(P=rng.randint(1, 65536), d_h=d_h, s=s, sram_bytes=sram))
    return cases


def _hbm(P: int, d_h: int, s: int, sram_bytes: int) -> tuple[int, int]:
    return (costs.standard_attention_hbm_bytes(P=P, d_h=d_h, s=s),
            costs.flash_attention_hbm_bytes(P=P, d_h=d_h, s=s, sram_bytes=sram_bytes))


def _splits_cases(rng: random.Random) -> list[dict]:
    cases = []
    for i in range(8):
        S = rng.randint(1, 40) if i == 0 else rng.randint(256, 131072)
        cases.append(dict(B=rng.choice([1, 1, 2, 4, 16, 64]), H_kv=rng.choice([1, 2, 4, 8]), S=S,
                          n_sm=rng.choice([46, 108, 132, 144]), max_splits=rng.randint(1, 128)))
    return cases


def _splits(B: int, H_kv: int, S: int, n_sm: int, max_splits: int) -> tuple[int, float]:
    best = costs.flash_decoding_best_splits(B=B, H_kv=H_kv, S=S, n_sm=n_sm, max_splits=max_splits)
    return best, costs.flash_decoding_speedup(B=B, H_kv=H_kv, S=S, splits=best, n_sm=n_sm)


EXERCISE = Exercise(
    id="ex13",
    notebook="ex13_flash_attention.ipynb",
    title="FlashAttention and Flash-Decoding",
    questions=(
        Question(
            "q1", "combine_chunks", "combine_chunks(m, l, o) -> tensor [B, H, d_h]", _combine_cases, _combine,
            tensor(atol=1e-5, rtol=1e-5),
            "chunk c has lse_c = m_c + log l_c (the log of its Σ exp(score)); the merged output is "
            "Σ_c exp(lse_c − lse)·o_c with lse = log Σ_c exp(lse_c) over the last axis (torch.logsumexp). Never "
            "exponentiate m itself: with scores in the hundreds exp(m) is inf in fp32.",
        ),
        Question(
            "q2", "tiled_flops", "tiled_flops(T, S, d_h, block_q, block_k, causal) -> int", _flops_cases, _flops,
            exact_int,
            "query tiles of block_q rows (the last one shorter); a tile whose last row is i1 − 1 (position S + i1 − 1) "
            "visits whole key tiles up to the one holding key S + i1 − 1, i.e. min(⌈(S + i1)/block_k⌉·block_k, S + T) "
            "keys, masked or not; without causal, all S + T keys. FLOPs = 4·d_h·Σ rows·keys (QKᵀ and PV, 2 each).",
        ),
        Question(
            "q3", "hbm_bytes", "hbm_bytes(P, d_h, s, sram_bytes) -> (standard, flash)", _hbm_cases, _hbm,
            pair(exact_int, exact_int, ("standard", "flash")),
            "per head. standard: (4·P·d_h + 4·P²)·s. flash: M = sram_bytes // s values, B_c = ⌈M/(4·d_h)⌉, "
            "T_c = ⌈P/B_c⌉; values = (P·d_h + 2P) + 2·P·d_h + T_c·(3·P·d_h + 4·P), times s.",
        ),
        Question(
            "q4", "best_splits", "best_splits(B, H_kv, S, n_sm, max_splits) -> (splits, speedup)", _splits_cases,
            _splits, pair(exact_int, close(1e-9), ("splits", "speedup")),
            "W = B·H_kv·K items run in ⌈W/n_sm⌉ waves of ⌈S/K⌉ keys; speedup = ⌈B·H_kv/n_sm⌉·S / (⌈W/n_sm⌉·⌈S/K⌉). "
            "Try K = 1 .. min(max_splits, S); return the smallest K with the largest speedup, and that speedup.",
        ),
    ),
)
