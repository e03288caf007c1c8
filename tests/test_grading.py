"""The instructor's grader: reference solutions score 100 %, blank notebooks 0 %, and each kind of broken or
hostile submission (tests/data/submissions/, graded as Exercise 1) gets exactly the expected score and reason.

Every graded notebook runs in a child process that imports torch (a few seconds each), so the hostile
fixtures use a 2 s limit per cell and per question, and submissions are graded two at a time.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from minigpt.exercises import EXERCISES
from minigpt.grading.__main__ import main as grading_main
from minigpt.grading.child import is_solutions_path
from minigpt.grading.grader import PACKAGE_DIR, grade_folder
from minigpt.grading.notebook_code import CorruptNotebook, cells_to_run, read_code_cells, to_python

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "data" / "submissions"


def solution_blocks(eid: str) -> dict[str, str]:
    (path,) = (ROOT / "exercises" / "solutions").glob(f"{eid}_*.py")
    text = path.read_text(encoding="utf-8")
    pattern = r"^# %% solution:(q\d+)\n(.*?)(?=^# %%|\Z)"
    return {m[1]: m[2].strip() + "\n" for m in re.finditer(pattern, text, re.S | re.M)}


def build_submission(eid: str, dest: Path) -> None:
    """The student notebook with every `solution:qN` stub cell replaced by the reference solution's block."""
    nb = nbformat.read(ROOT / "exercises" / EXERCISES[eid].notebook, as_version=4)
    blocks = solution_blocks(eid)
    for cell in nb.cells:
        for tag in cell.metadata.get("tags", []):
            if tag.startswith("solution:"):
                cell.source = blocks[tag.removeprefix("solution:")]
    nbformat.write(nb, dest)


def details(out: Path) -> dict[str, dict[str, tuple[float, str]]]:
    rows: dict[str, dict[str, tuple[float, str]]] = {}
    with open(out / "details.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            rows.setdefault(row["submission"], {})[row["question"]] = (float(row["score"]), row["output"])
    return rows


@pytest.mark.parametrize("eid", sorted(EXERCISES))
def test_reference_scores_full_and_blank_scores_zero(eid: str, tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    build_submission(eid, subs / "reference.ipynb")
    shutil.copy(ROOT / "exercises" / EXERCISES[eid].notebook, subs / "blank.ipynb")
    results = dict(grade_folder(eid, subs, tmp_path / "out", timeout=30, jobs=2, echo=False))
    ref, blank = results["reference"], results["blank"]
    assert ref.score == ref.max_score == len(EXERCISES[eid].questions), [t.output for t in ref.tests]
    assert blank.score == 0
    assert all("not implemented" in t.output for t in blank.tests)


# Per fixture: the questions that score 1 (all others 0) and a phrase each zero's reason must contain.
HOSTILE = {
    "corrupted": ({}, {q: "corrupted notebook" for q in ("q1", "q2", "q3", "q4", "q5")}),
    "syntax_error": ({"q1", "q3"}, {"q2": "SyntaxError", "q4": "not defined"}),
    "exception": ({"q1", "q3"}, {"q2": "ZeroDivisionError", "q4": "not defined"}),
    "infinite_loop": ({"q1", "q4"}, {"q2": "timed out after 2 s", "q3": "killed", "q5": "not defined"}),
    "sys_exit": ({"q1", "q4"}, {"q2": "sys.exit()", "q3": "called sys.exit(1)", "q5": "exited early"}),
    "missing_function": ({"q2"}, {"q1": "function prefill_flops not defined"}),
    "output_flood": ({"q1", "q3"}, {"q2": "output flood"}),
    "read_solutions": ({"q1", "q3"}, {"q2": "attempted to read the reference solutions"}),
    "read_solutions_toplevel": ({}, {q: "attempted to read the reference solutions" for q in ("q1", "q2", "q3")}),
    "overwrite_checks": ({"q2"}, {"q1": "expected"}),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    protected = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in PACKAGE_DIR.rglob("*.py")}
    out = tmp_path_factory.mktemp("hostile")
    grade_folder("ex01", FIXTURES, out, timeout=2, seed=7, jobs=2, echo=False)
    changed = [str(p) for p, h in protected.items() if hashlib.sha256(p.read_bytes()).hexdigest() != h]
    return out, {"changed": ", ".join(changed)}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_submission_gets_expected_score(name: str, hostile: tuple[Path, dict[str, str]]) -> None:
    out, _ = hostile
    passing, reasons = HOSTILE[name]
    rows = details(out)[name]
    assert sorted(rows) == ["q1", "q2", "q3", "q4", "q5"]
    for qid, (score, output) in rows.items():
        assert score == (1.0 if qid in passing else 0.0), (qid, output)
        if qid in reasons:
            assert reasons[qid] in output, (qid, output)
    results = json.loads((out / "results" / name / "results.json").read_text(encoding="utf-8"))
    assert results["score"] == len(passing) and results["max_score"] == 5
    assert [t["score"] for t in results["tests"]] == [1.0 if q in passing else 0.0 for q in sorted(rows)]
    assert all({"name", "score", "max_score", "output"} <= set(t) for t in results["tests"])


def test_hostile_run_leaves_package_and_tables_intact(hostile: tuple[Path, dict[str, str]]) -> None:
    out, info = hostile
    assert info["changed"] == "", f"the grading run modified {info['changed']}"
    with open(out / "scores.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["submission", "q1", "q2", "q3", "q4", "q5", "score", "max_score"]
    assert sorted(r[0] for r in rows[1:]) == sorted(HOSTILE)
    assert len((out / "progress.jsonl").read_text(encoding="utf-8").splitlines()) == len(HOSTILE)
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["seed"] == 7
    log = (out / "logs" / "output_flood.txt").read_bytes()
    assert len(log) < 300_000 and b"output truncated" in log


def test_notebook_reading_skips_setup_and_checks_and_transforms_magics() -> None:
    cells = read_code_cells(FIXTURES / "syntax_error.ipynb")
    run = cells_to_run(cells)
    assert len(run) == len(cells) - 1  # the setup cell
    assert "get_ipython()" in run[-1].source and "%time" not in run[-1].source
    assert to_python("x = 1\n") == "x = 1\n"
    student = read_code_cells(ROOT / "exercises" / EXERCISES["ex01"].notebook)
    assert not any("check(" in c.source for c in cells_to_run(student))
    with pytest.raises(CorruptNotebook):
        read_code_cells(FIXTURES / "corrupted.ipynb")


def test_solutions_paths_are_recognised() -> None:
    solutions = [str(ROOT / "exercises" / "solutions")]
    assert is_solutions_path(str(ROOT / "exercises" / "solutions" / "ex01_prefill_vs_decode.py"), solutions)
    assert is_solutions_path("/elsewhere/copy/exercises/solutions/x.py", solutions)
    assert not is_solutions_path(str(ROOT / "exercises" / "ex01_prefill_vs_decode.ipynb"), solutions)


def test_cli_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as err:
        grading_main(["--exercise", "ex99", "--submissions", str(tmp_path), "--out", str(tmp_path / "o")])
    assert err.value.code == 2
    with pytest.raises(SystemExit):
        grading_main(["--exercise", "ex01", "--submissions", str(tmp_path / "missing"), "--out", str(tmp_path)])
