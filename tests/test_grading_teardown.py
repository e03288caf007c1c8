"""No process of a grading run outlives it, whenever the kernel gets round to the sandbox's parent-death signal.

bwrap's ``--die-with-parent`` kills a sandbox whose launcher is gone, but asynchronously: on a busy machine the
grader returned while bwrap processes of its runs were still alive. The grader must end each sandbox itself and wait
until it is gone. Here the flag is taken out of the sandbox's command, which makes that signal arbitrarily late (it
never comes): a grader that leans on it leaves the sandbox's PID 1, and the daemon a notebook started, alive, every
time; one that ends its sandboxes leaves nothing. Control groups are not asked for, so their kill does not stand in
for the grader's (and machines without them, which run on rlimits alone, are the ones that need this most).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import nbformat
import pytest
from grading_processes import adopting, kill, live_descendants
from test_grading import build_submission

from minigpt.grading import grader, sandbox, teardown
from minigpt.grading.folder import grade_folder


def without_parent_death_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    command = sandbox.bwrap_command

    def late(*args: object, **kwargs: object) -> list[str]:
        return [arg for arg in command(*args, **kwargs) if arg != "--die-with-parent"]  # type: ignore[arg-type]

    monkeypatch.setattr(sandbox, "bwrap_command", late)


@pytest.mark.sandbox
def test_no_process_of_a_run_outlives_the_grader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A notebook that starts a daemon and then hangs in a cell (SIGALRM ignored): the first run is killed (the
    grader's kill path), the relaunch skips that cell and ends normally (the clean-exit path, the daemon started
    again). When grade_folder returns, nothing of either sandbox is alive."""
    marker = f"minigpt-teardown-{uuid.uuid4().hex}"
    (tmp_path / "subs").mkdir()
    path = tmp_path / "subs" / "daemon.ipynb"
    build_submission("ex01", path)
    nb = nbformat.read(path, as_version=4)
    daemon = ("import subprocess, sys\n"
              f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)  # {marker}'],\n"
              "                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")
    hang = "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass\n"
    nb.cells[3:3] = [nbformat.v4.new_code_cell(daemon), nbformat.v4.new_code_cell(hang)]
    nbformat.write(nb, path)
    without_parent_death_signal(monkeypatch)
    with adopting():
        try:
            ((_, result),) = grade_folder("ex01", tmp_path / "subs", tmp_path / "out", timeout=2, seed=7, echo=False,
                                          budget=120, use_cgroups=False)
            left = live_descendants(("minigpt.grading.child", marker))
        finally:
            kill(live_descendants(("minigpt.grading.child", marker)))
    assert left == {}, "processes of the grading run outlived it"
    assert result.score == result.max_score == 5, [t.output for t in result.tests]
    assert any("(the process was killed)" in note for note in result.notes), result.notes


def test_the_sandbox_init_is_held_killed_and_waited_for() -> None:
    """`SandboxInit` on a stand-in for bwrap's init (a child of this process, reported the way bwrap reports it): held
    as a pidfd, not gone until it is killed (past the guard, SandboxSurvived: the grader's error, never a silent
    leak), gone after; a pid that is not the launcher's child is not held."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    init, stranger = teardown.SandboxInit(), teardown.SandboxInit()
    try:
        for watch, pid in ((init, child.pid), (stranger, os.getppid())):
            os.write(watch.write_fd, b'{\n    "child-pid": %d,\n    "pid-namespace": 4026531836\n}\n' % pid)
            os.close(watch.write_fd)
            watch.watch(os.getpid())
            assert watch.held.wait(60)
        assert init.pid == child.pid and stranger.pid is None
        with pytest.raises(teardown.SandboxSurvived, match=f"pid {child.pid}"):
            init.wait_gone(0.1)
        init.kill()
        init.wait_gone(teardown.GUARD_S)
        assert child.wait() == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()


def test_a_survivor_stops_the_grader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any other error in one submission becomes zeros with a reason; a process that SIGKILL cannot end stops it all."""
    def stuck(*args: object, **kwargs: object) -> None:
        raise teardown.SandboxSurvived("the sandbox's PID 1 (pid 12345) was still alive 120 s after SIGKILL")

    monkeypatch.setattr(grader, "_grade", stuck)
    build_submission("ex01", tmp_path / "reference.ipynb")
    with pytest.raises(teardown.SandboxSurvived):
        grader.grade_notebook(tmp_path / "reference.ipynb", "ex01", 7, None, timeout=1,  # type: ignore[arg-type]
                              log_path=tmp_path / "log.txt")
