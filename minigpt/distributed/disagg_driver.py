"""The driver of disaggregated serving (Chapter 19), rank 0: arrivals, routing to a prefill and a decode
worker, the reports of both pools, failures (a dead worker's requests retried or failed), the pool log.

Every request is checked where it enters, before any worker sees it, with the colocated engine's rule
(`minigpt.serving.request.rejection`: positions, ids, KV blocks of one decode worker's pool) and its
messages, plus what this path cannot serve (sampled requests, cancellation) and a repeated id: a request
that fails the check ends `failed` with the reason on arrival. A request whose worker died, or whose step
raised, is prefilled again once; a second failure ends it, since it may be what kills workers."""

from __future__ import annotations

import queue
import time
from collections import deque
from typing import Any

import torch

from minigpt.distributed.disagg_admission import admission, least_loaded
from minigpt.distributed.disagg_processes import fence, has_ended
from minigpt.distributed.disagg_records import DisaggConfig, DisaggRun, PoolInterval, RequestRecord
from minigpt.distributed.disagg_wire import (
    DONE,
    ERROR,
    FAIL,
    FIRST,
    HELLO,
    IDLE_S,
    NEW,
    READY,
    SENT,
    STOP,
    TAG_CTRL,
    TAG_PROMPT,
    TOKEN,
    XFAIL,
    Tripwire,
    _recv_report,
    _thread,
    send_within,
)
from minigpt.serving.request import Request

PROCESS_CHECK_S = 0.1  # how often the driver looks whether a worker's process is still there


class Driver:
    """Rank 0: arrivals, routing, the reports of both pools, failures, the pool log."""

    def __init__(self, cfg: DisaggConfig, requests: list[Request], echo: bool, *, S_max: int, V: int,
                 ctrl: dict[int, Any] | None = None) -> None:
        self.cfg, self.requests, self.echo = cfg, requests, echo
        self.ctrl = ctrl or {}  # worker rank -> the group of the driver's messages to it (`ctrl_groups`)
        self.records = [RequestRecord(r.id, r.P, r.max_new_tokens, r.arrival_s) for r in requests]
        self.verdicts = admission(requests, cfg, S_max=S_max, V=V)  # None, or why a request is refused
        self.tokens_heard = Tripwire(cfg.fault_at(0, "decode"))
        self.live = set(cfg.prefill_ranks() + cfg.decode_ranks())
        self.dead: dict[int, str] = {}
        self.heard: dict[int, float] = {}
        self.pids: dict[int, int] = {}
        self.ready: set[int] = set()
        self.queue: deque[int] = deque()  # request indices ready for a prefill worker
        self.log: list[PoolInterval] = []
        self._interval = [0, 0, 0]  # prompt tokens, generated tokens, transfer bytes

    def _waits_on(self, r: RequestRecord, rank: int) -> bool:
        """True if unfinished `r` waits on `rank`: its prefill (or the transfer it sends), or its decode."""
        if r.status == "prefilling":  # its prefill runs there, or its K/V would be sent there
            return rank in (r.prefill_rank, r.decode_rank)
        if r.status == "decoding":
            return r.decode_rank == rank or (r.prefill_rank == rank and r.transfer_s is None)
        return False

    def _open(self, r: RequestRecord) -> bool:
        """Unfinished, or finished by its decode worker before its prefill worker reported the first token and
        the transfer (the two travel on different connections): the run waits for those reports too."""
        if r.status not in ("finished", "failed"):
            return True
        return (r.status == "finished" and r.max_new_tokens > 1 and r.transfer_s is None
                and r.prefill_rank in self.live)

    def holding(self, rank: int) -> list[int]:
        """Indices of unfinished requests that wait on `rank` and whose silence it answers for: a prefill
        worker for its prefills and the transfers it has not reported sent, a decode worker once the K/V were
        sent to it."""
        return [i for i, r in enumerate(self.records)
                if (r.status == "prefilling" and r.prefill_rank == rank)
                or (r.status == "decoding" and r.prefill_rank == rank and r.transfer_s is None)
                or (r.status == "decoding" and r.decode_rank == rank and r.transfer_s is not None)]

    def gone(self) -> list[int]:
        """Live ranks whose process has ended."""
        return [k for k in self.live if k in self.pids and has_ended(self.pids[k])]

    def _send(self, tensor: torch.Tensor, rank: int, tag: int) -> None:
        """A message to worker `rank` on its own group, bounded by `silence_s` (`send_within`)."""
        send_within(tensor, rank, tag, self.cfg.silence_s, self.ctrl.get(rank))

    def _fence(self, rank: int) -> None:
        """Kill worker `rank`'s process if it is still there (`disagg_processes.fence`), once its hello named it."""
        if rank in self.pids:
            fence(self.pids[rank])

    def declare_dead(self, rank: int, why: str) -> None:
        if rank not in self.live:
            return
        self._fence(rank)
        self.live.discard(rank)
        held = [i for i, r in enumerate(self.records) if self._waits_on(r, rank)]
        self.dead[rank] = f"{why}; it held {', '.join(self.records[i].id for i in held) or 'no request'}"
        for i in held:
            self.retry(i, f"rank {rank} died ({why})")

    def retry(self, i: int, why: str) -> None:
        """Prefill request `i` again after `why` (its worker died, or its step raised), unless it failed once
        already (then it may be what kills workers), retries is 0, or no worker is left to retry on."""
        r = self.records[i]
        prefill = self._pick(self.cfg.prefill_ranks(), "prefill")
        decode = self._pick(self.cfg.decode_ranks(), "decode")
        if r.retried:
            refused = (f"not retried again: its first attempt failed too ({r.retried[0]}), and a request that "
                       f"fails twice may be what kills workers")
        elif self.cfg.retries == 0:
            refused = "not retried (retries=0)"
        elif prefill is None or decode is None:
            refused = f"no live {'prefill' if prefill is None else 'decode'} worker to retry on"
        else:
            r.attempt += 1
            r.status, r.tokens, r.token_s, r.kv_bytes, r.transfer_s = "queued", [], [], 0, None
            r.prefill_rank = r.decode_rank = None
            r.retried.append(why)
            r.reason = ""
            self.queue.appendleft(i)
            return
        r.status, r.reason = "failed", f"{why}; {refused}"

    def _pick(self, ranks: list[int], pool: str) -> int | None:
        live = [k for k in ranks if k in self.live]
        if not live:
            return None
        if pool == "prefill":
            load = {k: sum(r.P for r in self.records if r.status == "prefilling" and r.prefill_rank == k) for k in live}
        else:
            load = {k: sum(1 for r in self.records if r.status in ("prefilling", "decoding") and r.decode_rank == k)
                    for k in live}
        return least_loaded(load)

    def dispatch(self, i: int, now: float) -> None:
        r, req = self.records[i], self.requests[i]
        p, d = self._pick(self.cfg.prefill_ranks(), "prefill"), self._pick(self.cfg.decode_ranks(), "decode")
        if p is None or d is None:
            r.status, r.reason = "failed", f"no live {'prefill' if p is None else 'decode'} worker"
            return
        if not self.holding(p):
            self.heard[p] = now  # its silence is counted from when it was given work
        r.status, r.prefill_rank, r.decode_rank = "prefilling", p, d
        try:  # bounded: a worker that never takes its work is found here, not waited on for good
            header = torch.tensor([NEW, i, r.attempt, r.P, r.max_new_tokens, d], dtype=torch.long)
            self._send(header, p, TAG_CTRL)
            self._send(torch.tensor(req.prompt, dtype=torch.long), p, TAG_PROMPT)
        except Exception as e:
            self.declare_dead(p, f"a send to it failed: {str(e).splitlines()[0][:80]}")

    def handle(self, src: int, msg: list[float], now: float) -> None:
        kind, i, attempt = int(msg[0]), int(msg[1]), int(msg[2])
        if kind == HELLO:
            self.pids[src] = int(msg[3])
            return
        if kind == READY:
            self.ready.add(src)
            return
        r = self.records[i]
        if attempt != r.attempt or r.status == "failed" or (r.status == "finished" and kind not in (SENT, FIRST)):
            return  # a message of an attempt that was given up
        if kind == FIRST:  # the decode worker's tokens (another connection) may have come first: it goes before
            r.tokens.insert(0, int(msg[3]))
            r.token_s.insert(0, msg[4] - self.t0)
            self._interval[0] += r.P
            if msg[5] or r.status == "finished":
                r.status, r.reason = "finished", "max_new_tokens"
            else:
                r.status = "decoding"
        elif kind == SENT:
            if not self.holding(r.decode_rank):  # type: ignore[arg-type]
                self.heard[r.decode_rank] = now  # type: ignore[index]
            r.kv_bytes, r.transfer_s = int(msg[3]), msg[4]
            self._interval[2] += int(msg[3])
        elif kind == XFAIL:
            self.declare_dead(int(msg[3]), "the K/V transfer to it failed")
            if r.attempt == attempt and r.status not in ("finished", "failed", "queued"):
                self.retry(i, f"rank {int(msg[3])} died (the K/V transfer to it failed)")  # dead already
        elif kind == TOKEN:
            r.tokens.append(int(msg[3]))
            r.token_s.append(msg[4] - self.t0)
            self._interval[1] += 1
            self.tokens_heard.hit()
        elif kind == DONE:
            r.status, r.reason = "finished", "max_new_tokens"
        elif kind == FAIL:  # the worker's own check refused it: final
            r.status, r.reason = "failed", str(msg[6])
        elif kind == ERROR and r.status not in ("finished", "queued"):  # its worker's step raised
            self.retry(i, str(msg[6]))

    def tick(self, now: float, force: bool = False) -> None:
        start = self.log[-1].end_s if self.log else 0.0
        span = now - start
        p, g, b = self._interval
        if span < self.cfg.log_interval_s and not (force and (p or g or b)) or span <= 0:
            return
        count = {s: sum(1 for r in self.records if r.status == s) for s in ("prefilling", "decoding", "queued")}
        line = PoolInterval(start, now, p / span, g / span, b, count["prefilling"], count["decoding"],
                            count["queued"])  # arrived, not yet sent to a prefill worker
        self.log.append(line)
        self._interval = [0, 0, 0]
        if self.echo:
            print(line)

    def run(self, timeout_s: float) -> DisaggRun:
        cfg = self.cfg
        workers = cfg.prefill_ranks() + cfg.decode_ranks()
        inbox: queue.Queue = queue.Queue()
        threads = [_thread(inbox, k, _recv_report(k)) for k in workers]
        self.t0 = time.monotonic()
        checked = 0.0
        while len(self.ready) + len(self.dead) < len(workers):  # every worker has loaded its model and listens
            try:
                k, msg, err = inbox.get(timeout=0.05)
            except queue.Empty:
                k, msg, err = None, None, None
            if msg is not None:
                self.handle(k, msg, 0.0)  # type: ignore[arg-type]
            elif k is not None:  # it died loading: the run goes on without it
                self.declare_dead(k, f"it ended before it was ready: {err}")
            if time.monotonic() - checked > PROCESS_CHECK_S:
                checked = time.monotonic()
                for k in self.gone():
                    self.declare_dead(k, "its process ended before it was ready")
            if time.monotonic() - self.t0 > timeout_s:
                raise TimeoutError(f"workers {sorted(set(workers) - self.ready)} never said they were ready")
        self.t0 = time.monotonic()
        arrivals = deque(sorted(range(len(self.requests)), key=lambda i: self.requests[i].arrival_s))
        ended: set[int] = set()
        checked = 0.0
        while any(self._open(r) for r in self.records):
            now = time.monotonic() - self.t0
            if now > timeout_s:
                raise TimeoutError(f"requests unfinished after timeout_s={timeout_s} s")
            busy = False
            while arrivals and self.requests[arrivals[0]].arrival_s <= now:
                i = arrivals.popleft()
                if self.verdicts[i] is not None:  # refused where it enters: no worker ever sees it
                    self.records[i].status, self.records[i].reason = "failed", f"rejected: {self.verdicts[i]}"
                    continue
                self.records[i].status = "queued"
                self.queue.append(i)
            while self.queue:
                self.dispatch(self.queue.popleft(), now)
                busy = True
            while not inbox.empty():
                k, msg, err = inbox.get()
                busy = True
                if msg is None:  # its connection closed: the worker is gone
                    ended.add(k)
                    self.declare_dead(k, err or "it said bye before the end")
                    continue
                if k in self.live:
                    self.heard[k] = now
                    self.handle(k, msg, now)
            if now - checked > PROCESS_CHECK_S:
                checked = now
                for k in self.gone():
                    self.declare_dead(k, "its process has ended")
            for k in list(self.live):
                if self.holding(k) and now - self.heard.get(k, now) > cfg.silence_s:
                    self.declare_dead(k, f"no message for silence_s={cfg.silence_s} s while holding requests")
            self.tick(now)
            if not busy:
                time.sleep(IDLE_S)
        end = time.monotonic() - self.t0
        self.tick(end, force=True)
        Tripwire(cfg.fault_at(0, "shutdown")).hit()
        for k in sorted(self.live):
            try:
                self._send(torch.tensor([STOP, 0, 0, 0, 0, 0], dtype=torch.long), k, TAG_CTRL)
            except Exception:
                self._fence(k)  # it died after the last request ended, or it hangs: it must not hold the end
        for t in threads:
            t.join(timeout=10)
        return DisaggRun(self.records, self.log, {}, dict(self.dead), end, dict(self.pids))


def driver(rank: int, world_size: int, cfg: DisaggConfig, requests: list[Request], echo: bool,
           timeout_s: float, S_max: int, V: int, ctrl: dict[int, Any] | None = None) -> DisaggRun:
    return Driver(cfg, requests, echo, S_max=S_max, V=V, ctrl=ctrl).run(timeout_s)
