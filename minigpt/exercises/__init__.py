"""Graded exercises for Chapters 1–6: question specs (random inputs, the package as the oracle) and `check`.

In a notebook: ``from minigpt.exercises import check`` then ``check("ex01.q1", prefill_flops)``.
The instructor's grader lives in `minigpt.grading`.
"""

from minigpt.exercises.check import CheckResult, check, run_check
from minigpt.exercises.registry import EXERCISES, exercise, question

__all__ = ["EXERCISES", "CheckResult", "check", "exercise", "question", "run_check"]
