"""The trusted side of the grader: draw inputs, compute the expected outputs, run each submission in a sandbox.

For one exercise the grader draws random inputs for every question (from a seed, recorded in the
output) and computes the expected outputs with the package (the oracle). For each submitted
notebook it runs `minigpt.grading.child` in a bubblewrap sandbox (`minigpt.grading.sandbox`) with
only the inputs, reads its events from a pipe (`minigpt.grading.runner`), kills it when a cell or a
question stops making progress, relaunches it for the questions that remain within the submission's
hard time budget, and compares the outputs it reported with the expected ones here. Student code
never runs in this process, and nothing the parent reads or writes (the submissions, the output
folder, the staged runtime) is writable from a sandbox. A whole class is `minigpt.grading.folder`.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from minigpt.exercises.registry import exercise as get_exercise
from minigpt.exercises.spec import Exercise, Question, describe_call, resolve
from minigpt.grading import feedback
from minigpt.grading.notebook_code import CorruptNotebook, cells_to_run, read_code_cells
from minigpt.grading.results import SubmissionResult, TestResult
from minigpt.grading.review import Finding, review_cell
from minigpt.grading.runner import LOG_CAP_BYTES, SLACK_S, STARTUP_S, ChildRun, Isolation, run_child

TAMPERED_REASON = "stopped: the notebook wrote to the grader's channel (events out of order)"


@dataclass
class Prepared:
    """An exercise's questions with their inputs (sent to the child) and expected outputs (kept here)."""

    exercise: Exercise
    seed: int
    cases: dict[str, list[dict]]
    expected: dict[str, list[Any]]


def prepare(exercise_id: str, seed: int | None = None) -> Prepared:
    """Draw every question's inputs from `seed` and compute the expected outputs with the package."""
    ex = get_exercise(exercise_id)
    seed = random.SystemRandom().getrandbits(32) if seed is None else seed
    cases, expected = {}, {}
    for i, q in enumerate(ex.questions):
        cases[q.id] = q.cases(random.Random(seed * 1000 + i))
        expected[q.id] = [q.expected(c) for c in cases[q.id]]
    return Prepared(ex, seed, cases, expected)


def _no_text(value: Any) -> Any:
    """`value` with every string shortened and sanitized (no answer is a string; a returned one is echoed)."""
    if isinstance(value, str):
        return feedback.sanitize(value, 40)
    if isinstance(value, list):
        return [_no_text(v) for v in value]
    if isinstance(value, dict):
        return {feedback.sanitize(k, 40): _no_text(v) for k, v in value.items()}
    return value


def _compare(q: Question, cases: list[dict], expected: list[Any], outputs: Any) -> tuple[bool, str]:
    try:
        outputs = _no_text(outputs)
    except RecursionError:
        outputs = None
    if not isinstance(outputs, list) or len(outputs) != len(expected):
        return False, "the grader received no usable output"
    for i, (case, e, a) in enumerate(zip(cases, expected, outputs, strict=True)):
        try:
            problem = q.compare(e, a)
        except Exception as err:  # noqa: BLE001 - a malformed output must not crash the grader
            problem = f"the output could not be compared ({type(err).__name__})"
        if problem:
            return False, f"case {i + 1}/{len(cases)}: {describe_call(q.function, case)}: {problem}"
    return True, f"{len(cases)} random cases agree with the package"


def budget_for(n_cells: int, n_questions: int, timeout: float) -> float:
    """A submission's hard wall-clock budget: start-up plus every cell and question at its full time limit."""
    return STARTUP_S + (n_cells + n_questions) * (timeout + SLACK_S)


def grade_notebook(path: Path, prepared: Prepared, isolation: Isolation, *, timeout: float, log_path: Path,
                   budget: float | None = None) -> SubmissionResult:
    """Grade one notebook; never raises (any failure becomes zeros with a reason)."""
    start = time.monotonic()
    ex = prepared.exercise
    name = path.name

    def zeros(reason: str) -> SubmissionResult:
        tests = [TestResult(_test_name(q), 0.0, q.points, reason) for q in ex.questions]
        return SubmissionResult(name, tests, time.monotonic() - start, [reason])

    try:
        cells = cells_to_run(read_code_cells(path))
    except CorruptNotebook as err:
        return zeros(f"corrupted notebook: {feedback.sanitize(str(err))}")
    if budget is None:
        budget = budget_for(len(cells), len(ex.questions), timeout)
    try:
        result = _grade_cells(cells, prepared, isolation, timeout, log_path, start + budget, budget, name, start)
    except Exception as err:  # noqa: BLE001 - the grader never crashes on one submission
        return zeros(f"internal grader error ({type(err).__name__}); please report it")
    try:
        result.findings = [f for c in cells for f in review_cell(c.index, c.source)]
    except Exception as err:  # noqa: BLE001 - the review is advisory; it must not cost the grade
        result.findings = [Finding(-1, 0, "tampering", f"the review could not read the cells ({type(err).__name__})")]
    return result


def _test_name(q: Question) -> str:
    return f"{q.id}: {q.signature}"


def _exit_reason(run: ChildRun, timeout: float, budget: float) -> str:
    if run.ended == "deadline":
        return f"stopped: the submission used up its time budget ({budget:g} s)"
    if run.ended == "timeout" and run.flooded:
        return "output flood: the notebook kept printing until it was killed"
    if run.ended == "timeout":
        return f"timed out after {timeout:g} s (the process was killed)"
    return f"the process exited early (exit code {run.returncode})"


def _grade_cells(cells: list, prepared: Prepared, isolation: Isolation, timeout: float, log_path: Path,
                 deadline: float, budget: float, name: str, start: float) -> SubmissionResult:
    ex = prepared.exercise
    by_id = {q.id: q for q in ex.questions}
    verdicts: dict[str, tuple[bool, str]] = {}
    cell_errors: dict[int, str] = {}
    skip_cells: set[int] = set()
    notes: list[str] = []
    for _attempt in range(len(cells) + len(ex.questions) + 1):
        pending = [q for q in ex.questions if q.id not in verdicts]
        if not pending:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 1:
            for q in pending:
                verdicts[q.id] = (False, f"stopped: the submission used up its time budget ({budget:g} s)")
            break
        limits = replace(isolation.limits, cpu_s=math.ceil(remaining) + 1)
        job = {
            "limits": limits.as_job(),
            "cells": [{"index": c.index, "source": c.source} for c in cells if c.index not in skip_cells],
            "questions": [{"id": q.id, "function": q.function, "cases": resolve(prepared.cases[q.id])}
                          for q in pending],
        }
        run = run_child(job, isolation, log_path, timeout, deadline)
        before = set(verdicts)
        for ev in run.events:
            error = ev.get("error")
            if ev["event"] == "cell_end" and error is not None:
                cell_errors[ev["cell"]] = feedback.describe(error, timeout)
                if isinstance(error, dict) and error.get("kind") == "timeout":
                    skip_cells.add(ev["cell"])  # a relaunch does not wait for it again
            elif ev["event"] == "q_end":
                q = by_id[ev["q"]]
                if isinstance(error, dict) and error.get("kind") == "missing":
                    verdicts[q.id] = (False, f"function {q.function} not defined")
                elif error is not None:
                    verdicts[q.id] = (False, f"{q.function} {feedback.describe(error, timeout)}")
                else:
                    verdicts[q.id] = _compare(q, prepared.cases[q.id], prepared.expected[q.id], ev.get("outputs"))
        if run.flooded:
            for qid in set(verdicts) - before:  # a timeout while the output overflowed the cap: report the flood
                ok, message = verdicts[qid]
                if not ok and "timed out" in message:
                    verdicts[qid] = (False, f"output flood: the notebook kept printing ({message})")
            notes.append(f"the notebook printed more than {LOG_CAP_BYTES // 2**10} KiB; the rest was dropped")
        if run.ended == "done":
            continue
        if run.ended in ("tampered", "deadline") or not run.ready:
            reason = TAMPERED_REASON if run.ended == "tampered" else _exit_reason(run, timeout, budget)
            if not run.ready and run.ended != "tampered":
                reason = f"the notebook could not be run: {reason}"
            for q in pending:
                verdicts.setdefault(q.id, (False, reason))
            notes.append(reason)
            break
        reason = _exit_reason(run, timeout, budget)
        current = run.current
        if current is None:
            # Died between steps: mark the next pending question so the loop always progresses.
            q = next((q for q in pending if q.id not in verdicts), None)
            if q is not None:
                verdicts[q.id] = (False, f"{q.function}: {reason}")
        elif current[0] == "cell":
            skip_cells.add(current[1])
            cell_errors[current[1]] = reason
        else:
            verdicts[current[1]] = (False, f"{by_id[current[1]].function} {reason}")

    context = "; ".join(f"cell {i}: {e}" for i, e in sorted(cell_errors.items()))
    tests = []
    for q in ex.questions:
        ok, message = verdicts.get(q.id, (False, "not graded (the notebook stopped too often)"))
        if not ok and "not defined" in message and context:
            message += f" (errors while running the notebook: {context})"
        tests.append(TestResult(_test_name(q), q.points if ok else 0.0, q.points, message[:1000]))
    if cell_errors:
        notes.append(f"errors while running the notebook: {context}"[:2000])
    return SubmissionResult(name, tests, time.monotonic() - start, notes)
