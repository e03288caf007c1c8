"""The two kinds of worker of disaggregated serving (Chapter 19), each a process running its engine: a
prefill worker takes prompts from the driver and sends each request's K/V to its decode worker; a decode
worker receives K/V, decodes, and reports every token to the driver.

A worker never dies of a request. What it is handed is checked again on arrival with the colocated
engine's rule (`Engine.rejection`): a request it cannot serve ends `FAIL` with the reason. A step that
raises anyway ends `ERROR` for every request it held (the driver retries each elsewhere, once), and the
worker goes on with a fresh engine: nothing of the failed step's state is trusted."""

from __future__ import annotations

import os
import queue
import time
from collections import deque
from functools import partial
from typing import Any

import torch

from minigpt.distributed.disagg_engines import DecodeEngine, PrefillEngine, _engine
from minigpt.distributed.disagg_records import DisaggConfig
from minigpt.distributed.disagg_senders import _Senders
from minigpt.distributed.disagg_wire import (
    BYE,
    DONE,
    ERROR,
    FAIL,
    FIRST,
    HELLO,
    IDLE_S,
    READY,
    SENT,
    TOKEN,
    XFAIL,
    Tripwire,
    _recv_ctrl,
    _report,
    _report_text,
    _thread,
    tripwire,
)
from minigpt.distributed.kv_transfer import Transfer, recv_kv, send_bye
from minigpt.serving.engine import Engine
from minigpt.serving.request import Request, Status, Tracked

BYE_WAIT_S = 5.0  # after STOP, how long a decode worker waits for the prefill workers' byes (none is needed)


def _step(engine: Engine, raising: Tripwire, stats: dict, role: str, rank: int, held: list[tuple[int, int]]) -> bool:
    """One engine step, its time added to `stats`. If it raises, every request it held (`held`: index, attempt)
    is reported `ERROR` with the reason, to be retried elsewhere, and False says the engine must be replaced."""
    start = time.monotonic()
    try:
        raising.hit()
        engine.step()
    except Exception as e:  # this worker goes on; nothing of the failed step's state is trusted
        stats["step_errors"] += 1
        why = f"{role} rank {rank}: a step raised {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        for index, attempt in held:
            _report_text(ERROR, index, attempt, why)
        return False
    stats["busy_s"] += time.monotonic() - start
    return True


def _drain(done: queue.Queue, stats: dict, report: bool) -> bool:
    """Count the finished transfers in `done` into `stats` (one accounting for the loop and the last look
    after the senders close); `report` sends SENT/XFAIL to the driver. True when there were any."""
    any_done = False
    while not done.empty():
        (dst, index, attempt, *_), kv_bytes, meta_bytes, took, err = done.get()
        any_done = True
        if err is None:
            stats["kv_bytes_sent"] += kv_bytes
            stats["meta_bytes_sent"] += meta_bytes
            stats["transfers"] += 1
            stats["transfer_s"] += took
            if report:
                _report(SENT, index, attempt, kv_bytes, took, dst)
        else:  # the decode worker is gone: gloo says "Connection closed by peer"
            stats["failed_transfers"] += 1
            if report:
                _report(XFAIL, index, attempt, dst)
    return any_done


def prefill_worker(rank: int, cfg: DisaggConfig, groups: dict[int, Any], device: torch.device | str = "cpu",
                   ctrl: Any = None) -> dict:
    """Rank `rank`'s loop: prompts in from the driver (over `ctrl`, its group with the driver), first tokens
    reported, K/V out to decode workers over `groups` (the pair's group per decode rank)."""
    _report(HELLO, a=os.getpid())
    engine = _engine(PrefillEngine, cfg, prefill=True, device=device)
    inbox: queue.Queue = queue.Queue()
    listener = _thread(inbox, 0, partial(_recv_ctrl, ctrl))
    done: queue.Queue = queue.Queue()
    senders = _Senders(done, groups, between=tripwire(cfg, rank, "transfer").hit)
    stepped, stopped = tripwire(cfg, rank, "prefill"), tripwire(cfg, rank, "shutdown")
    raising = tripwire(cfg, rank, "step")
    _report(READY)
    meta: dict[str, tuple[int, int, int, int]] = {}  # rid -> (index, attempt, max_new_tokens, dst)
    stats = {"role": "prefill", "rank": rank, "pid": os.getpid(), "prompt_tokens": 0, "busy_s": 0.0,
             "kv_bytes_sent": 0, "meta_bytes_sent": 0, "transfers": 0, "failed_transfers": 0, "transfer_s": 0.0,
             "step_errors": 0}
    stopping = False
    while not (stopping and not engine.busy and not meta):
        busy = False
        while not inbox.empty():
            _, item, err = inbox.get()
            if item is None:  # STOP (or the driver is gone)
                stopping = True
                stopped.hit()
                continue
            index, attempt, max_new, dst, _, prompt = item
            rid = f"{index}.{attempt}"
            try:
                request = Request(rid, tuple(prompt), 1, arrival_s=engine.now)
            except ValueError as e:
                _report_text(FAIL, index, attempt, f"prefill rank {rank}: {e}")
                continue
            meta[rid] = (index, attempt, max_new, dst)
            engine.submit(request)
            busy = True
        if engine.busy:
            if not _step(engine, raising, stats, "prefill", rank, [(i, a) for i, a, _, _ in meta.values()]):
                meta.clear()
                engine = _engine(PrefillEngine, cfg, prefill=True, device=device)
                continue
            busy = True
            stepped.hit()
            assert isinstance(engine, PrefillEngine)
            for t, kv in engine.handoff:
                index, attempt, max_new, dst = meta.pop(t.request.id)
                stats["prompt_tokens"] += t.request.P
                first = t.generated[0]
                _report(FIRST, index, attempt, first, time.monotonic(), float(max_new == 1))
                if max_new > 1:
                    senders.put((dst, index, attempt, list(t.request.prompt), max_new, first, kv))
            engine.handoff.clear()
            for rid, t in [(rid, engine.requests.get(rid)) for rid in meta]:
                if t is not None and t.status is Status.REJECTED:  # the engine's own rule, on arrival
                    index, attempt, _, _ = meta.pop(rid)
                    _report_text(FAIL, index, attempt, f"prefill rank {rank}: {t.reason}")
        busy = _drain(done, stats, report=True) or busy
        if not busy:
            time.sleep(IDLE_S)
    senders.close(timeout_s=10.0)
    _drain(done, stats, report=False)  # transfers that ended after the last look
    for d in cfg.decode_ranks():  # end the decode workers' receivers for this rank
        try:
            send_bye(d)
        except Exception:
            pass  # that decode worker is gone
    _report(BYE)
    listener.join(timeout=5)
    return stats


def _admit(engine: DecodeEngine, x: Transfer) -> str | None:
    """Why the decode engine cannot serve transfer `x` (the colocated engine's rule), or None."""
    try:
        return engine.rejection(Request(f"{x.index}.{x.attempt}", tuple(x.prompt), x.max_new_tokens))
    except ValueError as e:
        return str(e)


def decode_worker(rank: int, cfg: DisaggConfig, groups: dict[int, Any], device: torch.device | str = "cpu",
                  ctrl: Any = None) -> dict:
    """Rank `rank`'s loop: K/V in from prefill workers over `groups` (the pair's group per prefill rank),
    decoded in its engine, every token reported to the driver; the driver's STOP over `ctrl`."""
    _report(HELLO, a=os.getpid())

    def fresh() -> DecodeEngine:
        engine = _engine(DecodeEngine, cfg, prefill=False, device=device)
        assert isinstance(engine, DecodeEngine)
        return engine

    engine = fresh()
    c = engine.pool.config
    shape = (2, c.L, c.H_kv, c.d_h)
    inbox: queue.Queue = queue.Queue()
    on_header = tripwire(cfg, rank, "transfer").hit
    threads = [_thread(inbox, 0, partial(_recv_ctrl, ctrl))]
    threads += [_thread(inbox, src, partial(recv_kv, src, shape, engine.pool.dtype, engine.pool.device,
                                            groups.get(src), on_header)) for src in cfg.prefill_ranks()]
    token, stopped = tripwire(cfg, rank, "decode"), tripwire(cfg, rank, "shutdown")
    raising = tripwire(cfg, rank, "step")
    _report(READY)
    held: deque[Transfer] = deque()  # received, waiting for room in the pool
    active: dict[str, tuple[Tracked, int, int, int]] = {}  # rid -> (tracked, index, attempt, tokens reported)
    stats = {"role": "decode", "rank": rank, "pid": os.getpid(), "generated_tokens": 0, "busy_s": 0.0,
             "kv_bytes_received": 0, "transfers": 0, "step_errors": 0}
    open_ = set(range(len(threads)))
    stopped_at = None  # when the driver's STOP came: every request has ended, nothing more will arrive
    while True:
        busy = False
        while not inbox.empty():
            src, item, err = inbox.get()
            if item is None:
                open_.discard(0 if src == 0 else cfg.prefill_ranks().index(src) + 1)
                if src == 0:
                    stopped.hit()
                    stopped_at = time.monotonic()
                continue
            if src == 0:
                continue  # the driver sends a decode worker nothing but STOP
            held.append(item)
            stats["kv_bytes_received"] += item.kv_bytes
            stats["transfers"] += 1
            busy = True
        if not open_:  # STOP from the driver and bye from every prefill worker
            break
        if stopped_at is not None and time.monotonic() - stopped_at > BYE_WAIT_S:
            break  # a prefill worker that died never says bye, and a receive from it may never end
        while held:
            x = held[0]
            why = _admit(engine, x)
            if why is not None:
                held.popleft()
                _report_text(FAIL, x.index, x.attempt, f"decode rank {rank}: {why}")
                continue
            if not engine.can_accept(len(x.prompt)):
                break
            held.popleft()
            rid = f"{x.index}.{x.attempt}"
            active[rid] = (engine.accept(rid, x.prompt, x.max_new_tokens, x.first, x.kv), x.index, x.attempt, 1)
        if engine.scheduler.running or engine.scheduler.waiting:
            if not _step(engine, raising, stats, "decode", rank, [(i, a) for _, i, a, _ in active.values()]):
                active.clear()
                engine = fresh()
                continue
            now = time.monotonic()
            busy = True
            for rid, (t, index, attempt, sent) in list(active.items()):
                for tok in t.generated[sent:]:
                    _report(TOKEN, index, attempt, tok, now)
                    stats["generated_tokens"] += 1
                    token.hit()
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
