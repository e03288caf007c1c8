"""The trusted side of the grader: draw inputs, compute the expected outputs, run each submission in a child.

For one exercise the grader draws random inputs for every question (from a seed, recorded in the
output) and computes the expected outputs with the package (the oracle). For each submitted
notebook it starts `minigpt.grading.child` in a new process group with only the inputs, watches its
progress file with a wall-clock limit, kills it when a cell or a question stops making progress,
relaunches it for the questions that remain, and compares the outputs it wrote with the expected
ones here. Student code never runs in this process. Results are written after every submission:
``progress.jsonl`` is appended (and fsynced), ``scores.csv``, ``details.csv`` and each submission's
Gradescope ``results.json`` are replaced atomically.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import minigpt
from minigpt.exercises.registry import exercise as get_exercise
from minigpt.exercises.spec import Exercise, Question, describe_call
from minigpt.grading.notebook_code import CorruptNotebook, cells_to_run, read_code_cells

PACKAGE_DIR = Path(minigpt.__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent
SOLUTIONS_DIR = REPO_DIR / "exercises" / "solutions"
LOG_CAP_BYTES = 256 * 2**10  # per child run; the rest of its output is counted and dropped
RESULT_CAP_BYTES = 64 * 2**20
STARTUP_S = 180.0  # importing torch on a busy machine; student code runs only after "ready"
SLACK_S = 3.0  # beyond the per-cell / per-question limit before the process group is killed
SOLUTIONS_REASON = "attempted to read the reference solutions"


@dataclass
class TestResult:
    """One question's verdict, in Gradescope's test shape."""

    name: str
    score: float
    max_score: float
    output: str

    @property
    def status(self) -> str:
        return "passed" if self.score >= self.max_score else "failed"


@dataclass
class SubmissionResult:
    """All verdicts for one submitted notebook."""

    submission: str
    tests: list[TestResult]
    execution_time: float
    notes: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.max_score for t in self.tests)

    def gradescope(self) -> dict[str, Any]:
        """Gradescope's results.json: top-level score and one entry per test."""
        return {
            "score": self.score,
            "max_score": self.max_score,
            "execution_time": round(self.execution_time, 2),
            "output": "\n".join(self.notes),
            "visibility": "visible",
            "stdout_visibility": "hidden",
            "tests": [
                {"name": t.name, "number": str(i + 1), "score": t.score, "max_score": t.max_score,
                 "status": t.status, "output": t.output, "visibility": "visible"}
                for i, t in enumerate(self.tests)
            ],
        }


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


# ---------------------------------------------------------------------------------------------
# Running one child


class _Drain(threading.Thread):
    """Copy a pipe to a file up to `cap` bytes; count (and drop) the rest."""

    def __init__(self, pipe: io.BufferedReader, path: Path, cap: int) -> None:
        super().__init__(daemon=True)
        self.pipe, self.path, self.cap, self.total = pipe, path, cap, 0

    def run(self) -> None:
        with open(self.path, "ab") as out:
            while chunk := self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536):
                if self.total < self.cap:
                    out.write(chunk[: self.cap - self.total])
                self.total += len(chunk)
            if self.total > self.cap:
                out.write(f"\n[grader: output truncated, {self.total:,} bytes in all]\n".encode())

    @property
    def flooded(self) -> bool:
        return self.total > self.cap


@dataclass
class ChildRun:
    events: list[dict]
    killed: bool
    returncode: int | None
    flooded: bool


def _child_env(workdir: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        HOME=str(workdir), PYTHONPATH=str(REPO_DIR), PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1",
        OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg", MINIGPT_GRADING="1", MINIGPT_DEVICE="cpu",
        CUDA_VISIBLE_DEVICES="",
    )
    return env


def _read_events(path: Path, offset: int, partial: bytes) -> tuple[list[dict], int, bytes]:
    """New complete JSON lines of the progress file after `offset` (malformed lines are ignored)."""
    events: list[dict] = []
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(max(0, RESULT_CAP_BYTES - offset))
    except OSError:
        return events, offset, partial
    offset += len(data)
    data = partial + data
    *lines, partial = data.split(b"\n")
    for line in lines:
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict) and isinstance(event.get("event"), str):
            events.append(event)
    return events, offset, partial


def run_child(job: dict, workdir: Path, log_path: Path, timeout: float) -> ChildRun:
    """Run the child on `job` until it reports "done", exits, or stalls; kill its process group if needed."""
    result = workdir / "result.jsonl"
    result.write_bytes(b"")
    job = dict(job, result=str(result))
    job_path = workdir / "job.json"
    job_path.write_text(json.dumps(job), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-s", "-m", "minigpt.grading.child", str(job_path)],
        cwd=workdir, env=_child_env(workdir), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    )
    drain = _Drain(proc.stdout, log_path, LOG_CAP_BYTES)
    drain.start()
    events: list[dict] = []
    offset, partial = 0, b""
    deadline = time.monotonic() + STARTUP_S
    killed = False
    while True:
        new, offset, partial = _read_events(result, offset, partial)
        if new:
            events.extend(new)
            deadline = time.monotonic() + timeout + SLACK_S
        if any(e["event"] == "done" for e in new) or proc.poll() is not None:
            break
        if time.monotonic() > deadline:
            killed = True
            break
        time.sleep(0.05)
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    proc.wait()
    drain.join(timeout=10)
    new, offset, partial = _read_events(result, offset, partial + b"\n")
    events.extend(new)
    return ChildRun(events, killed, proc.returncode, drain.flooded)


# ---------------------------------------------------------------------------------------------
# Grading one submission


def _compare(q: Question, cases: list[dict], expected: list[Any], outputs: Any) -> tuple[bool, str]:
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


def grade_notebook(path: Path, prepared: Prepared, *, timeout: float, log_path: Path,
                   protected: list[Path]) -> SubmissionResult:
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
        return zeros(f"corrupted notebook: {err}")
    try:
        return _grade_cells(cells, prepared, timeout, log_path, protected, name, start)
    except Exception as err:  # noqa: BLE001 - the grader never crashes on one submission
        return zeros(f"internal grader error ({type(err).__name__}: {err}); please report it")


def _test_name(q: Question) -> str:
    return f"{q.id}: {q.signature}"


def _grade_cells(cells: list, prepared: Prepared, timeout: float, log_path: Path, protected: list[Path],
                 name: str, start: float) -> SubmissionResult:
    ex = prepared.exercise
    verdicts: dict[str, tuple[bool, str]] = {}
    cell_errors: dict[int, str] = {}
    skip_cells: set[int] = set()
    solutions_all, solutions_q = False, set()
    notes: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="minigpt-grade-"))
    try:
        for _attempt in range(len(cells) + len(ex.questions) + 1):
            pending = [q for q in ex.questions if q.id not in verdicts]
            if not pending:
                break
            job = {
                "exercise": ex.id, "timeout": timeout,
                "cells": [{"index": c.index, "source": c.source} for c in cells],
                "skip_cells": sorted(skip_cells),
                "questions": [{"id": q.id, "function": q.function, "cases": prepared.cases[q.id]} for q in pending],
                "solutions": [str(SOLUTIONS_DIR)], "protected": [str(p) for p in protected],
            }
            run = run_child(job, workdir, log_path, timeout)
            current: tuple[str, Any] | None = None
            ready = done = False
            before = set(verdicts)
            by_id = {q.id: q for q in ex.questions}
            for ev in run.events:
                kind = ev["event"]
                if kind == "ready":
                    ready = True
                elif kind == "cell_start":
                    current = ("cell", ev.get("cell"))
                elif kind == "cell_end":
                    if ev.get("error") and isinstance(ev.get("cell"), int):
                        cell_errors[ev["cell"]] = str(ev["error"])[:500]
                    current = None
                elif kind == "q_start" and ev.get("q") in by_id:
                    current = ("q", ev["q"])
                elif kind == "q_result" and ev.get("q") in by_id and ev["q"] not in verdicts:
                    q = by_id[ev["q"]]
                    verdicts[q.id] = _compare(q, prepared.cases[q.id], prepared.expected[q.id], ev.get("outputs"))
                    current = None
                elif kind == "q_error" and ev.get("q") in by_id and ev["q"] not in verdicts:
                    verdicts[ev["q"]] = (False, str(ev.get("reason"))[:1000])
                    current = None
                elif kind == "violation":
                    if ev.get("kind") == "solutions":
                        phase = str(ev.get("phase", ""))
                        if phase.startswith("question ") and phase[9:] in by_id:
                            solutions_q.add(phase[9:])
                        else:
                            solutions_all = True
                    notes.append(f"blocked: {str(ev.get('detail'))[:200]} (during {ev.get('phase')})")
                elif kind == "done":
                    done = True
            this_run = set(verdicts) - before
            # A relaunch skips the cells that ran out of time or killed the process; the others run again.
            skip_cells.update(i for i, e in cell_errors.items() if "timed out" in e)
            if run.flooded:
                for qid in this_run:  # a timeout while the output overflowed the cap: report the flood
                    ok, message = verdicts[qid]
                    if not ok and "timed out" in message:
                        verdicts[qid] = (False, f"output flood: the notebook kept printing ({message})")
                notes.append("the notebook printed more than "
                              f"{LOG_CAP_BYTES // 2**10} KiB; the rest of its output was dropped")
            if done:
                continue
            if run.killed and run.flooded:
                reason = "output flood: the notebook kept printing until it was killed"
            elif run.killed:
                reason = f"timed out after {timeout:g} s (the process was killed)"
            else:
                reason = f"the process exited early (exit code {run.returncode})"
            if not ready:
                for q in pending:
                    verdicts.setdefault(q.id, (False, f"the notebook could not be run: {reason}"))
                break
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
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    context = "; ".join(f"cell {i}: {e}" for i, e in sorted(cell_errors.items()))
    tests = []
    for q in ex.questions:
        ok, message = verdicts.get(q.id, (False, "not graded (the notebook stopped too often)"))
        if solutions_all or q.id in solutions_q:
            ok, message = False, SOLUTIONS_REASON
        elif not ok and "not defined" in message and context:
            message += f" (errors while running the notebook: {context})"
        tests.append(TestResult(_test_name(q), q.points if ok else 0.0, q.points, message))
    if cell_errors:
        notes.append(f"errors while running the notebook: {context}")
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


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _csv(rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def write_tables(out: Path, ex: Exercise, results: list[tuple[str, SubmissionResult]]) -> None:
    """scores.csv (one row per submission) and details.csv (one row per question), replaced atomically."""
    qids = [q.id for q in ex.questions]
    scores = [["submission", *qids, "score", "max_score"]]
    details = [["submission", "question", "function", "score", "max_score", "output"]]
    for slug, r in results:
        scores.append([slug, *[t.score for t in r.tests], r.score, r.max_score])
        for q, t in zip(ex.questions, r.tests, strict=True):
            details.append([slug, q.id, q.function, t.score, t.max_score, t.output])
    _atomic_write(out / "scores.csv", _csv(scores))
    _atomic_write(out / "details.csv", _csv(details))


def grade_folder(exercise_id: str, submissions: Path, out: Path, *, timeout: float = 30.0,
                 seed: int | None = None, jobs: int = 1, echo: bool = True) -> list[tuple[str, SubmissionResult]]:
    """Grade every notebook in `submissions` for `exercise_id`; write results under `out`; return them.

    `jobs` submissions are graded at once (each in its own child process); results are written as
    each one finishes, in submission order in the tables.
    """
    prepared = prepare(exercise_id, seed)
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    (out / "results").mkdir(exist_ok=True)
    protected = [PACKAGE_DIR, REPO_DIR / "exercises", out.resolve(), submissions.resolve()]
    _atomic_write(out / "run.json", json.dumps({"exercise": exercise_id, "seed": prepared.seed,
                                                "timeout": timeout, "minigpt": minigpt.__version__}, indent=1))
    paths = find_submissions(submissions)
    slugs = [_slug(submissions, p) for p in paths]
    done: dict[str, SubmissionResult] = {}
    lock = threading.Lock()

    def grade(path: Path, slug: str) -> None:
        log_path = out / "logs" / f"{slug}.txt"
        log_path.write_bytes(b"")
        result = grade_notebook(path, prepared, timeout=timeout, log_path=log_path, protected=protected)
        result.submission = slug
        folder = out / "results" / slug
        folder.mkdir(exist_ok=True)
        _atomic_write(folder / "results.json", json.dumps(result.gradescope(), indent=1))
        with lock:
            done[slug] = result
            with open(out / "progress.jsonl", "a", encoding="utf-8") as progress:
                progress.write(json.dumps({"submission": slug, "score": result.score, "max_score": result.max_score,
                                           "tests": [asdict(t) for t in result.tests]}) + "\n")
                progress.flush()
                os.fsync(progress.fileno())
            write_tables(out, prepared.exercise, [(s, done[s]) for s in slugs if s in done])
            if echo:
                print(f"{slug}: {result.score:g}/{result.max_score:g} ({result.execution_time:.1f} s)", flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(grade, p, s) for p, s in zip(paths, slugs, strict=True)]:
            future.result()
    results = [(s, done[s]) for s in slugs]
    write_tables(out, prepared.exercise, results)
    return results
