"""Run one grading child and read what it reports, trusting nothing it writes.

The job goes to the child on its standard input, which is written and closed here; its events come
back on a pipe read here (never a file in a folder the child can touch); its printed output goes to
the submission's log, capped. Events are accepted only in the order the job implies (``ready``, then
``cell_start``/``cell_end`` for each cell, ``q_start``/``q_end`` for each question, then ``done``): the
first event out of order, an oversized stream or a malformed line stops the run as tampered. Each
accepted step may take the time limit plus a little slack, and the whole run never goes past the
submission's hard deadline, whatever the child writes.
"""

from __future__ import annotations

import io
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minigpt.grading import sandbox, staging

LOG_CAP_BYTES = 256 * 2**10  # per child run; the rest of its output is counted and dropped
EVENTS_CAP_BYTES = 64 * 2**20  # the whole event stream of one run
STARTUP_S = 60.0  # importing torch in a fresh sandbox on a busy machine; student code runs only after "ready"
SLACK_S = 3.0  # beyond the per-cell / per-question limit before the sandbox is killed


@dataclass
class Isolation:
    """How children run: in a bubblewrap sandbox over a staged runtime, or (unsafe) as plain processes."""

    runtime: staging.Runtime
    limits: sandbox.Limits
    unsafe: bool = False

    def command(self) -> tuple[list[str], dict[str, Any]]:
        """The child's command line and the extra `subprocess.Popen` arguments."""
        if not self.unsafe:
            return sandbox.bwrap_command(self.runtime, self.limits), {"env": {}, "cwd": "/", **sandbox.popen_user()}
        site = sorted({str(p.parent) for p in staging.distribution_entries()})
        env = dict(sandbox.ENV, PYTHONPATH=os.pathsep.join([str(self.runtime.root / "lib"), *site]),
                   HOME=tempfile.gettempdir(), TMPDIR=tempfile.gettempdir())
        del env["LD_LIBRARY_PATH"], env["PATH"]
        return [sys.executable, *sandbox.CHILD_ARGV], {"env": env, "cwd": tempfile.gettempdir()}


class _Drain(threading.Thread):
    """Copy a pipe to a file up to `cap` bytes; count (and drop) the rest."""

    def __init__(self, pipe: io.BufferedReader, path: Path, cap: int) -> None:
        super().__init__(daemon=True)
        self.pipe, self.path, self.cap, self.total = pipe, path, cap, 0

    def run(self) -> None:
        with open(self.path, "ab") as out:
            while chunk := self.pipe.read1(65536):
                if self.total < self.cap:
                    out.write(chunk[: self.cap - self.total])
                self.total += len(chunk)
            if self.total > self.cap:
                out.write(f"\n[grader: output truncated, {self.total:,} bytes in all]\n".encode())

    @property
    def flooded(self) -> bool:
        return self.total > self.cap


class _Events(threading.Thread):
    """Read JSON lines from the events pipe into a queue; None at the end, "overflow"/"malformed" on abuse."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.queue = fd, queue.Queue()

    def run(self) -> None:
        total, buf = 0, bytearray()
        try:
            while chunk := os.read(self.fd, 65536):
                total += len(chunk)
                if total > EVENTS_CAP_BYTES:
                    self.queue.put("overflow")
                    return
                start = len(buf)
                buf += chunk
                while (end := buf.find(b"\n", start)) >= 0:  # only the new bytes are searched: linear in the stream
                    line, start = bytes(buf[:end]), 0
                    del buf[: end + 1]
                    try:
                        event = json.loads(line)
                    except (ValueError, RecursionError):
                        event = None
                    self.queue.put(event if isinstance(event, dict) else "malformed")
        finally:
            os.close(self.fd)
            self.queue.put(None)


def expected_order(job: dict) -> list[tuple[str, Any]]:
    """The only event sequence the parent accepts for `job`."""
    order: list[tuple[str, Any]] = [("ready", None)]
    for cell in job["cells"]:
        order += [("cell_start", cell["index"]), ("cell_end", cell["index"])]
    for q in job["questions"]:
        order += [("q_start", q["id"]), ("q_end", q["id"])]
    return [*order, ("done", None)]


def _matches(event: dict, step: tuple[str, Any]) -> bool:
    kind, key = step
    if event.get("event") != kind:
        return False
    if kind.startswith("cell_"):
        return event.get("cell") == key and type(event.get("cell")) is int
    if kind.startswith("q_"):
        return event.get("q") == key
    return True


@dataclass
class ChildRun:
    """What one child run reported (accepted events only) and how it ended."""

    events: list[dict] = field(default_factory=list)
    ended: str = "exited"  # "done", "exited", "timeout" (a step ran too long), "deadline", "tampered"
    returncode: int | None = None
    flooded: bool = False

    @property
    def ready(self) -> bool:
        return bool(self.events)

    @property
    def current(self) -> tuple[str, Any] | None:
        """The step that was running when the run ended: ("cell", index), ("q", id) or None (between steps)."""
        if not self.events or self.events[-1]["event"] not in ("cell_start", "q_start"):
            return None
        last = self.events[-1]
        return ("cell", last["cell"]) if last["event"] == "cell_start" else ("q", last["q"])


def _args_on_a_pipe(argv: list[str], passed: list[int]) -> list[str]:
    """`bwrap --args FD -- COMMAND` with the options on a pipe, so that the sandbox's /proc/1/cmdline shows no
    host path (bwrap reads options, not the command, from FD)."""
    split = len(argv) - len(sandbox.CHILD_ARGV) - 1  # the interpreter, then its arguments
    data = b"".join(a.encode() + b"\0" for a in argv[1:split])
    if len(data) > 60_000:  # more than a pipe holds without a reader: keep the plain command line
        return argv
    read_fd, write_fd = os.pipe()
    os.write(write_fd, data)
    os.close(write_fd)
    passed.append(read_fd)
    return [argv[0], "--args", str(read_fd), "--", *argv[split:]]


def _write_job(stdin: io.BufferedWriter, data: bytes) -> None:
    try:
        stdin.write(data)
        stdin.close()
    except OSError:
        pass  # the child died before reading its job; the run reports how it ended


def run_child(job: dict, isolation: Isolation, log_path: Path, timeout: float, deadline: float) -> ChildRun:
    """Run one child on `job` until it reports "done", exits, stalls, misbehaves or reaches `deadline`."""
    read_fd, write_fd = os.pipe()
    argv, extra = isolation.command()
    passed = [write_fd]
    if not isolation.unsafe:
        argv = _args_on_a_pipe(argv, passed)
    job = dict(job, events_fd=write_fd, timeout=timeout)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                pass_fds=tuple(passed), start_new_session=True, **extra)
    finally:
        for fd in passed:
            os.close(fd)
    events_reader = _Events(read_fd)
    events_reader.start()
    writer = threading.Thread(target=_write_job, args=(proc.stdin, json.dumps(job).encode()), daemon=True)
    writer.start()
    drain = _Drain(proc.stdout, log_path, LOG_CAP_BYTES)
    drain.start()
    order = expected_order(job)
    run = ChildRun()
    step_deadline = min(deadline, time.monotonic() + STARTUP_S)
    while True:
        remaining = step_deadline - time.monotonic()
        if remaining <= 0:
            run.ended = "deadline" if step_deadline >= deadline else "timeout"
            break
        try:
            event = events_reader.queue.get(timeout=remaining)
        except queue.Empty:
            continue
        if event is None:
            run.ended = "exited"
            break
        if not isinstance(event, dict) or not _matches(event, order[len(run.events)]):
            run.ended = "tampered"
            break
        run.events.append(event)
        if event["event"] == "done":
            run.ended = "done"
            break
        step_deadline = min(deadline, time.monotonic() + timeout + SLACK_S)
    _stop(proc, 2.0 if run.ended in ("done", "exited") else 0.0)
    drain.join(timeout=10)
    run.returncode, run.flooded = proc.returncode, drain.flooded
    return run


def _stop(proc: subprocess.Popen, grace: float) -> None:
    """Reap the child, killing it after `grace` seconds (killing bwrap ends its PID namespace and all in it)."""
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    proc.wait()
