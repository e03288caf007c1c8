"""One grading run's results and the files they are written to: a verdict per question (Gradescope's test
shape), a submission's verdicts (its ``results.json``), and the class tables ``scores.csv``, ``details.csv`` and
``review.csv``, each replaced atomically so that a reader never sees half a file.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minigpt.exercises.spec import Exercise
from minigpt.grading.review import Finding


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
    findings: list[Finding] = field(default_factory=list)  # the static check's, for the instructor only
    seed: int | None = None  # the seed of this submission's cases (for the instructor, never in results.json)

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


def atomic_write(path: Path, text: str) -> None:
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
    """scores.csv (one row per submission), details.csv (one row per question) and review.csv (the static
    check's findings, for the instructor only), replaced atomically."""
    qids = [q.id for q in ex.questions]
    scores = [["submission", *qids, "score", "max_score"]]
    details = [["submission", "question", "function", "score", "max_score", "output"]]
    review = [["submission", "cell", "line", "category", "reference"]]
    for slug, r in results:
        scores.append([slug, *[t.score for t in r.tests], r.score, r.max_score])
        for q, t in zip(ex.questions, r.tests, strict=True):
            details.append([slug, q.id, q.function, t.score, t.max_score, t.output])
        review.extend([slug, f.cell, f.line, f.category, f.reference] for f in r.findings)
    atomic_write(out / "scores.csv", _csv(scores))
    atomic_write(out / "details.csv", _csv(details))
    atomic_write(out / "review.csv", _csv(review))
