"""Exercise 14, question 3: the exact law check (`round_law_error`) that the notebook runs on a student's round
accepts the reference solution and rejects plausible wrong rounds; a failed check says in words what is wrong."""

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


def bonus_from_the_draft(target_logits, draft_logits, drafts, u):
    out = SOLUTION(target_logits, draft_logits, drafts, u)
    if len(out) == len(drafts) + 1:
        out[-1] = _draw(torch.softmax(draft_logits, -1)[-1], u[-1])
    return out


def replacement_from_p(target_logits, draft_logits, drafts, u):
    p, q = torch.softmax(target_logits, -1), torch.softmax(draft_logits, -1)
    kept = []
    for j, x in enumerate(drafts.tolist()):
        if u[j] < min(1.0, float(p[j, x] / q[j, x])):
            kept.append(x)
            continue
        return kept + [_draw(p[j], u[-1])]
    return kept + [_draw(p[-1], u[-1])]



def accept_with_q_over_p(target_logits, draft_logits, drafts, u):
    p, q = torch.softmax(target_logits, -1), torch.softmax(draft_logits, -1)
    kept = []
    for j, x in enumerate(drafts.tolist()):
        if u[j] < min(1.0, float(q[j, x] / p[j, x])):
            kept.append(x)
            continue
        return kept + [_draw((p[j] - q[j]).clamp_min(0), u[-1])]
    return kept + [_draw(p[-1], u[-1])]


def test_the_reference_round_has_the_targets_law():
    assert ex14.round_law_error(SOLUTION) < 1e-6
    assert ex14.round_law_error(SOLUTION, V=4, gamma=1, seed=3) < 1e-6


@pytest.mark.parametrize("wrong", [bonus_from_the_draft, replacement_from_p, accept_with_q_over_p])
def test_wrong_rounds_fail_the_law_check(wrong):
    assert ex14.round_law_error(wrong) > 1e-3


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
