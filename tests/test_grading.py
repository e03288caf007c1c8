"""The instructor's grader: reference solutions score 100 %, blank handouts 0 % (their stubs only raise),
and each kind of broken or hostile submission (tests/data/submissions/, graded as Exercise 1) gets exactly
the expected score and reason, with nothing outside the output folder changed (the checkout, /tmp, no process
left) and no path, environment or seed in the student-visible feedback.

Every graded notebook runs in its own bubblewrap sandbox that imports torch (a second or two each), so the
hostile fixtures use a 2 s limit per cell and per question, and submissions are graded two at a time.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from grading_processes import adopting, kill, live_descendants

from minigpt import costs
from minigpt.exercises import EXERCISES
from minigpt.grading import feedback, sandbox, staging
from minigpt.grading.__main__ import main as grading_main
from minigpt.grading.folder import UnsafeRefused, grade_folder
from minigpt.grading.notebook_code import CorruptNotebook, TooLarge, parse_notebook, to_python
from minigpt.grading.review import review_cell
from minigpt.grading.staging import PACKAGE_DIR

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "data" / "submissions"
pytestmark = pytest.mark.sandbox  # every test here grades, or stages, a sandboxed run (tests/conftest.py)


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
def test_reference_scores_full(eid: str, tmp_path: Path) -> None:
    """The handout with every stub cell replaced by the reference solution's block scores full marks in the
    sandbox: every cell the handout provides (its imports, its set-up) runs there too."""
    subs = tmp_path / "subs"
    subs.mkdir()
    build_submission(eid, subs / "reference.ipynb")
    ((_, ref),) = grade_folder(eid, subs, tmp_path / "out", timeout=30, echo=False)
    assert ref.score == ref.max_score == len(EXERCISES[eid].questions), [t.output for t in ref.tests]


def _stub_bodies(eid: str) -> dict[str, list[ast.stmt]]:
    """Each function the handout of `eid` defines, by name: its body without the docstring, and "twice" when
    two cells define it (the second would replace the stub)."""
    found: dict[str, list[ast.stmt]] = {}
    nb = nbformat.read(ROOT / "exercises" / EXERCISES[eid].notebook, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(to_python(cell.source) or "")):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
                found[node.name] = ["twice"] if node.name in found else body
    return found


@pytest.mark.parametrize("eid", sorted(EXERCISES))
def test_every_stub_of_the_handout_only_raises(eid: str) -> None:
    """What makes a blank handout score zero in every question (`test_a_blank_handout_scores_zero` grades one
    in the sandbox): each question's function is defined once, in its `solution:` cell, and does nothing but
    raise NotImplementedError, so no stub can return a value that happens to be the answer."""
    bodies = _stub_bodies(eid)
    for q in EXERCISES[eid].questions:
        body = bodies.get(q.function)
        assert body is not None, f"{eid} {q.id}: the handout does not define {q.function}"
        assert len(body) == 1 and isinstance(body[0], ast.Raise), f"{eid} {q.id}: {q.function} does more than raise"
        exc = body[0].exc
        name = exc.func if isinstance(exc, ast.Call) else exc
        assert isinstance(name, ast.Name) and name.id == "NotImplementedError", f"{eid} {q.id}: {ast.dump(exc)}"


def test_the_stub_check_finds_a_stub_that_returns(monkeypatch) -> None:
    """The check above fails on a handout whose stub returns 0 (an answer a question could expect), raises
    something else, or is defined again in a later cell."""
    real = nbformat.read(ROOT / "exercises" / EXERCISES["ex01"].notebook, as_version=4)
    again = "\n\ndef prefill_flops(L, P, d):\n    return 0\n"
    for old, edit in (("raise NotImplementedError", "return 0"), ("raise NotImplementedError", "raise ValueError"),
                      (None, again)):
        nb = nbformat.from_dict(json.loads(json.dumps(real)))
        cells = [c for c in nb.cells if c.cell_type == "code"]
        stub = next(c for c in cells if "solution:q1" in c.metadata.get("tags", []))
        if old is None:
            cells[-1].source += edit
        else:
            stub.source = stub.source.replace(old, edit)
        monkeypatch.setattr(nbformat, "read", lambda *a, nb=nb, **k: nb)
        with pytest.raises(AssertionError, match="ex01 q1"):
            test_every_stub_of_the_handout_only_raises("ex01")


def test_a_blank_handout_scores_zero(tmp_path: Path) -> None:
    """The blank handout of the exercise with the most questions, graded in the sandbox: zero in each, each
    reason "not implemented" (the grader reads the stub's NotImplementedError as such)."""
    eid = max(sorted(EXERCISES), key=lambda e: len(EXERCISES[e].questions))
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(ROOT / "exercises" / EXERCISES[eid].notebook, subs / "blank.ipynb")
    ((_, blank),) = grade_folder(eid, subs, tmp_path / "out", timeout=30, echo=False)
    assert blank.score == 0 and len(blank.tests) == len(EXERCISES[eid].questions)
    assert all("not implemented" in t.output for t in blank.tests), [t.output for t in blank.tests]


# Per fixture: the questions that score 1 (all others 0) and a phrase each zero's reason must contain.
# The attacks are described in scripts/maintenance/make_hostile_fixtures.py (which writes the newer ones).
TAMPERED = "wrote to the grader's channel"
HOSTILE = {
    "corrupted": ({}, {q: "corrupted notebook" for q in ("q1", "q2", "q3", "q4", "q5")}),
    "syntax_error": ({"q1", "q3"}, {"q2": "SyntaxError", "q4": "not defined"}),
    "exception": ({"q1", "q3"}, {"q2": "ZeroDivisionError", "q4": "not defined"}),
    "infinite_loop": ({"q1", "q4"}, {"q2": "timed out after 2 s", "q3": "killed", "q5": "not defined"}),
    "sys_exit": ({"q1", "q4"}, {"q2": "sys.exit()", "q3": "called sys.exit(1)", "q5": "exited early"}),
    "missing_function": ({"q2"}, {"q1": "function prefill_flops not defined"}),
    "output_flood": ({"q1", "q3"}, {"q2": "output flood"}),
    # The solutions are not in the sandbox at all: reading them fails like reading any missing file.
    "read_solutions": ({"q1", "q3"}, {"q2": "FileNotFoundError"}),
    "read_solutions_toplevel": ({"q1", "q2", "q3"}, {"q4": "not defined"}),
    "overwrite_checks": ({"q2"}, {"q1": "expected"}),
    "oracle_call": ({"q4"}, {"q1": "ModuleNotFoundError", "q2": "ImportError", "q3": "ImportError",
                             "q5": "ImportError"}),
    "guard_disabled": ({"q2"}, {"q1": "expected"}),
    "dir_fd": ({"q2", "q3"}, {"q1": "FileNotFoundError"}),
    "sitecustomize": ({"q1", "q3"}, {"q2": "exited early (exit code 3)"}),
    "escaped_daemon": ({"q1"}, {"q2": "not defined"}),
    "kill_parent": ({"q1", "q2"}, {"q3": "not defined"}),
    "endless_heartbeats": ({}, {q: TAMPERED for q in ("q1", "q2", "q3", "q4", "q5")}),
    "other_jobs": ({"q1"}, {"q2": "not defined"}),
    "memory_bomb": ({"q3"}, {"q1": "MemoryError", "q2": "RuntimeError"}),
    "process_bomb": ({"q1"}, {"q2": "not defined"}),
    "disk_fill": ({"q3"}, {"q1": "OSError", "q2": "OSError"}),
    "leaky_messages": ({}, {"q1": "ValueError", "q2": "RuntimeError", "q3": "expected a number"}),
}
MARKERS = ("minigpt-hostile", "--multiprocessing-fork", "minigpt.grading.child")
SKIP = {".venv", "_build", ".pytest_cache", ".ruff_cache", ".hypothesis", "__pycache__", ".ipynb_checkpoints"}


def tree_hash(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder` (caches and the virtualenv left out), by relative path."""
    hashes = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if SKIP & set(rel.parts) or not path.is_file() or path.is_symlink():
            continue
        hashes[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def tmp_entries() -> dict[str, int]:
    """The names in /tmp with their owner's uid."""
    entries = {}
    for path in Path(tempfile.gettempdir()).iterdir():
        try:
            entries[path.name] = path.lstat().st_uid
        except OSError:
            continue
    return entries


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """Grade every fixture as Exercise 1 (2 s limits, two at a time), then check nothing outside `out` moved and no
    process of the run (`grading_processes`: this one's descendants, orphans adopted) is alive, when grade_folder
    returns or after a wait. The grader's temporary folder (its staged runtime) is one of this run's own, so that
    another grader on the machine (another test run's) is never taken for this one."""
    checkout, tmp = tree_hash(ROOT), tmp_entries()
    out = tmp_path_factory.mktemp("hostile") / "out"
    stage = Path(tempfile.mkdtemp(prefix="grading-test-"))
    stage.chmod(0o755)  # bwrap runs as uid 65534, which must reach the staged runtime
    with adopting(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(stage))
        try:
            grade_folder("ex01", FIXTURES, out, timeout=2, seed=7, jobs=2, echo=False, budget=60)
            processes = live_descendants(MARKERS)
            written = tree_hash(out)
            time.sleep(5)  # a daemon that escaped would rewrite the tables now
            processes |= live_descendants(MARKERS)
        finally:
            kill(live_descendants(MARKERS))
    new_tmp = {name: uid for name, uid in tmp_entries().items() if name not in tmp and name != stage.name}
    staged_left = sorted(p.name for p in stage.iterdir())
    shutil.rmtree(stage)
    info = {"out_after_wait": tree_hash(out) == written, "checkout": checkout == tree_hash(ROOT),
            "new_tmp": new_tmp, "staged_left": staged_left, "processes": sorted(processes.values()), "changed": sorted(
                k for k, v in tree_hash(ROOT).items() if checkout.get(k) != v)}
    return out, info


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_submission_gets_expected_score(name: str, hostile: tuple[Path, dict[str, object]]) -> None:
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


def test_hostile_run_changes_nothing_outside_the_output_folder(hostile: tuple[Path, dict[str, object]]) -> None:
    out, info = hostile
    assert info["checkout"], f"the grading run modified {info['changed']}"
    assert info["out_after_wait"], "the output folder changed after the grader returned"
    assert info["processes"] == [], "processes of the grading run outlived it"
    sandbox_user = {name for name, uid in info["new_tmp"].items() if uid == 65534}
    assert sandbox_user == set(), f"the sandbox user wrote into /tmp: {sandbox_user}"
    leftovers = {n for n in info["new_tmp"] if "minigpt-hostile" in n} | set(info["staged_left"])
    assert leftovers == set(), f"left in /tmp: {leftovers}"
    with open(out / "scores.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["submission", "q1", "q2", "q3", "q4", "q5", "score", "max_score"]
    assert sorted(r[0] for r in rows[1:]) == sorted(HOSTILE)
    assert len((out / "progress.jsonl").read_text(encoding="utf-8").splitlines()) == len(HOSTILE)
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["seed"] == 7
    log = (out / "logs" / "output_flood.txt").read_bytes()
    assert len(log) < 300_000 and b"output truncated" in log and b"then the output was closed" in log


def test_visible_feedback_holds_no_paths_environment_or_seed(hostile: tuple[Path, dict[str, object]]) -> None:
    out, _ = hostile
    visible = []
    for path in (out / "results").glob("*/results.json"):
        results = json.loads(path.read_text(encoding="utf-8"))
        visible += [results["output"], *(t["output"] for t in results["tests"])]
    visible += [output for rows in details(out).values() for _, output in rows.values()]
    for text in visible:
        for secret in (str(ROOT), "/sandbox", "/tmp", "/root", "/usr", "3141592653", "seed=7", "LD_LIBRARY_PATH=/"):
            assert secret not in text, (secret, text)
        assert len(text) <= 2000
    leaky = details(out)["leaky_messages"]
    assert len(leaky["q2"][1]) < 200  # a 10**6-character message, cut down
    assert "C.UTF-8" in leaky["q1"][1]  # the message itself is still shown, minus what it must not carry
    assert "expected a number" in leaky["q3"][1]  # a returned string is never echoed


def test_review_lists_references_to_answers_and_tampering(hostile: tuple[Path, dict[str, object]]) -> None:
    out, _ = hostile
    with open(out / "review.csv", newline="", encoding="utf-8") as f:
        rows = [(r["submission"], r["category"], r["reference"]) for r in csv.DictReader(f)]
    assert ("oracle_call", "answer", "from minigpt.exercises.registry import question") in rows
    assert ("oracle_call", "answer", "costs.decode_step_macs") in rows
    assert ("guard_disabled", "tampering", ".get_objects") in rows
    assert ("dir_fd", "tampering", "dir_fd=") in rows
    assert not any(r[0] in ("exception", "missing_function") for r in rows)
    assert review_cell(0, "from minigpt.costs.presets import MODELS\nfrom minigpt.exercises import check\n") == []
    kernels = ("from minigpt.runtime.attention import combine_chunks\n"
               "from minigpt.costs.attention_kernels import H100_SMS\n")
    assert [f.category for f in review_cell(0, kernels)] == ["answer", "answer"]  # Exercise 13's oracles


HOG = """import json, os, signal, sys, time
signal.signal(signal.SIGALRM, signal.SIG_IGN)
frame = sys._getframe()
while 'job' not in frame.f_locals:
    frame = frame.f_back
job = frame.f_locals['job']
me = int(sys._getframe().f_code.co_filename.strip('<>').split()[1])
cells = [index for index, _ in frame.f_locals['cells']]
later = cells[cells.index(me) + 1:]
nxt = {'event': 'cell_start', 'cell': later[0]} if later else {'event': 'q_start', 'q': job['questions'][0]['id']}
for event in ({'event': 'cell_end', 'cell': me, 'error': None}, nxt):
    os.write(int(job['events_fd']), json.dumps(event).encode() + b'\\n')
while True:
    time.sleep(1)
"""


def test_forged_progress_cannot_outlast_the_budget(tmp_path: Path) -> None:
    """A cell that ignores SIGALRM and forges the next valid event every run is cut off at the hard budget."""
    nb = nbformat.read(FIXTURES / "exception.ipynb", as_version=4)
    nb.cells = nb.cells[:3] + [nbformat.v4.new_code_cell(HOG), nbformat.v4.new_code_cell("x = 1"),
                               nbformat.v4.new_code_cell("y = 2")]
    (tmp_path / "subs").mkdir()
    nbformat.write(nb, tmp_path / "subs" / "hog.ipynb")
    ((_, result),) = grade_folder("ex01", tmp_path / "subs", tmp_path / "out", timeout=1, budget=12, echo=False)
    assert result.score == 0
    # A hang guard, not a speed: the budget stops the run at 12 s plus the kill; far past that means it never did.
    assert result.execution_time < 12 + 60, result.execution_time
    assert any("time budget (12 s)" in t.output for t in result.tests), [t.output for t in result.tests]


def test_grader_refuses_without_a_sandbox_unless_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "subs").mkdir()
    build_submission("ex01", tmp_path / "subs" / "reference.ipynb")
    monkeypatch.setattr(sandbox, "BWRAP", "bwrap-not-installed")
    with pytest.raises(UnsafeRefused, match="unsafe-no-sandbox"):
        grade_folder("ex01", tmp_path / "subs", tmp_path / "out", echo=False)
    args = ["--exercise", "ex01", "--submissions", str(tmp_path / "subs"), "--out", str(tmp_path / "out")]
    assert grading_main(args) == 2
    assert "bubblewrap (bwrap) is not installed" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    ((_, ref),) = grade_folder("ex01", tmp_path / "subs", tmp_path / "out", echo=False, unsafe_no_sandbox=True)
    assert ref.score == 5
    assert json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))["sandbox"] is False


def test_staged_package_holds_the_runtime_and_no_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = staging.stage(tmp_path / "stage")
    lib = runtime.lib()
    staged = {p.relative_to(lib).as_posix() for p in lib.rglob("*.py")}
    assert {"minigpt/runtime/model.py", "minigpt/runtime/kv_cache.py", "minigpt/grading/child.py",
            "minigpt/exercises/wire.py", "minigpt/costs/presets.py", "minigpt/exercises/__init__.py",
            *(f"minigpt/exercises/wire_{m}.py" for m in ("messages", "inputs", "encode", "shapes"))} <= staged
    for answer in ("minigpt/costs/flops.py", "minigpt/costs/memory.py", "minigpt/costs/roofline.py",
                   "minigpt/costs/batching.py", "minigpt/measure/sweeps.py", "minigpt/exercises/registry.py",
                   "minigpt/exercises/ex01.py", "minigpt/exercises/spec.py", "minigpt/grading/grader.py"):
        assert answer not in staged
    formulas = {name for name, f in vars(costs).items()
                if callable(f) and str(getattr(f, "__module__", "")).startswith(costs.__name__)}
    assert len(formulas) > 10
    # The parameter count is a formula of minigpt.costs.params (ModelConfig has none), which is not staged.
    assert not (lib / "minigpt" / "costs" / "params.py").exists()
    for path in lib.rglob("*.py"):  # whatever the package's layout, no answer is staged
        text = path.read_text(encoding="utf-8")
        # Same name, not a formula: RequestMeters.decode_tok_s is a measurement (tokens over measured seconds),
        # not Eq. (7.2)'s ceiling.
        delegating = {"meters.py": {"decode_tok_s"}}.get(path.name, set())
        assert not any(f"def {name}(" in text for name in formulas - delegating), path
        if path.name != "review.py":  # the review's list of names to flag, not an oracle
            assert "EXERCISES" not in text and "oracle" not in text, path
    presets = (lib / "minigpt" / "costs" / "presets.py").read_text(encoding="utf-8")
    assert "def " not in presets and "param_count" not in presets and '"Llama-2-7B"' in presets
    sources = [src for src, _ in runtime.binds]
    for forbidden in (ROOT / "exercises", ROOT / ".git", ROOT / "tests", PACKAGE_DIR):
        assert not any(src == forbidden or forbidden in src.parents for src in sources), forbidden
    command = sandbox.bwrap_command(runtime, sandbox.Limits(), lib)
    for flag in ("--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--clearenv"):
        assert flag in command
    assert not {"--bind", "--dev-bind", "--share-net", "--cap-add"} & set(command)  # nothing writable from the host
    assert command[command.index("--uid") + 1] == command[command.index("--gid") + 1] == "65534"
    tmp = next(i for i in range(len(command)) if command[i: i + 2] == ["--tmpfs", "/tmp"])
    assert command[tmp - 2: tmp] == ["--size", str(64 * 2**20)]
    assert ["--remount-ro", "/"] == command[command.index("--chdir") - 2: command.index("--chdir")]
    monkeypatch.setitem(staging.STAND_INS, "leaky.py", lambda: "def f():\n    from minigpt.costs import flops\n")
    with pytest.raises(staging.StagingError, match="leaky.py imports minigpt.costs.flops"):
        staging.stage(tmp_path / "stage2")  # a staged module that would need the formulas is refused


def test_each_set_of_questions_gets_only_the_runtime_its_inputs_need(tmp_path: Path) -> None:
    """Without a model among the inputs, every runtime module is a stub; with one, only model and kv_cache are real
    (generate, meters... stay stubs); formulas only where a question's instructions name them."""
    plain = staging.stage_lib(tmp_path / "plain")
    model = staging.stage_lib(tmp_path / "model", staging.Needs(staging.MODEL_MODULES))
    offered = staging.Needs(formulas=frozenset({"evaluate", "prefill_flops"}))
    formulas = staging.stage_lib(tmp_path / "formulas", offered)
    real = (PACKAGE_DIR / "runtime" / "model.py").read_text(encoding="utf-8")
    for rel in staging.STUBBABLE:
        assert "refuse to run here" in (plain / "minigpt" / rel).read_text(encoding="utf-8"), rel
        stubbed = "refuse to run here" in (model / "minigpt" / rel).read_text(encoding="utf-8")
        assert stubbed == (rel not in ("runtime/model.py", "runtime/kv_cache.py")), rel
    assert (model / "minigpt" / "runtime" / "model.py").read_text(encoding="utf-8") == real
    stub = (plain / "minigpt" / "runtime" / "model.py").read_text(encoding="utf-8")
    assert "def attention(*args, **kwargs):" in stub and "class MiniGPT:" in stub and "softmax" not in stub
    text = (formulas / "minigpt" / "costs" / "__init__.py").read_text(encoding="utf-8")
    assert "from minigpt.costs.shape import evaluate" in text and "decode_flops" not in text
    assert not (plain / "minigpt" / "costs" / "flops.py").exists()



def test_feedback_is_sanitized() -> None:
    text = feedback.sanitize("open /work/x/solutions.py failed; HOME=/root seed 123456789 at 0xdeadbeefcafe "
                             + "y" * 500)
    assert "/work" not in text and "/root" not in text and "123456789" not in text and "0xdeadbeef" not in text
    assert len(text) <= feedback.MESSAGE_CAP
    assert feedback.describe({"kind": "exception", "type": "Evil</b>\n", "message": "ok"}, 2) == "Exception: ok"
    assert feedback.describe({"kind": "exit", "code": 10**9}, 2) == "called sys.exit(999)"
    assert feedback.describe("not a dict", 2) == "failed (no usable description)"


def test_notebook_reading_keeps_every_cell_and_rewrites_only_what_does_not_compile() -> None:
    cells = parse_notebook((FIXTURES / "syntax_error.ipynb").read_bytes())
    sources = [to_python(c.source) for c in cells]
    assert "pass  # grader: magic not run" in sources[0]  # the setup cell runs, its %pip does nothing
    assert to_python("x = 1\n") == "x = 1\n"
    assert to_python('s = """\n%not a magic\n"""\n') == 's = """\n%not a magic\n"""\n'  # compiles: unchanged
    assert to_python("%time y = f(2)\n").strip() == "y = f(2)"
    assert to_python("%timeit -n 10 -r 3 y = f(2)\n").strip() == "y = f(2)"
    assert to_python("%%time\ny = 2\n").strip() == "y = 2"
    assert to_python("%%bash\nls /\n") is None
    assert to_python("files = !ls\n").startswith("files = []")
    with pytest.raises(CorruptNotebook):
        parse_notebook((FIXTURES / "corrupted.ipynb").read_bytes())
    big = json.dumps({"cells": [{"cell_type": "code", "source": "x = 1\n" * 60_000}]}).encode()
    with pytest.raises(TooLarge, match="cell 0 has more than 256 KiB"):
        parse_notebook(big)
    many = json.dumps({"cells": [{"cell_type": "code", "source": "x = 1"}] * 401}).encode()
    with pytest.raises(TooLarge, match="more than 400 code cells"):
        parse_notebook(many)


def test_cli_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as err:
        grading_main(["--exercise", "ex99", "--submissions", str(tmp_path), "--out", str(tmp_path / "o")])
    assert err.value.code == 2
    with pytest.raises(SystemExit):
        grading_main(["--exercise", "ex01", "--submissions", str(tmp_path / "missing"), "--out", str(tmp_path)])
