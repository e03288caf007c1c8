"""The student-side `check`: run a function on fresh random inputs and compare it with the package.

Each call draws new inputs (a new seed every call, printed on failure so the case can be replayed
with ``check(..., seed=...)``), so only a function that computes the answer passes; a hard-coded
number fails. This is a learning aid that a notebook can fool (redefine it, patch the package); the
instructor's grader (`minigpt.grading`) does not use it: it runs the functions in a sandbox without
the answers and compares in its own process, so nothing a notebook does changes the grade.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from minigpt.exercises.registry import question
from minigpt.exercises.spec import UnsupportedOutput, build_case, describe_call, encode

GRADING_ENV = "MINIGPT_GRADING"

Status = Literal["pass", "fail", "not implemented"]


@dataclass(frozen=True)
class CheckResult:
    """What `check` found: the status and the message it printed."""

    status: Status
    message: str
    seed: int


def run_check(qid: str, function: Callable[..., Any], *, seed: int | None = None) -> CheckResult:
    """Check `function` for question `qid` ("ex01.q1") on random cases; return the verdict (prints nothing)."""
    _, q = question(qid)
    label = f"{qid} {q.function}"
    seed = random.SystemRandom().getrandbits(32) if seed is None else seed
    if not callable(function):
        return CheckResult("fail", f"FAIL {label}: expected a function, got {type(function).__name__}", seed)
    cases = q.cases(random.Random(seed))
    for i, case in enumerate(cases):
        call = describe_call(q.function, case)
        try:
            actual = encode(function(**build_case(case)))
        except NotImplementedError:
            if i == 0:
                return CheckResult("not implemented", f"{label}: not implemented yet", seed)
            return CheckResult("fail", f"FAIL {label}: {call} raised NotImplementedError", seed)
        except UnsupportedOutput as err:
            return CheckResult("fail", f"FAIL {label}: {call} {err}\n  hint: {q.hint}", seed)
        except Exception as err:  # noqa: BLE001 - the student's code may raise anything
            return CheckResult("fail", f"FAIL {label}: {call} raised {type(err).__name__}: {err}\n  hint: {q.hint}",
                               seed)
        problem = q.compare(q.expected(case), actual)
        if problem:
            text = (f"FAIL {label}: {call}\n  {problem}\n  hint: {q.hint}\n"
                    f"  (replay this case with check({qid!r}, {q.function}, seed={seed}))")
            return CheckResult("fail", text, seed)
    return CheckResult("pass", f"PASS {label}: {len(cases)} random cases agree with the package", seed)


def check(qid: str, function: Callable[..., Any], *, seed: int | None = None) -> None:
    """Print whether `function` answers question `qid` ("ex01.q1"): PASS, FAIL with expected vs actual and a
    hint, or "not implemented yet" while its body still raises NotImplementedError."""
    if os.environ.get(GRADING_ENV) == "1":
        print(f"{qid}: check skipped while grading")
        return
    print(run_check(qid, function, seed=seed).message)
