"""The two kinds of worker of disaggregated serving (Chapter 19), each a process running its engine: a
prefill worker takes prompts from the driver and sends each request's K/V to its decode worker; a decode
worker receives K/V, decodes, and reports every token to the driver."""

from __future__ import annotations

import os
import queue
import time
from collections import deque

from minigpt.distributed.disagg_engines import DecodeEngine, PrefillEngine, _engine
from minigpt.distributed.disagg_records import DisaggConfig
from minigpt.distributed.disagg_senders import _Senders
from minigpt.distributed.disagg_wire import (
    BYE,
    DONE,
    FAIL,
    FIRST,
    HELLO,
    IDLE_S,
    SENT,
    TOKEN,
    XFAIL,
    _recv_ctrl,
    _report,
    _thread,
)
from minigpt.distributed.kv_transfer import Transfer, recv_kv, send_bye
from minigpt.serving.request import Request, Tracked


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
