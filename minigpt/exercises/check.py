"""The student-side `check`: run a function on fresh random inputs and compare it with the package.

Each call draws new inputs (a new seed every call, printed on failure so the case can be replayed
with ``check(..., seed=...)``), so only a function that computes the answer passes; a hard-coded
number fails. This is a learning aid that a notebook can fool (redefine it, patch the package); the
instructor's grader (`minigpt.grading`) does not use it: it runs the functions in a sandbox without
the answers and compares in its own process, so nothing a notebook does changes the grade.

The messages are in the language of ``MINIGPT_LANG`` when `check` runs (``es``: Spanish, from the catalog of
`minigpt.i18n`; unset: English); the PASS / FAIL tokens, the call and the replay line's code stay as they are.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from minigpt.exercises import wire
from minigpt.exercises.registry import question
from minigpt.exercises.spec import UnsupportedOutput, build_case, describe_call, encode
from minigpt.exercises.work import measured
from minigpt.i18n import _, translate_known

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
    q = question(qid)[1]
    label = f"{qid} {q.function}"
    seed = random.SystemRandom().getrandbits(32) if seed is None else seed
    if not callable(function):
        return CheckResult("fail", _("FAIL {label}: expected a function, got {type}").format(
            label=label, type=type(function).__name__), seed)
    hint = _("hint: {hint}")
    cases = q.cases(random.Random(seed))
    for i, case in enumerate(cases):
        call = describe_call(q.function, case)
        try:
            if q.method is not None:  # a question about the method: the work it did counts too
                value, done = measured(function, build_case(case))
            else:
                value = function(**build_case(case))
            actual = encode(value)
        except NotImplementedError:
            if i == 0:
                return CheckResult("not implemented", _("{label}: not implemented yet").format(label=label), seed)
            return CheckResult("fail", _("FAIL {label}: {call} raised NotImplementedError").format(
                label=label, call=call), seed)
        except UnsupportedOutput as err:
            text = f"FAIL {label}: {call} {translate_known(str(err), wire.MESSAGES)}"
            return CheckResult("fail", f"{text}\n  {hint.format(hint=_(q.hint))}", seed)
        except Exception as err:  # noqa: BLE001 - the student's code may raise anything
            text = _("FAIL {label}: {call} raised {type}: {error}").format(
                label=label, call=call, type=type(err).__name__, error=translate_known(str(err), wire.MESSAGES))
            return CheckResult("fail", f"{text}\n  {hint.format(hint=_(q.hint))}", seed)
        problem = q.compare(q.expected(case), actual)
        if not problem and q.method is not None and (method := q.method(case, done)):
            problem = _(method)
        if problem:
            replay = _("(replay this case with {call})").format(call=f"check({qid!r}, {q.function}, seed={seed})")
            text = f"FAIL {label}: {call}\n  {problem}\n  {hint.format(hint=_(q.hint))}\n  {replay}"
            return CheckResult("fail", text, seed)
    return CheckResult("pass", _("PASS {label}: {n} random cases agree with the package").format(
        label=label, n=len(cases)), seed)


def check(qid: str, function: Callable[..., Any], *, seed: int | None = None) -> None:
    """Print whether `function` answers question `qid` ("ex01.q1"): PASS, FAIL with expected vs actual and a
    hint, or "not implemented yet" while its body still raises NotImplementedError."""
    if os.environ.get(GRADING_ENV) == "1":
        print(_("{qid}: check skipped while grading").format(qid=qid))
        return
    print(run_check(qid, function, seed=seed).message)
