"""One submission's cases, on the trusted side: every question's inputs drawn from the submission's own seed
(`submission_seed`), the expected outputs computed with the package (`prepare`), what the sandbox grading a
question may hold (`needs_of`), and what one run may send (`bounds_for`).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from minigpt.exercises.registry import exercise as get_exercise
from minigpt.exercises.spec import Exercise, Question, uses_model
from minigpt.grading.allowlist import MODEL_MODULES, Needs
from minigpt.grading.event_lines import SMALL_EVENT_BYTES, Bounds


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


def submission_seed(class_seed: int, notebook: bytes) -> int:
    """The seed of one submission's cases: the class's seed and the notebook's bytes, hashed (reproducible by the
    instructor from ``run.json``'s seed and the file; unknown to a student, who never sees the class seed)."""
    digest = hashlib.sha256(class_seed.to_bytes(16, "big", signed=True) + hashlib.sha256(notebook).digest())
    return int.from_bytes(digest.digest()[:6], "big")


def needs_of(q: Question, cases: list[dict]) -> Needs:
    """What the sandbox grading `q` may hold: the model (and its cache) only when the inputs are MiniGPTs, and the
    runtime modules and formulas the question's instructions name."""
    model = MODEL_MODULES if uses_model(cases) else frozenset()
    return Needs(model | frozenset(q.runtime), frozenset(q.formulas))


#: The most one question's outputs may take on the wire, JSON-encoded: the same for every question, so that it
#: says nothing of an answer (the largest expected answer of the 18 exercises takes about 0.1 MiB).
OUTPUT_CAP_BYTES = 2 * 2**20


def bounds_for(questions: int, max_cells: int) -> Bounds:
    """What one run may send: an outputs event of at most `OUTPUT_CAP_BYTES` (plus its frame) per question, and
    every other event small."""
    per_question = OUTPUT_CAP_BYTES + 64 * 2**10
    return Bounds(per_question, per_question * questions + SMALL_EVENT_BYTES * (2 * max_cells + 8))
