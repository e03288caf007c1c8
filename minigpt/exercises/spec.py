"""Question specs of the graded exercises: random inputs, the package as the oracle, and comparison.

A question is one function the student writes. Its inputs are generated as plain JSON (numbers,
lists and a few tagged objects such as ``{"$randn": [2, 3], "seed": 7}`` or ``{"$preset": "Llama-3-8B"}``)
so the grader's trusted process can send them to the sandboxed child that runs the student's code;
`build` turns them into Python objects (tensors, presets, models); the child gets presets already
`resolve`d to their fields and builds the rest with `minigpt.exercises.wire`, which holds no answers. The expected
output is computed by the package (``minigpt.costs``, ``minigpt.runtime.model``, ...) and never leaves the
trusted process; outputs are compared in their JSON form (`encode`), tensors as nested lists.

The inputs are `minigpt.exercises.case_inputs`, the comparisons `minigpt.exercises.comparisons`; both are
re-exported here with the questions themselves.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from minigpt.exercises.case_inputs import (
    Case,
    build,
    build_case,
    describe,
    describe_call,
    float64,
    model_spec,
    preset_fields,
    randn,
    resolve,
    uniform,
    uses_model,
    weights_spec,
)
from minigpt.exercises.comparisons import Compare, argmax_of, boolean, close, exact_int, int_list, pair, tensor, triple
from minigpt.exercises.wire import UnsupportedOutput, build_model, encode  # noqa: F401 - re-exported here
from minigpt.i18n import N_, _, fmt_num, language  # noqa: F401 - N_ re-exported for the exercises' hints

__all__ = [
    "N_", "Case", "Compare", "Exercise", "Question", "UnsupportedOutput", "_", "argmax_of", "boolean", "build",
    "build_case", "build_model", "close", "describe", "describe_call", "encode", "exact_int", "float64", "fmt_num",
    "int_list", "language", "model_spec", "pair", "preset_fields", "randn", "resolve", "tensor", "triple",
    "uniform", "uses_model", "weights_spec",
]

# ---------------------------------------------------------------------------------------------
# Questions and exercises


@dataclass(frozen=True)
class Question:
    """One graded function: its name and signature, how to draw inputs, the oracle and the comparison."""

    id: str
    function: str
    signature: str
    cases: Callable[[random.Random], list[Case]]
    oracle: Callable[..., Any]
    compare: Compare
    hint: str
    points: float = 1.0
    formulas: tuple[str, ...] = ()  # `minigpt.costs` functions its instructions tell the student to use
    runtime: tuple[str, ...] = ()  # runtime modules its instructions use ("runtime/generate.py"), real in its sandbox
    # The cases drawn every time, whatever the seed, each named by the plausible wrong answer it separates from the
    # right one (tests/test_seed_independence.py grades those wrong answers under many seeds)
    edges: tuple[str, ...] = ()
    # For a question whose point is the method (ex18 Q1: absorbed, not decompressed): given a case and the work the
    # answer did on it (`minigpt.exercises.work.measured`), the problem (an N_ message) or None
    method: Callable[[Case, dict[str, int]], str | None] | None = None


    def expected(self, case: Case) -> Any:
        """The package's answer for one case, in JSON form."""
        return encode(self.oracle(**build_case(case)))


@dataclass(frozen=True)
class Exercise:
    """The questions of one chapter's exercise notebook."""

    id: str
    notebook: str
    title: str
    questions: tuple[Question, ...] = field(default_factory=tuple)

    def question(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(f"{self.id} has no question {qid!r}; it has {[q.id for q in self.questions]}")

    @property
    def max_score(self) -> float:
        return sum(q.points for q in self.questions)
