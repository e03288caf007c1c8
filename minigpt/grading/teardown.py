"""Ending a sandbox for good: when `minigpt.grading.runner.run_child` returns, no process of its run is left.

``bwrap --unshare-pid`` is two processes outside the sandbox: the launcher (the grader's child) and, forked by it,
the sandbox's PID 1 (bwrap's init, which reaps inside, in a session of its own: ``--new-session``). The launcher
exits as soon as the *command* exits, while the init may still be waiting for a daemon the notebook left; the init
then dies by its parent-death signal (``--die-with-parent``), and the kernel kills the rest of the namespace after
it: both asynchronously. A signal to the launcher's process group never reaches the init either. So neither reaping
the launcher nor killing its group proves that the sandbox is gone, and a grader that stops there can return while
bwrap processes of its runs are still alive.

What does prove it: the kernel lets a PID namespace's init exit only once every other process of the namespace is
gone (``zap_pid_ns_processes``: "when the init process of a pid namespace is reaped all of the processes in the pid
namespace are gone"), and a pidfd becomes readable when its process has exited. So bwrap reports the init's pid
(``--info-fd``: ``child-pid``); `SandboxInit` holds it as a pidfd, checked to be the launcher's child (the launcher is
not reaped before, so its pid is not reused); the runner sends the job only then, so no notebook code runs in a
sandbox whose init is not held; and `end` kills the init through the pidfd and waits for the pidfd to report its
exit, and for the launcher. Every wait has a hang guard (`GUARD_S`) far above what a teardown takes; past it the
grader stops with `SandboxSurvived` rather than return with a process of the run alive.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

# A hang guard, not a timing: a killed sandbox is gone in well under a second (a few on a loaded machine). A process
# still there after this is stuck in the kernel (uninterruptible sleep), and the grader stops and says so.
GUARD_S = 120.0
INFO_BYTES = 4096  # bwrap's report: the init's pid and the namespaces' ids, a few hundred bytes


class SandboxSurvived(RuntimeError):
    """A process of a run was still alive `GUARD_S` seconds after it was killed: the grader stops (it never returns
    with a process of a run alive, and never leaks one silently)."""


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent's pid, start time) of process `pid`, or None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_bytes()
        fields = text[text.rindex(b")") + 2:].split()
        return fields[0].decode(), int(fields[1]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


class SandboxInit:
    """The sandbox's PID 1, as bwrap reports it on `write_fd` (its ``--info-fd``), held as a pidfd.

    `held` is set once the init is held, or known to be gone or never started (the launcher closed the report
    without a pid, or the init was no longer the launcher's child: it had exited before any job was sent)."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.held = threading.Event()
        self.pid: int | None = None
        self.start: int | None = None  # its start time (the identity kept where the kernel has no pidfds)
        self.pidfd: int | None = None

    def watch(self, launcher: int) -> None:
        """Read bwrap's report in a thread and hold the init it names (call once the launcher has started)."""
        threading.Thread(target=self._read, args=(launcher,), daemon=True).start()

    def close(self) -> None:
        """Forget a report that will never be read (the launcher did not start, or never reached bwrap)."""
        os.close(self.read_fd)
        self.held.set()

    def _read(self, launcher: int) -> None:
        data = b""
        try:
            while b"}" not in data and len(data) < INFO_BYTES and (chunk := os.read(self.read_fd, INFO_BYTES)):
                data += chunk
            pid = json.loads(data).get("child-pid") if b"}" in data else None
            if type(pid) is int and pid > 1:
                self._hold(pid, launcher)
        except (OSError, ValueError, AttributeError):
            pass  # no report: bwrap failed before it started a sandbox
        finally:
            os.close(self.read_fd)
            self.held.set()

    def _hold(self, pid: int, launcher: int) -> None:
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except OSError:
            pidfd = None  # gone already (checked below), or a kernel without pidfds (before Linux 5.3)
        stat = _stat(pid)
        if stat is None or stat[1] != launcher or stat[0] in "ZX":  # not the launcher's live child: gone
            if pidfd is not None:
                os.close(pidfd)
            return
        self.pid, self.start, self.pidfd = pid, stat[2], pidfd

    def kill(self) -> None:
        """SIGKILL the init, and so its whole PID namespace (where the kernel has no pidfds, the launcher's death
        does it: ``--die-with-parent``)."""
        if self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def gone(self) -> bool:
        if self.pidfd is not None:
            return bool(select.select([self.pidfd], [], [], 0)[0])
        stat = None if self.pid is None else _stat(self.pid)
        return stat is None or stat[2] != self.start or stat[0] in "ZX"

    def wait_gone(self, guard: float) -> None:
        """Return once the init has exited, and with it every process of its namespace (SandboxSurvived after
        `guard` seconds)."""
        if self.pidfd is not None:
            select.select([self.pidfd], [], [], guard)
        else:
            deadline = time.monotonic() + guard
            while not self.gone() and time.monotonic() < deadline:
                time.sleep(0.01)
        if not self.gone():
            raise SandboxSurvived(f"the sandbox's PID 1 (pid {self.pid}) was still alive {guard:g} s after SIGKILL")
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def end(proc: subprocess.Popen, grace: float, init: SandboxInit | None) -> None:
    """Reap the launcher `proc`, killing it after `grace` seconds, and end its sandbox (`init`, None without one):
    when this returns, no process of the run is left; SandboxSurvived when one outlives the hang guard."""
    if init is not None and not init.held.wait(GUARD_S):
        _kill(proc)
        raise SandboxSurvived(f"bwrap (pid {proc.pid}, now killed) did not report its sandbox's PID 1 within "
                              f"{GUARD_S:g} s: a sandbox it started may be left")
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    if init is not None:
        init.kill()  # even after a clean exit: a daemon the notebook left keeps the init, and its namespace, alive
    _kill(proc)
    if init is not None:
        init.wait_gone(GUARD_S)


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the launcher's process group, unless it has exited, and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    try:
        proc.wait(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        raise SandboxSurvived(f"the sandbox's launcher (pid {proc.pid}) was still alive {GUARD_S:g} s after "
                              "SIGKILL") from None
