"""Exercise 1 (Chapter 1, prefill vs decode): the FLOP formulas, Eqs. (1.2)–(1.5)."""

from __future__ import annotations

import random

from minigpt import costs
from minigpt.exercises.spec import N_, Exercise, Question, exact_int


def _widths(rng: random.Random) -> int:
    return 16 * rng.randint(1, 768)  # d from 16 to 12,288


PREFILL_EDGES = ("P >= 2: causal P(P+1)/2 pairs instead of all P² (equal at P = 1)", "P = 1")
STEP_EDGES = ("S = 0, the empty cache: S + 1 keys (the new token attending to itself) instead of S",)
DECODE_EDGES = ("odd D >= 3: D // 2 * (D - 1) instead of D * (D - 1) // 2",
                "D = 1: D - 1 steps (the package's accounting) instead of D")
NO_CACHE_EDGES = ("D >= 2: (P+t)² as P² + t², the cross term 2·P·t dropped",)
FULL_EDGES = ("P >= 2: the LM head at all P positions (2·P·d·V) instead of the last one",)


def _prefill_cases(rng: random.Random) -> list[dict]:
    """The edges first (`PREFILL_EDGES`), then random."""
    Ps = [rng.randint(2, 8192), 1] + [rng.randint(1, 8192) for _ in range(6)]
    return [dict(L=rng.randint(1, 96), P=P, d=_widths(rng)) for P in Ps]


def _step_cases(rng: random.Random) -> list[dict]:
    """The edge first (`STEP_EDGES`), then random."""
    Ss = [0] + [rng.randint(0, 32768) for _ in range(7)]
    return [dict(L=rng.randint(1, 96), S=S, d=_widths(rng)) for S in Ss]


def _total_cases(rng: random.Random, D_edges: list[int]) -> list[dict]:
    """The edges' D first (`DECODE_EDGES`, `NO_CACHE_EDGES`), then random D: eight cases."""
    Ds = D_edges + [rng.randint(1, 2048) for _ in range(8 - len(D_edges))]
    return [dict(L=rng.randint(1, 96), P=rng.randint(1, 4096), D=D, d=_widths(rng)) for D in Ds]


def _full_cases(rng: random.Random) -> list[dict]:
    """The edge first (`FULL_EDGES`), then random."""
    cases = []
    for P in [rng.randint(2, 8192)] + [rng.randint(1, 8192) for _ in range(7)]:
        d = _widths(rng)
        cases.append(dict(L=rng.randint(1, 96), P=P, d=d, d_ffn=d * rng.choice([2, 4, 8]) // 2,
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
            edges=PREFILL_EDGES,
        ),
        Question(
            "q2", "decode_step_flops", "decode_step_flops(L, S, d) -> int", _step_cases,
            lambda L, S, d: costs.decode_step_macs(L=L, S=S, d=d), exact_int,
            N_("seed convention: one token through the matrices (12·L·d²) plus attention over S cached "
               "keys and values (2·L·S·d)."),
            edges=STEP_EDGES,
        ),
        Question(
            "q3", "decode_flops", "decode_flops(L, P, D, d) -> int",
            lambda rng: _total_cases(rng, [rng.randrange(3, 2048, 2), 1]),
            lambda L, P, D, d: costs.decode_macs_seed(L=L, P=P, D=D, d=d), exact_int,
            N_("seed convention and accounting: D decode steps with S = P, P+1, ..., P+D−1; sum Eq. (1.3) "
               "over them (the sum of S is D·P + D(D−1)/2). Use integer arithmetic (//), not floats."),
            edges=DECODE_EDGES,
        ),
        Question(
            "q4", "no_cache_flops", "no_cache_flops(L, P, D, d) -> int",
            lambda rng: _total_cases(rng, [rng.randint(2, 2048)]),
            lambda L, P, D, d: costs.no_cache_macs_seed(L=L, P=P, D=D, d=d), exact_int,
            N_("seed convention: without the cache, step t = 0..D−1 is a full prefill over P+t tokens; "
               "sum Eq. (1.2) with P replaced by P+t (you need the sums of (P+t) and of (P+t)²)."),
            edges=NO_CACHE_EDGES,
        ),
        Question(
            "q5", "prefill_flops_full", "prefill_flops_full(L, P, d, d_ffn, V) -> int", _full_cases,
            lambda L, P, d, d_ffn, V: costs.prefill_flops(L=L, P=P, d=d, d_ffn=d_ffn, V=V), exact_int,
            N_("2-FLOP convention (2 per multiply-add), multi-head attention. Per layer and token: 2·3d² (Q, K, V) "
               "+ 2·d² (output) + 2·2·d·d_ffn (MLP); attention: 4·d per (query, key) pair, and the matmuls "
               "compute all P·P pairs before the causal mask (4·P²·d per layer); plus the LM head, 2·d·V, at "
               "the last position only."),
            edges=FULL_EDGES,
        ),
    ),
)
