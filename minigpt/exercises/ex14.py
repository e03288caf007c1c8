"""Exercise 14 (Chapter 17, speculative decoding): greedy verification of a ragged batch, each sequence keeping its
own accepted prefix and cache length (`minigpt.exercises.ex14_ragged`), the replacement distribution derived for
any acceptance rule, one speculative sampling round of a cautious verifier (λ times Chapter 17's acceptance,
`minigpt.exercises.ex14_cautious`) written from that derivation (and its output law checked), the best γ replayed
from a server's logged rounds (`minigpt.exercises.ex14_rounds`).

The oracles are the package: the rejection rule of `minigpt.runtime.speculative` (`accept_drafts` on each
sequence alone, with one-hot distributions, for greedy verification, and the cache length `speculative_generate`
leaves after that round; for the sampled round with the given uniforms answering its draws, its
acceptance probability scaled by λ and its residual replaced by `replacement_for` of that rule),
`replacement_for` (the replacement any acceptance rule needs, which for Chapter 17's rule is the runtime's
`residual_distribution`), and the replay of `ex14_rounds`. `round_law_error`
checks a student's round against the target's law exactly (every draft path, every interval of the uniforms).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable
from typing import Any
from unittest import mock

import torch

from minigpt.exercises.comparisons import returned
from minigpt.exercises.ex14_cases import OVER, REPLACEMENT_EDGES, inverse_cdf, replacement_cases
from minigpt.exercises.ex14_cautious import ROUND_EDGES, sampled_round_cases
from minigpt.exercises.ex14_ragged import RAGGED_EDGES, alone, ragged_cases
from minigpt.exercises.ex14_rounds import BEST_EDGES, best_from_rounds, rounds_cases
from minigpt.exercises.spec import (
    N_,
    Exercise,
    Question,
    _,
    exact_int,
    fmt_num,
    int_list,
    tensor,
)
from minigpt.runtime import speculative
from minigpt.runtime.speculative import accept_drafts


def _greedy_round(drafts: list[list[int]], target_argmax: list[list[int]], lengths: list[int]) -> list[list[Any]]:
    """One greedy round of a ragged batch: each sequence verified alone by the package (`ex14_ragged.alone`)."""
    return alone(drafts, target_argmax, lengths)


def replacement_for(p: torch.Tensor, q: torch.Tensor, accept: torch.Tensor) -> torch.Tensor | None:
    """The distribution r a rejection must draw from so that one verified draft emits exactly p (Eq. 17.3's
    derivation, for any rule): token y comes out proposed and kept, q(y)·accept(y), or after a rejection,
    (1 − Σ_x q(x)·accept(x))·r(y); setting the sum to p(y) gives r = (p − q·accept) / (1 − Σ q·accept), a
    distribution only if no token is kept more often than p emits it (None otherwise, up to `OVER`). For
    Chapter 17's rule, accept = min(1, p/q), it is the package's `residual_distribution`."""
    kept = q.double() * accept.double()
    if bool((kept - p.double() > OVER).any()):
        return None
    return (p.double() - kept) / (1.0 - kept.sum())


_VECTOR = tensor(atol=1e-6, rtol=1e-5)


def _replacement(expected: Any, actual: Any) -> str | None:
    """A distribution where one exists, None where none can exist, said in words."""
    if expected is None:
        if actual is None:
            return None
        return _("expected None, got {actual}: this rule keeps some token x more often than p emits it "
                 "(q[x]·accept[x] > p[x]), and no replacement can take emissions back").format(
            actual=returned(actual))
    if actual is None:
        return _("expected a distribution of shape {shape}, got None: every token here has q[x]·accept[x] ≤ p[x], "
                 "so a replacement exists").format(shape=expected["shape"])
    return _VECTOR(expected, actual)


_PATCH_LOCK = threading.Lock()


def _sampled_round(target_logits: torch.Tensor, draft_logits: torch.Tensor, drafts: torch.Tensor,
                   u: list[float], lam: float) -> list[int]:
    """One round through the package's `accept_drafts` (B = 1), its draws answered by the uniforms: the coin of
    draft j is u[j] < λ times the package's `acceptance_probability`, a rejection draws from `replacement_for`
    that rule (at λ = 1 the package's `residual_distribution`, up to rounding), the final token the inverse-CDF
    draw with u[γ]."""
    gamma = len(drafts)
    p = torch.softmax(target_logits.float(), dim=-1)[None]  # [1, γ+1, V]
    q = list(torch.softmax(draft_logits.float(), dim=-1)[:, None].unbind(0))  # γ × [1, V]

    def coin(probs: torch.Tensor, generator: Any = None) -> torch.Tensor:
        return torch.tensor([u[:gamma]]) < probs

    def draw(probs: torch.Tensor, generator: Any = None) -> torch.Tensor:
        return torch.tensor([inverse_cdf(probs[0], u[gamma])])

    # The patches replace module attributes for the whole process: the lock keeps two threads (a class
    # graded with --jobs 2 prepares its submissions' expected values in parallel) from using each other's u.
    with _PATCH_LOCK:
        chapter = speculative.acceptance_probability  # read under the lock: never another call's patch

        def accept(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
            return lam * chapter(p_x, q_x)

        def residual(p_n: torch.Tensor, q_n: torch.Tensor) -> torch.Tensor:  # [1, V] each, the rule in float64
            rows = [replacement_for(a, b, lam * chapter(a.double(), b.double())) for a, b in zip(p_n, q_n, strict=True)]
            return torch.stack(rows)  # type: ignore[arg-type]  # the rule never over-emits: never None

        with mock.patch.object(speculative, "_coin", coin), mock.patch.object(speculative, "_draw", draw), \
                mock.patch.object(speculative, "acceptance_probability", accept), \
                mock.patch.object(speculative, "residual_distribution", residual):
            n, nxt = accept_drafts(p, q, [drafts[j].view(1, 1) for j in range(gamma)], greedy=False)
    return [int(x) for x in drafts[:n]] + [int(nxt)]


def _tokens(expected: Any, actual: Any) -> str | None:
    """The round's tokens, with what is wrong said in words."""
    if not isinstance(actual, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in actual):
        return _("expected a list of token ids (ints), got {actual}").format(actual=repr(actual))
    if actual == expected:
        return None
    kept = len(expected) - 1
    if len(actual) == len(expected) - 1 and actual == expected[: len(actual)]:
        return _("expected {expected}, got {actual}: the final token is missing (a round always ends with one "
                 "token drawn from the target's side, after the kept drafts)").format(expected=expected, actual=actual)
    if len(actual) != len(expected):
        return _("expected {expected}, got {actual}: the rule keeps {kept} draft(s) here and you kept "
                 "{yours} (compare each u[j] with the chance the rule keeps draft j)").format(
            expected=expected, actual=actual, kept=kept, yours=max(len(actual) - 1, 0))
    if actual[:-1] != expected[:-1]:
        return _("expected {expected}, got {actual}: the kept drafts are returned as they were proposed").format(
            expected=expected, actual=actual)
    return _("expected {expected}, got {actual}: the kept drafts agree; the last token does not (it is drawn "
             "with u[γ] from the distribution the round ends on)").format(expected=expected, actual=actual)


def round_law_error(speculative_round: Callable[..., list[int]], V: int = 3, gamma: int = 2, seed: int = 0,
                    lam: float = 1.0) -> float:
    """Largest |P(sequence) − p(sequence)| over the V^(γ+1) continuations, where a round of `speculative_round`
    (the cautious rule of factor `lam`; 1: Chapter 17's) is continued by the target's rows; exact: every draft
    path (weighted by q) and, for the uniforms, one value in every interval between the thresholds the rule
    compares them with (λ·min(1, p/q) for u[j]; for u[γ] the cut points of the rule's replacement at each
    position and of p's last row), weighted by the interval's length. A correct round gives 0 up to rounding."""
    g = torch.Generator().manual_seed(seed)
    t_logits, d_logits = torch.randn(gamma + 1, V, generator=g), torch.randn(gamma, V, generator=g)
    p, q = torch.softmax(t_logits, -1).double(), torch.softmax(d_logits, -1).double()
    rule = [lam * torch.minimum(p[j] / q[j], torch.ones(V, dtype=torch.float64)) for j in range(gamma)]
    dists = [*(replacement_for(p[j], q[j], rule[j]) for j in range(gamma)), p[gamma]]
    finals = sorted({0.0, 1.0} | {float(x) for dist in dists if dist is not None and dist.sum() > 0
                                  for x in torch.cumsum(dist / dist.sum(), -1)[:-1] if 0 < x < 1})
    per_final = [((a + b) / 2, b - a) for a, b in zip(finals, finals[1:], strict=False) if b > a]
    law: dict[tuple, float] = {}
    for drafts in itertools.product(range(V), repeat=gamma):
        w_drafts = math.prod(float(q[j, x]) for j, x in enumerate(drafts))
        cuts = [float(rule[j][x]) for j, x in enumerate(drafts)]
        per_coin = [[(c / 2, c), ((1 + c) / 2, 1 - c)] for c in cuts]
        for coins in itertools.product(*per_coin):
            for u_last, w_last in per_final:
                w = w_drafts * math.prod(wc for _, wc in coins) * w_last
                if w == 0:
                    continue
                u = [*(uc for uc, _ in coins), u_last]
                out = list(speculative_round(t_logits, d_logits, torch.tensor(drafts), u, lam))
                for rest in itertools.product(range(V), repeat=gamma + 1 - len(out)):
                    seq = tuple(out) + rest
                    law[seq] = law.get(seq, 0.0) + w * math.prod(float(p[len(out) + i, x]) for i, x in
                                                                 enumerate(rest))
    want = {s: math.prod(float(p[i, x]) for i, x in enumerate(s)) for s in itertools.product(range(V),
                                                                                           repeat=gamma + 1)}
    return max(abs(law.get(s, 0.0) - w) for s, w in want.items())


def _best(accepted: list[int], gamma_max: int, cost_ratio: float, verify_ratio: float) -> int:
    return best_from_rounds(accepted, gamma_max, cost_ratio, verify_ratio)


EXERCISE = Exercise(
    id="ex14",
    notebook="ex14_speculative_decoding.ipynb",
    title="Speculative decoding",
    questions=(
        Question(
            "q1", "greedy_round", "greedy_round(drafts, target_argmax, lengths) -> list[list]", ragged_cases,
            _greedy_round, int_list,
            N_("verify each sequence on its own, never against the batch: it keeps its leading drafts, up to the "
               "first one that differs from the target's argmax at that position (later matches do not count), "
               "then emits one token of the target's own at the position where it stopped, after a rejected draft "
               "and after the last draft alike. Its cache held every committed token but the last; the verify "
               "pass wrote one row for each token it was fed; the rewind keeps the rows of every token the "
               "sequence has committed except the one it emitted last, which the next round feeds."),
            edges=RAGGED_EDGES,
        ),
        Question(
            "q2", "replacement_distribution", "replacement_distribution(p, q, accept) -> tensor | None",
            replacement_cases, replacement_for, _replacement,
            N_("token y comes out in two ways: proposed by the draft and kept, with probability q[y]·accept[y], or "
               "drawn from the replacement after a rejection, which happens with probability 1 − Σ_x "
               "q[x]·accept[x]. Ask that the two together give p[y] for every y and solve for the replacement; "
               "it is a distribution only if no token is already kept more often than p emits it (return None "
               "then, allowing for rounding, e.g. 1e-9)."),
            edges=REPLACEMENT_EDGES,
        ),
        Question(
            "q3", "speculative_round",
            "speculative_round(target_logits, draft_logits, drafts, u, lam) -> list[int]",
            sampled_round_cases, _sampled_round, _tokens,
            N_("row j of target_logits gives the target's distribution at draft j's position (row γ: after the last "
               "draft), row j of draft_logits the distribution draft j was drawn from. Walk the drafts in order and "
               "keep draft j while u[j] is below the chance this rule keeps it, λ times Chapter 17's; at the first "
               "draft not kept the round ends with one token drawn, with u[γ] and the inverse CDF, from the "
               "replacement Question 2 derives for this rule at that position (Chapter 17's residual is that "
               "replacement only when λ is 1); if every draft is kept, draw one more token from the target's "
               "distribution after the last draft. Return the kept drafts and that token."),
            edges=ROUND_EDGES,
        ),
        Question(
            "q4", "best_gamma_from_rounds",
            "best_gamma_from_rounds(accepted, gamma_max, cost_ratio, verify_ratio) -> int", rounds_cases, _best,
            exact_int,
            N_("replay every logged round with γ drafts: it keeps min(accepted, γ) of them and the target's pass adds "
               "one token (the correction after a rejection, the bonus token after γ kept drafts), for γ·c + v "
               "target steps; return the γ from 1 to gamma_max with the most tokens per step over all the rounds, "
               "the smallest on an exact tie. A rate α fitted to the rounds assumes independent acceptances, which a "
               "real drafter's are not."),
            edges=BEST_EDGES,
        ),
    ),
)


def round_law_report(speculative_round: Callable[..., list[int]], V: int = 3, gamma: int = 2, seed: int = 0,
                     lam: float = 1.0) -> float:
    """Print (and return) how far the output law of `speculative_round`, for the rule of factor `lam`, is from the
    target's, in words."""
    try:
        err = round_law_error(speculative_round, V=V, gamma=gamma, seed=seed, lam=lam)
    except NotImplementedError:
        print(_("{label}: not implemented yet").format(label="speculative_round"))
        return math.nan
    sequences = V ** (gamma + 1)
    if err < 1e-6:
        print(_("λ = {lam}: the law of your rounds, continued by the target, equals the target's over all "
                "{sequences} sequences of {tokens} tokens (largest difference {err}): emitted tokens are "
                "distributed as p").format(lam=fmt_num(lam, "g"), sequences=sequences, tokens=gamma + 1,
                                           err=fmt_num(err, ".1e")))
    else:
        print(_("λ = {lam}: the law of your rounds differs from the target's by up to {err} in the probability of "
                "one of the {sequences} sequences of {tokens} tokens: some token is emitted more or less often "
                "than the target would emit it (check which distribution each of your draws uses)").format(
            lam=fmt_num(lam, "g"), err=fmt_num(err, ".4f"), sequences=sequences, tokens=gamma + 1))
    return err
