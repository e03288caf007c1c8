"""The driver's look at its workers' processes (Chapter 19): whether one has ended, and fencing one it has
declared dead. Every worker runs on this machine here, so its process id (from its hello) is enough; a
cluster would use a heartbeat for the first and its node's agent for the second."""

from __future__ import annotations

import os
import signal


def _stat(pid: int) -> list[str] | None:
    """The fields of `/proc/<pid>/stat` after the command's name (state, parent, ...), or None (no such
    process, or no /proc here)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def has_ended(pid: int) -> bool:
    """True if process `pid` is gone or a zombie (dead, not yet reaped by the launcher). A receive from a
    dead peer may never complete, so the driver also looks here."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (another user's process would say so; ours never does)
    fields = _stat(pid)
    return fields is not None and fields[0] in ("Z", "X")  # no /proc here: os.kill's answer stands


def fence(pid: int) -> None:
    """Kill worker process `pid` (SIGKILL) if it is still there. A worker declared dead may only be hung,
    its connections open (a deadlock, a kernel call that never returns): it must neither act on requests now
    served elsewhere nor hold the run's end, for which the launcher waits. A process is taken for the worker
    only if it is a sibling of this one (the launcher started both), so a recycled id is never killed."""
    if pid == os.getpid():
        return
    fields = _stat(pid)
    if fields is not None and (len(fields) < 2 or fields[1] != str(os.getppid())):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass  # it has ended already
