"""Grading a class: every notebook of a folder of submissions, each in its own sandbox, `jobs` at a time.

`grade_folder` draws the exercise's inputs once (`minigpt.grading.grader.prepare`), stages one sandbox runtime
(`minigpt.grading.staging`), grades each submission with `grade_notebook`, and writes the results as each one
finishes: ``progress.jsonl`` appended and fsynced, each submission's ``results.json`` and the class tables
replaced atomically (`minigpt.grading.results`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import minigpt
from minigpt.grading import sandbox, staging
from minigpt.grading.grader import Prepared, grade_notebook, prepare
from minigpt.grading.results import SubmissionResult, atomic_write, write_tables
from minigpt.grading.runner import Isolation


class UnsafeRefused(RuntimeError):
    """No OS sandbox is available and the instructor did not ask to grade without one."""


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
