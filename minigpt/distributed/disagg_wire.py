"""What goes over the wire in disaggregated serving (Chapter 19), besides the K/V (`kv_transfer`): the tags,
the message kinds, a worker's report to the driver and the driver's control message to a worker.

Driver -> worker: a control header of int64 `[kind, request index, attempt, P, max_new_tokens, decode rank]`
on `TAG_CTRL` (`NEW` or `STOP`), then the prompt's token ids on `TAG_PROMPT`. Worker -> driver: a report
of `REPORT` float64 fields `[kind, request index, attempt, a, b, c]` on `TAG_REPORT`, sent from the
worker's main thread only; a `FAIL` or `ERROR` report carries its reason as text, `c` bytes of UTF-8 on
`TAG_TEXT` right after it. Receives block, so each runs in a listener thread (`_thread`) that puts what
arrives on a queue; a receive that raises (the peer is gone) ends the thread with the reason.

Every control message is a CPU tensor carried by gloo whatever the K/V's device, so the tags these messages
rely on are gloo's; the K/V travel apart (`kv_transfer`), without tags. Reports go on the default group (with
NCCL for the K/V, "cpu:gloo,cuda:nccl"). The driver's messages to worker k go on a gloo group of the two
(`ctrl_groups`), so that a send k never takes can time out (`send_within`): gloo then closes every connection
of that group, here only the one to k.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from minigpt.distributed.kv_transfer import HEADER

if TYPE_CHECKING:
    from minigpt.distributed.disagg_records import DisaggConfig

TAG_CTRL, TAG_PROMPT, TAG_REPORT, TAG_TEXT = 10, 11, 30, 31
NEW, STOP = 1, 2  # driver -> worker
BYE, HELLO, FIRST, SENT, XFAIL, TOKEN, DONE, FAIL, ERROR, READY = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9  # worker -> driver
# HELLO (its process id) as a worker starts, READY once its model is loaded and it listens
# FAIL: the worker cannot serve the request (its reason is final); ERROR: the worker's step raised while the
# request was in it (the driver may retry it elsewhere, once)
TEXT_KINDS = (FAIL, ERROR)
REPORT = 6  # float64 fields of a report: kind, request index, attempt, a, b, c
IDLE_S = 0.0005  # a process with nothing to do sleeps this long before it looks again


def ctrl_groups(workers: list[int]) -> dict[int, Any]:
    """One gloo group of the driver and worker k per worker, for the driver's messages to k; every rank
    creates them all, in the same order (`new_group` is collective)."""
    return {k: dist.new_group([0, k], backend="gloo") for k in workers}


def send_within(tensor: torch.Tensor, dst: int, tag: int, timeout_s: float, group: Any = None) -> None:
    """Send `tensor` to `dst` over `group`, or raise if `dst` has not taken it within `timeout_s` seconds.
    A gloo send waits until the peer has posted its receive, so one to a hung peer never returns, and one
    caught as its peer dies may not either: when a connection closes, gloo fails its pending sends but not
    one already in its transmit queue (its write failed first), which waits for the group's timeout. When
    the wait times out, gloo closes every connection of `group`: a group of the two (`ctrl_groups`) keeps
    the others open."""
    if not dist.isend(tensor, dst, tag=tag, group=group).wait(timeout=timedelta(seconds=timeout_s)):
        raise TimeoutError(f"rank {dst} did not take a message within {timeout_s} s")


def _report(kind: int, index: int = -1, attempt: int = 0, a: float = 0.0, b: float = 0.0, c: float = 0.0) -> None:
    """A worker's report to the driver (main thread only: one sender per pair and tag keeps the order)."""
    dist.send(torch.tensor([kind, index, attempt, a, b, c], dtype=torch.float64), 0, tag=TAG_REPORT)


def _report_text(kind: int, index: int, attempt: int, text: str) -> None:
    """A `FAIL` or `ERROR` report with its reason."""
    data = torch.tensor(list(text.encode()[:2000]) or [32], dtype=torch.uint8)
    _report(kind, index, attempt, c=data.numel())
    dist.send(data, 0, tag=TAG_TEXT)


def _listen(q: queue.Queue, src: int, receive) -> None:
    """Put what `receive()` returns on `q` until it returns None (bye) or raises (the peer is gone)."""
    try:
        while True:
            item = receive()
            if item is None:
                q.put((src, None, None))
                return
            q.put((src, item, None))
    except Exception as e:  # gloo: "Connection closed by peer" when `src` died
        q.put((src, None, f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"))


def _thread(q: queue.Queue, src: int, receive) -> threading.Thread:
    t = threading.Thread(target=_listen, args=(q, src, receive), daemon=True)
    t.start()
    return t


def _recv_ctrl(group: Any = None) -> tuple[int, int, int, int, int, list[int]] | None:
    """The driver's next message on `group` (this worker's `ctrl_groups` entry): a request, or None for STOP."""
    buf = torch.empty(HEADER, dtype=torch.long)
    dist.recv(buf, 0, tag=TAG_CTRL, group=group)
    kind, index, attempt, P, max_new, dst = (int(x) for x in buf.tolist())
    if kind == STOP:
        return None
    ids = torch.empty(P, dtype=torch.long)
    dist.recv(ids, 0, tag=TAG_PROMPT, group=group)
    return index, attempt, max_new, dst, P, ids.tolist()


def _recv_report(src: int):
    """A receiver of `src`'s reports: the six fields, and for `FAIL`/`ERROR` the reason's text appended."""
    def receive() -> list | None:
        buf = torch.empty(REPORT, dtype=torch.float64)
        dist.recv(buf, src, tag=TAG_REPORT)
        msg: list = buf.tolist()
        if int(msg[0]) in TEXT_KINDS:
            data = torch.empty(int(msg[5]), dtype=torch.uint8)
            dist.recv(data, src, tag=TAG_TEXT)
            msg.append(bytes(data.tolist()).decode(errors="replace"))
        return None if int(msg[0]) == BYE else msg
    return receive


def kill_self() -> None:
    """Fault injection: end this process as the kernel would (SIGKILL: no cleanup, no goodbye)."""
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def stop_self() -> None:
    """Fault injection: hang this process (SIGSTOP: every thread stops, its connections stay open)."""
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGSTOP)


class Tripwire:
    """Fault injection: counts this rank's passes through one phase and kills it at the `after`-th
    (`DisaggConfig.faults`), or with `raises`, raises there once, or with `hangs`, stops it there; does nothing
    for a rank no fault names."""

    def __init__(self, left: int | None, raises: bool = False, hangs: bool = False) -> None:
        self.left, self.raises, self.hangs = left, raises, hangs

    def hit(self, n: int = 1) -> None:
        if self.left is None:
            return
        self.left -= n
        if self.left <= 0:
            if self.raises:
                self.left = None
                raise RuntimeError("a fault injected by DisaggConfig.faults (phase 'step')")
            if self.hangs:
                self.left = None
                stop_self()
                return
            kill_self()


def tripwire(cfg: DisaggConfig, rank: int, phase: str) -> Tripwire:
    """`cfg`'s fault for `rank` at `phase`: a kill, a hang (`Fault.hangs`), or at `step` a raise."""
    return Tripwire(cfg.fault_at(rank, phase), raises=phase == "step", hangs=cfg.fault_hangs(rank, phase))
