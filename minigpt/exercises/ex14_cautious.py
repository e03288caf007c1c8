"""Exercise 14, Question 3's case generator (`minigpt.exercises.ex14`): one round of a *cautious* verifier, which
keeps draft j with probability λ·min(1, p_j(x_j)/q_j(x_j)) for a given λ in (0, 1]. Chapter 17's rule is λ = 1;
its round is exact for λ < 1 only if a rejection draws from Question 2's replacement for this rule,
(p − λ·min(p, q)) / (1 − λ·Σ min(p, q)), not from the chapter's norm(max(0, p − q)). The rule is a device of the
exercise (no serving system is said to use it): it makes the round follow from the derivation, not from the
chapter's printed code.

The generator replays the round in plain float64 (`replay`) with each plausible wrong neighbour (`NEIGHBOURS`,
one per edge of `ROUND_EDGES`) and draws each edge case until that neighbour emits other tokens, with every
uniform at least `MARGIN` from every threshold any of them compares it with (so float32 rounding cannot flip a
case), giving up after `DRAWS` draws. Then random rounds.

A neighbour left out on purpose: u[j] compared with ≤ instead of <. The uniforms stay `MARGIN` from every
threshold (a tie has probability 0, and a threshold's last bit depends on how it is computed), so no case can
tell the two apart.
"""

from __future__ import annotations

import random

import torch

from minigpt.exercises.ex14_cases import inverse_cdf
from minigpt.exercises.spec import build, randn

#: The edges, one per wrong neighbour (`NEIGHBOURS`, same order): case i is drawn until neighbour i emits other
#: tokens than the round.
ROUND_EDGES = (
    "a rejection at λ < 1: the replacement for the cautious rule, not Chapter 17's norm(max(0, p − q))",
    "a draft that Chapter 17's coin keeps and the cautious one does not: λ·min(1, p/q) compared with u[j], "
    "not min(1, p/q)",
    "a rejection where p draws another token: the replacement drawn, not p",
    "a rejection at λ < 1 where norm(max(0, p − λ·q)) draws another token: λ scales the kept min(p, q), not q",
    "a rejection at λ < 1 where p − λ·min(p, q), unnormalised, draws another token: the replacement divided by the "
    "rejection probability 1 − λ·Σ min(p, q)",
    "a rejection at λ = 1 (Chapter 17's rule): the replacement p − q·accept normalised, not p·(1 − accept)",
    "every draft kept, rows γ − 1 and γ of p (and the last draft's q) drawing different tokens: the bonus token "
    "drawn from row γ of p",
)
NEIGHBOURS = ("chapter residual", "no lambda", "from p", "lambda q", "unnormalised", "rejected mass", "bonus row")
#: λ of each edge: "low" draws λ < 1, "one" λ = 1, "any" either (`_lam`).
_EDGE_LAM = ("low", "low", "any", "low", "low", "one", "any")
#: How far every uniform stays from every threshold; draws allowed for one edge (over 200 seeds none took more than
#: 50, on average under 10).
MARGIN, DRAWS = 1e-4, 10_000
RANDOM_CASES = 3


def _lam(rng: random.Random, kind: str) -> float:
    """λ from 0.20 to 0.95 in steps of 0.01 ("low"), exactly 1 ("one"), or either, 1 a third of the time."""
    if kind == "one" or (kind == "any" and rng.random() < 1 / 3):
        return 1.0
    return rng.randint(20, 95) / 100


def replacement(p: torch.Tensor, q: torch.Tensor, lam: float) -> torch.Tensor:
    """(p − λ·min(p, q)) / (1 − λ·Σ min(p, q)): where a rejection of the cautious rule draws from (float64)."""
    kept = lam * torch.minimum(p, q)
    return (p - kept) / (1.0 - float(kept.sum()))


def _final(p: torch.Tensor, q: torch.Tensor, lam: float, wrong: str | None) -> torch.Tensor:
    """The distribution a rejection draws from, by the rule or by the neighbour `wrong`."""
    if wrong in ("chapter residual", "no lambda"):
        return (p - q).clamp_min(0)
    if wrong == "from p":
        return p
    if wrong == "lambda q":
        return (p - lam * q).clamp_min(0)
    if wrong == "rejected mass":
        return p * (1 - lam * (p / q).clamp(max=1.0))
    return replacement(p, q, lam)


def _unnormalised_draw(p: torch.Tensor, q: torch.Tensor, lam: float, u: float) -> int:
    """The inverse CDF on the cumulative sums of p − λ·min(p, q), never divided by its total: the last token when
    no sum exceeds u."""
    cdf = torch.cumsum(p - lam * torch.minimum(p, q), -1)
    return min(int((cdf <= u).sum()), p.shape[-1] - 1)


def replay(p: torch.Tensor, q: torch.Tensor, drafts: list[int], u: list[float], lam: float,
           wrong: str | None = None) -> list[int]:
    """One round of the cautious verifier on p `[γ+1, V]` and q `[γ, V]` (float64), or of its neighbour `wrong`."""
    gamma, out = len(drafts), []
    for j, x in enumerate(drafts):
        keep = min(1.0, float(p[j, x] / q[j, x]))
        if u[j] < (keep if wrong == "no lambda" else lam * keep):
            out.append(x)
            continue
        if wrong == "unnormalised":
            return [*out, _unnormalised_draw(p[j], q[j], lam, u[gamma])]
        return [*out, inverse_cdf(_final(p[j], q[j], lam, wrong), u[gamma])]
    return [*out, inverse_cdf(p[gamma - 1] if wrong == "bonus row" else p[gamma], u[gamma])]


def round_margins(p: torch.Tensor, q: torch.Tensor, drafts: list[int], u: list[float], lam: float) -> float:
    """How far each uniform is from every threshold the round or a neighbour compares it with: u[j] from
    λ·min(1, p/q) and min(1, p/q), u[γ] from the cut points of every distribution a round may draw from (the
    replacement and each neighbour's at every position, rows γ − 1 and γ of p, the last draft's q)."""
    gamma = len(drafts)
    cuts = [min(1.0, float(p[j, x] / q[j, x])) for j, x in enumerate(drafts)]
    coins = min(abs(u[j] - c * s) for j, c in enumerate(cuts) for s in (lam, 1.0))
    rows, kept = p[:gamma], lam * torch.minimum(p[:gamma], q)
    dists = torch.cat([rows - kept, (rows - q).clamp_min(0), rows, (rows - lam * q).clamp_min(0),
                       rows * (1 - lam * (rows / q).clamp(max=1.0)), p[gamma:], q[gamma - 1:]])
    sums = dists.sum(-1, keepdim=True)
    cdfs = torch.cat([torch.cumsum(dists / sums, -1)[sums[:, 0] > 0], torch.cumsum(rows - kept, -1)])
    return min(coins, float((cdfs - u[gamma]).abs().min()))


def _draw(rng: random.Random, lam: float, full: bool, band: bool = False
          ) -> tuple[dict, tuple[torch.Tensor, torch.Tensor]]:
    """A round with random tables that keeps every draft (`full`) or rejects a random one, `stop`; `band` puts
    u[stop] where Chapter 17's coin would keep the draft. The case ({} when the tables cannot end there) and its
    p and q."""
    gamma, V = rng.randint(1, 5), rng.randint(3, 9)
    stop = gamma if full else rng.randrange(gamma)
    t_logits, d_logits = randn([gamma + 1, V], rng, scale=1.5), randn([gamma, V], rng, scale=1.5)
    p, q = (torch.softmax(build(z).float(), -1).double() for z in (t_logits, d_logits))
    drafts = [int(torch.multinomial(q[j], 1, generator=torch.Generator().manual_seed(rng.getrandbits(32))))
              for j in range(gamma)]
    cuts = [lam * min(1.0, float(p[j, x] / q[j, x])) for j, x in enumerate(drafts)]
    top = min(1.0, cuts[stop] / lam) if stop < gamma and band else 1.0
    if stop < gamma and top - cuts[stop] < 0.03:
        return {}, (p, q)  # this draft is (almost) always kept: draw other tables
    u = [rng.uniform(0, c) for c in cuts[:stop]]
    u += [rng.uniform(cuts[stop], top) for _ in range(stop, min(stop + 1, gamma))]
    u += [rng.random() for _ in range(len(u), gamma + 1)]
    u = [round(x, 12) for x in u]
    if round_margins(p, q, drafts, u, lam) <= MARGIN:
        return {}, (p, q)
    return dict(target_logits=t_logits, draft_logits=d_logits, drafts={"$long": drafts}, u=u, lam=lam), (p, q)


def _tables(case: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """p and q of a case, as the oracle computes them (float32 softmax), in float64."""
    return tuple(torch.softmax(build(case[k]).float(), -1).double()  # type: ignore[return-value]
                 for k in ("target_logits", "draft_logits"))


def separates(case: dict, wrong: str, tables: tuple[torch.Tensor, torch.Tensor] | None = None) -> bool:
    """Whether neighbour `wrong` emits other tokens than the round on `case` (the bonus edge: both wrong rows);
    `tables`: the case's p and q (`_tables`), where already computed."""
    p, q = tables if tables is not None else _tables(case)
    args = (p, q, case["drafts"]["$long"], case["u"], case["lam"])
    right = replay(*args)
    if wrong == "bonus row":
        u, gamma = case["u"][-1], len(args[2])
        from_q, from_row = inverse_cdf(q[gamma - 1], u), replay(*args, wrong=wrong)[-1]
        return len(right) == gamma + 1 and right[-1] != from_q and right[-1] != from_row
    return replay(*args, wrong=wrong) != right


def sampled_round_cases(rng: random.Random) -> list[dict]:
    """Rounds of 1 to 5 drafts over 3 to 9 tokens (tables of logits 1.5·N(0, 1)), λ from 0.20 to 0.95 or 1: one
    per edge (`ROUND_EDGES`), each drawn until its neighbour emits other tokens, then `RANDOM_CASES` random rounds
    (λ = 1 a third of the time, every draft kept a third of the time); every uniform `MARGIN` from every
    threshold."""
    cases = []
    for wrong, kind in zip(NEIGHBOURS, _EDGE_LAM, strict=True):
        for _ in range(DRAWS):
            case, tables = _draw(rng, _lam(rng, kind), full=wrong == "bonus row", band=wrong == "no lambda")
            if case and separates(case, wrong, tables):
                break
        else:
            raise RuntimeError(f"no round in {DRAWS:,} draws separates the cautious round from {wrong!r}")
        cases.append(case)
    for _ in range(DRAWS):
        if len(cases) == len(ROUND_EDGES) + RANDOM_CASES:
            return cases
        case, _ = _draw(rng, _lam(rng, "any"), full=rng.random() < 1 / 3)
        cases += [case] if case else []
    raise RuntimeError(f"fewer than {RANDOM_CASES} random rounds in {DRAWS:,} draws")
