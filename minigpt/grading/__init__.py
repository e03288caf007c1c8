"""The instructor's grader for the exercise notebooks: ``python -m minigpt.grading --exercise ex01 ...``.

Security design: student code never runs in the grader's process, and never next to the answers.
The trusted parent (`minigpt.grading.grader`) draws random inputs and computes the expected outputs
with the package; each submission runs in its own bubblewrap sandbox (`minigpt.grading.sandbox`, with
a seccomp filter, `minigpt.grading.seccomp`, and a control group per run, `minigpt.grading.cgroups`)
that holds a stripped copy of the package (per set of questions: the runtime those questions' inputs
need, stubs for the rest, no answer functions) and nothing else of the checkout; the child there
(`minigpt.grading.child`) parses the notebook, reads the inputs from a pipe and writes only plain-data
outputs to another, which the parent bounds, checks against the answers' shapes and compares.

Names are imported lazily so that the sandbox's stripped copy can import `minigpt.grading.child`
and `minigpt.exercises.wire` without the parent's modules.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SubmissionResult", "TestResult", "grade_folder", "grade_notebook", "prepare"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from minigpt.grading import folder, grader, results

        home = results if name.endswith("Result") else folder if name == "grade_folder" else grader
        return getattr(home, name)
    raise AttributeError(f"module 'minigpt.grading' has no attribute {name!r}")
