"""A profiled time line of one call's top-level aten operators (torch.profiler, CPU, wall clock): where
the overhead floor shows as gaps and short operators, each span sorted as `op_kind` sorts operators."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from minigpt.measure.op_count import HOST_SYNC_OP, op_kind


@dataclass(frozen=True)
class OpSpan:
    """One top-level aten operator of a profiled call: name, kind (as `op_kind`), start and end (s)."""

    name: str
    kind: str
    start_s: float
    end_s: float


def op_timeline(fn: Callable[[], Any], *, tries: int = 5) -> list[OpSpan]:
    """The top-level aten operators of one call of `fn` on a time line (torch.profiler, CPU, wall clock).

    "Top-level": an operator no other aten operator called (`aten::linear`, not the `aten::t` and
    `aten::addmm` inside it); its kind is "sync" if it or an operator inside it reads a value back to
    the host, else "kernel" if any operator inside it is a kernel, else "view". Times start at 0 at
    the first operator. The profiler's wall clock counts a descheduled thread, so the call is profiled
    `tries` times and the shortest trace kept (the one least disturbed by other jobs).
    """
    from torch.profiler import ProfilerActivity, profile

    best: list[OpSpan] | None = None
    for _ in range(_int_at_least("tries", tries, 1)):
        with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
        events = [e for e in prof.events() if e.name.startswith("aten::")]
        top = [e for e in events if e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")]
        if not top:
            return []
        t0 = min(e.time_range.start for e in top)
        spans = [OpSpan(e.name.replace("::", "."), _span_kind(e), (e.time_range.start - t0) * 1e-6,
                        (e.time_range.end - t0) * 1e-6) for e in sorted(top, key=lambda e: e.time_range.start)]
        if best is None or spans[-1].end_s < best[-1].end_s:
            best = spans
    return best or []


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (some profiler builds log every start and stop there from C++)."""
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _int_at_least(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _span_kind(event: Any) -> str:
    kinds = set()
    stack = [event]
    while stack:
        e = stack.pop()
        children = [c for c in e.cpu_children if c.name.startswith("aten::")]
        name = e.name.replace("::", ".")
        if name == HOST_SYNC_OP or name == "aten.item":
            return "sync"
        if not children:
            try:
                kinds.add(op_kind(name))
            except ValueError:
                kinds.add("kernel")
        stack.extend(children)
    return "sync" if "sync" in kinds else "kernel" if "kernel" in kinds else "view"
