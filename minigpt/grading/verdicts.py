"""What the student reads about one question or one run: outputs compared with the package's without showing an
expected value (`_compare`), why a run ended (`_exit_reason`), the static review's findings as the child listed
them (`_findings`), and the markers the grader decides from in any language (`TIMED_OUT`, `NOT_DEFINED`).
"""

from __future__ import annotations

from typing import Any

from minigpt.exercises.spec import Question, describe_call
from minigpt.exercises.wire import MESSAGES as WIRE_MESSAGES
from minigpt.exercises.wire import conforms
from minigpt.exercises.wire_shapes import is_scalar, kind_of
from minigpt.exercises.work import valid_work
from minigpt.grading.event_order import ChildRun
from minigpt.grading.feedback import strip_controls
from minigpt.grading.fingerprints import copied_from
from minigpt.grading.review import Finding
from minigpt.i18n import N_, _, fmt_num, translate_known

TAMPERED_REASON = N_("stopped: the notebook wrote to the grader's channel (events out of order or oversized)")
# The words that mark a verdict as a timeout or a missing function, in English and in the current language (the
# translations of the messages that hold them must hold their translation: tests/test_feedback_es.py checks it).
TIMED_OUT = N_("timed out")
NOT_DEFINED = N_("not defined")


def _says(message: str, words: str) -> bool:
    """Whether `message` holds `words` (a marker: TIMED_OUT, NOT_DEFINED) in English or in the current language."""
    return words in message or _(words) in message


CATEGORIES = ("answer", "runtime", "tampering")  # the child's; the parent adds "copy" (`folder.copies_of`)


def _compare(q: Question, cases: list[dict], expected: list[Any], outputs: Any,
             work: Any = None) -> tuple[bool, str]:
    """Whether the outputs agree and, for a question about a method (`Question.method`), whether each case's
    `work` (as the child measured it, `minigpt.exercises.work`) is the method's; the message names the first
    failing case's inputs, never its expected value."""
    if type(outputs) is not list or len(outputs) != len(expected):
        return False, _("the grader received no usable output")
    if q.method is not None and (type(work) is not list or len(work) != len(cases)
                                 or not all(valid_work(w) for w in work)):
        return False, _("the grader received no usable output")
    for i, (case, e, a) in enumerate(zip(cases, expected, outputs, strict=True)):
        where = _("case {i}/{n}: {call}").format(i=i + 1, n=len(cases), call=describe_call(q.function, case))
        problem = conforms(a, e)  # bounded by the expected answer: nothing larger is read into an array
        if problem and (a is None) != (e is None):  # None for a value, or a value for None (`int | None`,
            problem = None  # `tensor | None` answers): a wrong value, said as one; a shape's words would tell
            # the student which of the two the hidden answer is (the comparison reads only the expected's size)
        if problem and is_scalar(e):  # "expected a number": what the question's signature says already
            return False, _("{problem}, in {where}").format(problem=translate_known(problem, WIRE_MESSAGES),
                                                            where=where)
        if problem:  # its wording would hold the hidden answer's length or shape: only the student's is shown
            return False, _("the output does not have the answer's shape (you returned {kind}; check() in the "
                            "notebook shows the expected shape on fresh cases), in {where}").format(
                where=where, kind=translate_known(kind_of(a), WIRE_MESSAGES))
        try:
            problem = q.compare(e, a)
        except Exception as err:  # noqa: BLE001 - a malformed output must not crash the grader
            problem = f"the output could not be compared ({type(err).__name__})"
        if problem:
            return False, _("not the package's value (the grader does not show expected values; check() in the "
                            "notebook shows them on fresh cases), in {where}").format(where=where)
        method = q.method(case, work[i]) if q.method is not None else None
        if method:
            return False, _("{problem}, in {where}").format(problem=_(method), where=where)
    return True, _("{n} random cases agree with the package").format(n=len(cases))


def _exit_reason(run: ChildRun, timeout: float, budget: float, memory_bytes: int) -> str:
    if run.ended == "deadline":
        return _(BUDGET_USED).format(seconds=fmt_num(budget, "g"))
    if run.out_of_memory:
        return _("ran out of memory (the sandbox may use {n} MiB in all, {tmp} and {shm} included)").format(
            n=memory_bytes // 2**20, tmp="/tmp", shm="/dev/shm")
    if run.ended == "timeout" and run.flooded:
        return _("output flood: the notebook kept printing until it was killed")
    if run.ended == "timeout":
        return _("timed out after {seconds} s (the process was killed)").format(seconds=fmt_num(timeout, "g"))
    if run.ended == "internal":
        return _("the sandbox could not be started; please report it")
    return _("the process exited early (exit code {code})").format(code=run.returncode)


BUDGET_USED = N_("stopped: the submission used up its time budget ({seconds} s)")


def _findings(event: dict) -> list[Finding]:
    """The review's findings as the child listed them (before any student code ran), validated and cleaned."""
    found = []
    items = event.get("findings")
    for item in items[:200] if type(items) is list else []:
        if not (type(item) is list and len(item) == 4 and type(item[0]) is int and type(item[1]) is int
                and type(item[3]) is str):
            continue
        if item[2] in CATEGORIES:
            found.append(Finding(item[0], item[1], item[2], strip_controls(item[3])[:80]))
        elif item[2] == "fingerprint" and (name := copied_from(item[3])) is not None:
            found.append(Finding(item[0], item[1], "copy", f"a copy of {name}"[:80]))
    return found
