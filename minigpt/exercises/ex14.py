"""Exercise 14 (Chapter 17, speculative decoding): greedy verification, the rejection rule, tokens per pass and
speedup, the best γ.

The oracles are the package: the rejection rule of `minigpt.runtime.speculative` (`accept_drafts`, with one-hot
distributions for greedy verification; `acceptance_probability`, `residual_distribution`) and the formulas of
`minigpt.costs` (Eqs. (17.1)–(17.3)).
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch
import torch.nn.functional as F

from minigpt import costs
from minigpt.exercises.spec import Compare, Exercise, Question, build, close, exact_int, int_list, pair, randn, tensor
from minigpt.runtime.speculative import accept_drafts, acceptance_probability, residual_distribution


def _greedy_cases(rng: random.Random) -> list[dict]:
    cases = []
    for i in range(6):
        B, gamma, V = rng.randint(1, 3), rng.randint(1, 8), rng.randint(8, 50)
        agree = 1.0 if i == 0 else rng.choice([0.7, 0.85, 0.95])  # the first case: every draft is accepted
        target_argmax = [[rng.randrange(V) for _ in range(gamma + 1)] for _ in range(B)]
        drafts = [[t if rng.random() < agree else (t + rng.randrange(1, V)) % V for t in row[:gamma]]
                  for row in target_argmax]
        cases.append(dict(drafts=drafts, target_argmax=target_argmax))
    return cases


def _greedy_round(drafts: list[list[int]], target_argmax: list[list[int]]) -> list[list[int]]:
    """One greedy round through the package's rejection rule, with the argmaxes as one-hot distributions."""
    V = 1 + max(max(row) for row in drafts + target_argmax)
    p = F.one_hot(torch.tensor(target_argmax), V).float()  # [B, γ+1, V]
    x = torch.tensor(drafts)  # [B, γ]
    q = list(F.one_hot(x, V).float().unbind(1))  # γ × [B, V]
    n, nxt = accept_drafts(p, q, list(x.split(1, dim=1)), greedy=True)
    return torch.cat([x[:, :n], nxt], dim=1).tolist()


def _rule_cases(rng: random.Random) -> list[dict]:
    cases = []
    for i in range(6):
        V, temperature = rng.randint(5, 40), rng.choice([0.5, 0.7, 1.0, 1.5])
        target_logits, draft_logits = randn([V], rng, scale=2.0), randn([V], rng, scale=2.0)
        p, q = (torch.softmax(build(z) / temperature, -1) for z in (target_logits, draft_logits))
        # half the cases draft a token the target likes less (kept with probability p/q), half one it likes more
        pool = [int(j) for j in ((p < q) if i % 2 == 0 else (p >= q)).nonzero().flatten()] or list(range(V))
        cases.append(dict(target_logits=target_logits, draft_logits=draft_logits, temperature=temperature,
                          x=rng.choice(pool)))
    return cases


def _rule(target_logits: torch.Tensor, draft_logits: torch.Tensor, temperature: float,
          x: int) -> tuple[float, torch.Tensor]:
    p = torch.softmax(target_logits.float() / temperature, dim=-1)
    q = torch.softmax(draft_logits.float() / temperature, dim=-1)
    return float(acceptance_probability(p[x], q[x])), residual_distribution(p, q)


def _number(compare: Compare) -> Compare:
    """`compare` on a number, accepting a one-element tensor (a student's `p[x] / q[x]`) as its value."""

    def check(expected: Any, actual: Any) -> str | None:
        if isinstance(actual, dict) and "$tensor" in actual and math.prod(actual["shape"]) == 1:
            actual = torch.tensor(actual["$tensor"]).flatten()[0].item()
        return compare(expected, actual)

    return check


def _speedup_cases(rng: random.Random) -> list[dict]:
    cases = []
    for i in range(7):
        alpha = [0.0, 1.0][i] if i < 2 else round(rng.uniform(0.05, 0.99), 3)  # the two ends, then inside
        cases.append(dict(alpha=alpha, gamma=rng.randint(1, 12), cost_ratio=round(10 ** rng.uniform(-2, 0), 4),
                          verify_ratio=round(rng.uniform(1.0, 2.0), 3)))
    return cases


def _speedup(alpha: float, gamma: int, cost_ratio: float, verify_ratio: float) -> tuple[float, float]:
    return (costs.speculative_tokens_per_pass(alpha=alpha, gamma=gamma),
            costs.speculative_speedup(alpha=alpha, gamma=gamma, cost_ratio=cost_ratio, verify_ratio=verify_ratio))


def _best_cases(rng: random.Random) -> list[dict]:
    return [dict(alpha=round(rng.uniform(0.3, 0.99), 3), cost_ratio=round(10 ** rng.uniform(-2, -0.3), 4),
                 verify_ratio=round(rng.uniform(1.0, 1.8), 3), gamma_max=rng.randint(4, 32)) for _ in range(6)]


def _best(alpha: float, cost_ratio: float, verify_ratio: float, gamma_max: int) -> int:
    return costs.speculative_best_gamma(alpha=alpha, cost_ratio=cost_ratio, verify_ratio=verify_ratio,
                                        gamma_max=gamma_max)


EXERCISE = Exercise(
    id="ex14",
    notebook="ex14_speculative_decoding.ipynb",
    title="Speculative decoding",
    questions=(
        Question(
            "q1", "greedy_round", "greedy_round(drafts, target_argmax) -> list[list[int]]", _greedy_cases,
            _greedy_round, int_list,
            "sequence b accepts the leading drafts with drafts[b][i] == target_argmax[b][i] (n_b of them); the batch "
            "keeps n = min over b of n_b, and each sequence emits drafts[b][:n] and then target_argmax[b][n]: "
            "n + 1 tokens each (γ + 1 when every draft of every sequence is accepted).",
        ),
        Question(
            "q2", "rejection_rule", "rejection_rule(target_logits, draft_logits, temperature, x) -> (accept, residual)",
            _rule_cases, _rule, pair(_number(close(1e-5, 1e-7)), tensor(atol=1e-6, rtol=1e-5), ("accept", "residual")),
            "p = softmax(target_logits / temperature), q = softmax(draft_logits / temperature). accept = min(1, "
            "p[x] / q[x]) as a float; residual = max(0, p − q) / Σ max(0, p − q), a tensor of shape [V] (it sums "
            "to 1 and is zero wherever p <= q).",
        ),
        Question(
            "q3", "speculation_gain", "speculation_gain(alpha, gamma, cost_ratio, verify_ratio) -> (tokens, speedup)",
            _speedup_cases, _speedup, pair(close(1e-9), close(1e-9), ("tokens_per_pass", "speedup")),
            "tokens per target pass, Eq. (17.1): (1 − α^(γ+1)) / (1 − α), and γ + 1 at α = 1; speedup, Eq. (17.2): "
            "tokens per pass over the round's cost γ·c + v, in target decode steps.",
        ),
        Question(
            "q4", "best_gamma", "best_gamma(alpha, cost_ratio, verify_ratio, gamma_max) -> int", _best_cases, _best,
            exact_int,
            "Eq. (17.3): try every γ from 1 to gamma_max, compute the speedup of Eq. (17.2) for each, and return the "
            "γ with the largest one (on an exact tie, the smallest such γ).",
        ),
    ),
)
