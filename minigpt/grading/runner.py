"""Run one grading child and read what it reports, trusting nothing it writes.

The job goes to the child on its standard input, which is written and closed here: one JSON line, then
the notebook's raw bytes (the parent never parses a submission). The child's events come back on a pipe
read here (never a file in a folder the child can touch), each one bounded before it is parsed: a line
longer than `Bounds.event_bytes` (`SMALL_EVENT_BYTES` for every event but a question's outputs), more bytes
than `Bounds.total_bytes` in all, a number longer than 32 characters, or a line that is not one JSON object
stops the run as tampered. Events are accepted only in the order the job implies (``cells`` or
``rejected``, then ``ready``, ``cell_start``/``cell_end`` for each cell the child listed,
``q_start``/``q_end`` for each question, then ``done``). Its printed output goes to the submission's log,
capped, with terminal control sequences removed. Each accepted step may take the time limit plus a little
slack, and the whole run never goes past the submission's hard deadline, whatever the child writes.

Where control groups are available (`minigpt.grading.cgroups`) the child starts behind a gate (``sh``
reading one line of its standard input) and is moved into its run's group before the gate opens, so
every process the sandbox ever starts is counted in the group's memory, tasks and CPU. The job is sent only once
the sandbox's PID 1 is held (`minigpt.grading.teardown`), and the run ends only when every process of the sandbox is
gone, whatever way it ended.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minigpt.grading import cgroups, host_files, sandbox, staging, teardown
from minigpt.grading.feedback import strip_controls

LOG_CAP_BYTES = 256 * 2**10  # per child run; the rest of its output is counted and dropped
SMALL_EVENT_BYTES = 64 * 2**10  # every event but a question's outputs (400 cells' indices and 32 KiB of findings fit)
STARTUP_S = 60.0  # importing torch in a fresh sandbox on a busy machine; student code runs only after "ready"
SLACK_S = 3.0  # beyond the per-cell / per-question limit before the sandbox is killed
GATE = ["/bin/sh", "-c", 'read -r _ && exec "$@"', "gate"]  # waits for one line, then becomes the sandbox
@dataclass(frozen=True)
class Bounds:
    """What the parent reads from one child run, at most."""

    event_bytes: int  # one event line (a question's outputs)
    total_bytes: int  # all event lines of the run


@dataclass
class Isolation:
    """How children run: in a bubblewrap sandbox over a staged runtime, or (unsafe) as plain processes."""

    runtime: staging.Runtime
    limits: sandbox.Limits
    unsafe: bool = False
    cgroups: cgroups.Backend | None = None
    seccomp: bytes | None = None

    def command(self, lib: Path, passed: list[int], info_fd: int | None = None) -> tuple[list[str], dict[str, Any]]:
        """The child's command line (the staged package `lib`; bwrap reports its sandbox's PID 1 on `info_fd`) and
        the extra `subprocess.Popen` arguments; file descriptors the command needs (`info_fd` aside) are appended to
        `passed`."""
        if not self.unsafe:
            seccomp_fd = None
            if self.seccomp is not None:
                seccomp_fd = _pipe_with(self.seccomp)
                passed.append(seccomp_fd)
            argv = sandbox.bwrap_command(self.runtime, self.limits, lib, seccomp_fd, info_fd)
            argv = _args_on_a_pipe(argv, passed)
            return argv, {"env": {}, "cwd": "/", **sandbox.popen_user()}
        site = sorted({str(p.parent) for p in host_files.distribution_entries()})
        env = dict(sandbox.ENV, PYTHONPATH=os.pathsep.join([str(lib), *site]),
                   HOME=tempfile.gettempdir(), TMPDIR=tempfile.gettempdir())
        del env["LD_LIBRARY_PATH"], env["PATH"]
        return [sys.executable, *sandbox.CHILD_ARGV], {"env": env, "cwd": tempfile.gettempdir()}


class _Drain(threading.Thread):
    """Copy a pipe to a file up to `cap` bytes, without terminal control sequences; count (and drop) the rest."""

    def __init__(self, pipe: io.BufferedReader, path: Path, cap: int) -> None:
        super().__init__(daemon=True)
        self.pipe, self.path, self.cap, self.total = pipe, path, cap, 0

    def run(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        with open(self.path, "a", encoding="utf-8") as out:
            while chunk := self.pipe.read1(65536):
                if self.total < self.cap:
                    out.write(strip_controls(decoder.decode(chunk[: self.cap - self.total])))
                self.total += len(chunk)
            if self.total > self.cap:
                out.write(f"\n[grader: output truncated, {self.total:,} bytes in all]\n")

    @property
    def flooded(self) -> bool:
        return self.total > self.cap


def _bounded_int(text: str) -> int:
    if len(text) > 32:
        raise ValueError("number too long")
    return int(text)


def _bounded_float(text: str) -> float:
    if len(text) > 40:
        raise ValueError("number too long")
    return float(text)


def parse_event(line: bytes) -> dict | None:
    """One event line as a dict, or None (not JSON, not an object, too deep, a number over 32 characters)."""
    try:
        event = json.loads(line, parse_int=_bounded_int, parse_float=_bounded_float)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
    return event if isinstance(event, dict) else None


class _Events(threading.Thread):
    """Read JSON lines from the events pipe into a queue as (event, size); None at the end; "overflow" past a
    bound, "malformed" for a line that is not an event."""

    def __init__(self, fd: int, bounds: Bounds) -> None:
        super().__init__(daemon=True)
        self.fd, self.bounds, self.queue = fd, bounds, queue.Queue()

    def run(self) -> None:
        total, buf = 0, bytearray()
        try:
            while chunk := os.read(self.fd, 65536):
                total += len(chunk)
                if total > self.bounds.total_bytes:
                    self.queue.put("overflow")
                    return
                start = len(buf)
                buf += chunk
                while (end := buf.find(b"\n", start)) >= 0:  # only the new bytes are searched: linear in the stream
                    line, start = bytes(buf[:end]), 0
                    del buf[: end + 1]
                    if len(line) > self.bounds.event_bytes:
                        self.queue.put("overflow")
                        return
                    event = parse_event(line)
                    self.queue.put((event, len(line)) if event is not None else "malformed")
                if len(buf) > self.bounds.event_bytes:
                    self.queue.put("overflow")
                    return
        finally:
            os.close(self.fd)
            self.queue.put(None)


def expected_order(cells: list[int], questions: list[str]) -> list[tuple[str, Any]]:
    """The only event sequence the parent accepts once the child has listed the cells it will run."""
    order: list[tuple[str, Any]] = [("ready", None)]
    for index in cells:
        order += [("cell_start", index), ("cell_end", index)]
    for qid in questions:
        order += [("q_start", qid), ("q_end", qid)]
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


def valid_cells(event: dict, skip: set[int], max_cells: int) -> list[int] | None:
    """The cell indices of a ``cells`` event, or None unless they are distinct ints, ascending, at most
    `max_cells`, none of them in `skip`."""
    cells = event.get("cells")
    if type(cells) is not list or len(cells) > max_cells:
        return None
    previous = -1
    for index in cells:
        if type(index) is not int or index <= previous or index in skip or index > 10**6:
            return None
        previous = index
    return cells


@dataclass
class ChildRun:
    """What one child run reported (accepted events only) and how it ended."""

    events: list[dict] = field(default_factory=list)
    ended: str = "exited"  # "done", "exited", "timeout", "deadline", "tampered", "rejected", "internal"
    returncode: int | None = None
    flooded: bool = False
    rejected: dict | None = None  # the child's "rejected" event (the notebook is too large or corrupt)
    cells: list[int] | None = None  # the cells the child said it would run
    listing: dict | None = None  # its "cells" event (with the static review's findings)
    out_of_memory: bool = False

    @property
    def ready(self) -> bool:
        return any(e["event"] == "ready" for e in self.events)

    @property
    def current(self) -> tuple[str, Any] | None:
        """The step that was running when the run ended: ("cell", index), ("q", id) or None (between steps)."""
        if not self.events or self.events[-1]["event"] not in ("cell_start", "q_start"):
            return None
        last = self.events[-1]
        return ("cell", last["cell"]) if last["event"] == "cell_start" else ("q", last["q"])


def _pipe_with(data: bytes) -> int:
    """A pipe's read end, holding `data` (less than a pipe's capacity) and closed for writing."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, data)
    os.close(write_fd)
    return read_fd


def _args_on_a_pipe(argv: list[str], passed: list[int]) -> list[str]:
    """`bwrap --args FD -- COMMAND` with the options on a pipe, so that the sandbox's /proc/1/cmdline shows no
    host path (bwrap reads options, not the command, from FD)."""
    split = len(argv) - len(sandbox.CHILD_ARGV) - 1  # the interpreter, then its arguments
    data = b"".join(a.encode() + b"\0" for a in argv[1:split])
    if len(data) > 60_000:  # more than a pipe holds without a reader: keep the plain command line
        return argv
    passed.append(_pipe_with(data))
    return [argv[0], "--args", str(passed[-1]), "--", *argv[split:]]


def _write_job(stdin: io.BufferedWriter, gate: bytes, parts: list[bytes], init: teardown.SandboxInit | None) -> None:
    """Open the gate, then, once the sandbox's PID 1 is held, send the job (no notebook code runs before)."""
    try:
        stdin.write(gate)
        stdin.flush()
        if init is not None:
            init.held.wait()
        for part in parts:
            stdin.write(part)
        stdin.close()
    except OSError:
        pass  # the child died before reading its job; the run reports how it ended


def _not_started(run: ChildRun, read_fd: int, init: teardown.SandboxInit | None,
                 group: cgroups.Group | None) -> ChildRun:
    os.close(read_fd)
    if init is not None:
        init.close()
    if group is not None:
        group.remove()
    run.ended = "internal"
    return run


def run_child(job: dict, notebook: bytes, isolation: Isolation, lib: Path, log_path: Path, timeout: float,
              deadline: float, bounds: Bounds, max_cells: int) -> ChildRun:
    """Run one child on `job` and `notebook` until it reports "done", exits, stalls, misbehaves or reaches
    `deadline`; when this returns, no process of the run is left (`teardown.SandboxSurvived` if one outlives the
    hang guard)."""
    read_fd, write_fd = os.pipe()
    run = ChildRun()
    group = None
    init = None if isolation.unsafe else teardown.SandboxInit()
    passed = [write_fd] if init is None else [write_fd, init.write_fd]
    try:
        argv, extra = isolation.command(lib, passed, None if init is None else init.write_fd)
        if isolation.cgroups is not None:
            group = isolation.cgroups.create(cgroups.Budget(isolation.limits.memory_bytes, isolation.limits.processes))
            argv = [*GATE, *argv]
        job = dict(job, events_fd=write_fd, timeout=timeout)
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                pass_fds=tuple(passed), start_new_session=True, **extra)
    except OSError:
        return _not_started(run, read_fd, init, group)
    finally:
        for fd in passed:
            os.close(fd)
    if group is not None:
        try:
            group.add(proc.pid)
        except OSError:
            teardown.end(proc, 0.0, None)  # still the gate's shell: bwrap never started
            return _not_started(run, read_fd, init, group)
    if init is not None:
        init.watch(proc.pid)
    events_reader = _Events(read_fd, bounds)
    events_reader.start()
    parts = [json.dumps(job).encode() + b"\n", notebook]
    gate = b"go\n" if group is not None else b""
    writer = threading.Thread(target=_write_job, args=(proc.stdin, gate, parts, init), daemon=True)
    writer.start()
    drain = _Drain(proc.stdout, log_path, LOG_CAP_BYTES)
    drain.start()
    try:
        _follow(run, events_reader, job, deadline, timeout, max_cells)
    finally:  # whatever ended the run, even an error here: the sandbox is gone before the run is reported
        teardown.end(proc, 2.0 if run.ended in ("done", "exited", "rejected") else 0.0, init)
    drain.join(timeout=10)
    run.returncode, run.flooded = proc.returncode, drain.flooded
    if group is not None:
        run.out_of_memory = group.out_of_memory()
        group.remove()
    return run


def _follow(run: ChildRun, events_reader: _Events, job: dict, deadline: float, timeout: float,
            max_cells: int) -> None:
    """Accept the child's events in the expected order until the run ends; `run.ended` says how."""
    skip = set(job["skip_cells"])
    order: list[tuple[str, Any]] = []
    step_deadline = min(deadline, time.monotonic() + STARTUP_S)
    while True:
        remaining = step_deadline - time.monotonic()
        if remaining <= 0:
            run.ended = "deadline" if step_deadline >= deadline else "timeout"
            return
        try:
            item = events_reader.queue.get(timeout=remaining)
        except queue.Empty:
            continue
        if item is None:
            run.ended = "exited"
            return
        if not isinstance(item, tuple):
            run.ended = "tampered"
            return
        event, size = item
        if run.cells is None:  # the first event: the child's reading of the notebook, before any student code
            if event.get("event") == "rejected" and event.get("kind") in ("too_large", "corrupt"):
                run.rejected, run.ended = event, "rejected"
                return
            cells = valid_cells(event, skip, max_cells) if event.get("event") == "cells" else None
            if cells is None or size > SMALL_EVENT_BYTES:
                run.ended = "tampered"
                return
            run.cells, run.listing = cells, event
            order = expected_order(cells, [q["id"] for q in job["questions"]])
            step_deadline = min(deadline, time.monotonic() + STARTUP_S)
            continue
        if len(run.events) >= len(order) or not _matches(event, order[len(run.events)]) or (
                size > SMALL_EVENT_BYTES and event.get("event") != "q_end"):
            run.ended = "tampered"
            return
        run.events.append(event)
        if event["event"] == "done":
            run.ended = "done"
            return
        step_deadline = min(deadline, time.monotonic() + timeout + SLACK_S)
