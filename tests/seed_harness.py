"""The harness of the seed-independence tests (`tests/test_seed_independence*.py`): a named wrong answer to a
question is graded as the grader grades it (`prepare`: the cases of one submission's seed; `_compare`: the
verdict) under `SEEDS`, and must lose the question under every one, on all of its cases and on its edge cases
alone (`edge_slots`: an edge drawn by luck among the random cases is not drawn), while the right answer (the
oracle) keeps it under every one.

A file of wrong answers defines `WRONG: dict[str, list[tuple[str, Make]]]`: per question id (`"ex06.q2"`), each
wrong answer as (the name of the edge that catches it, as `Question.edges` names it; a function that takes the
oracle and returns the wrong answer, a function with the student's signature). `tests/test_seed_independence.py`
checks that every question of every exercise has at least one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mutation_pass import per_mutant
from profiles import examples

from minigpt.exercises import EXERCISES
from minigpt.exercises.spec import resolve
from minigpt.exercises.wire import build_case, encode
from minigpt.exercises.work import measured
from minigpt.grading.cases import prepare
from minigpt.grading.verdicts import _compare

#: 4 seeds under `make test`, 40 under `make test-thorough` (each question's edges are drawn under every seed, so
#: the seeds add random cases, not the edges; the wrong answers were written against all 40).
SEEDS = range(examples(4))
Make = Callable[[Callable[..., Any]], Callable[..., Any]]


#: `prepare`, once per exercise and seed for all of its wrong answers (deterministic; ex14's and ex15's take seconds).
_prepared = per_mutant(prepare)


def outputs(fn: Callable[..., Any], cases: list[dict]) -> tuple[list[Any], list[dict[str, int]]]:
    """`fn` on each case built as the grading child builds it (presets resolved to records), in the JSON form the
    child sends back, and the work of each (`measured`, as the child
    measures a question about a method); an exception loses its case."""
    out, work = [], []
    for case in resolve(cases):  # named presets as the sandbox's read-only records, as the child gets them
        try:
            value, done = measured(fn, build_case(case))
            out.append(encode(value))
            work.append(done)
        except Exception as err:  # noqa: BLE001 - a wrong answer may raise: it loses the case
            out.append(f"raised {type(err).__name__}")
            work.append({"flops": 0, "largest": 0})
    return out, work


def assert_answers(qid: str, name: str, seed: int, out: list[Any]) -> None:
    """A named wrong answer must answer some case (`out`, from `outputs`): one that raises on every case loses by
    crashing, not by its mistake, and its test would hold for any broken code (a typo's NameError)."""
    assert not all(isinstance(o, str) and o.startswith("raised ") for o in out), \
        f"{qid}: the wrong answer ({name}) raised on every case under seed {seed}: {out[0]}"


#: Where a question's edge cases are, where they are not its first `len(q.edges)` cases (as each case
#: generator's docstring says): ex07 Q3's edges take five cases; ex13 Q1's overflow edge is its last two
#: cases and its other edge every case (so its check is the whole question's: the two overflow cases alone do
#: not always tell an `l` left out); ex13 Q2's and Q3's second edges are later cases; ex16 Q1's five edges lie
#: in its first three cases.
EDGE_SLOTS: dict[str, tuple[int, ...]] = {
    "ex07.q3": (0, 1, 2, 3, 4),
    "ex13.q1": (0, 1, 2, 3, 4, 5),
    "ex13.q2": (0, 4, 5, 6),
    "ex13.q3": (0, 3, 4, 5, 6),
    "ex16.q1": (0, 1, 2),
}


def edge_slots(qid: str, n_edges: int) -> tuple[int, ...]:
    """The indices of question `qid`'s edge cases among the cases of any seed."""
    return EDGE_SLOTS.get(qid, tuple(range(n_edges)))


def seeds_passed(qid: str, name: str, make: Make, right: Callable[..., Any] | None = None) -> list[int]:
    """The seeds under which the wrong answer `make(oracle)` keeps question `qid` (should be none), on all of its
    cases or on its edge cases alone; asserts the question names the edge `name` and that the right answer
    (`right`, or the oracle's own values where the question does not check the method) keeps the question
    under every seed."""
    eid, q_id = qid.split(".")
    q = EXERCISES[eid].question(q_id)
    assert any(name in edge for edge in q.edges), f"{qid}: no edge named {name!r} in {q.edges}"
    assert q.method is None or right is not None, f"{qid} checks the method: name a right answer to measure"
    wrong = make(q.oracle)
    passed = []
    for seed in SEEDS:
        prepared = _prepared(eid, seed)
        cases, expected = prepared.cases[q.id], prepared.expected[q.id]
        good = outputs(right, cases) if right is not None else (expected, [{"flops": 0, "largest": 0}] * len(cases))
        assert _compare(q, cases, expected, *good)[0], (qid, seed)  # the right answer keeps the question
        out, work = outputs(wrong, cases)  # once: the edges alone are judged on their own rows of it
        assert_answers(qid, name, seed, out)
        slots = edge_slots(qid, len(q.edges))
        alone = [[rows[i] for i in slots] for rows in (cases, expected, out, work)]
        if _compare(q, cases, expected, out, work)[0] or _compare(q, *alone)[0]:
            passed.append(seed)
    return passed
