"""The case generators of exercise 14 (`minigpt.exercises.ex14`), each drawing first the edges its question names
(`Question.edges`: the plausible wrong answers they separate from the right one), then random cases; and the
inverse-CDF draw the sampled round's uniforms answer.
"""

from __future__ import annotations

import random

import torch

from minigpt.exercises.spec import build, randn

GREEDY_EDGES = ("every draft accepted: the bonus token after the γ drafts",
                "sequences with different accepted counts: each sequence its own accepted count, not the batch's")
RULE_EDGES = ("a draft the target likes more (p ≥ q): the acceptance not clamped to 1",
              "a temperature other than 1: the temperature ignored")
ROUND_EDGES = ("every draft kept, the rows γ − 1 and γ drawing different tokens: the bonus token drawn from the "
               "last draft's row", "a rejection whose residual draw differs from the target's: the replacement "
               "drawn from p, not from the residual")


def inverse_cdf(probs: torch.Tensor, u: float) -> int:
    """The token an inverse-CDF draw picks with u in [0, 1): the first whose cumulative probability exceeds u."""
    cdf = torch.cumsum(probs.double() / probs.double().sum(), dim=-1)
    return min(int((cdf <= u).sum()), probs.shape[-1] - 1)


def _greedy_case(rng: random.Random, agree: float, split: bool = False) -> dict:
    """With `split`, sequence 0 accepts every draft and sequence 1 rejects one: the batch keeps fewer."""
    B, gamma, V = rng.randint(2 if split else 1, 3), rng.randint(2 if split else 1, 8), rng.randint(8, 50)
    target_argmax = [[rng.randrange(V) for _ in range(gamma + 1)] for _ in range(B)]
    drafts = [[t if rng.random() < agree else (t + rng.randrange(1, V)) % V for t in row[:gamma]]
              for row in target_argmax]
    if split:
        drafts[0] = target_argmax[0][:gamma]
        k = rng.randrange(gamma)
        drafts[1][k] = (target_argmax[1][k] + rng.randrange(1, V)) % V
    return dict(drafts=drafts, target_argmax=target_argmax)


def greedy_cases(rng: random.Random) -> list[dict]:
    """The edges first (`GREEDY_EDGES`), then random batches."""
    cases = [_greedy_case(rng, 1.0), _greedy_case(rng, rng.choice([0.85, 0.95]), split=True)]
    return cases + [_greedy_case(rng, rng.choice([0.7, 0.85, 0.95])) for _ in range(4)]


def rule_cases(rng: random.Random) -> list[dict]:
    """Half the cases draft a token the target likes less, half one it likes more (`RULE_EDGES`); the first is at
    a temperature other than 1."""
    cases = []
    for i in range(6):
        V, temperature = rng.randint(5, 40), rng.choice([0.5, 0.7, 1.5] if i == 0 else [0.5, 0.7, 1.0, 1.5])
        target_logits, draft_logits = randn([V], rng, scale=2.0), randn([V], rng, scale=2.0)
        p, q = (torch.softmax(build(z) / temperature, -1) for z in (target_logits, draft_logits))
        # half the cases draft a token the target likes less (kept with probability p/q), half one it likes more
        pool = [int(j) for j in ((p < q) if i % 2 == 0 else (p >= q)).nonzero().flatten()] or list(range(V))
        cases.append(dict(target_logits=target_logits, draft_logits=draft_logits, temperature=temperature,
                          x=rng.choice(pool)))
    return cases


def round_margins(target_logits: torch.Tensor, draft_logits: torch.Tensor, drafts: list[int],
                  u: list[float]) -> float:
    """How far each uniform is from the thresholds it is compared with (so float rounding cannot flip a case)."""
    p = torch.softmax(target_logits.float(), -1).double()
    q = torch.softmax(draft_logits.float(), -1).double()
    gamma = len(drafts)
    cuts = [float(min(1.0, p[j, x] / q[j, x])) for j, x in enumerate(drafts)]
    margins = [abs(u[j] - c) for j, c in enumerate(cuts)]
    for dist in [*((p[j] - q[j]).clamp_min(0) for j in range(gamma)), p[gamma]]:
        cdf = torch.cumsum(dist / dist.sum(), -1) if dist.sum() > 0 else torch.ones(1)
        margins.append(float((cdf - u[gamma]).abs().min()))
    return min(margins)


def _separates(i: int, p: torch.Tensor, q: torch.Tensor, stop: int, u: list[float]) -> bool:
    """Whether case `i` draws its edge (`ROUND_EDGES`): case 0 a bonus token that row γ − 1 would draw otherwise,
    case 1 a replacement that p would draw otherwise; the other cases are random."""
    gamma = q.shape[0]
    if i == 0:
        return inverse_cdf(p[gamma], u[gamma]) != inverse_cdf(p[gamma - 1], u[gamma])
    if i == 1:
        return inverse_cdf((p[stop] - q[stop]).clamp_min(0), u[gamma]) != inverse_cdf(p[stop], u[gamma])
    return True


def sampled_round_cases(rng: random.Random) -> list[dict]:
    """Rounds with random tables (per student) that end at every place: a rejection at each position, and a full
    acceptance with its bonus token, the edges first (`ROUND_EDGES`); the uniforms stay 1e-4 away from every
    threshold."""
    cases = []
    for i in range(8):
        gamma, V = rng.randint(1, 5), rng.randint(3, 9)
        stop = gamma if i % 3 == 0 else rng.randrange(gamma)  # where the round ends (gamma: all kept)
        while True:
            t_logits, d_logits = randn([gamma + 1, V], rng, scale=1.5), randn([gamma, V], rng, scale=1.5)
            p, q = (torch.softmax(build(z).float(), -1) for z in (t_logits, d_logits))
            drafts = [int(torch.multinomial(q[j], 1, generator=torch.Generator().manual_seed(rng.getrandbits(32))))
                      for j in range(gamma)]
            cuts = [float(min(1.0, p[j, x] / q[j, x])) for j, x in enumerate(drafts)]
            if stop < gamma and cuts[stop] > 0.97:
                continue  # this draft is (almost) always kept: draw another table
            u = [rng.uniform(0, c) for c in cuts[:stop]]
            u += [rng.uniform(cuts[stop], 1) for _ in range(stop, stop + 1) if stop < gamma]
            u += [rng.random() for _ in range(len(u), gamma + 1)]
            if round_margins(build(t_logits), build(d_logits), drafts, u) > 1e-4 and _separates(i, p, q, stop, u):
                break
        cases.append(dict(target_logits=t_logits, draft_logits=d_logits, drafts={"$long": drafts},
                          u=[round(x, 12) for x in u]))
    return cases
