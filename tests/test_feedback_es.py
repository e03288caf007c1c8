"""The graded exercises' feedback in Spanish (``MINIGPT_LANG=es``): check()'s messages, the hints, the comparisons'
problems and the grader's verdicts come from the catalog minigpt/locales/es/LC_MESSAGES/minigpt.po (compiled to the
.mo next to it by scripts/book/grader_messages.py), numbers written the Spanish way; without the variable every message
is the English one, byte for byte; and the verdicts, the seeds and the scores do not depend on the language.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minigpt import i18n
from minigpt.exercises import comparisons, question, run_check
from minigpt.exercises import wire as wire_format
from minigpt.grading import feedback, grader, notebook_code

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "book" / "grader_messages.py"
PO = ROOT / "minigpt" / "locales" / "es" / "LC_MESSAGES" / "minigpt.po"
NNBSP = "\u202f"


@pytest.fixture
def spanish(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(i18n.LANG_ENV, "es")


@pytest.fixture
def english(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)


def spanish_of(msgid: str) -> str:
    """The catalog's translation of `msgid`, read from the .po (not through the code under test)."""
    babel = pytest.importorskip("babel.messages.pofile")
    with open(PO, "rb") as f:
        catalog = babel.read_po(f)
    message = catalog.get(msgid)
    assert message is not None and message.string and not message.fuzzy, msgid
    return message.string


def wrong(value: object):
    return lambda **kwargs: value


def raises(**kwargs: object) -> None:
    raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# (a) the catalog is in step with the code, complete, and compiled


@pytest.mark.source_text  # extracts the messages from the package's source, which a mutation run rewrites
def test_catalog_is_in_step_translated_and_compiled() -> None:
    pytest.importorskip("babel")
    run = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "catalogs in step" in run.stdout


def test_check_fails_on_a_message_the_catalog_lacks() -> None:
    """A message added to the code without its translation is caught (the catalog files are only read here)."""
    pytest.importorskip("babel")
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import grader_messages
    finally:
        sys.path.remove(str(SCRIPT.parent))
    pot = grader_messages.template()
    assert grader_messages.problems("es", pot) == []
    pot.add("a message added to the code, not yet translated", None, [("minigpt/exercises/check.py", 1)])
    found = grader_messages.problems("es", pot)
    assert found == ["in the code, not in the .po: 'a message added to the code, not yet translated'"]


def test_translations_keep_the_fields_and_the_markers() -> None:
    """Every translation names the msgid's fields; the words the grader looks for (a timeout, a missing function)
    are in the translations of the messages that hold them, so its decisions read the same in Spanish."""
    pytest.importorskip("babel")
    timed_out, not_defined = spanish_of(grader.TIMED_OUT), spanish_of(grader.NOT_DEFINED)
    for msgid in ("timed out after {seconds} s", "timed out after {seconds} s (the process was killed)"):
        assert timed_out in spanish_of(msgid)
    assert not_defined in spanish_of("function {function} not defined")


# ---------------------------------------------------------------------------------------------
# (b) a wrong answer in Spanish: the Spanish hint, the same seed, the same verdict


@pytest.mark.parametrize(("qid", "answer", "seed"), [
    ("ex01.q1", wrong(0), 123),
    ("ex16.q1", wrong((1, 0.0)), 5),
    ("ex16.q4", wrong(12345), 5),
    ("ex07.q3", wrong([3, "memory"]), 9),
    ("ex02.q1", wrong("x"), 11),
])
def test_wrong_answer_gets_spanish_feedback_with_the_same_verdict(qid: str, answer, seed: int,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    q = question(qid)[1]
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    english = run_check(qid, answer, seed=seed)
    monkeypatch.setenv(i18n.LANG_ENV, "es")
    spanish = run_check(qid, answer, seed=seed)
    assert spanish.status == english.status == "fail"
    assert spanish.seed == english.seed == seed
    assert spanish.message.startswith(f"FAIL {qid} {q.function}: ")  # the token the notebooks and tests read
    assert f"  pista: {spanish_of(q.hint)}\n" in spanish.message
    assert q.hint not in spanish.message and "hint:" not in spanish.message
    replay = f"check({qid!r}, {q.function}, seed={seed})"  # copy-pasteable: the seed's digits untouched
    assert f"  (repite este caso con {replay})" in spanish.message and replay in english.message
    assert spanish.message.splitlines()[0] == english.message.splitlines()[0]  # the call: code, not translated


def test_spanish_numbers_in_ex16(spanish: None) -> None:
    message = run_check("ex16.q1", wrong((1, 0.0)), seed=5).message
    assert "la caché entera en un mensaje: se esperaban 0,00435718 s, se recibió 0.0: una latencia" in message
    message = run_check("ex03.q1", wrong(1234567.891), seed=5).message
    assert "se esperaba 4,3640419, se recibió 1234567.891 (tolerancia: relativa 1e-09)" in message


def test_returned_values_are_echoed_as_python_writes_them(spanish: None) -> None:
    """What the student's function returned is shown as Python writes it, in Spanish too: "se recibió 3.5", not
    "3,5" (a tuple to a Python reader), "12345", not "12 345"; the package's expected values stay Spanish-style.
    The bug: echoing the returned value through fmt_num like the expected one."""
    message = run_check("ex03.q1", wrong(3.5), seed=5).message
    assert "se esperaba 4,3640419, se recibió 3.5 (tolerancia: relativa 1e-09)" in message
    message = run_check("ex16.q1", wrong((0.0, 12345)), seed=5).message
    assert "se recibió 12345: una latencia" in message
    assert comparisons.returned([1.5, 2, [0.25]]) == "[1.5, 2, [0.25]]"
    assert comparisons.close()(2.5, 3.75) == "se esperaba 2,5, se recibió 3.75 (tolerancia: relativa 1e-09)"
    assert comparisons.exact_int(32768, 3.0) == f"se esperaba 32{NNBSP}768, se recibió 3.0"


def test_pass_and_not_implemented_in_spanish(spanish: None) -> None:
    q = question("ex01.q1")[1]
    assert run_check("ex01.q1", q.oracle, seed=1).message == (
        "PASS ex01.q1 prefill_flops: 8 casos aleatorios coinciden con el paquete")
    result = run_check("ex01.q1", raises, seed=1)
    assert (result.status, result.message) == ("not implemented", "ex01.q1 prefill_flops: aún sin implementar")


def test_language_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A notebook sets os.environ and its next check() speaks the new language; an unknown one is English."""
    q = question("ex02.q1")[1]
    for value, word in (("es", "pista: "), ("", "hint: "), ("es_ES.UTF-8", "pista: "), ("fr", "hint: ")):
        monkeypatch.setenv(i18n.LANG_ENV, value)
        assert word in run_check("ex02.q1", wrong(0), seed=3).message, value
    monkeypatch.setenv(i18n.LANG_ENV, "es")
    assert i18n._(q.hint) == spanish_of(q.hint)


def test_fmt_num_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(i18n.LANG_ENV, "es")
    assert i18n.fmt_num(32768) == f"32{NNBSP}768"
    assert i18n.fmt_num(2048) == "2048"
    assert i18n.fmt_num(-1234567) == f"-1{NNBSP}234{NNBSP}567"
    assert i18n.fmt_num(3.95, ".2f") == "3,95"
    assert i18n.fmt_num(12345.5, ".6g") == f"12{NNBSP}345,5"
    assert i18n.fmt_num(1e-9, "g") == "1e-09"
    assert i18n.fmt_num(2.5e-5, ".6g") == "2,5e-05"
    monkeypatch.delenv(i18n.LANG_ENV)
    assert (i18n.fmt_num(32768), i18n.fmt_num(3.95, ".2f"), i18n.fmt_num(2048)) == ("32,768", "3.95", "2,048")


def test_child_messages_are_recognised_and_translated(spanish: None) -> None:
    """The sandbox's wire format and notebook parser speak English; the grader translates what they send."""
    known = i18n.translate_known
    assert known("expected a sequence of 3 values, got a sequence of 2 values", wire_format.MESSAGES) == (
        "se esperaba una secuencia de 3 valores, se recibió una secuencia de 2 valores")
    assert known("expected a sequence of 3 values, got 2", wire_format.MESSAGES) == (
        "se esperaba una secuencia de 3 valores, se recibieron 2")
    assert known("the notebook has more than 400 code cells", notebook_code.MESSAGES) == (
        "el notebook tiene más de 400 celdas de código")
    assert known("assignment destination is read-only", wire_format.MESSAGES) == (
        "assignment destination is read-only")  # not one of ours: left as it is


# ---------------------------------------------------------------------------------------------
# (c) without MINIGPT_LANG: the English messages, byte for byte as before the catalog


def test_english_messages_are_unchanged(english: None) -> None:
    assert run_check("ex01.q1", wrong(0), seed=1).message == (
        "FAIL ex01.q1 prefill_flops: prefill_flops(L=84, P=1102, d=6224)\n"
        "  expected 44,300,805,394,944, got 0\n"
        "  hint: seed convention (1 FLOP per multiply-add): 12·L·P·d² for the matrices plus 2·L·P²·d for the "
        "attention scores and the weighted sum of values.\n"
        "  (replay this case with check('ex01.q1', prefill_flops, seed=1))")
    assert run_check("ex16.q4", wrong(0), seed=1).message == (
        "FAIL ex16.q4 receive_kv: receive_kv(pools=tensor[2, 2, 8, 2, 2, 2], free_blocks=[7, 5, 3, 1, 0, 4, 6], "
        "kv=tensor[2, 2, 2, 5, 2])\n"
        "  expected a tuple (table, pools), got 0\n"
        "  hint: take the first ⌈P / b⌉ blocks of the free list, in its order: they are the new block table. Token t "
        "of the payload goes to row t % b of block table[t // b], for every layer and K/V head, keys into pools[0] "
        "and values into pools[1]; every other row of the pools stays as it was\n"
        "  (replay this case with check('ex16.q4', receive_kv, seed=1))")

    def fails(**kwargs: object) -> None:
        raise ValueError("bad value 12345")

    assert run_check("ex02.q1", fails, seed=1).message == (
        "FAIL ex02.q1 kv_bytes_per_token: kv_bytes_per_token(L=1, H_kv=1, d_h=64, s=1) raised ValueError: bad "
        "value 12345\n  hint: Eq. (2.1): one key and one value (the 2) per layer per KV head, each d_h values of s "
        "bytes.")
    assert run_check("ex02.q1", raises, seed=1).message == "ex02.q1 kv_bytes_per_token: not implemented yet"
    assert feedback.describe({"kind": "timeout"}, 2.0) == "timed out after 2 s"
    assert feedback.describe({"kind": "syntax", "message": "invalid syntax", "line": 4}, 2.0) == (
        "SyntaxError: invalid syntax (line 4)")


# ---------------------------------------------------------------------------------------------
# (d) the grader's descriptions in Spanish


def test_grader_describes_errors_in_spanish(spanish: None) -> None:
    assert feedback.describe({"kind": "timeout"}, 2.0) == "tiempo agotado tras 2 s"
    assert feedback.describe({"kind": "timeout"}, 2.5) == "tiempo agotado tras 2,5 s"
    assert feedback.describe({"kind": "syntax", "message": "invalid syntax", "line": 4}, 2.0) == (
        "SyntaxError: invalid syntax (línea 4)")
    assert feedback.describe({"kind": "syntax", "message": "invalid syntax"}, 2.0) == "SyntaxError: invalid syntax"
    assert feedback.describe({"kind": "exit", "code": 3}, 2.0) == "llamó a sys.exit(3)"
    assert feedback.describe({"kind": "not_implemented"}, 2.0) == (
        "sin implementar (el esqueleto aún lanza NotImplementedError)")
    assert feedback.describe({"kind": "unsupported", "message": "returned a str, expected a number, bool, list or "
                              "tensor"}, 2.0) == "devolvió un str; se esperaba un número, bool, lista o tensor"
    assert feedback.describe("garbage", 2.0) == "falló (sin una descripción utilizable)"


def test_grader_comparison_in_spanish_shows_no_expected_value(spanish: None) -> None:
    prepared = grader.prepare("ex01", seed=4)
    q = prepared.exercise.questions[0]
    cases, expected = prepared.cases[q.id], prepared.expected[q.id]
    ok, message = grader._compare(q, cases, expected, [0] * len(expected))
    assert not ok and message.startswith("no es el valor del paquete") and "en caso 1/8: prefill_flops(" in message
    assert str(expected[0]) not in message
    assert grader._compare(q, cases, expected, expected) == (True, "8 casos aleatorios coinciden con el paquete")
    ok, message = grader._compare(q, cases, expected, [[1, 2]] * len(expected))
    assert not ok and message.startswith("se esperaba un número, se recibió una secuencia de 2 valores, en caso 1/")


# The fixtures of tests/test_grading.py graded in Spanish: the same scores, the reasons in Spanish.
SPANISH = {
    "corrupted": ({}, {q: "notebook corrupto" for q in ("q1", "q2", "q3", "q4", "q5")}),
    "syntax_error": ({"q1", "q3"}, {"q2": "SyntaxError", "q4": "no definida (errores al ejecutar el notebook: celda"}),
    "infinite_loop": ({"q1", "q4"}, {"q2": "tiempo agotado tras 2 s", "q3": "se mató el proceso",
                                     "q5": "no definida"}),
    "missing_function": ({"q2"}, {"q1": "función prefill_flops no definida"}),
    "output_flood": ({"q1", "q3"}, {"q2": "avalancha de salida"}),
    "leaky_messages": ({}, {"q3": "se esperaba un número"}),
}


@pytest.mark.sandbox
def test_grading_in_spanish_gives_the_same_scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from minigpt.grading.folder import grade_folder

    monkeypatch.setenv(i18n.LANG_ENV, "es")
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in SPANISH:
        shutil.copy(ROOT / "tests" / "data" / "submissions" / f"{name}.ipynb", subs)
    results = dict(grade_folder("ex01", subs, tmp_path / "out", timeout=2, seed=7, jobs=2, echo=False, budget=60))
    for name, (passed, reasons) in SPANISH.items():
        tests = {t.name.split(":")[0]: t for t in results[name].tests}
        assert {qid for qid, t in tests.items() if t.score == t.max_score} == set(passed), name
        for qid, phrase in reasons.items():
            assert tests[qid].score == 0 and phrase in tests[qid].output, (name, qid, tests[qid].output)
    assert os.environ[i18n.LANG_ENV] == "es"


def test_grader_summary_line_and_kernel_note_in_spanish(monkeypatch: pytest.MonkeyPatch) -> None:
    """The grader's last console line and the note next to live widgets speak MINIGPT_LANG too. The bugs: a
    hard-coded English f-string ("graded 1 submission(s)"), a note that never goes through the catalog."""
    from minigpt.book.notebook import KERNEL_NOTE, kernel_note
    from minigpt.grading.__main__ import done_line

    scores = Path("results") / "scores.csv"
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    assert done_line(1, scores) == f"graded 1 submission; scores in {scores}"
    assert done_line(2, scores) == f"graded 2 submissions; scores in {scores}"
    assert KERNEL_NOTE in kernel_note().data
    monkeypatch.setenv(i18n.LANG_ENV, "es")
    assert done_line(1, scores) == f"1 entrega calificada; puntuaciones en {scores}"
    assert done_line(12345, scores) == f"12{NNBSP}345 entregas calificadas; puntuaciones en {scores}"
    note = kernel_note().data
    assert spanish_of(KERNEL_NOTE) in note and KERNEL_NOTE not in note
