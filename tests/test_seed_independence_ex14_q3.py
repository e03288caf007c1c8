"""A grade does not depend on the class seed, exercise 14 question 3 (one round of the cautious verifier, which
keeps draft j with probability λ·min(1, p_j(x_j)/q_j(x_j))): each plausible wrong round, written apart from the
package as a student writes it (float32 tensors, its own inverse CDF), is named by the edge
(`ex14_cautious.ROUND_EDGES`) that the case generator draws every time, and loses the question under every seed
of the harness (`tests/seed_harness.py`); the generator's own replay of each neighbour emits what the wrong round
named here emits."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
import torch
from seed_harness import Make, seeds_passed

from minigpt.exercises import EXERCISES, ex14_cautious
from minigpt.exercises.spec import build_case


def _inverse_cdf(dist: torch.Tensor, u: float, normalise: bool = True) -> int:
    """The first token whose cumulative probability exceeds u (the last one if none does)."""
    cdf = torch.cumsum(dist / dist.sum() if normalise else dist, dim=-1)
    above = (cdf > u).nonzero()
    return int(above[0]) if len(above) else len(dist) - 1


def _cautious_round(coin: str = "lambda", rejection: str = "replacement", bonus: str = "p") -> Callable[..., Any]:
    """A round from scratch with one slip: `coin` "chapter" keeps draft j when u[j] < min(1, p/q) (λ left out);
    `rejection` "chapter" draws from norm(max(0, p − q)), "p" from p, "lambda q" from norm(max(0, p − λq)),
    "unnormalised" from p − λ·min(p, q) without dividing by 1 − λ·Σ min(p, q), "rejected mass" from
    norm(p·(1 − λ·min(1, p/q))); `bonus` "last p" draws the bonus token from row γ − 1 of p, "last q" from the
    last draft's q."""
    def speculative_round(target_logits: torch.Tensor, draft_logits: torch.Tensor, drafts: torch.Tensor,
                          u: list[float], lam: float) -> list[int]:
        p, q = torch.softmax(target_logits, -1), torch.softmax(draft_logits, -1)
        gamma, out = len(drafts), []
        for j in range(gamma):
            x = int(drafts[j])
            ratio = min(1.0, float(p[j, x]) / float(q[j, x]))
            if u[j] < (ratio if coin == "chapter" else lam * ratio):
                out.append(x)
                continue
            kept = lam * torch.minimum(p[j], q[j])
            if rejection == "chapter":
                dist = torch.clamp(p[j] - q[j], min=0)
            elif rejection == "p":
                dist = p[j]
            elif rejection == "lambda q":
                dist = torch.clamp(p[j] - lam * q[j], min=0)
            elif rejection == "unnormalised":
                return [*out, _inverse_cdf(p[j] - kept, u[gamma], normalise=False)]
            elif rejection == "rejected mass":
                dist = p[j] * (1 - lam * torch.clamp(p[j] / q[j], max=1))
            else:
                dist = (p[j] - kept) / (1 - kept.sum())
            return [*out, _inverse_cdf(dist, u[gamma])]
        last = {"p": p[gamma], "last p": p[gamma - 1], "last q": q[gamma - 1]}[bonus]
        return [*out, _inverse_cdf(last, u[gamma])]
    return speculative_round


def _fn(f: Callable[..., Any]) -> Make:
    return lambda oracle: f


#: Each wrong round, and the neighbour of `ex14_cautious.NEIGHBOURS` that the generator replays for it.
ROUNDS: list[tuple[str, str, Callable[..., Any]]] = [
    ("not Chapter 17's norm(max(0, p − q))", "chapter residual", _cautious_round(rejection="chapter")),
    ("not min(1, p/q)", "no lambda", _cautious_round(coin="chapter", rejection="chapter")),
    ("not min(1, p/q)", "", _cautious_round(coin="chapter")),  # λ in the replacement, not in the coin
    ("the replacement drawn, not p", "from p", _cautious_round(rejection="p")),
    ("λ scales the kept min(p, q), not q", "lambda q", _cautious_round(rejection="lambda q")),
    ("divided by the rejection probability", "unnormalised", _cautious_round(rejection="unnormalised")),
    ("not p·(1 − accept)", "rejected mass", _cautious_round(rejection="rejected mass")),
    ("drawn from row γ of p", "bonus row", _cautious_round(bonus="last p")),
    ("drawn from row γ of p", "", _cautious_round(bonus="last q")),
]

WRONG: dict[str, list[tuple[str, Make]]] = {"ex14.q3": [(name, _fn(f)) for name, _, f in ROUNDS]}


@pytest.mark.parametrize("index", range(len(ROUNDS)))
def test_a_named_wrong_round_loses_under_every_seed(index: int) -> None:
    """Guards an edge that is drawn only under some seeds (a class whose grade depends on its seed)."""
    name, make = WRONG["ex14.q3"][index]
    assert not seeds_passed("ex14.q3", name, make), f"ex14.q3: the wrong answer ({name}) kept the question"


def test_the_generators_neighbours_are_the_named_wrong_rounds() -> None:
    """ex14 Q3's generator draws each edge until its own replay of a neighbour (`ex14_cautious.replay(wrong=...)`)
    emits other tokens; each must emit what the wrong round named above emits, written apart from it, or the edge
    would separate another slip (the chapter's residual at another position, say)."""
    for seed in range(3):
        for case in EXERCISES["ex14"].question("q3").cases(random.Random(seed)):
            p, q = ex14_cautious._tables(case)
            args = build_case(case)
            for _, neighbour, wrong in ROUNDS:
                if neighbour:
                    replayed = ex14_cautious.replay(p, q, case["drafts"]["$long"], case["u"], case["lam"], neighbour)
                    assert replayed == wrong(**args), (seed, neighbour, case)
