"""Nothing a submission sends or does harms the grader or a classmate.

Unit tests (no sandbox): the parent's bounds on events (size, numbers, count), answers as plain data checked
against the expected shapes (a lying tensor subclass, an answer far larger than expected), slugs and links,
the seccomp program's system call numbers, terminal escapes.

Sandbox tests: a hostile class graded once as Exercise 1 (each attack next to correct answers, so a verdict
shows what the attack cost), the seccomp filter seen from inside, memory outside the address space,
a fixed budget whatever the cell count, and an honest class graded with and without hostile neighbours.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys
import time
from pathlib import Path

import nbformat
import pytest
import torch
from test_grading import build_submission, details

from minigpt.exercises.wire import conforms, encode
from minigpt.grading import cgroups, seccomp
from minigpt.grading.event_lines import Bounds, _Events, parse_event
from minigpt.grading.feedback import strip_controls
from minigpt.grading.folder import grade_folder, refusal, slugs

# ---------------------------------------------------------------------------------------------
# Unit tests


class _ScriptedEvents:
    """An events reader whose queue hands out (seconds later, event) pairs on a fake clock."""

    def __init__(self, clock: list[float], script: list[tuple[float, dict | None]]) -> None:
        outer = self

        class Q:
            def get(self, timeout: float | None = None):
                delay, event = outer.script.pop(0)
                clock[0] += delay
                return None if event is None else (event, 10)

        self.clock, self.script, self.queue = clock, list(script), Q()


def _run_of(cells: dict[int, float]) -> list[tuple[float, dict | None]]:
    """One run's events: the listing, ready, each cell taking its seconds, done."""
    script: list[tuple[float, dict | None]] = [(1.0, {"event": "cells", "cells": sorted(cells)}),
                                               (2.0, {"event": "ready"})]
    for cell, seconds in sorted(cells.items()):
        script += [(0.0, {"event": "cell_start", "cell": cell}), (seconds, {"event": "cell_end", "cell": cell})]
    return [*script, (0.0, {"event": "done"})]


def test_the_review_lists_what_a_student_added_not_the_handout() -> None:
    """review.csv is the instructor's reading list: the blank handout of every exercise gives it nothing (it
    listed the handout's own imports for every student of ex12, ex14, ex15 and ex16), what the instructions
    give is not a finding, and code run from encoded data is (a zlib+base64 copy of flops.py, exec'd, left
    review.csv empty)."""
    import glob

    from minigpt.exercises import EXERCISES
    from minigpt.grading.grader import offered
    from minigpt.grading.review import review_cell

    for eid, ex in sorted(EXERCISES.items()):
        (path,) = glob.glob(str(Path(__file__).parent.parent / "exercises" / f"{eid}_*.ipynb"))
        cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        given = frozenset(offered(ex.questions))
        assert [f for i, c in enumerate(cells) for f in review_cell(i, c.source, given)] == [], eid
    encoded = "import zlib, base64\nexec(zlib.decompress(base64.b64decode(b'eJwr')))\n"
    assert {f.reference for f in review_cell(0, encoded)} == {
        "import zlib (encoded code?)", "import base64 (encoded code?)", "exec(...) (code run from data)"}
    assert review_cell(0, "from minigpt import costs\nx = costs.evaluate\n", frozenset({"evaluate"})) == []
    assert [f.reference for f in review_cell(0, "from minigpt import costs\nx = costs.prefill_flops\n",
                                             frozenset({"evaluate"}))] == ["costs.prefill_flops"]
    assert review_cell(0, "from minigpt.exercises.ex01 import EXERCISE\n")[0].category == "answer"


def test_copies_are_flagged_for_the_instructor(tmp_path: Path) -> None:
    """Two submissions with the same bytes, and a link to a classmate's file inside the class folder (graded as
    its own before, with nothing in review.csv), are each flagged "copy"; a distinct one is not."""
    from minigpt.grading.folder import copies_of, find_submissions, slugs

    (tmp_path / "ann.ipynb").write_text('{"cells": [1]}')
    (tmp_path / "bob.ipynb").write_text('{"cells": [1]}')
    (tmp_path / "cy.ipynb").write_text('{"cells": [2]}')
    (tmp_path / "dee.ipynb").symlink_to(tmp_path / "cy.ipynb")
    (tmp_path / "eve.ipynb").write_text('{"cells": [3]}')
    paths = find_submissions(tmp_path)
    names, _ = slugs(tmp_path, paths)
    flags = {k: sorted(f.reference for f in v) for k, v in copies_of(tmp_path, paths, names).items()}
    assert flags == {"ann": ["the same bytes as bob"], "bob": ["the same bytes as ann"],
                     "dee": ["a link to cy's file"]}, flags


def test_a_flood_is_capped_once_per_submission_at_the_source(tmp_path: Path) -> None:
    """A notebook that prints without end: the log keeps the submission's first bytes only, all runs together,
    and once the submission's read allowance is spent the parent closes the pipe (the sandbox's next print
    fails) instead of reading on; any later run of it reads at most RUN_READ_BYTES. The bugs it catches: a cap
    per run (237 runs of a flooding notebook wrote 62 MB of logs), and a parent that reads a flood to its end
    (425 GB read and dropped, 40 s of the grader's CPU)."""
    import io

    from minigpt.grading.event_order import RUN_READ_BYTES, Budget
    from minigpt.grading.runner import _Drain

    budget = Budget(deadline=0.0, cap_s=0.0, log_left=1000, read_left=3 * 2**20)
    runs = []
    for _run in range(3):
        pipe = io.BufferedReader(io.BytesIO(b"x" * (16 * 2**20)))
        drain = _Drain(pipe, tmp_path / "log.txt", budget)
        drain.run()
        runs.append((drain.total, drain.stopped, pipe.closed))
    first, second, third = runs
    assert first[1] and first[2] and 3 * 2**20 <= first[0] < 3 * 2**20 + 2**16  # stopped at the allowance
    assert second[0] == third[0] == RUN_READ_BYTES and second[1] and third[1]
    log = (tmp_path / "log.txt").read_text()
    assert log.count("x") == 1000 and log.count("then the output was closed") == 3


def test_a_cell_run_again_is_not_charged_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget covers a notebook's cells once: a second run (another group of questions) of the same cells
    moves the deadline by what each took the first time, never more, and by `cap_s` in all. The bug it
    catches: honest experiment cells counted once per group (ex06 ran its notebook three times and a student
    lost two questions to "used up its time budget"); and the opposite one, a cell that is slower the second
    time given unbounded credit. On a scripted clock: no wall time is measured."""
    from types import SimpleNamespace

    from minigpt.grading import event_order
    from minigpt.grading.event_order import Budget, ChildRun, _follow

    clock = [0.0]
    monkeypatch.setattr(event_order, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    job = {"skip_cells": [], "questions": []}
    budget = Budget(deadline=60.0, cap_s=60.0)
    first = ChildRun()
    _follow(first, _ScriptedEvents(clock, _run_of({0: 10.0, 1: 25.0})), job, budget, timeout=100.0, max_cells=10)
    assert first.ended == "done" and budget.first_s == {0: 10.0, 1: 25.0} and budget.deadline == 60.0
    second = ChildRun()  # starts at t = 38: 22 s left, its cells take 12 + 20 s, within their first times
    _follow(second, _ScriptedEvents(clock, _run_of({0: 12.0, 1: 20.0})), job, budget, timeout=100.0, max_cells=10)
    assert second.ended == "done", second.ended  # charged once, it would have stopped at t = 60
    assert budget.deadline == 60.0 + 10.0 + 20.0 and budget.credited_s == 30.0
    small = Budget(deadline=60.0, cap_s=5.0)
    clock[0] = 0.0
    _follow(ChildRun(), _ScriptedEvents(clock, _run_of({0: 10.0, 1: 25.0})), job, small, timeout=100.0, max_cells=10)
    late = ChildRun()
    _follow(late, _ScriptedEvents(clock, _run_of({0: 10.0, 1: 25.0})), job, small, timeout=100.0, max_cells=10)
    assert late.ended == "deadline" and small.credited_s == 5.0  # the cap holds


class Liar(torch.Tensor):
    """A tensor subclass that reports another shape and other values."""

    @property
    def shape(self) -> torch.Size:  # type: ignore[override]
        return torch.Size([2, 3])

    def tolist(self) -> list:  # type: ignore[override]
        return [[0.0] * 3] * 2


def test_answers_are_plain_data_measured_on_the_data() -> None:
    lie = torch.zeros(5).as_subclass(Liar)
    encoded = encode(lie)
    assert encoded["shape"] == [5] and encoded["$tensor"] == [0.0] * 5  # neither the shape nor tolist is believed
    expected = encode(torch.zeros(2, 3, dtype=torch.float64))
    assert conforms(encoded, expected) == "expected a tensor of shape [2, 3], got shape [5]"
    forged = {"$tensor": [[0.0] * 3], "shape": [2, 3]}  # a claimed shape the data do not have
    assert conforms(forged, expected) == "expected a tensor of shape [2, 3], got another shape"
    assert type(encode(True)) is bool and type(encode(torch.tensor(3))["$tensor"]) is int
    assert conforms(2**70, 5) is not None and conforms(5.0, 5) is None


def test_conforms_is_bounded_by_the_expected_answer() -> None:
    """A 10**6-element answer to a 3-number question is refused after looking at its length only."""
    huge = [[0.0] * 1000 for _ in range(1000)]
    calls = 0

    def count(frame, event, arg) -> None:  # every Python and C call the check makes (not a clock: load-proof)
        nonlocal calls
        calls += event in ("call", "c_call")

    sys.setprofile(count)
    try:
        too_long = conforms(huge, [1, 2, 3])
        other_shape = conforms({"$tensor": huge, "shape": [1000, 1000]}, encode(torch.zeros(3)))
    finally:
        sys.setprofile(None)
    assert too_long == "expected a sequence of 3 values, got 1000"
    assert other_shape is not None
    # Walking the answer would make at least one call per row (10**3) or element (10**6).
    assert calls < 200, f"{calls} calls: the check walked the answer"


def test_event_lines_and_numbers_are_bounded_before_parsing() -> None:
    assert parse_event(b'{"event": "q_end", "outputs": [1, 2.5]}') == {"event": "q_end", "outputs": [1, 2.5]}
    assert parse_event(b'{"n": ' + b"9" * 40 + b"}") is None  # no 40-digit int is ever built
    assert parse_event(b'{"n": 1' + b"0" * 50 + b'.5}') is None
    assert parse_event(b"[" * 100_000 + b"]" * 100_000) is None
    assert parse_event(b"[1, 2]") is None
    read_fd, write_fd = os.pipe()
    reader = _Events(read_fd, Bounds(event_bytes=1000, total_bytes=10_000))
    reader.start()
    os.write(write_fd, b'{"event": "ready"}\n' + b"x" * 5000)  # a line that never ends
    os.close(write_fd)
    reader.join(5)
    items = []
    while not reader.queue.empty():
        items.append(reader.queue.get())
    assert items == [({"event": "ready"}, 18), "overflow", None]


def test_slugs_are_unique_safe_and_confined(tmp_path: Path) -> None:
    names = ["alice/ex01", "alice__ex01", "a b", "a_b", "bób", "b_b", "x" * 130 + "1", "x" * 130 + "2", "..x",
             "good-0123456789"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{name}.ipynb").write_text("{}", encoding="utf-8")
    paths = [tmp_path / f"{name}.ipynb" for name in names]
    out, collisions = slugs(tmp_path, paths)
    assert collisions == [] and len(set(out)) == len(out), out
    assert out[1] == "alice__ex01" and out[0].startswith("alice__ex01-") and out[3] == "a_b" and out[5] == "b_b"
    assert out[9] != "good-0123456789"  # shaped like a hashed slug: hashed itself, so none can be forged
    assert all(s[0].isalnum() and "/" not in s and len(s) <= 80 for s in out)
    same, collisions = slugs(tmp_path, [paths[3], paths[3]])
    assert len(collisions) == 1  # reported (and both refused by grade_folder) rather than overwritten
    (tmp_path / "link_out.ipynb").symlink_to("/etc/hostname")
    (tmp_path / "link_in.ipynb").symlink_to(tmp_path / "a_b.ipynb")
    (tmp_path / "dir.ipynb").mkdir()
    assert "outside the class folder" in refusal(tmp_path, tmp_path / "link_out.ipynb")
    assert refusal(tmp_path, tmp_path / "link_in.ipynb") is None
    assert "not a regular file" in refusal(tmp_path, tmp_path / "dir.ipynb")


def test_seccomp_numbers_agree_with_libseccomp() -> None:
    try:
        lib = ctypes.CDLL("libseccomp.so.2")
    except OSError:
        pytest.skip("libseccomp is not installed here")
    if seccomp.program() is None:
        pytest.skip("no filter for this architecture")
    for name, number in seccomp.DENIED_X86_64.items():
        assert lib.seccomp_syscall_resolve_name(name.encode()) == number, name
    for name, number in (("clone", seccomp.CLONE_X86_64), ("clone3", seccomp.CLONE3_X86_64),
                         ("ioctl", seccomp.IOCTL_X86_64), ("socket", seccomp.SOCKET_X86_64),
                         ("socketpair", seccomp.SOCKETPAIR_X86_64)):
        assert lib.seccomp_syscall_resolve_name(name.encode()) == number, name
    assert len(seccomp.program()) % 8 == 0 and len(seccomp.program()) // 8 < 256


def test_terminal_escapes_are_stripped() -> None:
    assert strip_controls("a\x1b[2J\x1b]0;title\x07b\x1bc\rc\td\n\x9b") == "abc\td\n"


# ---------------------------------------------------------------------------------------------
# Sandbox tests


SECCOMP_PROBE = """import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    return 'ok' if r >= 0 else errno.errorcode.get(ctypes.get_errno(), '?')
print('PROBE unshare', call(272, 0x10000000))
print('PROBE clone_newuser', call(56, 0x10000000 | 17, 0, 0, 0, 0))
print('PROBE io_uring', call(425, 8, 0))
print('PROBE keyctl', call(250, 0, 0))
print('PROBE ptrace', call(101, 16, 1))
print('PROBE bpf', call(321, 0, 0, 0))
print('PROBE mount', call(165, 0, 0, 0, 0, 0))
print('PROBE vsock', call(41, 40, 1, 0))
print('PROBE inet', call(41, 2, 1, 0))
print('PROBE inet_pair', call(53, 2, 1, 0, 0))
print('PROBE unix', call(41, 1, 1, 0))
print('PROBE', [l for l in open('/proc/self/status') if l.startswith('Seccomp:')][0].strip())
"""
MEMFD_HOG = """import os
block = b'x' * 2**24
fds = [os.memfd_create(f'hog{i}') for i in range(80)]
for fd in fds:  # 80 files of 48 MiB (each under the file-size rlimit): 3.75 GiB, none of it in the address space
    for _ in range(3):
        os.write(fd, block)
print('HOG survived')
"""
SPINNERS = """import os, time
for _ in range(8):
    if os.fork() == 0:
        os.setsid()
        while True:
            pass
"""
HUGE_EVENT = """import json, os, sys
frame = sys._getframe()
while 'job' not in frame.f_locals:
    frame = frame.f_back
fd = int(frame.f_locals['job']['events_fd'])
os.write(fd, b'{"event": "q_end", "q": "q1", "outputs": [' + b'9' * 10_000_000 + b']}\\n')
"""


# The package's `attention`, as Chapter 9 prints it, pasted under other names with comments and no hints.
PASTED = """import math


def my_attention(query, key, value, mask):
    # pasted from the book
    B, H, T, d_h = query.shape
    H_kv, K = key.shape[1], key.shape[2]
    g = H // H_kv
    query = query.reshape(B, H_kv, g * T, d_h)
    s = (query @ key.transpose(-2, -1)) / math.sqrt(d_h)
    if mask is not None:
        s = s.view(B, H_kv, g, T, K).masked_fill(~mask[:, None, None], float("-inf"))
        s = s.view(B, H_kv, g * T, K)
    w = torch.softmax(s.float(), dim=-1).to(value.dtype)
    return (w @ value).view(B, H, T, d_h)
"""


def reference_with(tmp: Path, name: str, extra: list[str]) -> Path:
    path = tmp / f"{name}.ipynb"
    build_submission("ex01", path)
    nb = nbformat.read(path, as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(c) for c in extra]
    nbformat.write(nb, path)
    return path


def lying_answer(tmp: Path) -> None:
    path = tmp / "lying_tensor.ipynb"
    build_submission("ex01", path)
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import torch\n\n\nclass Liar(torch.Tensor):\n    @property\n    def shape(self):\n        return ()\n\n"
        "    def tolist(self):\n        return 0\n\n    def __index__(self):\n        return 0\n\n\n"
        "def prefill_flops(L, P, d):\n    return torch.zeros(10**6).as_subclass(Liar)\n"))
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, float]]:
    tmp = tmp_path_factory.mktemp("hostile2")
    subs = tmp / "subs"
    subs.mkdir()
    reference_with(subs, "seccomp_probe", [SECCOMP_PROBE])
    reference_with(subs, "memfd_hog", [MEMFD_HOG])
    reference_with(subs, "huge_event", [HUGE_EVENT])
    lying_answer(subs)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = '" + "a" * (3 * 2**20) + "'")]
    nbformat.write(nb, subs / "huge_cell.ipynb")
    magics = "\n".join(["%matplotlib inline", "!echo hi"] * 250)
    reference_with(subs, "many_magics", [magics, PASTED])
    names = ", ".join(f"ñ{'ñ' * 20}{i}" for i in range(4))
    imports = "".join(f"    from minigpt.costs import {names}{i}\n" for i in range(300))
    reference_with(subs, "many_findings", ["try:\n" + imports + "except ImportError:\n    pass\n"])
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    grade_folder("ex01", subs, tmp / "out", timeout=10, jobs=2, echo=False, budget=120)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return tmp / "out", {"wall": time.monotonic() - start, "parent_cpu": after.ru_utime - before.ru_utime,
                         "parent_rss_mib": after.ru_maxrss / 1024}


@pytest.mark.sandbox
def test_seccomp_denies_namespaces_io_uring_keyrings_ptrace_bpf_mount(hostile_class: tuple[Path, dict]) -> None:
    out, _ = hostile_class
    log = (out / "logs" / "seccomp_probe.txt").read_text(encoding="utf-8")
    probes = dict(line.split()[1:3] for line in log.splitlines() if line.startswith("PROBE ") and "Seccomp" not in line)
    assert probes == {**{k: "EPERM" for k in ("unshare", "clone_newuser", "io_uring", "keyctl", "ptrace", "bpf",
                                              "mount")},
                      "vsock": "EAFNOSUPPORT", "inet": "EAFNOSUPPORT", "inet_pair": "EAFNOSUPPORT", "unix": "ok"}, log
    assert "Seccomp:\t2" in log or "Seccomp: 2" in log, log
    assert all(score == 1.0 for score, _ in details(out)["seccomp_probe"].values())


@pytest.mark.sandbox
def test_memory_outside_the_address_space_is_counted(hostile_class: tuple[Path, dict]) -> None:
    out, info = hostile_class
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    if not run["limits"].startswith("cgroup"):
        pytest.skip(f"no control groups here: {run['limits']}")
    log = (out / "logs" / "memfd_hog.txt").read_text(encoding="utf-8")
    assert "HOG survived" not in log
    rows = details(out)["memfd_hog"]
    assert all(score == 1.0 for score, _ in rows.values()), rows  # the hog's cell is lost, the answers are not
    notes = json.loads((out / "results" / "memfd_hog" / "results.json").read_text(encoding="utf-8"))["output"]
    assert "ran out of memory" in notes, notes  # the control group's count, not an rlimit, stopped it


@pytest.mark.sandbox
def test_forged_and_oversized_events_cost_only_the_forger(hostile_class: tuple[Path, dict]) -> None:
    out, info = hostile_class
    rows = details(out)
    assert all(score == 0.0 for score, _ in rows["huge_event"].values())
    assert all("wrote to the grader's channel" in text for _, text in rows["huge_event"].values())
    # a million numbers read through the base classes, whatever the subclass says: over the cap of one question
    assert rows["lying_tensor"]["q1"] == (0.0, "prefill_flops: its outputs are larger than 2 MiB, far more than "
                                               "any answer")
    assert all(rows["lying_tensor"][q][0] == 1.0 for q in ("q2", "q3", "q4", "q5"))
    assert info["parent_rss_mib"] < 2048, info  # the 10 MB event was never read into memory whole


@pytest.mark.sandbox
def test_parsing_happens_in_the_sandbox_with_size_limits(hostile_class: tuple[Path, dict]) -> None:
    out, info = hostile_class
    rows = details(out)
    assert all(text.startswith("submission too large: cell 0 has more than 256 KiB")
               for _, text in rows["huge_cell"].values()), rows["huge_cell"]
    assert all(score == 1.0 for score, _ in rows["many_magics"].values()), rows["many_magics"]
    # 300 findings of 80 non-ASCII characters: listed up to the bound, never taken for tampering
    assert all(score == 1.0 for score, _ in rows["many_findings"].values()), rows["many_findings"]
    review = (out / "review.csv").read_text(encoding="utf-8")
    assert 20 <= review.count("many_findings,") <= 200
    # the package's code pasted under other names: found by its fingerprint, and nothing else of that notebook
    pasted = [line.split(",")[2:] for line in review.splitlines() if line.startswith("many_magics,")]
    assert pasted == [["4", "copy", "a copy of minigpt.runtime.model.attention"]], pasted
    assert info["parent_cpu"] < 60, info  # the parent only reads bytes; the 500 magics cost the sandbox


@pytest.mark.sandbox
def test_the_budget_is_fixed_whatever_the_cell_count(tmp_path: Path) -> None:
    (tmp_path / "subs").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import time\ntime.sleep(100)") for _ in range(300)]
    nbformat.write(nb, tmp_path / "subs" / "slow.ipynb")
    ((_, result),) = grade_folder("ex01", tmp_path / "subs", tmp_path / "out", timeout=1, budget=10, echo=False)
    # A hang guard, not a speed: the budget stops the run at 10 s plus the kill; far past that means it never did.
    assert result.execution_time < 10 + 60, result.execution_time
    assert all("time budget (10 s)" in t.output for t in result.tests), [t.output for t in result.tests]


@pytest.mark.sandbox
def test_hostile_neighbours_change_no_honest_verdict(tmp_path: Path) -> None:
    """Two honest submissions graded next to two hostile ones (setsid CPU spinners, a 4 GiB memfd), four at once:
    full marks, as alone (test_grading.test_reference_scores_full). Their times are printed, not asserted: a time
    depends on the machine's own load (CONTRIBUTING, "Green on a busy machine")."""
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    build_submission("ex01", mixed / "honest1.ipynb")
    build_submission("ex01", mixed / "honest2.ipynb")
    backend, _how = cgroups.detect()
    counted = backend is not None
    if backend is not None:
        backend.close()
    reference_with(mixed, "hostile_spin", [SPINNERS])
    reference_with(mixed, "hostile_memfd", [MEMFD_HOG if counted else "x = bytearray(2**30)"])  # rlimits only: AS
    graded = dict(grade_folder("ex01", mixed, tmp_path / "out", timeout=10, jobs=4, echo=False, budget=120))
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run["limits"].startswith("cgroup") == counted, run["limits"]
    for name in ("honest1", "honest2"):
        assert [t.score for t in graded[name].tests] == [1.0] * 5, [t.output for t in graded[name].tests]
    times = ", ".join(f"{graded[n].execution_time:.1f} s" for n in ("honest1", "honest2"))
    print(f"honest submissions next to hostile neighbours: {times}")


def test_nothing_of_an_expected_answer_enters_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job sent into the sandbox holds the inputs, the limits and a cap that is the same for every question:
    no expected number, and no shape either (a list's length or a None, read from the child's own stack
    frames, gave ex14 Q1 full marks without the rule). The bug it catches: any field derived from
    `prepared.expected` in the job."""
    from minigpt.grading import grader, sandbox, staging
    from minigpt.grading.cases import OUTPUT_CAP_BYTES
    from minigpt.grading.child_command import Isolation
    from minigpt.grading.event_order import ChildRun

    jobs = []

    def fake_run(job: dict, *args: object, **kwargs: object) -> ChildRun:
        jobs.append(job)
        return ChildRun(ended="internal")

    monkeypatch.setattr(grader, "run_child", fake_run)
    isolation = Isolation(staging.stage(tmp_path / "stage"), sandbox.Limits(), unsafe=True)
    for eid in ("ex06", "ex14"):
        build_submission(eid, tmp_path / f"{eid}.ipynb")
        grader.grade_notebook(tmp_path / f"{eid}.ipynb", eid, 7, isolation, timeout=5, log_path=tmp_path / "log.txt")
    assert len(jobs) >= 2
    for job in jobs:
        assert set(job) == {"limits", "size_limits", "skip_cells", "output_cap", "offered", "questions"}, set(job)
        assert job["output_cap"] == OUTPUT_CAP_BYTES
        for q in job["questions"]:
            # "measure" is the spec's word that the question is about the method (Question.method), not an answer
            assert set(q) == {"id", "function", "cases", "measure"}, set(q)
            assert isinstance(q["measure"], bool)
    prepared = grader.prepare("ex06", grader.submission_seed(7, (tmp_path / "ex06.ipynb").read_bytes()))
    assert repr(prepared.expected["q5"][0]) not in json.dumps(jobs)
