"""The processes a test's grading left behind: the live descendants of the test's own process.

While it grades, the test process adopts every orphan among its descendants (`adopting`: ``PR_SET_CHILD_SUBREAPER``),
so a sandbox whose launcher is gone is still its descendant and still counts; a grader that other tests, or another
checkout, run on the same machine at the same time never does (a scan of every process on the machine, by command
line alone, took their sandboxes for this run's).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def _processes() -> dict[int, tuple[str, int]]:
    """Every process on the machine: pid -> (state, parent's pid)."""
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_bytes()
            fields = text[text.rindex(b")") + 2:].split()
            table[int(stat.parent.name)] = (fields[0].decode(), int(fields[1]))
        except (OSError, ValueError, IndexError):
            continue
    return table


def live_descendants(markers: tuple[str, ...]) -> dict[int, str]:
    """The command lines (cut to 200 characters) of this process's live descendants (zombies left out) that hold one
    of `markers`, by pid."""
    me, table = os.getpid(), _processes()
    found = {}
    for pid, (state, parent) in table.items():
        hops = 0
        while parent in table and parent != me and hops < len(table):
            parent, hops = table[parent][1], hops + 1
        if parent != me or state in "ZX":
            continue
        try:
            text = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(m in text for m in markers):
            found[pid] = text[:200]
    return found


def _reap_zombies() -> None:
    me = os.getpid()
    for pid, (state, parent) in _processes().items():
        if parent == me and state == "Z":
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


@contextlib.contextmanager
def adopting() -> Iterator[None]:
    """Within the block, orphans of this process's descendants become its children (not the machine's init's);
    after it, the zombies among them are reaped."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        _reap_zombies()


def kill(pids: dict[int, str]) -> None:
    """SIGKILL what a failed check found (this process's descendants), so that it does not outlive the test, and give
    it a few seconds to die (to be reaped by `adopting`)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for _ in range(500):
        table = _processes()
        if not any(table.get(pid, ("Z",))[0] not in "ZX" for pid in pids):
            return
        time.sleep(0.02)
