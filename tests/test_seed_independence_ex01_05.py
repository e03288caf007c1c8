"""Seed independence of ex01–ex05: each question's plausible wrong answers lose it under every seed.

Each wrong answer is named by the edge (`Question.edges`) that its question draws every time to separate it from the
right rule; the harness is `tests/seed_harness.py`. Where a wrong answer differs from the right one on every input,
its docstring says so (its edge is then a boundary case, drawn every time like the others).
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from seed_harness import SEEDS, Make, assert_answers, outputs, seeds_passed

from minigpt.exercises import EXERCISES
from minigpt.grading.cases import prepare
from minigpt.grading.verdicts import _compare

Fn = Callable[..., Any]


# ex01: the FLOP formulas, 1 FLOP per multiply-add (q1–q4), 2 FLOPs per multiply-add (q5)

def _causal_prefill(L: int, P: int, d: int) -> int:
    """ex01 q1 counting only the P(P+1)/2 causal pairs of attention instead of all P² (equal only at P = 1)."""
    return 12 * L * P * d**2 + L * P * (P + 1) * d


def _self_attending_step(L: int, S: int, d: int) -> int:
    """ex01 q2 with the new token attending to S + 1 keys (itself too) instead of S; differs on every input (no
    subtler wrong neighbour exists for this two-term formula), its edge is the empty cache S = 0."""
    return 12 * L * d**2 + 2 * L * (S + 1) * d


def _halved_early(L: int, P: int, D: int, d: int) -> int:
    """ex01 q3 with the integer division done first, D // 2 * (D − 1) instead of D·(D − 1) // 2 (wrong for odd D
    ≥ 3 only)."""
    return 12 * L * D * d**2 + 2 * L * d * (D * P + D // 2 * (D - 1))


def _package_accounting(L: int, P: int, D: int, d: int) -> int:
    """ex01 q3 with the package's accounting, D − 1 decode steps (S = P+1 .. P+D−1, the first token from the
    prefill) instead of D steps S = P .. P+D−1; differs on every input, its edge is D = 1."""
    return sum(12 * L * d**2 + 2 * L * (P + t) * d for t in range(1, D))


def _cross_term_dropped(L: int, P: int, D: int, d: int) -> int:
    """ex01 q4 with (P+t)² expanded as P² + t², the cross term 2·P·t dropped (equal only at D = 1)."""
    tokens = D * P + D * (D - 1) // 2
    squares = D * P * P + (D - 1) * D * (2 * D - 1) // 6
    return 12 * L * d**2 * tokens + 2 * L * d * squares


def _head_everywhere(oracle: Fn) -> Fn:
    """ex01 q5 with the LM head at all P positions (2·P·d·V) instead of the last one only (equal only at P = 1)."""
    return lambda L, P, d, d_ffn, V: oracle(L=L, P=P, d=d, d_ffn=d_ffn, V=V) + 2 * d * V * (P - 1)


# ex02 and ex03: presets, memory budgets and the roofline

def _query_heads(oracle: Fn) -> Fn:
    """A preset question answered with the H query heads where the cache holds H_kv KV heads (equal on the
    multi-head presets, wrong on the GQA ones)."""
    def wrong(model: Any, **kwargs: Any) -> Any:
        shape = SimpleNamespace(L=model.L, H_kv=model.H, d_h=model.d_h, N_params=model.N_params)
        return oracle(model=shape, **kwargs)
    return wrong


def _no_k_and_v(L: int, H_kv: int, d_h: int, s: int) -> int:
    """ex02 q1 with the factor 2 (a key and a value) forgotten; differs on every input (the formula is a bare
    product, it has no subtler wrong neighbour)."""
    return L * H_kv * d_h * s


def _unclamped(key: str) -> Make:
    """ex02 q3 (key "B") or q4 (key "S") without the clamp to 0: a negative answer when not even the weights fit."""
    def make(oracle: Fn) -> Fn:
        def wrong(hardware: Any, model: Any, s: int, **kw: Any) -> int:
            kv = 2 * model.L * model.H_kv * model.d_h * s
            return (hardware.memory_bytes - model.N_params * s) // (kw[key] * kv)
        return wrong
    return make


def _weights_at_one_byte(key: str) -> Make:
    """ex02 q3 or q4 with the weights taken as N bytes instead of N·s (s left out of the weights only): wrong at
    s = 2 when the answer moves."""
    def make(oracle: Fn) -> Fn:
        def wrong(hardware: Any, model: Any, s: int, **kw: Any) -> int:
            kv = 2 * model.L * model.H_kv * model.d_h * s
            return max(0, (hardware.memory_bytes - model.N_params) // (kw[key] * kv))
        return wrong
    return make


def _memory_roof_only(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """ex03 q2 with the compute roof left out: intensity × bandwidth (wrong above the ridge point only)."""
    return intensity * bandwidth


def _compute_roof_only(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """ex03 q2 with the memory roof left out: peak_flops (wrong below the ridge point only)."""
    return peak_flops


def _weights_per_sequence(L: int, S: int, d: int, s: int, N_params: int, B: int) -> float:
    """ex03 q1 with the weights read once per sequence (B·N·s) instead of once per step (equal only at B = 1)."""
    return B * L * (24 * d * d + 4 * d * (S + 1)) / (B * N_params * s + B * S * 2 * L * d * s)


def _per_sequence_ceiling(oracle: Fn) -> Fn:
    """ex03 q3 per sequence: the B of the numerator left out (equal only at B = 1)."""
    return lambda hardware, model, s, S, B: oracle(hardware=hardware, model=model, s=s, S=S, B=B) / B


def _one_byte_weights(tok_s: float, N_params: int, s: int) -> float:
    """ex03 q4 with s ignored, the weights taken as N bytes (equal only at s = 1)."""
    return tok_s * N_params


def _at_or_below(intensity: float, peak_flops: float, bandwidth: float) -> bool:
    """ex03 q5 with <= instead of <: a kernel exactly at the ridge point called memory-bound (wrong there only)."""
    return intensity <= peak_flops / bandwidth


# ex04: the wall clock

def _first_token_in_ttft(P: int, D: int, prefill_tok_s: float, decode_tok_s: float) -> float:
    """ex04 q1 with D − 1 decode tokens (the first one counted in the TTFT) instead of Eq. (4.1)'s D; differs on
    every input, its edge is D = 1."""
    return P / prefill_tok_s + (D - 1) / decode_tok_s


def _share_of_d_minus_1(P: int, D: int, prefill_tok_s: float, decode_tok_s: float) -> float:
    """ex04 q2 with D − 1 decode tokens; differs on every input, its edge is D = 1 (a share of 0)."""
    decode = (D - 1) / decode_tok_s
    return decode / (P / prefill_tok_s + decode)


def _generated_total(prompt_tokens: int, prefill_s: float, decode_steps: int,
                     decode_s: float) -> tuple[float, float]:
    """ex04 q3 with the generated total (decode_steps + 1) over the decode time instead of the steps; differs on
    every input, its edge is a single decode step (a rate twice too high)."""
    return prompt_tokens / prefill_s, (decode_steps + 1) / decode_s


def _with_intercept(P: list[int], D: list[int], total_s: list[float]) -> tuple[float, float]:
    """ex04 q4 fitted with an intercept (a column of ones), which Eq. (4.1) does not have; differs on noisy
    totals, i.e. on every case the question draws."""
    import numpy as np
    A = np.array([P, D, [1.0] * len(P)], dtype=np.float64).T
    (a, b, _), *_ = np.linalg.lstsq(A, np.array(total_s, dtype=np.float64), rcond=None)
    return float(1 / a), float(1 / b)


# ex05: MiniGPT

def _ffn_assumed_4d(oracle: Fn) -> Fn:
    """ex05 q1 with d_ffn taken as 4·d instead of the d_ffn given (equal whenever d_ffn = 4·d)."""
    return lambda L, d, V, S_max, d_ffn: oracle(L=L, d=d, V=V, S_max=S_max, d_ffn=4 * d)


def _untied_head(oracle: Fn) -> Fn:
    """ex05 q1 with an untied LM head (V·d more); differs on every input, its edge is the smallest model."""
    return lambda L, d, V, S_max, d_ffn: oracle(L=L, d=d, V=V, S_max=S_max, d_ffn=d_ffn) + V * d


@torch.no_grad()
def _first_position(model: torch.nn.Module, tokens: list[int]) -> int:
    """ex05 q2 reading the logits at the first position instead of the last (right when both argmaxes agree)."""
    return int(model(torch.tensor([tokens]))[0, 0].argmax())


@torch.no_grad()
def _summed_loss(model: torch.nn.Module, tokens: list[int]) -> float:
    """ex05 q3 with the cross-entropy summed over the positions instead of averaged (equal only for 2 tokens)."""
    x = torch.tensor([tokens])
    return float(F.cross_entropy(model(x[:, :-1])[0], x[0, 1:], reduction="sum"))


def _zero_not_minus_inf(logits: torch.Tensor, k: int, temperature: float) -> torch.Tensor:
    """ex05 q4 with the others set to the logit 0 instead of −inf (right only when k = V, nothing masked)."""
    scaled = logits.float() / temperature
    kth = torch.topk(scaled, k).values[-1]
    return torch.softmax(scaled.masked_fill(scaled < kth, 0.0), dim=-1)


WRONG: dict[str, list[tuple[str, Make]]] = {
    "ex01.q1": [("causal P(P+1)/2 pairs", lambda oracle: _causal_prefill)],
    "ex01.q2": [("S + 1 keys", lambda oracle: _self_attending_step)],
    "ex01.q3": [("D // 2 * (D - 1)", lambda oracle: _halved_early),
                ("D - 1 steps", lambda oracle: _package_accounting)],
    "ex01.q4": [("cross term 2·P·t dropped", lambda oracle: _cross_term_dropped)],
    "ex01.q5": [("LM head at all P positions", _head_everywhere)],
    "ex02.q1": [("the factor 2 for K and V", lambda oracle: _no_k_and_v)],
    "ex02.q2": [("H instead of H_kv", _query_heads)],
    "ex02.q3": [("the clamp to 0 left out", _unclamped("B")),
                ("N bytes instead of N·s", _weights_at_one_byte("B"))],
    "ex02.q4": [("the clamp to 0 left out", _unclamped("S")),
                ("N bytes instead of N·s", _weights_at_one_byte("S"))],
    "ex02.q5": [("H instead of H_kv", _query_heads)],
    "ex03.q1": [("weights read once per sequence", lambda oracle: _weights_per_sequence)],
    "ex03.q2": [("compute roof left out", lambda oracle: _memory_roof_only),
                ("memory roof left out", lambda oracle: _compute_roof_only)],
    "ex03.q3": [("H instead of H_kv", _query_heads), ("per sequence", _per_sequence_ceiling)],
    "ex03.q4": [("N bytes instead of N·s", lambda oracle: _one_byte_weights)],
    "ex03.q5": [("<= instead of <", lambda oracle: _at_or_below)],
    "ex04.q1": [("D - 1 decode tokens", lambda oracle: _first_token_in_ttft)],
    "ex04.q2": [("D - 1 decode tokens", lambda oracle: _share_of_d_minus_1)],
    "ex04.q3": [("generated total", lambda oracle: _generated_total)],
    "ex04.q4": [("intercept", lambda oracle: _with_intercept)],
    "ex05.q1": [("4·d assumed", _ffn_assumed_4d), ("untied LM head", _untied_head)],
    "ex05.q2": [("first position", lambda oracle: _first_position)],
    "ex05.q3": [("summed", lambda oracle: _summed_loss)],
    "ex05.q4": [("0 instead of −inf", lambda oracle: _zero_not_minus_inf)],
}


#: Questions whose oracle returns what the answer is checked against (ex05 q2: the logits), not the answer itself
#: (the argmax): `seeds_passed` cannot hand the oracle's output back as the right answer, so the right answer here
#: is the argmax of the expected logits.
ARGMAX = {"ex05.q2"}


def argmax_seeds_passed(qid: str, name: str, make: Make) -> list[int]:
    """`seeds_passed` for an `ARGMAX` question."""
    eid, q_id = qid.split(".")
    q = EXERCISES[eid].question(q_id)
    assert any(name in edge for edge in q.edges), f"{qid}: no edge named {name!r} in {q.edges}"
    wrong, passed = make(q.oracle), []
    for seed in SEEDS:
        prepared = prepare(eid, seed)
        cases, expected = prepared.cases[q.id], prepared.expected[q.id]
        right = [max(range(len(e["$tensor"])), key=e["$tensor"].__getitem__) for e in expected]
        assert _compare(q, cases, expected, right)[0], (qid, seed)  # the right answer keeps the question
        out, work = outputs(wrong, cases)
        assert_answers(qid, name, seed, out)
        if _compare(q, cases, expected, out, work)[0]:
            passed.append(seed)
    return passed


@pytest.mark.parametrize(("qid", "index"), [(q, i) for q, v in sorted(WRONG.items()) for i in range(len(v))])
def test_a_named_wrong_answer_loses_under_every_seed(qid: str, index: int) -> None:
    name, make = WRONG[qid][index]
    passed = (argmax_seeds_passed if qid in ARGMAX else seeds_passed)(qid, name, make)
    assert not passed, f"{qid}: the wrong answer ({name}) kept the question"
