"""The trusted side of the grader: draw inputs, compute the expected outputs, run each submission in a sandbox.

For one exercise the grader draws random inputs for every question (from a seed, recorded in the
output) and computes the expected outputs with the package (the oracle). For each submitted
notebook it runs `minigpt.grading.child` in a bubblewrap sandbox (`minigpt.grading.sandbox`) with
only the inputs, reads its events from a pipe (`minigpt.grading.runner`), kills it when a cell or a
question stops making progress, relaunches it for the questions that remain within the submission's
hard time budget, and compares the outputs it reported with the expected ones here. Student code
never runs in this process, and nothing the parent reads or writes (the submissions, the output
folder, the staged runtime) is writable from a sandbox. Results are written after every
submission: ``progress.jsonl`` is appended (and fsynced), ``scores.csv``, ``details.csv``,
``review.csv`` and each submission's Gradescope ``results.json`` are replaced atomically.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import minigpt
from minigpt.exercises.registry import exercise as get_exercise
from minigpt.exercises.spec import Exercise, Question, describe_call, resolve
from minigpt.grading import feedback, sandbox, staging
from minigpt.grading.notebook_code import CorruptNotebook, cells_to_run, read_code_cells
from minigpt.grading.results import SubmissionResult, TestResult, atomic_write, write_tables
from minigpt.grading.review import Finding, review_cell
from minigpt.grading.runner import LOG_CAP_BYTES, SLACK_S, STARTUP_S, ChildRun, Isolation, run_child

PACKAGE_DIR = Path(minigpt.__file__).resolve().parent
TAMPERED_REASON = "stopped: the notebook wrote to the grader's channel (events out of order)"


class UnsafeRefused(RuntimeError):
    """No OS sandbox is available and the instructor did not ask to grade without one."""


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


# ---------------------------------------------------------------------------------------------
# A folder of submissions


def find_submissions(folder: Path) -> list[Path]:
    """Notebooks directly in `folder` or one level down (one folder per student), sorted."""
    found = [*folder.glob("*.ipynb"), *folder.glob("*/*.ipynb")]
    return sorted(p for p in found if p.is_file() and ".ipynb_checkpoints" not in p.parts)


def _slug(folder: Path, path: Path) -> str:
    rel = path.relative_to(folder).with_suffix("").as_posix()
    return re.sub(r"[^A-Za-z0-9._-]+", "_", rel.replace("/", "__"))[:120] or "submission"


def isolation_for(root: Path, *, unsafe_no_sandbox: bool = False, limits: sandbox.Limits | None = None) -> Isolation:
    """Stage the sandbox's runtime under `root`; UnsafeRefused when bwrap cannot run and no unsafe grading was asked."""
    problem = sandbox.unavailable()
    if problem and not unsafe_no_sandbox:
        raise UnsafeRefused(f"refusing to grade: {problem}. Without an OS sandbox a submission can read the "
                            "reference solutions, other students' notebooks and results, and rewrite the scores.")
    return Isolation(staging.stage(root), limits or sandbox.Limits(), unsafe=bool(problem) or unsafe_no_sandbox)


def grade_folder(exercise_id: str, submissions: Path, out: Path, *, timeout: float = 30.0,
                 seed: int | None = None, jobs: int = 1, echo: bool = True, unsafe_no_sandbox: bool = False,
                 budget: float | None = None, limits: sandbox.Limits | None = None,
                 ) -> list[tuple[str, SubmissionResult]]:
    """Grade every notebook in `submissions` for `exercise_id`; write results under `out`; return them.

    Each submission runs in its own sandbox (UnsafeRefused if bubblewrap is unavailable, unless
    `unsafe_no_sandbox`); `jobs` submissions are graded at once; `budget` caps one submission's wall
    clock (default: `budget_for` its cells and questions). Results are written as each one finishes,
    in submission order in the tables.
    """
    prepared = prepare(exercise_id, seed)
    stage_root = Path(tempfile.mkdtemp(prefix="minigpt-sandbox-"))
    os.chmod(stage_root, 0o755)  # bwrap may run as uid 65534, which must reach the staged runtime (read-only)
    try:
        isolation = isolation_for(stage_root / "runtime", unsafe_no_sandbox=unsafe_no_sandbox, limits=limits)
        return _grade_all(prepared, isolation, submissions, out, timeout, jobs, echo, budget)
    finally:
        shutil.rmtree(stage_root, ignore_errors=True)


def _grade_all(prepared: Prepared, isolation: Isolation, submissions: Path, out: Path, timeout: float, jobs: int,
               echo: bool, budget: float | None) -> list[tuple[str, SubmissionResult]]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    (out / "results").mkdir(exist_ok=True)
    atomic_write(out / "run.json", json.dumps({"exercise": prepared.exercise.id, "seed": prepared.seed,
                                                "timeout": timeout, "sandbox": not isolation.unsafe,
                                                "minigpt": minigpt.__version__}, indent=1))
    paths = find_submissions(submissions)
    slugs = [_slug(submissions, p) for p in paths]
    done: dict[str, SubmissionResult] = {}
    lock = threading.Lock()

    def grade(path: Path, slug: str) -> None:
        log_path = out / "logs" / f"{slug}.txt"
        log_path.write_bytes(b"")
        result = grade_notebook(path, prepared, isolation, timeout=timeout, log_path=log_path, budget=budget)
        result.submission = slug
        folder = out / "results" / slug
        folder.mkdir(exist_ok=True)
        atomic_write(folder / "results.json", json.dumps(result.gradescope(), indent=1))
        with lock:
            done[slug] = result
            with open(out / "progress.jsonl", "a", encoding="utf-8") as progress:
                progress.write(json.dumps({"submission": slug, "score": result.score, "max_score": result.max_score,
                                           "tests": [asdict(t) for t in result.tests]}) + "\n")
                progress.flush()
                os.fsync(progress.fileno())
            write_tables(out, prepared.exercise, [(s, done[s]) for s in slugs if s in done])
            if echo:
                flagged = f", {len(result.findings)} finding(s) in review.csv" if result.findings else ""
                print(f"{slug}: {result.score:g}/{result.max_score:g} ({result.execution_time:.1f} s{flagged})",
                      flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(grade, p, s) for p, s in zip(paths, slugs, strict=True)]:
            future.result()
    results = [(s, done[s]) for s in slugs]
    write_tables(out, prepared.exercise, results)
    return results
