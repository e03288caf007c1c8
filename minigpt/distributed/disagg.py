"""Prefill and decode apart (Chapter 19): a router, N prefill workers and M decode workers, each a process.

The shape is the one of vLLM's disaggregated prefill (a proxy, a prefill instance with a KV producer, a
decode instance with a KV consumer), SGLang's PD disaggregation and DistServe:

- rank 0, the **driver** (the router): it lets requests arrive at their times, picks a prefill worker
  (fewest prompt tokens outstanding) and a decode worker (fewest requests held) for each, sends the
  prompt to the prefill worker, and collects what the workers report: the first token, the transfer,
  each later token. It is the only rank that sees the whole request.
- ranks 1..N, **prefill workers**: each runs the serving engine (`minigpt.serving.Engine`: its
  scheduler and executor, chunked prefill if `chunk_size` is set) on requests of one token; when a
  request's first token is sampled, its P tokens' K/V leave the paged pool (`kv_transfer.export_kv`)
  and go straight to the chosen decode worker (`isend`), not through the driver.
- ranks N+1..N+M, **decode workers**: each receives K/V into its own paged pool (`import_kv`) and runs
  the same engine on them: a received request joins the running batch with P tokens computed and its
  first token generated, so every later step is a decode (a preemption by recompute would prefill it
  again here, as a colocated engine does).

Failures. A worker may die (the launcher's `expendable` ranks): a send to it raises in gloo ("Connection
closed by peer"), but a receive from it just never completes, so the driver also watches silence: a
worker holding requests that has reported nothing for `silence_s` is declared dead. Either way its
requests are prefilled again and sent to another live decode worker (up to `retries` times) or end
`failed` with the reason; none is lost. Every message carries the request's attempt number, so a late
message of a dead attempt is ignored.

MiniGPT simplifies: greedy requests only (a sampled request would also need its generator's state
moved), one transfer after the whole prefill (vLLM's P2P connector overlaps it layer by layer), no
prefix cache on either side, and time is the machine's monotonic clock, shared by the processes.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field

import torch
import torch.distributed as dist

from minigpt.distributed import launch
from minigpt.distributed.kv_transfer import HEADER, Transfer, export_kv, import_kv, recv_kv, send_bye, send_kv
from minigpt.runtime.checkpoint import load_pretrained
from minigpt.runtime.generate import Sampling
from minigpt.serving.engine import Engine, EngineConfig
from minigpt.serving.meters import time_per_output_token
from minigpt.serving.request import Request, Status, Tracked

TAG_CTRL, TAG_PROMPT, TAG_REPORT = 10, 11, 30
NEW, STOP = 1, 2  # driver -> worker
BYE, HELLO, FIRST, SENT, XFAIL, TOKEN, DONE, FAIL = 0, 1, 2, 3, 4, 5, 6, 7  # worker -> driver
REPORT = 6  # float64 fields of a report: kind, request index, attempt, a, b, c
IDLE_S = 0.0005  # a process with nothing to do sleeps this long before it looks again


@dataclass(frozen=True)
class DisaggConfig:
    """Pools and their engines: N prefill and M decode workers, each with its own paged pool of
    `num_blocks` blocks of `block_size` tokens; `chunk_size` chunks long prompts on the prefill side.
    `silence_s`: a worker holding requests that says nothing this long is dead; `retries`: how many
    times a request whose worker died is prefilled again. `die_after`: fault injection for the tests,
    (decode worker j, tokens): that worker exits hard once it has generated that many tokens."""

    prefill_workers: int = 1
    decode_workers: int = 1
    max_batch: int = 8
    chunk_size: int | None = None
    num_blocks: int = 64
    block_size: int = 16
    silence_s: float = 10.0
    retries: int = 1
    log_interval_s: float = 1.0
    die_after: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for name in ("prefill_workers", "decode_workers", "max_batch", "num_blocks", "block_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries must be an integer >= 0, got {self.retries!r}")
        if not self.silence_s > 0:
            raise ValueError(f"silence_s must be > 0 seconds, got {self.silence_s!r}")
        if self.die_after is not None and not 0 <= self.die_after[0] < self.decode_workers:
            raise ValueError(f"die_after names decode worker j in 0..{self.decode_workers - 1}, got {self.die_after}")

    @property
    def world_size(self) -> int:
        return 1 + self.prefill_workers + self.decode_workers

    def prefill_ranks(self) -> list[int]:
        return list(range(1, 1 + self.prefill_workers))

    def decode_ranks(self) -> list[int]:
        return list(range(1 + self.prefill_workers, self.world_size))

    def engine_config(self, *, prefill: bool) -> EngineConfig:
        return EngineConfig(max_batch=self.max_batch, chunk_size=self.chunk_size if prefill else None)


@dataclass
class RequestRecord:
    """What the driver knows of one request at the end: `finished` or `failed` (with the reason), its
    tokens, arrival and token times (seconds from the start), and where it ran."""

    id: str
    P: int
    max_new_tokens: int
    arrival_s: float
    status: str = "waiting"
    reason: str = ""
    tokens: list[int] = field(default_factory=list)
    token_s: list[float] = field(default_factory=list)
    attempt: int = 0
    prefill_rank: int | None = None
    decode_rank: int | None = None
    kv_bytes: int = 0  # K/V bytes of the transfer that completed (Eq. 2.1 · P)
    transfer_s: float | None = None  # seconds the prefill worker's sender spent on the transfer
    retried: list[str] = field(default_factory=list)  # why each earlier attempt was given up

    @property
    def ttft_s(self) -> float:
        return self.token_s[0] - self.arrival_s

    @property
    def tpot_s(self) -> float:
        return time_per_output_token(self.token_s)


@dataclass(frozen=True)
class PoolInterval:
    """One log line of the two pools between `start_s` and `end_s` (the engine log's style, per pool)."""

    start_s: float
    end_s: float
    prompt_tok_s: float  # prefill pool
    generation_tok_s: float  # decode pool
    transfer_bytes: int  # K/V bytes whose transfer completed in the interval
    prefilling: int
    decoding: int
    waiting: int

    def __str__(self) -> str:
        return (f"[{self.end_s:8.3f} s] Prefill pool: {self.prompt_tok_s:,.1f} prompt tokens/s, "
                f"{self.prefilling} reqs | "
                f"Decode pool: {self.generation_tok_s:,.1f} generation tokens/s, {self.decoding} reqs | "
                f"KV transfer: {self.transfer_bytes:,} B | Pending: {self.waiting} reqs")


@dataclass
class DisaggRun:
    """A run's requests (in submission order), its pool log, each worker's stats, and the dead ranks."""

    records: list[RequestRecord]
    log: list[PoolInterval]
    workers: dict[int, dict]
    dead: dict[int, str]
    span_s: float
    pids: dict[int, int] = field(default_factory=dict)  # every worker's process id (from its hello)

    @property
    def kv_bytes(self) -> int:
        return sum(w.get("kv_bytes_sent", 0) for w in self.workers.values() if isinstance(w, dict))


# -- messages: blocking calls, receives in listener threads ----------------------------------------


def _report(kind: int, index: int = -1, attempt: int = 0, a: float = 0.0, b: float = 0.0, c: float = 0.0) -> None:
    """A worker's report to the driver (main thread only: one sender per pair and tag keeps the order)."""
    dist.send(torch.tensor([kind, index, attempt, a, b, c], dtype=torch.float64), 0, tag=TAG_REPORT)


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


def _recv_ctrl() -> tuple[int, int, int, int, int, list[int]] | None:
    buf = torch.empty(HEADER, dtype=torch.long)
    dist.recv(buf, 0, tag=TAG_CTRL)
    kind, index, attempt, P, max_new, dst = (int(x) for x in buf.tolist())
    if kind == STOP:
        return None
    ids = torch.empty(P, dtype=torch.long)
    dist.recv(ids, 0, tag=TAG_PROMPT)
    return index, attempt, max_new, dst, P, ids.tolist()


# -- the two kinds of worker ---------------------------------------------------------------------


class PrefillEngine(Engine):
    """The serving engine, for requests of one token: when a request ends (its first token sampled),
    its sequence's K/V are copied out before the engine frees its blocks."""

    handoff: list[tuple[Tracked, torch.Tensor]]

    def _finish(self, t: Tracked, reason: str) -> None:
        assert t.seq is not None
        self.handoff.append((t, export_kv(self.pool, t.seq, t.request.P)))
        super()._finish(t, reason)


class DecodeEngine(Engine):
    """The serving engine, fed by transfers: `accept` puts a prefilled request in the running batch."""

    def can_accept(self, P: int) -> bool:
        s = self.scheduler
        return (len(s.running) + len(s.waiting) < s.max_batch
                and s.fits_admission(-(-P // self.pool.block_size)))

    def accept(self, rid: str, prompt: list[int], max_new_tokens: int, first: int, kv: torch.Tensor) -> Tracked:
        """Request `rid` with its prompt's K/V `kv` and its first token: it decodes from the next step on."""
        t = Tracked(Request(rid, tuple(prompt), max_new_tokens, arrival_s=self.now))
        t.seq = import_kv(self.pool, kv)
        t.computed, t.generated, t.token_s = len(prompt), [first], [self.now]
        t.status, t.admitted_s = Status.RUNNING, self.now
        self.requests[rid] = t
        self._ids.add(rid)
        self.scheduler.running.append(t)
        return t


def _engine(cls: type[Engine], cfg: DisaggConfig, *, prefill: bool) -> Engine:
    model = load_pretrained().model
    return cls.for_model(model, num_blocks=cfg.num_blocks, block_size=cfg.block_size,
                         config=cfg.engine_config(prefill=prefill))


def _sender(jobs: queue.Queue, done: queue.Queue) -> None:
    """A prefill worker's sender thread: K/V transfers one after another, each result on `done`."""
    while True:
        job = jobs.get()
        if job is None:
            return
        start = time.monotonic()
        try:
            kv_bytes, meta_bytes = send_kv(*job)
            done.put((job, kv_bytes, meta_bytes, time.monotonic() - start, None))
        except Exception as e:
            done.put((job, 0, 0, time.monotonic() - start, str(e).splitlines()[0][:120]))


class _Senders:
    """One sender thread per decode worker, created on first use: a transfer stuck on a dead worker (a gloo
    send to a peer that is gone may block instead of raising) never holds up the transfers to the others."""

    def __init__(self, done: queue.Queue) -> None:
        self.done = done
        self.queues: dict[int, queue.Queue] = {}
        self.threads: list[threading.Thread] = []

    def put(self, job: tuple) -> None:
        dst = job[0]
        if dst not in self.queues:
            self.queues[dst] = queue.Queue()
            thread = threading.Thread(target=_sender, args=(self.queues[dst], self.done), daemon=True)
            thread.start()
            self.threads.append(thread)
        self.queues[dst].put(job)

    def close(self, timeout_s: float) -> None:
        for jobs in self.queues.values():
            jobs.put(None)
        for thread in self.threads:
            thread.join(timeout=timeout_s)  # a thread stuck on a dead worker is left behind (daemon)


def prefill_worker(rank: int, cfg: DisaggConfig) -> dict:
    engine = _engine(PrefillEngine, cfg, prefill=True)
    assert isinstance(engine, PrefillEngine)
    engine.handoff = []
    inbox: queue.Queue = queue.Queue()
    listener = _thread(inbox, 0, _recv_ctrl)
    done: queue.Queue = queue.Queue()
    senders = _Senders(done)
    _report(HELLO, a=os.getpid())
    meta: dict[str, tuple[int, int, int, int]] = {}  # rid -> (index, attempt, max_new_tokens, dst)
    stats = {"role": "prefill", "rank": rank, "pid": os.getpid(), "prompt_tokens": 0, "busy_s": 0.0,
             "kv_bytes_sent": 0, "meta_bytes_sent": 0, "transfers": 0, "failed_transfers": 0, "transfer_s": 0.0}
    stopping = False
    while not (stopping and not engine.busy and not meta):
        busy = False
        while not inbox.empty():
            _, item, err = inbox.get()
            if item is None:  # STOP (or the driver is gone)
                stopping = True
                continue
            index, attempt, max_new, dst, _, prompt = item
            rid = f"{index}.{attempt}"
            meta[rid] = (index, attempt, max_new, dst)
            engine.submit(Request(rid, tuple(prompt), 1, arrival_s=engine.now))
            busy = True
        if engine.busy:
            start = time.monotonic()
            engine.step()
            stats["busy_s"] += time.monotonic() - start
            busy = True
            for t, kv in engine.handoff:
                index, attempt, max_new, dst = meta.pop(t.request.id)
                stats["prompt_tokens"] += t.request.P
                first = t.generated[0]
                _report(FIRST, index, attempt, first, time.monotonic(), float(max_new == 1))
                if max_new > 1:
                    senders.put((dst, index, attempt, list(t.request.prompt), max_new, first, kv))
            engine.handoff.clear()
        while not done.empty():
            (dst, index, attempt, *_), kv_bytes, meta_bytes, took, err = done.get()
            if err is None:
                stats["kv_bytes_sent"] += kv_bytes
                stats["meta_bytes_sent"] += meta_bytes
                stats["transfers"] += 1
                stats["transfer_s"] += took
                _report(SENT, index, attempt, kv_bytes, took, dst)
            else:  # the decode worker is gone: gloo says "Connection closed by peer"
                stats["failed_transfers"] += 1
                _report(XFAIL, index, attempt, dst)
            busy = True
        if not busy:
            time.sleep(IDLE_S)
    senders.close(timeout_s=10.0)
    while not done.empty():  # transfers that ended after the last look
        (dst, index, attempt, *_), kv_bytes, meta_bytes, took, err = done.get()
        if err is None:
            stats["kv_bytes_sent"] += kv_bytes
            stats["meta_bytes_sent"] += meta_bytes
            stats["transfers"] += 1
    for d in cfg.decode_ranks():  # end the decode workers' receivers for this rank
        try:
            send_bye(d)
        except Exception:
            pass  # that decode worker is gone
    _report(BYE)
    listener.join(timeout=5)
    return stats


def decode_worker(rank: int, cfg: DisaggConfig) -> dict:
    engine = _engine(DecodeEngine, cfg, prefill=False)
    assert isinstance(engine, DecodeEngine)
    c = engine.pool.config
    shape = (2, c.L, c.H_kv, c.d_h)
    inbox: queue.Queue = queue.Queue()
    threads = [_thread(inbox, 0, _recv_ctrl)]
    threads += [_thread(inbox, src, lambda src=src: recv_kv(src, shape, engine.pool.dtype))
                for src in cfg.prefill_ranks()]
    _report(HELLO, a=os.getpid())
    held: deque[Transfer] = deque()  # received, waiting for room in the pool
    active: dict[str, tuple[Tracked, int, int, int]] = {}  # rid -> (tracked, index, attempt, tokens reported)
    me = cfg.decode_ranks().index(rank)
    die_after = cfg.die_after[1] if cfg.die_after is not None and cfg.die_after[0] == me else None
    stats = {"role": "decode", "rank": rank, "pid": os.getpid(), "generated_tokens": 0, "busy_s": 0.0,
             "kv_bytes_received": 0, "transfers": 0}
    open_ = set(range(len(threads)))
    while True:
        busy = False
        while not inbox.empty():
            src, item, err = inbox.get()
            if item is None:
                open_.discard(0 if src == 0 else cfg.prefill_ranks().index(src) + 1)
                continue
            if src == 0:
                continue  # the driver sends a decode worker nothing but STOP
            held.append(item)
            stats["kv_bytes_received"] += item.kv_bytes
            stats["transfers"] += 1
            busy = True
        if not open_:  # STOP from the driver and bye from every prefill worker
            break
        while held:
            x = held[0]
            total = len(x.prompt) + x.max_new_tokens - 1
            if -(-total // engine.pool.block_size) > engine.pool.allocator.num_blocks:
                held.popleft()
                _report(FAIL, x.index, x.attempt, total)
                continue
            if not engine.can_accept(len(x.prompt)):
                break
            held.popleft()
            rid = f"{x.index}.{x.attempt}"
            active[rid] = (engine.accept(rid, x.prompt, x.max_new_tokens, x.first, x.kv), x.index, x.attempt, 1)
        if engine.scheduler.running or engine.scheduler.waiting:
            start = time.monotonic()
            engine.step()
            now = time.monotonic()
            stats["busy_s"] += now - start
            busy = True
            for rid, (t, index, attempt, sent) in list(active.items()):
                for tok in t.generated[sent:]:
                    _report(TOKEN, index, attempt, tok, now)
                    stats["generated_tokens"] += 1
                    if die_after is not None and stats["generated_tokens"] >= die_after:
                        os._exit(1)  # fault injection: a decode worker that dies mid-run
                active[rid] = (t, index, attempt, len(t.generated))
                if t.status.done:
                    _report(DONE, index, attempt)
                    del active[rid]
        if not busy:
            time.sleep(IDLE_S)
    _report(BYE)
    for t in threads:
        t.join(timeout=5)
    return stats


# -- the driver ----------------------------------------------------------------------------------


class Driver:
    """Rank 0: arrivals, routing, the reports of both pools, failures, the pool log."""

    def __init__(self, cfg: DisaggConfig, requests: list[Request], echo: bool) -> None:
        self.cfg, self.requests, self.echo = cfg, requests, echo
        self.records = [RequestRecord(r.id, r.P, r.max_new_tokens, r.arrival_s) for r in requests]
        self.live = set(cfg.prefill_ranks() + cfg.decode_ranks())
        self.dead: dict[int, str] = {}
        self.heard: dict[int, float] = {}
        self.pids: dict[int, int] = {}
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
        """Unfinished, or finished by its decode worker before its prefill worker reported the transfer (the
        two reports travel on different connections): the run waits for that report too."""
        if r.status not in ("finished", "failed"):
            return True
        return (r.status == "finished" and len(r.tokens) > 1 and r.transfer_s is None
                and r.prefill_rank in self.live)

    def holding(self, rank: int) -> list[int]:
        """Indices of unfinished requests that wait on `rank` and whose silence it answers for: a prefill
        worker for its prefills, a decode worker once the K/V were sent to it."""
        return [i for i, r in enumerate(self.records)
                if (r.status == "prefilling" and r.prefill_rank == rank)
                or (r.status == "decoding" and r.decode_rank == rank and r.transfer_s is not None)]

    def declare_dead(self, rank: int, why: str) -> None:
        if rank not in self.live:
            return
        self.live.discard(rank)
        self.dead[rank] = why
        for i, r in enumerate(self.records):
            if self._waits_on(r, rank):
                self.retry(i, f"rank {rank} died ({why})")

    def retry(self, i: int, why: str) -> None:
        r = self.records[i]
        if r.attempt < self.cfg.retries and self._pick(self.cfg.decode_ranks(), "decode") is not None \
                and self._pick(self.cfg.prefill_ranks(), "prefill") is not None:
            r.attempt += 1
            r.status, r.tokens, r.token_s, r.kv_bytes, r.transfer_s = "queued", [], [], 0, None
            r.prefill_rank = r.decode_rank = None
            r.retried.append(why)
            r.reason = ""
            self.queue.appendleft(i)
        else:
            r.status = "failed"
            r.reason = (f"{why}; no retry left (retries={self.cfg.retries}, attempts={r.attempt + 1}) or no live "
                        f"worker to retry on")

    def _pick(self, ranks: list[int], pool: str) -> int | None:
        live = [k for k in ranks if k in self.live]
        if not live:
            return None
        if pool == "prefill":
            load = {k: sum(r.P for r in self.records if r.status == "prefilling" and r.prefill_rank == k) for k in live}
        else:
            load = {k: sum(1 for r in self.records if r.status in ("prefilling", "decoding") and r.decode_rank == k)
                    for k in live}
        return min(live, key=lambda k: (load[k], k))

    def dispatch(self, i: int, now: float) -> None:
        r, req = self.records[i], self.requests[i]
        p, d = self._pick(self.cfg.prefill_ranks(), "prefill"), self._pick(self.cfg.decode_ranks(), "decode")
        if p is None or d is None:
            r.status, r.reason = "failed", f"no live {'prefill' if p is None else 'decode'} worker"
            return
        if not self.holding(p):
            self.heard[p] = now  # its silence is counted from when it was given work
        r.status, r.prefill_rank, r.decode_rank = "prefilling", p, d
        try:
            dist.send(torch.tensor([NEW, i, r.attempt, r.P, r.max_new_tokens, d], dtype=torch.long), p, tag=TAG_CTRL)
            dist.send(torch.tensor(req.prompt, dtype=torch.long), p, tag=TAG_PROMPT)
        except Exception as e:
            self.declare_dead(p, f"a send to it failed: {str(e).splitlines()[0][:80]}")

    def handle(self, src: int, msg: list[float], now: float) -> None:
        kind, i, attempt = int(msg[0]), int(msg[1]), int(msg[2])
        if kind == HELLO:
            self.pids[src] = int(msg[3])
            return
        r = self.records[i]
        if attempt != r.attempt or r.status == "failed" or (r.status == "finished" and kind != SENT):
            return  # a message of an attempt that was given up
        if kind == FIRST:
            r.tokens, r.token_s = [int(msg[3])], [msg[4] - self.t0]
            self._interval[0] += r.P
            if msg[5]:
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
        elif kind == DONE:
            r.status, r.reason = "finished", "max_new_tokens"
        elif kind == FAIL:
            r.status = "failed"
            r.reason = (f"needs {int(msg[3])} tokens of KV blocks but decode rank {src} has "
                        f"{self.cfg.num_blocks} blocks of {self.cfg.block_size}")

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
        while len(self.pids) < len(workers):  # every worker has loaded its model and listens
            try:
                k, msg, err = inbox.get(timeout=0.05)
            except queue.Empty:
                k, msg, err = None, None, None
            if msg is not None:
                self.handle(k, msg, 0.0)  # type: ignore[arg-type]
            elif k is not None:
                raise RuntimeError(f"worker rank {k} ended before it said hello: {err}")
            if time.monotonic() - self.t0 > timeout_s:
                raise TimeoutError(f"workers {sorted(set(workers) - set(self.pids))} never said hello")
        self.t0 = time.monotonic()
        arrivals = deque(sorted(range(len(self.requests)), key=lambda i: self.requests[i].arrival_s))
        ended: set[int] = set()
        while any(self._open(r) for r in self.records):
            now = time.monotonic() - self.t0
            if now > timeout_s:
                raise TimeoutError(f"requests unfinished after timeout_s={timeout_s} s")
            busy = False
            while arrivals and self.requests[arrivals[0]].arrival_s <= now:
                i = arrivals.popleft()
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
            for k in list(self.live):
                if self.holding(k) and now - self.heard.get(k, now) > cfg.silence_s:
                    self.declare_dead(k, f"no message for silence_s={cfg.silence_s} s while holding requests")
            self.tick(now)
            if not busy:
                time.sleep(IDLE_S)
        end = time.monotonic() - self.t0
        self.tick(end, force=True)
        for k in sorted(self.live):
            try:
                dist.send(torch.tensor([STOP, 0, 0, 0, 0, 0], dtype=torch.long), k, tag=TAG_CTRL)
            except Exception:
                pass  # it died after the last request ended
        for t in threads:
            t.join(timeout=10)
        return DisaggRun(self.records, self.log, {}, dict(self.dead), end, dict(self.pids))


def _recv_report(src: int):
    def receive() -> list[float] | None:
        buf = torch.empty(REPORT, dtype=torch.float64)
        dist.recv(buf, src, tag=TAG_REPORT)
        msg = buf.tolist()
        return None if int(msg[0]) == BYE else msg
    return receive


def driver(rank: int, world_size: int, cfg: DisaggConfig, requests: list[Request], echo: bool,
           timeout_s: float) -> DisaggRun:
    return Driver(cfg, requests, echo).run(timeout_s)


def _rank_main(rank: int, world_size: int, cfg: DisaggConfig, requests: list[Request], echo: bool,
               timeout_s: float) -> object:
    if rank == 0:
        return driver(rank, world_size, cfg, requests, echo, timeout_s)
    if rank in cfg.prefill_ranks():
        return prefill_worker(rank, cfg)
    return decode_worker(rank, cfg)


def serve(requests: list[Request], cfg: DisaggConfig | None = None, *, echo: bool = False,
          timeout_s: float = 120.0) -> DisaggRun:
    """Serve `requests` (greedy; `arrival_s` from the start) on `cfg`'s pools, each worker a process on one
    gloo group; returns when every request has finished or failed. No worker outlives the call."""
    cfg = cfg or DisaggConfig()
    requests = list(requests)
    if not requests:
        raise ValueError("requests is empty: serve needs at least one Request")
    if len({r.id for r in requests}) != len(requests):
        raise ValueError("request ids must be unique")
    for r in requests:
        if r.sampling != Sampling():
            raise ValueError(f"request {r.id}: disaggregated serving here takes greedy requests only "
                             f"(sampling=Sampling()), got {r.sampling}")
        if r.cancel_s is not None:
            raise ValueError(f"request {r.id}: cancel_s is not supported by disaggregated serving")
    out = launch.run(_rank_main, cfg.world_size, cfg, requests, echo, timeout_s, timeout_s=timeout_s + 60,
                     expendable=range(1, cfg.world_size))
    run = out[0]
    assert isinstance(run, DisaggRun)
    for k, w in enumerate(out[1:], start=1):
        run.workers[k] = w if isinstance(w, dict) else asdict(w)
    return run
