"""Exercise 14, question 3: the exact law check (`round_law_error`) that the notebook runs on a student's round
accepts the reference solution at several λ and rejects plausible wrong rounds; a failed check says in words
what is wrong."""

from __future__ import annotations

import random
import runpy
from pathlib import Path

import pytest
import torch

from minigpt.exercises import ex14
from minigpt.exercises.spec import build_case, encode

SOLUTION = runpy.run_path(str(Path(__file__).resolve().parent.parent / "exercises" / "solutions"
                              / "ex14_speculative_decoding.py"))["speculative_round"]


def _draw(dist: torch.Tensor, u: float) -> int:
    return min(int((torch.cumsum(dist / dist.sum(), -1) <= u).sum()), dist.shape[-1] - 1)


def bonus_from_the_draft(target_logits, draft_logits, drafts, u, lam):
    out = SOLUTION(target_logits, draft_logits, drafts, u, lam)
    if len(out) == len(drafts) + 1:
        out[-1] = _draw(torch.softmax(draft_logits, -1)[-1], u[-1])
    return out


def _round(accept, replacement):
    """A round from scratch: draft j kept when u[j] < accept(p_j(x), q_j(x), λ), a rejection drawn from
    replacement(p_j, q_j, λ)."""
    def speculative_round(target_logits, draft_logits, drafts, u, lam):
        p, q = torch.softmax(target_logits, -1), torch.softmax(draft_logits, -1)
        kept = []
        for j, x in enumerate(drafts.tolist()):
            if u[j] < accept(float(p[j, x]), float(q[j, x]), lam):
                kept.append(x)
                continue
            return kept + [_draw(replacement(p[j], q[j], lam), u[-1])]
        return kept + [_draw(p[-1], u[-1])]
    return speculative_round


def _cautious(p_x, q_x, lam):
    return lam * min(1.0, p_x / q_x)


replacement_from_p = _round(_cautious, lambda p, q, lam: p)
accept_with_q_over_p = _round(lambda p_x, q_x, lam: lam * min(1.0, q_x / p_x), lambda p, q, lam: (p - q).clamp_min(0))
chapters_residual = _round(_cautious, lambda p, q, lam: (p - q).clamp_min(0))  # right at λ = 1 only
lambda_ignored = _round(lambda p_x, q_x, lam: min(1.0, p_x / q_x), lambda p, q, lam: (p - q).clamp_min(0))
lambda_times_q = _round(_cautious, lambda p, q, lam: (p - lam * q).clamp_min(0))


@pytest.mark.parametrize("lam", [1.0, 0.8, 0.5, 0.2])
def test_the_reference_round_has_the_targets_law(lam):
    """Guards a law check that does not follow λ (it would reject the right round at λ < 1)."""
    assert ex14.round_law_error(SOLUTION, lam=lam) < 1e-6
    assert ex14.round_law_error(SOLUTION, V=4, gamma=1, seed=3, lam=lam) < 1e-6


@pytest.mark.parametrize("wrong", [bonus_from_the_draft, replacement_from_p, accept_with_q_over_p])
@pytest.mark.parametrize("lam", [1.0, 0.5])
def test_wrong_rounds_fail_the_law_check(wrong, lam):
    assert ex14.round_law_error(wrong, lam=lam) > 1e-3


@pytest.mark.parametrize("wrong", [chapters_residual, lambda_ignored, lambda_times_q])
def test_the_chapters_round_fails_the_law_check_at_lambda_below_one(wrong):
    """The chapter's residual norm(max(0, p − q)), with or without λ in the coin, and norm(max(0, p − λq)): each
    is the round of Chapter 17 at λ = 1, where the check must pass it, and wrong at λ < 1, where it must not."""
    assert ex14.round_law_error(wrong, lam=1.0) < 1e-6
    for lam in (0.8, 0.5):
        assert ex14.round_law_error(wrong, lam=lam) > 1e-3, lam


def test_the_report_says_lambda_and_the_verdict(capsys):
    """The notebook's printout names λ and says whether the law is the target's."""
    ex14.round_law_report(SOLUTION, lam=0.5)
    ex14.round_law_report(chapters_residual, lam=0.5)
    right, wrong = capsys.readouterr().out.splitlines()
    assert right.startswith("λ = 0.5: ") and "distributed as p" in right
    assert wrong.startswith("λ = 0.5: ") and "differs from the target's" in wrong


def test_a_failed_case_says_what_is_wrong_in_words():
    q = ex14.EXERCISE.question("q3")
    for case in q.cases(random.Random(5)):
        expected = q.expected(case)
        if len(expected) > 1:
            break
    assert "final token is missing" in q.compare(expected, expected[:-1])
    assert "the rule keeps" in q.compare(expected, expected[:1] * (len(expected) + 1))
    wrong = encode(bonus_from_the_draft(**build_case(case)))
    assert q.compare(expected, wrong) is None or "expected" in q.compare(expected, wrong)
    assert "def " not in q.hint and "softmax(" not in q.hint  # words, not the answer's code
