"""Exercise 18, Question 3: an H2O cache decoded step by step, and the keys each step's attention reads.

The oracle is the package: `minigpt.runtime.eviction.H2OCache` driven as `MiniGPT` drives it for one layer,
one K/V head and one query head (`update`, the attention's `weights` through `observe`, then `advance`,
which evicts). What a step reads is what Eq. (22.1) prices: the budget held plus the step's own key, since
H2O evicts after the step's attention. The case generator replays H2O in plain Python (`_replay`) with each
plausible wrong neighbour of the rule (`H2O_EDGES`) and draws until each one reads other keys somewhere, and
until no eviction sits on a near tie (a float32 and a float64 answer must evict the same keys).
"""

from __future__ import annotations

import math
import random

import torch

from minigpt.config import ModelConfig
from minigpt.exercises.spec import build, randn
from minigpt.runtime.eviction import H2OCache

#: The edges, each with the wrong neighbour it separates from the rule; case i (i < 4) is drawn until the
#: neighbour of edge i reads other keys than H2O does (edge 0 holds in every case).
H2O_EDGES = (
    "a step past the budget: budget + 1 keys read (evicting before attending reads budget)",
    "accumulated scores: keeping by the last step's weights alone",
    "the recent tokens kept whatever their score: keeping the budget highest scores",
    "a new key's own weight added to its score: a new key starting from 0",
)
#: The smallest gap between the last key kept and the first key evicted by score at any eviction of a case.
TIE_GAP = 1e-3
_NEIGHBOURS = ("evict first", "last weights", "no recent", "no own weight")


def _replay(q: torch.Tensor, k: torch.Tensor, budget: int, recent: int, wrong: str | None = None
            ) -> tuple[list[list[int]], float]:
    """The positions each step reads, by H2O's rule or by its wrong neighbour `wrong` (one of `_NEIGHBOURS`),
    and the smallest score gap at an eviction (math.inf when nothing was evicted by score)."""
    held: list[int] = []
    score: dict[int, float] = {}
    reads, gap = [], math.inf
    d_h = q.shape[1]

    def evict() -> None:
        nonlocal held, gap
        if len(held) <= budget:
            return
        keep_recent = 0 if wrong == "no recent" else recent
        old, new = held[: len(held) - keep_recent], held[len(held) - keep_recent:]
        ranked = sorted(old, key=lambda p: score[p], reverse=True)
        take = budget - keep_recent
        if 0 < take < len(ranked):
            gap = min(gap, score[ranked[take - 1]] - score[ranked[take]])
        held = sorted(ranked[:take]) + new

    for t in range(q.shape[0]):
        held.append(t)
        score[t] = 0.0
        if wrong == "evict first":  # down to the budget before the step attends: it reads budget keys
            evict()
        logits = torch.stack([q[t].double() @ k[p].double() for p in held]) / math.sqrt(d_h)
        weights = torch.softmax(logits, dim=0).tolist()
        reads.append(list(held))
        for p, w in zip(held, weights, strict=True):
            if p == t and wrong == "no own weight":
                continue
            score[p] = w if wrong == "last weights" else score[p] + w
        if wrong != "evict first":
            evict()
    return reads, gap


def _case(rng: random.Random) -> dict:
    budget = rng.randint(3, 6)
    recent = rng.randint(1, budget - 1)
    T, d_h = rng.randint(budget + 4, budget + 10), rng.choice([2, 4, 8])
    return dict(q=randn([T, d_h], rng, 1.5), k=randn([T, d_h], rng, 1.5), budget=budget, recent=recent)


def _separates(case: dict, wrong: str | None) -> bool:
    """Whether the case has no near tie and, where `wrong` is named, its neighbour reads other keys."""
    q, k = build(case["q"]), build(case["k"])
    right, gap = _replay(q, k, case["budget"], case["recent"])
    if gap < TIE_GAP:
        return False
    return wrong is None or _replay(q, k, case["budget"], case["recent"], wrong)[0] != right


def _h2o_cases(rng: random.Random) -> list[dict]:
    """Cases 0-3 each drawn until the neighbour of its edge (`H2O_EDGES`) reads other keys; then four random
    ones. Every case runs past its budget and has no near tie."""
    cases = []
    for i in range(8):
        case = _case(rng)
        while not _separates(case, _NEIGHBOURS[i] if i < len(_NEIGHBOURS) else None):
            case = _case(rng)
        cases.append(case)
    return cases


def _h2o_reads(q: torch.Tensor, k: torch.Tensor, budget: int, recent: int) -> list[list[int]]:
    T, d_h = q.shape
    config = ModelConfig(L=1, H=1, H_kv=1, d_h=d_h, d_ffn=1, V=1, S_max=T)
    cache = H2OCache(config, budget=budget, recent=recent)
    reads = []
    for t in range(T):
        keys, _ = cache.update(0, k[t].view(1, 1, 1, d_h), torch.zeros(1, 1, 1, d_h))
        reads.append(sorted(cache.pos[0, 0, 0, : cache.n + 1].tolist()))
        cache.observe(0, q[t].view(1, 1, 1, d_h), keys, cache.visible(1))
        cache.advance(1)
    return reads
