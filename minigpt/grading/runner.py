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
import subprocess
import threading
from pathlib import Path

from minigpt.grading import cgroups, teardown
from minigpt.grading.child_command import Isolation
from minigpt.grading.event_lines import SMALL_EVENT_BYTES, Bounds, _Events, parse_event
from minigpt.grading.event_order import (
    LOG_CAP_BYTES,
    RUN_READ_BYTES,
    SLACK_S,
    STARTUP_S,
    Budget,
    ChildRun,
    _follow,
    expected_order,
    valid_cells,
)
from minigpt.grading.feedback import strip_controls

__all__ = [
    "GATE", "LOG_CAP_BYTES", "SLACK_S", "SMALL_EVENT_BYTES", "STARTUP_S", "Bounds", "ChildRun", "Isolation",
    "expected_order", "parse_event", "run_child", "strip_controls", "valid_cells",
]

GATE = ["/bin/sh", "-c", 'read -r _ && exec "$@"', "gate"]  # waits for one line, then becomes the sandbox


class _Drain(threading.Thread):
    """Copy a run's output pipe to its log while the submission's `budget` keeps some (without terminal control
    sequences), count and drop the rest, and close the pipe once the submission's read allowance is spent."""

    def __init__(self, pipe: io.BufferedReader, path: Path, budget: Budget) -> None:
        super().__init__(daemon=True)
        self.pipe, self.path, self.budget = pipe, path, budget
        self.total = self.dropped = 0
        self.stopped = False

    def run(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        b = self.budget
        with open(self.path, "a", encoding="utf-8") as out:
            while chunk := self.pipe.read1(65536):
                keep = min(len(chunk), max(b.log_left, 0))
                if keep:
                    out.write(strip_controls(decoder.decode(chunk[:keep])))
                    b.log_left -= keep
                self.total += len(chunk)
                self.dropped += len(chunk) - keep
                b.read_left -= len(chunk)
                if b.read_left <= 0 and self.total >= RUN_READ_BYTES:
                    self.stopped = True
                    break
            if self.dropped:
                out.write(f"\n[grader: output truncated, {self.total:,} bytes in this run"
                          + (", then the output was closed]\n" if self.stopped else "]\n"))
        if self.stopped:
            self.pipe.close()  # the sandbox's next write fails (EPIPE): the flood ends where it starts

    @property
    def flooded(self) -> bool:
        return self.dropped > 0


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
              budget: Budget, bounds: Bounds, max_cells: int) -> ChildRun:
    """Run one child on `job` and `notebook` until it reports "done", exits, stalls, misbehaves or reaches
    `budget.deadline` (which a cell run again moves, `Budget`); when this returns, no process of the run is
    left (`teardown.SandboxSurvived` if one outlives the hang guard)."""
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
    drain = _Drain(proc.stdout, log_path, budget)
    drain.start()
    try:
        _follow(run, events_reader, job, budget, timeout, max_cells)
    finally:  # whatever ended the run, even an error here: the sandbox is gone before the run is reported
        teardown.end(proc, 2.0 if run.ended in ("done", "exited", "rejected") else 0.0, init)
    drain.join(timeout=10)
    run.returncode, run.flooded, run.output_closed = proc.returncode, drain.flooded, drain.stopped
    if group is not None:
        run.out_of_memory = group.out_of_memory()
        group.remove()
    return run
