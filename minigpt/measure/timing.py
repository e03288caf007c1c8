"""One timer and one device choice for every measurement in the book.

`time_fn` times a call after warm-up, synced on cuda, on the wall clock (what a user waits for) or,
for a single-threaded run on a CPU shared with other jobs, on the calling thread's CPU clock (time
the thread spends descheduled does not count). The device choice and sync live in
`minigpt.runtime.device`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch

from minigpt.runtime.device import default_device, sync  # noqa: F401  (one device choice, one sync)

#: "wall": wall-clock time, synced on cuda. "thread": CPU time of the calling thread
#: (`time.thread_time`), for device="cpu" with torch.set_num_threads(1) only.
Clock = Literal["wall", "thread"]


@dataclass(frozen=True)
class Timing:
    """Seconds of repeated calls: the median (what the book reports), the minimum, all of them."""

    median_s: float
    min_s: float
    times: list[float]
    repeats: int


def time_fn(
    fn: Callable[[], Any], *, warmup: int = 3, repeats: int = 10, device: torch.device | str | None = None,
    clock: Clock = "wall",
) -> Timing:
    """Time `fn` for Eq. (4.1)'s rates: `warmup` untimed calls, then `repeats` timed ones, synced on cuda."""
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    if clock == "wall":
        now = time.perf_counter
    elif clock == "thread":
        if (device is not None and torch.device(device).type != "cpu") or torch.get_num_threads() != 1:
            raise ValueError("clock='thread' measures one CPU thread: use device='cpu' and torch.set_num_threads(1)")
        now = time.thread_time
    else:
        raise ValueError(f"clock must be 'wall' or 'thread', got {clock!r}")
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(repeats):
        start = now()
        fn()
        sync(device)
        times.append(now() - start)
    return Timing(median_s=statistics.median(times), min_s=min(times), times=times, repeats=repeats)
