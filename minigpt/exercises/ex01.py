"""Exercise 1 (Chapter 1, prefill vs decode): the FLOP formulas, Eqs. (1.2)–(1.5)."""

from __future__ import annotations

import random

from minigpt import costs
from minigpt.exercises.spec import N_, Exercise, Question, exact_int


def _widths(rng: random.Random) -> int:
    return 16 * rng.randint(1, 768)  # d from 16 to 12,288


def _prefill_cases(rng: random.Random) -> list[dict]:
    return [dict(L=rng.randint(1, 96), P=rng.randint(1, 8192), d=_widths(rng)) for _ in range(8)]


def _step_cases(rng: random.Random) -> list[dict]:
    return [dict(L=rng.randint(1, 96), S=rng.randint(0, 32768), d=_widths(rng)) for _ in range(8)]


def _total_cases(rng: random.Random) -> list[dict]:
    return [dict(L=rng.randint(1, 96), P=rng.randint(1, 4096), D=rng.randint(1, 2048), d=_widths(rng))
            for _ in range(8)]


def _full_cases(rng: random.Random) -> list[dict]:
    cases = []
    for _ in range(8):
        d = _widths(rng)
        cases.append(dict(L=rng.randint(1, 96), P=rng.randint(1, 8192), d=d, d_ffn=d * rng.choice([2, 4, 8]) // 2,
                          V=rng.randint(100, 150_000)))
    return cases


EXERCISE = Exercise(
    id="ex01",
    notebook="ex01_prefill_vs_decode.ipynb",
    title="Prefill vs decode: counting FLOPs",
    questions=(
        Question(
            "q1", "prefill_flops", "prefill_flops(L, P, d) -> int", _prefill_cases,
            lambda L, P, d: costs.prefill_macs(L=L, P=P, d=d), exact_int,
            N_("seed convention (1 FLOP per multiply-add): 12·L·P·d² for the matrices plus 2·L·P²·d for "
               "the attention scores and the weighted sum of values."),
        ),
        Question(
            "q2", "decode_step_flops", "decode_step_flops(L, S, d) -> int", _step_cases,
            lambda L, S, d: costs.decode_step_macs(L=L, S=S, d=d), exact_int,
            N_("seed convention: one token through the matrices (12·L·d²) plus attention over S cached "
               "keys and values (2·L·S·d)."),
        ),
        Question(
            "q3", "decode_flops", "decode_flops(L, P, D, d) -> int", _total_cases,
            lambda L, P, D, d: costs.decode_macs_seed(L=L, P=P, D=D, d=d), exact_int,
            N_("seed convention and accounting: D decode steps with S = P, P+1, ..., P+D−1; sum Eq. (1.3) "
               "over them (the sum of S is D·P + D(D−1)/2). Use integer arithmetic (//), not floats."),
        ),
        Question(
            "q4", "no_cache_flops", "no_cache_flops(L, P, D, d) -> int", _total_cases,
            lambda L, P, D, d: costs.no_cache_macs_seed(L=L, P=P, D=D, d=d), exact_int,
            N_("seed convention: without the cache, step t = 0..D−1 is a full prefill over P+t tokens; "
               "sum Eq. (1.2) with P replaced by P+t (you need the sums of (P+t) and of (P+t)²)."),
        ),
        Question(
            "q5", "prefill_flops_full", "prefill_flops_full(L, P, d, d_ffn, V) -> int", _full_cases,
            lambda L, P, d, d_ffn, V: costs.prefill_flops(L=L, P=P, d=d, d_ffn=d_ffn, V=V), exact_int,
            N_("2-FLOP convention (2 per multiply-add), multi-head attention. Per layer and token: 2·3d² (Q, K, V) "
               "+ 2·d² (output) + 2·2·d·d_ffn (MLP); attention: 4·d per (query, key) pair, and the matmuls "
               "compute all P·P pairs before the causal mask (4·P²·d per layer); plus the LM head, 2·d·V, at "
               "the last position only."),
        ),
    ),
)
