"""The exercises by id ("ex01" ... "ex18") and question lookup ("ex01.q1")."""

from __future__ import annotations

from minigpt.exercises import (
    ex01,
    ex02,
    ex03,
    ex04,
    ex05,
    ex06,
    ex07,
    ex08,
    ex09,
    ex10,
    ex11,
    ex12,
    ex13,
    ex14,
    ex15,
    ex16,
    ex17,
    ex18,
)
from minigpt.exercises.spec import Exercise, Question

_MODULES = (ex01, ex02, ex03, ex04, ex05, ex06, ex07, ex08, ex09, ex10, ex11, ex12, ex13, ex14, ex15, ex16, ex17, ex18)
EXERCISES: dict[str, Exercise] = {m.EXERCISE.id: m.EXERCISE for m in _MODULES}


def exercise(eid: str) -> Exercise:
    """The exercise `eid` ("ex01"), or a KeyError listing the ids."""
    if eid not in EXERCISES:
        raise KeyError(f"unknown exercise {eid!r}; the exercises are {sorted(EXERCISES)}")
    return EXERCISES[eid]


def question(qid: str) -> tuple[Exercise, Question]:
    """The exercise and question of `qid` ("ex01.q1")."""
    eid, _, q = qid.partition(".")
    ex = exercise(eid)
    return ex, ex.question(q)
