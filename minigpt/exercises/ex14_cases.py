"""The case generator of exercise 14's second question (`minigpt.exercises.ex14`), drawing first the edges its
question names (`Question.edges`: the plausible wrong answers they separate from the right one), then random
cases; and the inverse-CDF draw the sampled round's uniforms answer (Question 1's generator:
`minigpt.exercises.ex14_ragged`; Question 3's: `minigpt.exercises.ex14_cautious`).
"""

from __future__ import annotations

import math
import random

import torch

from minigpt.exercises.spec import float64

REPLACEMENT_EDGES = (
    "Chapter 17's rule, accept = min(1, p/q): max(p − q, 0) normalised, not p nor p − q·accept unnormalised",
    "a cautious rule, accept = c·min(1, p/q) with c < 1: p mixed back in, not max(p − q, 0) whatever the rule",
    "a rule that keeps one token more often than p emits it: None, not a distribution clipped at 0")
# A rule over-emits token x when q[x]·accept[x] exceeds p[x] by more than rounding (`OVER`); every drawn rule is
# at least `CLEAR` from that line on every token where it is not exactly on it (Chapter 17's rule is, where p < q),
# and rejects with probability at least `REJECTS`, so any tolerance from 1e-12 to 1e-8 gives the same answers.
OVER, CLEAR, REJECTS = 1e-9, 1e-7, 0.01



def inverse_cdf(probs: torch.Tensor, u: float) -> int:
    """The token an inverse-CDF draw picks with u in [0, 1): the first whose cumulative probability exceeds u."""
    cdf = torch.cumsum(probs.double() / probs.double().sum(), dim=-1)
    return min(int((cdf <= u).sum()), probs.shape[-1] - 1)


def _softmax(rng: random.Random, V: int) -> list[float]:
    z = [2.0 * rng.gauss(0.0, 1.0) for _ in range(V)]
    e = [math.exp(x - max(z)) for x in z]
    return [x / math.fsum(e) for x in e]


def chapter_accept(p: list[float], q: list[float]) -> list[float]:
    """min(1, p/q), each value nudged down (by an ulp or two) until q·accept ≤ p and accept ≤ p/q hold exactly in
    float64: a rule exactly on the line, which a check without a tolerance must not call over-emitting."""
    out = []
    for pi, qi in zip(p, q, strict=True):
        a = min(1.0, pi / qi)
        while a > 0 and (qi * a > pi or a > pi / qi):
            a = math.nextafter(a, 0.0)
        out.append(a)
    return out


def _clear(p: list[float], q: list[float], accept: list[float], on_line: set[int]) -> bool:
    """Whether every token not in `on_line` is at least CLEAR from over-emitting, and the rule rejects enough."""
    gaps = [abs(qi * a - pi) for i, (pi, qi, a) in enumerate(zip(p, q, accept, strict=True)) if i not in on_line]
    rejects = 1.0 - math.fsum(qi * a for qi, a in zip(q, accept, strict=True))
    return min(gaps, default=1.0) >= CLEAR and rejects >= REJECTS


def _rule(rng: random.Random, kind: str, p: list[float], q: list[float]) -> tuple[list[float], set[int]]:
    """An acceptance rule of one kind, and the tokens it puts exactly on the line q·accept = p."""
    base = chapter_accept(p, q)
    if kind == "chapter":
        return base, {i for i, (pi, qi) in enumerate(zip(p, q, strict=True)) if pi < qi}
    if kind == "cautious":
        c = rng.uniform(0.3, 0.9)
        return [c * a for a in base], set()
    if kind == "over":  # the token the draft over-proposes most is always kept
        x = max(range(len(p)), key=lambda i: q[i] - p[i])
        return [1.0 if i == x else a for i, a in enumerate(base)], {i for i in range(len(p)) if p[i] < q[i] and i != x}
    if kind == "per_token":  # each token kept with its own share of min(1, p/q)
        return [rng.random() * a for a in base], set()
    if kind == "never":
        return [0.0] * len(p), set()
    return [rng.random() for _ in p], set()  # "any": a random rule, usually over-emitting some token


def replacement_cases(rng: random.Random) -> list[dict]:
    """The edges first (`REPLACEMENT_EDGES`: Chapter 17's rule, a cautious one, one that over-emits a token), then
    random rules (a random share of min(1, p/q) per token, never keeping, or any rule at all); p and q are softmaxes
    of logits 2·N(0, 1) over V = 4 to 24 tokens, the rules clear of the line by `CLEAR` and rejecting at least
    `REJECTS` of the proposals."""
    cases = []
    kinds = ["chapter", "cautious", "over"] + [rng.choice(["per_token", "never", "any", "any"]) for _ in range(3)]
    for kind in kinds:
        while True:
            V = rng.randint(4, 24)
            p, q = _softmax(rng, V), _softmax(rng, V)
            accept, on_line = _rule(rng, kind, p, q)
            over_by = max(qi - pi for pi, qi in zip(p, q, strict=True))
            if _clear(p, q, accept, on_line) and (kind != "over" or over_by >= 1e-3):
                break
        cases.append(dict(p=float64(p), q=float64(q), accept=float64(accept)))
    return cases
