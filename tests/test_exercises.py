"""The exercise notebooks and their in-notebook `check`: solutions pass, stubs say "not implemented yet",
wrong and hard-coded answers fail with expected vs actual."""

from __future__ import annotations

import json
import random
import re
import runpy
from pathlib import Path

import pytest

from minigpt.exercises import EXERCISES, check, run_check
from minigpt.exercises.spec import build_case

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = [(e.id, q.id) for e in EXERCISES.values() for q in e.questions]


def solution_file(eid: str) -> Path:
    (path,) = (ROOT / "exercises" / "solutions").glob(f"{eid}_*.py")
    return path


def solutions(eid: str) -> dict:
    return runpy.run_path(str(solution_file(eid)))


def notebook(eid: str) -> dict:
    return json.loads((ROOT / "exercises" / EXERCISES[eid].notebook).read_text(encoding="utf-8"))


def tagged(nb: dict, prefix: str) -> dict[str, dict]:
    cells = {}
    for cell in nb["cells"]:
        for tag in cell.get("metadata", {}).get("tags", []):
            if tag.startswith(prefix):
                cells[tag[len(prefix):]] = cell
    return cells


@pytest.mark.parametrize("eid,qid", QUESTIONS)
def test_reference_solution_passes(eid: str, qid: str) -> None:
    fn = solutions(eid)[EXERCISES[eid].question(qid).function]
    for seed in (0, 1):
        result = run_check(f"{eid}.{qid}", fn, seed=seed)
        assert result.status == "pass", result.message


@pytest.mark.parametrize("eid,qid", QUESTIONS)
def test_hard_coded_answer_fails(eid: str, qid: str) -> None:
    q = EXERCISES[eid].question(qid)
    fn = solutions(eid)[q.function]
    answer = fn(**build_case(q.cases(random.Random(0))[0]))  # right for one input, returned for every input
    result = run_check(f"{eid}.{qid}", lambda **kwargs: answer, seed=1)
    assert result.status == "fail", result.message
    assert "hint:" in result.message and f"seed={result.seed}" in result.message


def test_stub_reports_not_implemented(capsys: pytest.CaptureFixture[str]) -> None:
    def prefill_flops(L, P, d):
        raise NotImplementedError

    check("ex01.q1", prefill_flops)
    assert capsys.readouterr().out == "ex01.q1 prefill_flops: not implemented yet\n"


def test_wrong_answer_shows_expected_and_actual(capsys: pytest.CaptureFixture[str]) -> None:
    def prefill_flops(L, P, d):
        return 12 * L * P * d**2  # the seed's "393 K" mistake: attention term left out

    check("ex01.q1", prefill_flops, seed=3)
    out = capsys.readouterr().out
    assert out.startswith("FAIL ex01.q1 prefill_flops: prefill_flops(L=")
    expected, got = re.search(r"expected ([\d,]+), got ([\d,]+)", out).groups()
    assert expected != got
    assert "hint: seed convention" in out


def test_wrong_tensor_answer_names_the_index() -> None:
    def attend(q, k, v):
        return q  # right shape, wrong values

    result = run_check("ex06.q2", attend, seed=0)
    assert result.status == "fail" and "values differ: at index" in result.message


def test_pass_message_and_fresh_seeds() -> None:
    fn = solutions("ex02")["kv_bytes_per_token"]
    a, b = run_check("ex02.q1", fn), run_check("ex02.q1", fn)
    assert a.status == b.status == "pass"
    assert a.message == "PASS ex02.q1 kv_bytes_per_token: 8 random cases agree with the package"
    assert a.seed != b.seed  # new inputs on every call


def test_check_is_inert_while_grading(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MINIGPT_GRADING", "1")
    check("ex01.q1", lambda **kw: 0)
    assert capsys.readouterr().out == "ex01.q1: check skipped while grading\n"


@pytest.mark.parametrize("eid", sorted(EXERCISES))
def test_notebook_structure(eid: str) -> None:
    """One stub cell and one check cell per question; committed outputs say "not implemented yet";
    the solution file has a block for every stub, defining the same function."""
    nb, ex = notebook(eid), EXERCISES[eid]
    stubs, checks = tagged(nb, "solution:"), tagged(nb, "check:")
    blocks = re.findall(r"^# %% solution:(q\d+)$", solution_file(eid).read_text(encoding="utf-8"), re.M)
    assert sorted(stubs) == sorted(checks) == sorted(blocks) == sorted(q.id for q in ex.questions)
    assert len(ex.questions) >= 4
    for q in ex.questions:
        stub = "".join(stubs[q.id]["source"])
        assert f"def {q.function}(" in stub and "raise NotImplementedError" in stub
        assert "".join(checks[q.id]["source"]) == f'check("{eid}.{q.id}", {q.function})'
        text = "".join("".join(o.get("text", "")) for o in checks[q.id]["outputs"])
        assert text == f"{eid}.{q.id} {q.function}: not implemented yet\n"
