"""One submission's cases, on the trusted side: every question's inputs drawn from the submission's own seed
(`submission_seed`), the expected outputs computed with the package (`prepare`), what the sandbox grading a
question may hold (`needs_of`), and what one run may send (`bounds_for`).
"""

from __future__ import annotations

import hashlib
import hmac
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


#: Bits of a class secret drawn by the grader: enough that no search over secrets, checked against the cases a
#: student's feedback shows, can recover it (a 32-bit seed was found that way in a 2^21 window).
SECRET_BITS = 128


def submission_seed(class_seed: int, notebook: bytes) -> int:
    """The seed of one submission's cases: HMAC-SHA256 keyed with the class's secret, over the notebook's bytes
    (reproducible by the instructor from ``run.json``'s seed and the file). A student sees the cases of their
    own submissions only; without the key they say nothing of another submission's cases."""
    if isinstance(class_seed, bool) or not isinstance(class_seed, int) or not 0 <= class_seed < 2**256:
        raise ValueError(f"the class seed must be an integer in 0..2**256 - 1, got {class_seed!r}")
    digest = hmac.new(class_seed.to_bytes(32, "big"), notebook, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big")


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
