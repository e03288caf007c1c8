"""Exercise 14, Question 4: the best number of drafts per round, replayed from a server's logged rounds.

A server that ran speculative decoding with `gamma_max` drafts per round logs, per round, how many drafts the
target accepted (vLLM counts them per position). Replaying those rounds with γ ≤ gamma_max drafts, a round keeps
min(accepted, γ) drafts and the target's pass adds one token (the correction after a rejection, the bonus token
after γ kept drafts), for γ·c + v target steps (Eq. 17.2's cost). The best γ emits the most tokens per step over
the rounds; Eq. (17.3) gives it for independent acceptances at one rate α, which a real drafter's are not (its
early drafts are accepted more often than its late ones, and some contexts are easy throughout).

`best_from_rounds(..., kind=None)` is the oracle; each `kind` is a plausible wrong answer that an edge case
separates from it (`BEST_EDGES`, `WRONG_KINDS`), drawn by `rounds_cases` under every seed.
"""

from __future__ import annotations

import random
from fractions import Fraction

from minigpt import costs

BEST_EDGES = ("rounds whose accepted counts are not those of one rate α: a rate fitted to them (accepted drafts "
              "over proposed drafts) and Eq. (17.3)",
              "a round cut at γ below its accepted drafts: its bonus token left out (γ tokens, not γ + 1)",
              "the bonus token left out of every round: the kept drafts alone counted",
              "a verify pass that decides the answer: a round's cost without it (γ·c)",
              "the best γ is gamma_max: gamma_max never tried (range(1, gamma_max))",
              "an exact tie between two γ: the larger one")
#: The wrong answer each edge separates, in the order of `BEST_EDGES`.
WRONG_KINDS = ("alpha", "cut_no_bonus", "no_bonus", "no_verify", "no_top", "tie_larger")
TIE_GAP = Fraction(1, 10**6)  # the relative gap kept between the best γ's rate and the next, tie case aside


def _rates(accepted: list[int], gamma_max: int, cost_ratio: float, verify_ratio: float,
           kind: str | None = None) -> list[Fraction]:
    """Tokens per target step of the replayed rounds at γ = 1 .. gamma_max, exact (`kind` as in `best_from_rounds`)."""
    c, v = Fraction(cost_ratio), Fraction(0 if kind == "no_verify" else verify_ratio)
    rates = []
    for g in range(1, gamma_max + 1):
        if kind == "cut_no_bonus":
            tokens = sum(n + 1 if n < g else g for n in accepted)
        elif kind == "no_bonus":
            tokens = sum(min(n, g) for n in accepted)
        else:
            tokens = sum(min(n, g) + 1 for n in accepted)
        rates.append(Fraction(tokens) / (len(accepted) * (g * c + v)))
    return rates


def best_from_rounds(accepted: list[int], gamma_max: int, cost_ratio: float, verify_ratio: float,
                     kind: str | None = None) -> int:
    """The γ in 1 .. gamma_max whose replay of the logged rounds emits the most tokens per target step, the
    smallest on an exact tie; with `kind`, one of `WRONG_KINDS` instead."""
    if kind == "alpha":
        alpha = min(1.0, max(1e-9, sum(accepted) / (len(accepted) * gamma_max)))
        return costs.speculative_best_gamma(alpha=alpha, cost_ratio=cost_ratio, verify_ratio=verify_ratio,
                                            gamma_max=gamma_max)
    rates = _rates(accepted, gamma_max - 1 if kind == "no_top" else gamma_max, cost_ratio, verify_ratio, kind)
    best = max(rates)
    ties = [g for g, rate in enumerate(rates, start=1) if rate == best]
    return ties[-1] if kind == "tie_larger" else ties[0]


def _rounds(rng: random.Random, gamma_max: int, R: int, style: str) -> list[int]:
    """R rounds of accepted drafts: each draft j accepted with probability a·d^j until the first rejection
    ("decay"), or whole rounds accepted or rejected early ("bimodal": easy and hard contexts)."""
    if style == "bimodal":
        easy = rng.uniform(0.2, 0.8)
        return [gamma_max if rng.random() < easy else rng.randint(0, 1) for _ in range(R)]
    a, d = (rng.uniform(0.9, 0.99), 1.0) if style == "high" else (rng.uniform(0.5, 0.95), rng.uniform(0.6, 1.0))
    out = []
    for _ in range(R):
        n = 0
        while n < gamma_max and rng.random() < a * d**n:
            n += 1
        out.append(n)
    return out


def _case(rng: random.Random, separates: str | None) -> dict:
    """A case drawn until `separates` (a kind of `WRONG_KINDS`) answers differently, its best γ clear of a tie."""
    style = {"alpha": "bimodal", "no_top": "high"}.get(separates or "", rng.choice(["decay", "bimodal"]))
    for _ in range(10_000):
        gamma_max, R = rng.randint(3, 10), rng.randint(8, 40)
        case = dict(accepted=_rounds(rng, gamma_max, R, style), gamma_max=gamma_max,
                    cost_ratio=round(10 ** rng.uniform(-2.5 if separates == "no_top" else -2, -0.5), 3),
                    verify_ratio=round(rng.uniform(1.0, 1.8), 3))
        rates = sorted(_rates(**case), reverse=True)
        if rates[0] - rates[1] < TIE_GAP * rates[0]:
            continue
        if separates is None or best_from_rounds(**case, kind=separates) != best_from_rounds(**case):
            return case
    raise RuntimeError(f"no case separating {separates!r} in 10,000 draws")


def _tie_case(rng: random.Random) -> dict:
    """Eight rounds with γ = 1 and γ = 2 exactly tied at c = 1/4, v = 1 (7 rounds keep a draft, 3 of them two:
    15 tokens for 1.25 steps a round against 18 for 1.5) and every larger γ behind; all in binary fractions, so
    floats compare them exactly."""
    gamma_max = rng.randint(3, 6)
    accepted = [0, 1, 1, 1, 1, 2, rng.randint(3, gamma_max), rng.randint(3, gamma_max)]
    rng.shuffle(accepted)
    return dict(accepted=accepted, gamma_max=gamma_max, cost_ratio=0.25, verify_ratio=1.0)


def rounds_cases(rng: random.Random) -> list[dict]:
    """The edges first, in the order of `BEST_EDGES` (the tie last among them), then four random cases."""
    cases = [_case(rng, kind) for kind in WRONG_KINDS if kind != "tie_larger"] + [_tie_case(rng)]
    return cases + [_case(rng, None) for _ in range(4)]
