"""The child's event channel, every byte bounded: a line longer than `Bounds.event_bytes` (`SMALL_EVENT_BYTES`
for every event but a question's outputs), more bytes than `Bounds.total_bytes` in all, a number longer than 32
characters, or a line that is not one JSON object ends the reading (`_Events`, `parse_event`).
"""

from __future__ import annotations

import json
import os
import queue
import threading
from dataclasses import dataclass

SMALL_EVENT_BYTES = 64 * 2**10  # every event but a question's outputs (400 cells' indices and 32 KiB of findings fit)


@dataclass(frozen=True)
class Bounds:
    """What the parent reads from one child run, at most."""

    event_bytes: int  # one event line (a question's outputs)
    total_bytes: int  # all event lines of the run


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

