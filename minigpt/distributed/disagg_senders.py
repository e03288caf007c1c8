"""A prefill worker's sender threads (Chapter 19): the K/V transfers to each decode worker one after another,
on a thread of that worker's own, so that a transfer stuck on a dead worker holds up no other."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from minigpt.distributed.kv_transfer import send_kv


def _sender(jobs: queue.Queue, done: queue.Queue, group: Any, between: Callable[[], None] | None) -> None:
    """A prefill worker's sender thread for one decode worker (the only user of that pair's `group`): K/V
    transfers one after another, each result on `done`."""
    while True:
        job = jobs.get()
        if job is None:
            return
        start = time.monotonic()
        try:
            kv_bytes, meta_bytes = send_kv(*job, group=group, between=between)
            done.put((job, kv_bytes, meta_bytes, time.monotonic() - start, None))
        except Exception as e:
            done.put((job, 0, 0, time.monotonic() - start, str(e).splitlines()[0][:120]))


class _Senders:
    """One sender thread per decode worker, created on first use: a transfer stuck on a dead worker (a gloo
    send to a peer that is gone may block instead of raising) never holds up the transfers to the others."""

    def __init__(self, done: queue.Queue, groups: dict[int, Any], between: Callable[[], None] | None = None) -> None:
        self.done, self.groups, self.between = done, groups, between
        self.queues: dict[int, queue.Queue] = {}
        self.threads: list[threading.Thread] = []

    def put(self, job: tuple) -> None:
        dst = job[0]
        if dst not in self.queues:
            self.queues[dst] = queue.Queue()
            args = (self.queues[dst], self.done, self.groups.get(dst), self.between)
            thread = threading.Thread(target=_sender, args=args, daemon=True)
            thread.start()
            self.threads.append(thread)
        self.queues[dst].put(job)

    def close(self, timeout_s: float) -> None:
        for jobs in self.queues.values():
            jobs.put(None)
        for thread in self.threads:
            thread.join(timeout=timeout_s)  # a thread stuck on a dead worker is left behind (daemon)
