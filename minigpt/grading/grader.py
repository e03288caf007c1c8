"""The trusted side of the grader: draw inputs, compute the expected outputs, run each submission in a sandbox.

For one submission the grader draws random inputs for every question, from a seed of its own (the class's
seed and the notebook's bytes, hashed: two submissions, or two versions of one, never share their cases, so
feedback gathered on one submission says nothing about the cases of another), and computes the expected
outputs with the package (the oracle). It then runs `minigpt.grading.child` in a bubblewrap sandbox
(`minigpt.grading.sandbox`) with the notebook's bytes and only the inputs, once per set of questions that
need the same runtime (`needs_of`: a question whose inputs are not a MiniGPT runs where the model is a stub),
reads its events from a pipe (`minigpt.grading.runner`, which bounds every byte), kills it when a cell or a
question stops making progress, relaunches it for the questions that remain, all within the submission's
fixed time budget (`BUDGET_S`, whatever the notebook holds: its cells once, every question's calls, the
sandboxes' starts; a cell run again for another group of questions is not charged again, `Budget`), and
compares the outputs it reported with the
expected ones here, after checking their shapes against the expected ones (`minigpt.exercises.wire.conforms`,
here only: nothing derived from an expected answer, not even its shape, enters the sandbox) so that nothing
larger than the answer is ever read into an array. The verdict shown to the student never
holds an expected value. Student code never runs in this process, and nothing the parent reads or writes
(the submissions, the output folder, the staged runtime) is writable from a sandbox. A whole class is
`minigpt.grading.folder`.

Every text the student reads is in the language of ``MINIGPT_LANG`` (`minigpt.i18n`); the messages the child
makes (the wire format's, the notebook parser's) arrive in English and are translated here. What the grader
decides from a text (a missing function, a timeout) reads the same in every language.
"""

from __future__ import annotations

import math
import os
import stat
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

from minigpt.exercises.registry import exercise as get_exercise
from minigpt.exercises.spec import Question, resolve
from minigpt.grading import feedback
from minigpt.grading.allowlist import Needs
from minigpt.grading.cases import OUTPUT_CAP_BYTES, Prepared, bounds_for, needs_of, prepare, submission_seed
from minigpt.grading.child_command import Isolation
from minigpt.grading.event_order import Budget
from minigpt.grading.notebook_code import DEFAULT_SIZES, NOTEBOOK_TOO_LARGE, SizeLimits
from minigpt.grading.notebook_code import MESSAGES as NOTEBOOK_MESSAGES
from minigpt.grading.results import SubmissionResult, TestResult
from minigpt.grading.review import Finding
from minigpt.grading.runner import LOG_CAP_BYTES, run_child
from minigpt.grading.teardown import SandboxSurvived
from minigpt.grading.verdicts import (
    BUDGET_USED,
    CATEGORIES,
    NOT_DEFINED,
    TAMPERED_REASON,
    TIMED_OUT,
    _compare,
    _exit_reason,
    _findings,
    _says,
)
from minigpt.i18n import _, fmt_num, translate_known

__all__ = [
    "BUDGET_S", "BUDGET_USED", "CATEGORIES", "NOT_DEFINED", "TAMPERED_REASON", "TIMED_OUT", "Prepared",
    "bounds_for", "grade_notebook", "needs_of", "prepare", "read_submission", "submission_seed",
]

BUDGET_S = 300.0  # one submission's wall clock, every run of it together, a cell counted once (--budget)


def offered(questions: list[Question]) -> list[str]:
    """What an exercise's instructions give the student: its questions' formulas by name, runtime modules by dotted
    name (public, like the instructions: nothing of an answer)."""
    names = {f for q in questions for f in q.formulas}
    names |= {"minigpt." + m.removesuffix(".py").replace("/", ".") for q in questions for m in q.runtime}
    return sorted(names)


def read_submission(path: Path, limits: SizeLimits) -> bytes:
    """The notebook's bytes, never more than `limits.notebook_bytes` (ValueError past it, OSError unreadable)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError("not a regular file")
        data = f.read(limits.notebook_bytes + 1)
    if len(data) > limits.notebook_bytes:
        raise ValueError(_(NOTEBOOK_TOO_LARGE).format(n=limits.notebook_bytes // 2**20))
    return data


def grade_notebook(path: Path, exercise_id: str, class_seed: int, isolation: Isolation, *, timeout: float,
                   log_path: Path, budget: float = BUDGET_S, size_limits: SizeLimits = DEFAULT_SIZES,
                   name: str | None = None) -> SubmissionResult:
    """Grade one notebook within `budget` seconds in all; never raises (any failure becomes zeros with a reason)
    but `SandboxSurvived`."""
    start = time.monotonic()
    ex = get_exercise(exercise_id)
    name = name or path.name

    def zeros(reason: str) -> SubmissionResult:
        tests = [TestResult(_test_name(q), 0.0, q.points, reason) for q in ex.questions]
        return SubmissionResult(name, tests, time.monotonic() - start, [reason])

    try:
        notebook = read_submission(path, size_limits)
    except ValueError as err:
        return zeros(_("submission too large: {reason} (the limit)").format(reason=err))
    except OSError as err:
        return zeros(_("the submission could not be read ({type})").format(type=type(err).__name__))
    try:
        prepared = prepare(exercise_id, submission_seed(class_seed, notebook))
        clock = Budget(start + budget, cap_s=budget)  # every run together: at most twice the budget
        result = _grade(notebook, prepared, isolation, timeout, log_path, clock, budget, name, start, size_limits)
    except SandboxSurvived:
        raise  # a process of a run that SIGKILL cannot end: the grader stops rather than go on with it alive
    except Exception as err:  # noqa: BLE001 - the grader never crashes on one submission
        with open(log_path, "a", encoding="utf-8") as log:  # the instructor's log, never shown to the student
            log.write("\n[grader: internal error]\n" + traceback.format_exc())
        return zeros(_("internal grader error ({type}); please report it").format(type=type(err).__name__))
    result.seed = prepared.seed
    return result


def _test_name(q: Question) -> str:
    return f"{q.id}: {q.signature}"



@dataclass
class _State:
    """What the runs of one submission found so far."""

    verdicts: dict[str, tuple[bool, str]]
    cell_errors: dict[int, str]
    skip_cells: set[int]
    notes: list[str]
    findings: list[Finding] | None = None
    stop: str | None = None  # a reason that ends the whole submission (too large, corrupt, tampered, budget)


def _grade(notebook: bytes, prepared: Prepared, isolation: Isolation, timeout: float, log_path: Path,
           deadline: Budget, budget: float, name: str, start: float, size_limits: SizeLimits) -> SubmissionResult:
    ex = prepared.exercise
    state = _State({}, {}, set(), [])
    groups: dict[Needs, list[Question]] = {}
    for q in ex.questions:
        groups.setdefault(needs_of(q, prepared.cases[q.id]), []).append(q)
    for needs, questions in groups.items():
        if state.stop:
            break
        _run_group(notebook, prepared, questions, isolation.runtime.lib(needs), isolation, state, timeout,
                   log_path, deadline, budget, size_limits)
    context = "; ".join(_("cell {i}: {error}").format(i=i, error=e) for i, e in sorted(state.cell_errors.items()))
    tests = []
    for q in ex.questions:
        ok, message = state.verdicts.get(q.id, (False, state.stop or _("not graded (the notebook stopped too often)")))
        if not ok and _says(message, NOT_DEFINED) and context:
            message = _("{message} (errors while running the notebook: {context})").format(message=message,
                                                                                            context=context)
        tests.append(TestResult(_test_name(q), q.points if ok else 0.0, q.points, message[:1000]))
    if state.cell_errors:
        state.notes.append(_("errors while running the notebook: {context}").format(context=context)[:2000])
    result = SubmissionResult(name, tests, time.monotonic() - start, list(dict.fromkeys(state.notes)))
    result.findings = state.findings or []
    return result


def _run_group(notebook: bytes, prepared: Prepared, questions: list[Question], lib: Path, isolation: Isolation,
               state: _State, timeout: float, log_path: Path, deadline: Budget, budget: float,
               size_limits: SizeLimits) -> None:
    by_id = {q.id: q for q in questions}
    verdicts = state.verdicts
    bounds = bounds_for(len(questions), size_limits.code_cells)
    memory = isolation.limits.memory_bytes
    for _attempt in range(size_limits.code_cells + len(questions) + 1):
        pending = [q for q in questions if q.id not in verdicts]
        if not pending:
            return
        remaining = deadline.deadline - time.monotonic()
        if remaining <= 1:
            state.stop = _(BUDGET_USED).format(seconds=fmt_num(budget, "g"))
            return
        limits = replace(isolation.limits, cpu_s=math.ceil(remaining + deadline.left_s) + 1)
        job = {
            "limits": limits.as_job(),
            "size_limits": vars(size_limits).copy(),
            "skip_cells": sorted(state.skip_cells),
            "output_cap": OUTPUT_CAP_BYTES,
            "offered": offered(prepared.exercise.questions),  # what the instructions give: not a review finding
            "questions": [{"id": q.id, "function": q.function, "cases": resolve(prepared.cases[q.id]),
                           "measure": q.method is not None}
                          for q in pending],
        }
        run = run_child(job, notebook, isolation, lib, log_path, timeout, deadline, bounds, size_limits.code_cells)
        if run.ended == "rejected":
            kind = run.rejected.get("kind")
            message = feedback.sanitize(translate_known(run.rejected.get("message"), NOTEBOOK_MESSAGES))
            state.stop = (_("submission too large: {reason}").format(reason=message) if kind == "too_large"
                          else _("corrupted notebook: {reason}").format(reason=message))
            state.notes.append(state.stop)
            return
        if run.listing is not None and state.findings is None:
            state.findings = _findings(run.listing)
        before = set(verdicts)
        for ev in run.events:
            error = ev.get("error")
            if ev["event"] == "cell_end" and error is not None:
                state.cell_errors[ev["cell"]] = feedback.describe(error, timeout)
                if isinstance(error, dict) and error.get("kind") == "timeout":
                    state.skip_cells.add(ev["cell"])  # a relaunch does not wait for it again
            elif ev["event"] == "q_end":
                q = by_id[ev["q"]]
                if isinstance(error, dict) and error.get("kind") == "missing":
                    verdicts[q.id] = (False, _("function {function} not defined").format(function=q.function))
                elif isinstance(error, dict) and error.get("kind") == "too_large":
                    verdicts[q.id] = (False, _("{function}: its outputs are larger than {n} MiB, far more than any "
                                               "answer").format(function=q.function, n=OUTPUT_CAP_BYTES // 2**20))
                elif error is not None:
                    verdicts[q.id] = (False, f"{q.function} {feedback.describe(error, timeout)}")
                else:
                    verdicts[q.id] = _compare(q, prepared.cases[q.id], prepared.expected[q.id], ev.get("outputs"),
                                              ev.get("work"))
        if run.flooded:
            for qid in set(verdicts) - before:  # a timeout while the output overflowed the cap: report the flood
                ok, message = verdicts[qid]
                if not ok and (_says(message, TIMED_OUT) or (run.output_closed and "BrokenPipeError" in message)):
                    verdicts[qid] = (False, _("output flood: the notebook kept printing ({message})").format(
                        message=message))
            state.notes.append(_("the notebook printed more than {n} KiB; the rest was dropped").format(
                n=LOG_CAP_BYTES // 2**10))
        if run.ended == "done":
            continue
        if run.ended in ("tampered", "deadline", "internal") or not run.ready:
            reason = _(TAMPERED_REASON) if run.ended == "tampered" else _exit_reason(run, timeout, budget, memory)
            if not run.ready and run.ended not in ("tampered", "internal"):
                reason = _("the notebook could not be run: {reason}").format(reason=reason)
            state.stop = reason
            state.notes.append(reason)
            return
        reason = _exit_reason(run, timeout, budget, memory)
        current = run.current
        if current is None:
            # Died between steps: mark the next pending question so the loop always progresses.
            q = next((q for q in pending if q.id not in verdicts), None)
            if q is not None:
                verdicts[q.id] = (False, f"{q.function}: {reason}")
        elif current[0] == "cell":
            state.skip_cells.add(current[1])
            state.cell_errors[current[1]] = reason
        else:
            verdicts[current[1]] = (False, f"{by_id[current[1]].function} {reason}")
