"""A grade does not depend on the class seed, exercise 14 question 1 (one greedy round of a ragged batch: each
sequence keeps its own accepted prefix n_b and its cache its own length): each plausible wrong round, written
apart from the package as a student writes it, is named by the edge (`ex14_ragged.RAGGED_EDGES`) that the case
generator draws every time, and loses the question under every seed of the harness (`tests/seed_harness.py`);
the generator's own replay of each neighbour answers what the wrong round named here answers."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from seed_harness import Make, seeds_passed

from minigpt.exercises import EXERCISES, ex14_ragged


def _leading(row: list[int], best: list[int]) -> int:
    """How many drafts match the target's argmax before the first that does not."""
    n = 0
    while n < len(row) and row[n] == best[n]:
        n += 1
    return n


def _batch_minimum(drafts: list[list[int]], target_argmax: list[list[int]], lengths: list[int]) -> list[Any]:
    """Chapter 17's printed rule: every sequence keeps the batch's shortest prefix (its token n + 1 is the target's
    argmax, which is its own accepted draft where it accepted more) and its cache rewinds to it."""
    n = min(_leading(row, best) for row, best in zip(drafts, target_argmax, strict=True))
    return [[row[:n] + [best[n]], length + n] for row, best, length in zip(drafts, target_argmax, lengths,
                                                                          strict=True)]


def _round(slip: str) -> Callable[..., list[Any]]:
    """A round from scratch, sequence by sequence, with one slip: "no bonus" (a sequence that keeps every draft
    emits the drafts alone), "draft as correction" (the rejected draft emitted in place of the target's argmax),
    "every match" (n_b counts every matching position), "one past" (the loop stops one draft after the first
    mismatch), "emitted cached" (the cache keeps lengths[b] + n_b + 1), "no rewind" (the cache keeps all that the
    verify pass wrote, lengths[b] + γ), "last row left out" (lengths[b] − 1 + n_b)."""
    def greedy_round(drafts: list[list[int]], target_argmax: list[list[int]], lengths: list[int]) -> list[Any]:
        out = []
        for row, best, length in zip(drafts, target_argmax, lengths, strict=True):
            gamma = len(row)
            if slip == "every match":
                n = sum(1 for i in range(gamma) if row[i] == best[i])
            elif slip == "one past":
                n = 0
                while n < gamma:
                    n += 1
                    if row[n - 1] != best[n - 1]:
                        break
            else:
                n = _leading(row, best)
            if n == gamma:
                tokens = list(row) if slip == "no bonus" else [*row, best[gamma]]
            else:
                tokens = [*row[:n], row[n] if slip == "draft as correction" else best[n]]
            cache = {"emitted cached": length + len(tokens), "no rewind": length + gamma,
                     "last row left out": length - 1 + n}.get(slip, length + n)
            out.append([tokens, cache])
        return out
    return greedy_round


def _fn(f: Callable[..., Any]) -> Make:
    return lambda oracle: f


#: Each wrong round, and the neighbour of `ex14_ragged.NEIGHBOURS` that the generator replays for it.
ROUNDS: list[tuple[str, str, Callable[..., Any]]] = [
    ("not the batch's minimum", "batch minimum", _batch_minimum),
    ("not the drafts alone", "no bonus", _round("no bonus")),
    ("not the rejected draft", "draft as correction", _round("draft as correction")),
    ("not every match", "every match", _round("every match")),
    ("not one draft past it", "one past", _round("one past")),
    ("not the emitted token's too", "emitted cached", _round("emitted cached")),
    ("not keeping all γ + 1 rows", "no rewind", _round("no rewind")),
    ("not lengths[b] − 1 + n_b", "last row left out", _round("last row left out")),
]

WRONG: dict[str, list[tuple[str, Make]]] = {"ex14.q1": [(name, _fn(f)) for name, _, f in ROUNDS]}


@pytest.mark.parametrize("index", range(len(ROUNDS)))
def test_a_named_wrong_round_loses_under_every_seed(index: int) -> None:
    """Guards an edge that is drawn only under some seeds (a class whose grade depends on its seed)."""
    name, make = WRONG["ex14.q1"][index]
    assert not seeds_passed("ex14.q1", name, make), f"ex14.q1: the wrong answer ({name}) kept the question"


def test_the_generators_neighbours_are_the_named_wrong_rounds() -> None:
    """ex14 Q1's generator draws each edge until its own replay of a neighbour (`ex14_ragged.replay(wrong=...)`)
    answers otherwise; each must answer what the wrong round named above answers, written apart from it, or the
    edge would separate another slip."""
    for seed in range(20):
        for case in EXERCISES["ex14"].question("q1").cases(random.Random(seed)):
            for _, neighbour, wrong in ROUNDS:
                assert ex14_ragged.replay(**case, wrong=neighbour) == wrong(**case), (seed, neighbour, case)
