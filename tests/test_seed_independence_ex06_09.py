"""A grade does not depend on the class seed, exercises 6 to 9: each question's plausible wrong answers, each named
by the edge (`Question.edges`) that catches it, lose the question under every one of the harness's seeds
(`tests/seed_harness.py`). ex06 Q2 is in `tests/test_seed_independence.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from seed_harness import Make, seeds_passed

from minigpt import costs
from minigpt.costs import roofline
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.costs.shape import evaluate
from minigpt.measure import sweeps

# ---------------------------------------------------------------------------------------------
# ex06


def _write_first_row(k_cache: torch.Tensor, v_cache: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
                     S: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ex06 Q1 written for decode only: the first new row alone goes into the cache (T = 1 assumed)."""
    T = k_new.shape[2]
    k_cache[:, :, S], v_cache[:, :, S] = k_new[:, :, 0], v_new[:, :, 0]
    return k_cache[:, :, :S + T], v_cache[:, :, :S + T]


def _write_at_zero(k_cache: torch.Tensor, v_cache: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
                   S: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ex06 Q1 with the offset S forgotten: the new rows written at rows 0..T−1."""
    T = k_new.shape[2]
    k_cache[:, :, :T], v_cache[:, :, :T] = k_new, v_new
    return k_cache[:, :, :S + T], v_cache[:, :, :S + T]


def _write_whole(k_cache: torch.Tensor, v_cache: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
                 S: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ex06 Q1 returning the whole preallocated cache [:, :, :S_max] instead of its valid prefix [:, :, :S+T]."""
    T = k_new.shape[2]
    k_cache[:, :, S:S + T], v_cache[:, :, S:S + T] = k_new, v_new
    return k_cache, v_cache


@torch.no_grad()
def _decode_row_token(model: torch.nn.Module, prompt: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
    """ex06 Q3 with the token reshaped as one sequence, token.view(1, -1): right when B = 1 only."""
    cache = model.new_cache(prompt.shape[0])
    model(prompt, cache)
    return model(token.view(1, -1), cache, last_only=True)[:, -1]


def _decode_once_first(oracle: Callable[..., Any]) -> Callable[..., Any]:
    """ex06 Q4 with a loop that decodes once before checking D: max(D, 2) tokens (wrong when D = 1 only)."""
    return lambda model, prompt, D: oracle(model, prompt, max(D, 2))


def _end_points(S_values: list[int], step_s: list[float]) -> float:
    """ex06 Q5 as the slope through the first and last points (differs from the fit whenever they are off the
    line, which the noise makes every case)."""
    return (step_s[-1] - step_s[0]) / (S_values[-1] - S_values[0])


def _intercept(S_values: list[int], step_s: list[float]) -> float:
    """ex06 Q5 reading polyfit's coefficients in ascending order: [1] is the intercept, not the slope (differs on
    every input: every case has a base time)."""
    return float(np.polyfit(np.array(S_values, dtype=np.float64), np.array(step_s, dtype=np.float64), 1)[1])


WRONG: dict[str, list[tuple[str, Make]]] = {
    "ex06.q1": [("only the first new row written", lambda oracle: _write_first_row),
                ("written at row 0", lambda oracle: _write_at_zero),
                ("the whole preallocated cache returned", lambda oracle: _write_whole)],
    "ex06.q3": [("view(1, -1)", lambda oracle: _decode_row_token)],
    "ex06.q4": [("D = 1", _decode_once_first)],
    "ex06.q5": [("the slope through the two end points", lambda oracle: _end_points),
                ("the intercept", lambda oracle: _intercept)],
}


@pytest.mark.parametrize(("qid", "index"), [(q, i) for q, v in sorted(WRONG.items()) for i in range(len(v))])
def test_a_named_wrong_answer_loses_under_every_seed(qid: str, index: int) -> None:
    name, make = WRONG[qid][index]
    assert not seeds_passed(qid, name, make), f"{qid}: the wrong answer ({name}) kept the question"
