"""Exercise 14 Question 3 (`minigpt.exercises.ex14_cautious`): one round of a cautious verifier, which keeps draft j
with probability λ·min(1, p_j(x_j)/q_j(x_j)). The oracle is the package's `accept_drafts` with its draws answered by
the uniforms, its acceptance scaled by λ and its residual replaced by `replacement_for` that rule: at λ = 1 it is
the oracle of Chapter 17's round, at λ < 1 a round written from scratch with `replacement_for`; the reference
solution passes (its mutants fail in tests/test_exercise_mechanisms.py); the generator draws what it documents; a
round worked by hand."""

from __future__ import annotations

import random
import runpy
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import torch

from minigpt.exercises import EXERCISES, ex14, ex14_cautious, run_check
from minigpt.exercises.ex14_cases import inverse_cdf
from minigpt.exercises.spec import build_case
from minigpt.runtime import speculative

SOLUTIONS = Path(__file__).resolve().parent.parent / "exercises" / "solutions" / "ex14_speculative_decoding.py"
SOLUTION = runpy.run_path(str(SOLUTIONS))["speculative_round"]
SEEDS = range(40)


def _cases(seeds: range = SEEDS) -> list[dict]:
    return [c for seed in seeds for c in EXERCISES["ex14"].question("q3").cases(random.Random(seed))]


def _chapter_oracle(target_logits: torch.Tensor, draft_logits: torch.Tensor, drafts: torch.Tensor,
                    u: list[float]) -> list[int]:
    """The oracle of Chapter 17's round before the cautious rule: only the package's draws answered by u."""
    gamma = len(drafts)
    p = torch.softmax(target_logits.float(), dim=-1)[None]
    q = list(torch.softmax(draft_logits.float(), dim=-1)[:, None].unbind(0))

    def coin(probs: torch.Tensor, generator: Any = None) -> torch.Tensor:
        return torch.tensor([u[:gamma]]) < probs

    def draw(probs: torch.Tensor, generator: Any = None) -> torch.Tensor:
        return torch.tensor([inverse_cdf(probs[0], u[gamma])])

    with mock.patch.object(speculative, "_coin", coin), mock.patch.object(speculative, "_draw", draw):
        n, nxt = speculative.accept_drafts(p, q, [drafts[j].view(1, 1) for j in range(gamma)], greedy=False)
    return [int(x) for x in drafts[:n]] + [int(nxt)]


def test_at_lambda_one_the_oracle_is_chapter_17s() -> None:
    """Guards a cautious oracle that is not Chapter 17's at λ = 1 (λ applied twice, the replacement's rule
    without λ, a patch that leaks): on every case's tables, with λ set to 1 and with fresh uniforms."""
    rng = random.Random(0)
    for case in _cases(range(12)):
        args = build_case(case)
        for u in (args["u"], [rng.random() for _ in args["u"]]):
            args.update(u=u, lam=1.0)
            chapter = {k: v for k, v in args.items() if k != "lam"}
            assert ex14._sampled_round(**args) == _chapter_oracle(**chapter), case


def _scratch(target_logits: torch.Tensor, draft_logits: torch.Tensor, drafts: torch.Tensor, u: list[float],
             lam: float) -> list[int]:
    """The cautious round written from scratch in float64, its rejections drawn from `ex14.replacement_for`."""
    p, q = torch.softmax(target_logits.float(), -1).double(), torch.softmax(draft_logits.float(), -1).double()
    gamma, out = len(drafts), []
    for j, x in enumerate(drafts.tolist()):
        accept = lam * torch.clamp(p[j] / q[j], max=1.0)
        if u[j] < float(accept[x]):
            out.append(x)
            continue
        return [*out, inverse_cdf(ex14.replacement_for(p[j], q[j], accept), u[gamma])]
    return [*out, inverse_cdf(p[gamma], u[gamma])]


def test_below_one_the_oracle_draws_from_question_2s_replacement() -> None:
    """Guards an oracle that keeps the chapter's residual (or p) after a cautious rejection, or leaves λ out of
    its coin: it must emit what a round written from `replacement_for` emits, on every case of 40 seeds."""
    lams = []
    for case in _cases():
        args = build_case(case)
        assert ex14._sampled_round(**args) == _scratch(**args), case
        lams.append(case["lam"])
    assert min(lams) < 0.5 and 1.0 in lams


def test_the_reference_solution_passes_the_check() -> None:
    """Guards a question whose own reference solution fails (a generator that draws a case off the rule)."""
    for seed in range(6):
        result = run_check("ex14.q3", SOLUTION, seed=seed)
        assert result.status == "pass", result.message


def test_the_generator_draws_what_it_documents() -> None:
    """Guards a generator that never reaches an end of its documented ranges (γ from 1 to 5, V from 3 to 9,
    λ from 0.20 to 0.95 or 1) or puts a case off its edge: ten cases a seed, the seven edges first (the bonus
    edge keeping every draft, the others rejecting one), uniforms in [0, 1) and `MARGIN` from every threshold."""
    gammas, vs, lams, full = set(), set(), set(), []
    for seed in SEEDS:
        cases = _cases(range(seed, seed + 1))
        assert len(cases) == len(ex14_cautious.ROUND_EDGES) + ex14_cautious.RANDOM_CASES == 10, seed
        for i, case in enumerate(cases):
            p, q = ex14_cautious._tables(case)
            drafts, u, lam = case["drafts"]["$long"], case["u"], case["lam"]
            gamma, V = len(drafts), p.shape[1]
            gammas.add(gamma)
            vs.add(V)
            lams.add(lam)
            assert p.shape == (gamma + 1, V) and q.shape == (gamma, V) and len(u) == gamma + 1, (seed, i)
            assert all(0 <= x < 1 for x in u) and (lam == 1.0 or 0.2 <= lam <= 0.95), (seed, i)
            assert ex14_cautious.round_margins(p, q, drafts, u, lam) > ex14_cautious.MARGIN, (seed, i)
            kept = len(ex14_cautious.replay(p, q, drafts, u, lam)) - 1
            if i < len(ex14_cautious.ROUND_EDGES):
                assert (kept == gamma) == (i == 6), (seed, i)
                assert (lam < 1) if i in (0, 1, 3, 4) else (lam == 1) if i == 5 else True, (seed, i, lam)
            else:
                full.append(kept == gamma)
    assert gammas == set(range(1, 6)) and vs == set(range(3, 10)), (gammas, vs)
    assert {0.2, 0.95, 1.0} <= lams and all(round(lam, 2) == lam for lam in lams), lams
    assert True in full and False in full


def test_a_round_worked_by_hand() -> None:
    """Guards a round that keeps the chapter's residual, ignores λ or draws the replacement from p.
    p_0 = (0.5, 0.3, 0.2), q_0 = (0.2, 0.5, 0.3), the draft x_0 = 2, λ = 0.5: the rule keeps it with probability
    0.5·min(1, 0.2/0.3) = 1/3, so u[0] = 0.5 rejects it (Chapter 17's coin, 2/3, would keep it). The rule keeps
    token y with probability q·accept = λ·min(p, q) = 0.5·(0.2, 0.3, 0.2) = (0.1, 0.15, 0.1), in all 0.35; the
    replacement is (p − (0.1, 0.15, 0.1)) / (1 − 0.35) = (0.4, 0.15, 0.1) / 0.65 ≈ (0.615, 0.231, 0.154), its
    cumulative sums (0.615, 0.846, 1), so u[1] = 0.82 draws token 1: the round emits [1]. The chapter's residual,
    norm(max(0, p − q)) = (1, 0, 0), draws token 0; p, cumulative (0.5, 0.8, 1), draws token 2; a round without λ
    keeps the draft and draws the bonus from p_1 = (0.1, 0.1, 0.8), token 2."""
    args = dict(target_logits=torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]).log(),
                draft_logits=torch.tensor([[0.2, 0.5, 0.3]]).log(), drafts=torch.tensor([2]), u=[0.5, 0.82], lam=0.5)
    assert ex14._sampled_round(**args) == SOLUTION(**args) == [1]
    p, q = (torch.softmax(args[k], -1).double() for k in ("target_logits", "draft_logits"))
    torch.testing.assert_close(ex14_cautious.replacement(p[0], q[0], 0.5),
                               torch.tensor([0.4, 0.15, 0.1], dtype=torch.float64) / 0.65)
    replays = {w: ex14_cautious.replay(p, q, [2], [0.5, 0.82], 0.5, w) for w in ("chapter residual", "from p",
                                                                                  "no lambda")}
    assert replays == {"chapter residual": [0], "from p": [2], "no lambda": [2, 2]}


def _cuts(weights: list[float]) -> list[float]:
    """The inner cut points of the inverse-CDF draw from `weights` (normalised; none when they sum to 0)."""
    total, run, out = sum(weights), 0.0, []
    for w in weights[:-1]:
        run += w
        if total > 0:
            out.append(run / total)
    return out


_D = torch.float64
_P1, _Q1 = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.3, 0.5]], dtype=_D), torch.tensor([[0.3, 0.3, 0.4]], dtype=_D)
#: (what the margin must measure, p, q, drafts, u, λ, the margin): each a uniform set 1e-7 from one threshold, far
#: from the others, or clear of every threshold though 1e-7 from a cut of a row no round draws from.
MARGIN_CASES = {
    # x_0 = 0, p/q = 2: the rule keeps the draft below λ·min(1, 2) = λ (a filter that caps p/q at 2 measures λ·2)
    "u[0] near lambda where p/q > 1": (_P1, _Q1, [0], [0.5 + 1e-7, 0.93], 0.5, 1e-7),
    # x_0 = 2, p/q = 0.25: the λ = 1 neighbour keeps it below min(1, p/q) (a filter that doubles it misses that)
    "u[0] near min(1, p/q) where p/q < 1": (_P1, _Q1, [2], [0.25 + 1e-7, 0.93], 0.5, 1e-7),
    # γ = 2: u[2] 1e-7 from the first cut of q_0, a row no round draws from (only the last draft's q, q_1, is one)
    "no cut of a draft's q but the last": (
        torch.tensor([[0.5, 0.2, 0.3], [0.45, 0.25, 0.3], [0.1, 0.1, 0.8]], dtype=_D),
        torch.tensor([[0.37, 0.33, 0.3], [0.5, 0.2, 0.3]], dtype=_D), [0, 1], [0.05, 0.05, 0.37 + 1e-7], 0.5,
        0.0049999),
    # p_0 = q_0, so max(0, p_0 − q_0) sums to 0 and draws nothing: a filter that normalises it gets NaN cut points,
    # and NaN compares false, so it would drop every cut and keep u[1], 1e-7 from p_1's first cut
    "a distribution that sums to 0 left out, not every cut": (
        torch.tensor([[0.5, 0.2, 0.3], [0.15, 0.25, 0.6]], dtype=_D), torch.tensor([[0.5, 0.2, 0.3]], dtype=_D), [1],
        [0.05, 0.15 + 1e-7], 0.5, 1e-7),
}


@pytest.mark.parametrize("what", MARGIN_CASES)
def test_the_margin_filter_measures_each_threshold_by_hand(what: str) -> None:
    """`round_margins` on rounds built by hand, each with one uniform 1e-7 from one threshold: it returns that
    distance. The bugs it catches (survivors of issue 36's mutation run, which the generated cases almost never
    reach: a uniform lands within 1e-4 of a given threshold in about 2 of 10,000 draws): a filter that measures
    λ·min(2, p/q) or 2·min(1, p/q), one that also filters on q_{γ−2} (it would refuse cases no round is near),
    and one whose NaN cut points, from a distribution that sums to 0, make it skip every cut."""
    p, q, drafts, u, lam, margin = MARGIN_CASES[what]
    assert ex14_cautious.round_margins(p, q, drafts, u, lam) == pytest.approx(margin, abs=1e-9), what


def test_every_uniform_is_clear_of_every_threshold_computed_apart() -> None:
    """The generator promises (`ex14_cautious.MARGIN`) that every uniform lies at least 1e-4 from every threshold
    the round or one of its named neighbours compares it with, so that float32 rounding in a student's round never
    flips a verdict. Computed here apart, in plain Python from the softmaxes: u[j] against λ·min(1, p/q) and
    min(1, p/q); u[γ] against the cut points of every distribution a round may draw from (the replacement for the
    rule, the chapter's residual, p's rows, max(0, p − λq), p·(1 − λ·min(1, p/q)), the last draft's q) and of the
    unnormalised p − λ·min(p, q). The bug it catches: a margin filter that measures the wrong thresholds, which
    lets a case sit on a rounding edge where a correct float32 round loses its point."""
    for seed in range(60):
        for case in _cases(range(seed, seed + 1)):
            built = build_case(case)
            p = torch.softmax(built["target_logits"].float(), -1).double().tolist()
            q = torch.softmax(built["draft_logits"].float(), -1).double().tolist()
            u, lam, drafts = built["u"], built["lam"], built["drafts"].tolist()
            gamma = len(drafts)
            for j, x in enumerate(drafts):
                c = min(1.0, p[j][x] / q[j][x])
                assert min(abs(u[j] - lam * c), abs(u[j] - c)) >= ex14_cautious.MARGIN, (seed, j)
            points = []
            for j in range(gamma):
                pj, qj = p[j], q[j]
                kept = [lam * min(a, b) for a, b in zip(pj, qj, strict=True)]
                pairs = list(zip(pj, qj, strict=True))
                for dist in ([a - k for a, k in zip(pj, kept, strict=True)], [max(0.0, a - b) for a, b in pairs], pj,
                             [max(0.0, a - lam * b) for a, b in pairs], [a * (1 - lam * min(1.0, a / b)) for a, b in
                                                                        pairs]):
                    points += _cuts(dist)
                run = 0.0
                for a, k in zip(pj[:-1], kept[:-1], strict=True):
                    run += a - k
                    points.append(run)  # the unnormalised draw's own cut points
            points += _cuts(p[gamma]) + _cuts(q[gamma - 1])
            assert min(abs(u[gamma] - c) for c in points) >= ex14_cautious.MARGIN, (seed, case)
