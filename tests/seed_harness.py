"""The harness of the seed-independence tests (`tests/test_seed_independence*.py`): a named wrong answer to a
question is graded as the grader grades it (`prepare`: the cases of one submission's seed; `_compare`: the
verdict) under `SEEDS`, and must lose the question under every one, while the right answer (the oracle) keeps
it under every one.

A file of wrong answers defines `WRONG: dict[str, list[tuple[str, Make]]]`: per question id (`"ex06.q2"`), each
wrong answer as (the name of the edge that catches it, as `Question.edges` names it; a function that takes the
oracle and returns the wrong answer, a function with the student's signature). `tests/test_seed_independence.py`
checks that every question of every exercise has at least one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minigpt.exercises import EXERCISES
from minigpt.exercises.wire import build_case, encode
from minigpt.grading.cases import prepare
from minigpt.grading.verdicts import _compare

SEEDS = range(40)
Make = Callable[[Callable[..., Any]], Callable[..., Any]]


def outputs(fn: Callable[..., Any], cases: list[dict]) -> list[Any]:
    """`fn` on each case, in the JSON form the child sends back; an exception loses its case."""
    out = []
    for case in cases:
        try:
            out.append(encode(fn(**build_case(case))))
        except Exception as err:  # noqa: BLE001 - a wrong answer may raise: it loses the case
            out.append(f"raised {type(err).__name__}")
    return out


def seeds_passed(qid: str, name: str, make: Make) -> list[int]:
    """The seeds under which the wrong answer `make(oracle)` keeps question `qid` (should be none); asserts the
    question names the edge `name` and that the right answer keeps the question under every seed."""
    eid, q_id = qid.split(".")
    q = EXERCISES[eid].question(q_id)
    assert any(name in edge for edge in q.edges), f"{qid}: no edge named {name!r} in {q.edges}"
    wrong = make(q.oracle)
    passed = []
    for seed in SEEDS:
        prepared = prepare(eid, seed)
        cases, expected = prepared.cases[q.id], prepared.expected[q.id]
        assert _compare(q, cases, expected, expected)[0], (qid, seed)  # the right answer keeps the question
        if _compare(q, cases, expected, outputs(wrong, cases))[0]:
            passed.append(seed)
    return passed
