"""The engine: arrivals, cancellations, one scheduled step at a time, its tokens, stop conditions, a clock.

Engine time starts at 0 and advances by each step's duration: the wall-clock time of the whole
iteration (scheduling, forwards, sampling) when MiniGPT runs (`ModelExecutor`), or the formulas'
prediction in replay (`ReplayExecutor`); when nothing can run it jumps to the next arrival. The
scheduler and this loop are the same code in both modes.

A request ends in exactly one of three ways: `FINISHED` (reason "max_new_tokens" or "stop"),
`REJECTED` on arrival with a reason (it can never be served: too long for the model's positions or for
the whole KV pool, a token id or top_k out of range), or `CANCELLED` (by `cancel` or its `cancel_s`).
Finishing, rejecting or cancelling one request frees its blocks and touches no other request.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import torch

from minigpt import costs
from minigpt.costs.preset_types import HardwarePreset, LinkPreset, ModelPreset
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.serving.executor import ModelExecutor
from minigpt.serving.log import EngineLog
from minigpt.serving.prefix_cache import PrefixCache
from minigpt.serving.replay import ReplayExecutor, replay_blocks, shadow_pool
from minigpt.serving.request import Request, Status, Tracked, rejection
from minigpt.serving.scheduler import Chunk, Policy, Preemption, Reservation, Scheduler, new_generator


class Executor(Protocol):
    """What runs a step: MiniGPT (`ModelExecutor`) or the formulas (`ReplayExecutor`)."""

    predicts_time: bool
    S_max: int
    V: int
    device: torch.device

    def run(self, chunks: list[Chunk]) -> dict[int, int]: ...


@dataclass(frozen=True)
class EngineConfig:
    """Scheduling settings: policy, batch bound, per-step token budget (chunked prefill), prefix caching; and
    memory: how blocks are reserved, how a sequence is preempted, the admission watermark, the host pool."""

    policy: Policy = "continuous"
    max_batch: int = 8
    chunk_size: int | None = None
    prefix_caching: bool = False
    cache_aware: bool = False  # order the waiting queue longest cached prefix first (needs prefix_caching)
    log_interval_s: float = 1.0
    preemption: Preemption = "recompute"
    reservation: Reservation = "paged"
    watermark: float = 0.0
    swap_blocks: int | None = None


class Engine:
    """Serves requests on one paged KV pool with one executor (see the module docstring)."""

    def __init__(self, executor: Executor, pool: PagedKVCache, config: EngineConfig | None = None, *,
                 echo: bool = False, clock: Callable[[], float] = time.perf_counter) -> None:
        """`clock` times a step when the executor predicts nothing: `time.perf_counter` (wall), or
        `time.thread_time` (this thread's CPU time: on a shared CPU with torch.set_num_threads(1))."""
        self.config = config = config or EngineConfig()
        self.clock = clock
        self.executor, self.pool = executor, pool
        self.prefix_cache = PrefixCache(pool) if config.prefix_caching else None
        self.scheduler = Scheduler(pool, policy=config.policy, max_batch=config.max_batch,
                                   chunk_size=config.chunk_size, prefix_cache=self.prefix_cache,
                                   preemption=config.preemption, reservation=config.reservation,
                                   watermark=config.watermark, swap_blocks=config.swap_blocks,
                                   cache_aware=config.cache_aware)
        self.host_link: LinkPreset | None = None  # replay: the link that prices a swap (Eq. 12.3)
        self.swap_overlap = True  # replay: a swap overlaps the step (Eq. 12.5's max) or adds to it
        self.log = EngineLog(config.log_interval_s, echo=echo)
        self.now = 0.0
        self.requests: dict[str, Tracked] = {}
        self._arrivals: list[tuple[float, int, Request]] = []
        self._cancels: list[tuple[float, int, str]] = []
        self._order = 0
        self._ids: set[str] = set()

    @classmethod
    def for_model(cls, model: MiniGPT, *, num_blocks: int, block_size: int = 16,
                  config: EngineConfig | None = None, echo: bool = False,
                  clock: Callable[[], float] = time.perf_counter) -> Engine:
        """An engine running `model` on a new paged pool of `num_blocks` blocks of `block_size` tokens."""
        pool = PagedKVCache(model.config, num_blocks=num_blocks, block_size=block_size, dtype=model.dtype,
                            device=model.device)
        return cls(ModelExecutor(model, pool), pool, config, echo=echo, clock=clock)

    @classmethod
    def replay(cls, model: ModelPreset, hardware: HardwarePreset, *, num_blocks: int | None = None,
               block_size: int = 16, s: int = 2, fused: bool = True, config: EngineConfig | None = None,
               echo: bool = False, host_link: LinkPreset | None = None, swap_overlap: bool = True,
               mfu: float = 1.0, causal: bool = False) -> Engine:
        """An engine that 'serves' with `model` on `hardware` on paper: step times from the formulas (one fused
        forward per step; `fused=False` prices one forward per distinct chunk length), each a floor unless `mfu` < 1
        (the share of the peak a forward sustains) and `causal` (a chunk's queries against the keys they see).

        With `preemption="swap"` a step that moves blocks to or from the host also takes their bytes over
        `host_link` (needed then), overlapped with the step or not (Eq. 12.5)."""
        if num_blocks is None:
            num_blocks = replay_blocks(model, hardware, block_size=block_size, s=s)
        if config is not None and config.preemption == "swap" and host_link is None:
            raise ValueError("preemption='swap' in replay needs host_link (a LinkPreset, e.g. "
                             "costs.presets.HOST_LINKS['PCIe Gen5 x16']) to price the copies")
        pool = shadow_pool(model, num_blocks=num_blocks, block_size=block_size)
        engine = cls(ReplayExecutor(model, hardware, pool, s=s, fused=fused, mfu=mfu, causal=causal), pool, config,
                     echo=echo)
        engine.host_link, engine.swap_overlap = host_link, swap_overlap
        engine._kv_token = costs.evaluate(costs.kv_bytes_per_token, model, s=s)
        return engine

    # -- requests --------------------------------------------------------------------------------

    def submit(self, request: Request) -> None:
        """Queue `request` to arrive at its `arrival_s` (engine time)."""
        if not isinstance(request, Request):
            raise ValueError(f"submit takes a minigpt.serving.Request, got {type(request).__name__}")
        if request.id in self._ids:
            raise ValueError(f"request id {request.id!r} is already in use; ids must be unique")
        self._ids.add(request.id)
        self._order += 1
        heapq.heappush(self._arrivals, (request.arrival_s, self._order, request))
        if request.cancel_s is not None:
            heapq.heappush(self._cancels, (request.cancel_s, self._order, request.id))

    def rejection(self, r: Request) -> str | None:
        """Why `r` can never be served by this engine, or None (`request.rejection` with its limits)."""
        return rejection(r, S_max=self.executor.S_max, V=self.executor.V, num_blocks=self.pool.allocator.num_blocks,
                         block_size=self.pool.block_size)

    def _arrive(self, r: Request) -> None:
        t = Tracked(r)
        self.requests[r.id] = t
        reason = self.rejection(r)
        if reason is not None:
            t.status, t.reason, t.finished_s = Status.REJECTED, reason, self.now
            return
        new_generator(t, self.executor.device)
        self.scheduler.waiting.append(t)

    def cancel(self, request_id: str, reason: str = "cancelled by the user") -> None:
        """Cancel a request that has arrived: it stops now, keeps its tokens so far, frees its blocks."""
        t = self.requests.get(request_id)
        if t is None:
            raise KeyError(f"no request {request_id!r} has arrived; arrived: {sorted(self.requests)[:10]}")
        if t.status.done:
            return
        self.scheduler.release(t)  # its blocks, on the device or swapped out
        if t in self.scheduler.waiting:
            self.scheduler.waiting.remove(t)
        t.status, t.reason, t.finished_s = Status.CANCELLED, reason, self.now

    # -- the loop --------------------------------------------------------------------------------

    def _events(self) -> None:
        while self._arrivals and self._arrivals[0][0] <= self.now:
            self._arrive(heapq.heappop(self._arrivals)[2])
        while self._cancels and self._cancels[0][0] <= self.now:
            _, _, rid = heapq.heappop(self._cancels)
            if rid in self.requests:
                self.cancel(rid, f"cancelled at {self.now:.6f} s (cancel_s)")
            else:  # cancelled before it arrived: it arrives cancelled
                for i, (_, _, r) in enumerate(self._arrivals):
                    if r.id == rid:
                        self._arrivals.pop(i)
                        heapq.heapify(self._arrivals)
                        self.requests[rid] = Tracked(r, status=Status.CANCELLED, reason="cancelled before arrival",
                                                     finished_s=self.now)
                        break

    @property
    def busy(self) -> bool:
        """True while a request is waiting or running, or has yet to arrive."""
        return bool(self._arrivals or self.scheduler.waiting or self.scheduler.running or self.scheduler.swapped)

    def step(self) -> list[Chunk]:
        """Handle due events, run one step, advance the clock; returns the step's chunks (empty when idle)."""
        self._events()
        start = self.clock()
        chunks = self.scheduler.schedule()
        if not chunks:
            if (self.scheduler.waiting or self.scheduler.swapped) and not self.scheduler.running:
                raise RuntimeError("the scheduler admitted nothing into an empty batch: a request that fits alone "
                                   "was refused (a bug)")
            upcoming = [q[0][0] for q in (self._arrivals, self._cancels) if q]
            if upcoming:
                self.now = max(self.now, min(upcoming))
            return chunks
        for c in chunks:
            if c.tracked.admitted_s is None:
                c.tracked.admitted_s = self.now  # the step that first runs it starts now
        predicted = self.executor.step_time(chunks) if self.executor.predicts_time else None  # type: ignore[attr-defined]
        if predicted is not None and self.scheduler.swap_bytes:
            predicted = self._with_swap(predicted)
        samples = self.executor.run(chunks)
        prompt_tokens = sum(c.T for c in chunks if not c.tracked.decoding)
        for c in chunks:
            c.tracked.computed += c.T
        self.scheduler.after_step(chunks)
        self.now += predicted if predicted is not None else self.clock() - start
        generated = 0
        for c in chunks:
            t = c.tracked
            if id(t) in samples:
                generated += 1
                self._append(t, samples[id(t)])
        self.log.step(prompt_tokens=prompt_tokens, generated_tokens=generated)
        self._tick()
        return chunks

    def _with_swap(self, step_s: float) -> float:
        """The step's predicted time with its swaps' bytes over the host link (Eqs. 12.3, 12.5)."""
        assert self.host_link is not None
        tokens = self.scheduler.swap_bytes // self.pool.bytes_per_block * self.pool.block_size
        swap_s = tokens * self._kv_token / self.host_link.bandwidth_per_direction
        return costs.step_time_with_swap(step_time=step_s, swap_time=swap_s, overlap=self.swap_overlap)

    def _append(self, t: Tracked, token: int) -> None:
        t.generated.append(token)
        t.token_s.append(self.now)
        for stop in t.request.sampling.stop:
            if len(t.generated) >= len(stop) and tuple(t.generated[-len(stop):]) == tuple(stop):
                t.stop_len = len(stop)
                return self._finish(t, "stop")
        if len(t.generated) == t.request.max_new_tokens:
            self._finish(t, "max_new_tokens")

    def _finish(self, t: Tracked, reason: str) -> None:
        self.scheduler.release(t)
        t.status, t.reason, t.finished_s = Status.FINISHED, reason, self.now

    def _tick(self, force: bool = False) -> None:
        if not (force or self.log.due(self.now)):
            return
        s = self.scheduler
        self.log.tick(self.now, running=len(s.running), waiting=len(s.waiting), preempted=s.preempted,
                      kv_usage=s.kv_usage, prefix_hit_rate=self.prefix_cache.hit_rate if self.prefix_cache else 0.0,
                      force=force)

    def run(self, requests: Iterable[Request] = ()) -> list[Tracked]:
        """Submit `requests`, serve until every request has ended; returns their records in submission order."""
        ids = []
        for r in requests:
            self.submit(r)
            ids.append(r.id)
        while self.busy:
            self.step()
        self._tick(force=True)
        return [self.requests[i] for i in ids]

    def close(self) -> None:
        """Drop the prefix cache's blocks; with nothing running the pool is then empty."""
        if self.prefix_cache is not None:
            self.prefix_cache.clear()
