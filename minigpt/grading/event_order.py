"""The order the parent accepts the child's events in (``cells`` or ``rejected``, then ``ready``,
``cell_start``/``cell_end`` for each cell the child listed, ``q_start``/``q_end`` for each question, then ``done``),
each step within its time limit plus a little slack (`_follow`), and what one run reported (`ChildRun`).
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from typing import Any

from minigpt.grading.event_lines import SMALL_EVENT_BYTES, _Events

LOG_CAP_BYTES = 256 * 2**10  # of a submission's output kept in its log, all its runs together
READ_CAP_BYTES = 64 * 2**20  # of its output the parent reads (and drops past the log's cap), all runs together
RUN_READ_BYTES = 2**20  # what any one run may still print once READ_CAP_BYTES is spent
STARTUP_S = 60.0  # importing torch in a fresh sandbox on a busy machine; student code runs only after "ready"
SLACK_S = 3.0  # beyond the per-cell / per-question limit before the sandbox is killed


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
class Budget:
    """One submission's wall clock: the `deadline` every run of it shares, and what its cells cost the first
    time they ran. The notebook runs once per group of questions (and again after a killed cell), and a cell
    that ran before is not charged again: when it starts in a later run the deadline moves by what it took the
    first time, and when it ends, back by what it did not use of that; at most `cap_s` in all (so that a
    submission's runs together never take more than its budget plus `cap_s`). The clock is the parent's: a
    cell's time runs from the parent's receipt of its ``cell_start`` to that of its ``cell_end``.

    Its output is capped at the source, once for the submission: `log_left` bytes are kept in its log, and once
    `read_left` is spent (`RUN_READ_BYTES` more in any later run) the parent closes the pipe: the next print
    fails in the sandbox, and a flood costs the parent at most that much reading, whatever the runs."""

    deadline: float
    cap_s: float
    first_s: dict[int, float] = field(default_factory=dict)
    credited_s: float = 0.0
    _open: float = 0.0  # what the running cell was credited when it started
    log_left: int = LOG_CAP_BYTES  # of the submission's output still to keep in its log
    read_left: int = READ_CAP_BYTES  # still to read before its output pipe is closed (then its prints fail)

    def cell_started(self, cell: int) -> None:
        self._open = max(0.0, min(self.first_s.get(cell, 0.0), self.cap_s - self.credited_s))
        self.deadline += self._open
        self.credited_s += self._open

    def cell_ended(self, cell: int, seconds: float) -> None:
        if cell not in self.first_s:
            self.first_s[cell] = seconds
            return
        unused = self._open - min(seconds, self._open)
        self.deadline -= unused
        self.credited_s -= unused
        self._open = 0.0

    @property
    def left_s(self) -> float:
        """The most the deadline may still move."""
        return self.cap_s - self.credited_s


@dataclass
class ChildRun:
    """What one child run reported (accepted events only) and how it ended."""

    events: list[dict] = field(default_factory=list)
    ended: str = "exited"  # "done", "exited", "timeout", "deadline", "tampered", "rejected", "internal"
    returncode: int | None = None
    flooded: bool = False  # some of its output was dropped
    output_closed: bool = False  # the submission's read allowance was spent: its output pipe was closed
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



def _follow(run: ChildRun, events_reader: _Events, job: dict, budget: Budget, timeout: float,
            max_cells: int) -> None:
    """Accept the child's events in the expected order until the run ends; `run.ended` says how."""
    skip = set(job["skip_cells"])
    order: list[tuple[str, Any]] = []
    step_deadline = min(budget.deadline, time.monotonic() + STARTUP_S)
    cell_started = 0.0
    while True:
        remaining = step_deadline - time.monotonic()
        if remaining <= 0:
            run.ended = "deadline" if step_deadline >= budget.deadline else "timeout"
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
            step_deadline = min(budget.deadline, time.monotonic() + STARTUP_S)
            continue
        if len(run.events) >= len(order) or not _matches(event, order[len(run.events)]) or (
                size > SMALL_EVENT_BYTES and event.get("event") != "q_end"):
            run.ended = "tampered"
            return
        run.events.append(event)
        now = time.monotonic()
        if event["event"] == "cell_start":
            cell_started = now
            budget.cell_started(event["cell"])
        elif event["event"] == "cell_end":
            budget.cell_ended(event["cell"], now - cell_started)
        if event["event"] == "done":
            run.ended = "done"
            return
        step_deadline = min(budget.deadline, now + timeout + SLACK_S)
