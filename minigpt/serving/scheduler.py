"""The scheduler: which requests run in the next step, and how many tokens each feeds.

A *step* (one scheduler iteration) is a list of chunks `(request, T)`: T context tokens of that request
go through the model, a prompt chunk (T ≤ what is pending) or a decode (T = 1, the last sampled token).
The executor runs all the step's chunks as one forward over their flattened tokens (`runtime.varlen`),
so a mixed step of prompt chunks and decodes reads the weights once (measured, or predicted in replay).

Policies:

- `static`: when nothing runs, admit up to `max_batch` waiting requests (first come, first served)
  whose worst-case KV blocks (prompt + max_new_tokens) fit together, run their prefills, then decode
  the batch until its last member finishes; nobody joins a running batch.
- `continuous` (iteration-level scheduling, Orca): every step retires finished requests and admits
  waiting ones while the batch has room (`max_batch`) and the pool has blocks for the prompt. Without
  `chunk_size` an admitted prompt is prefilled whole in the step it joins, so the running decodes of
  that step wait for it. With `chunk_size` (a token budget per step: decodes first, one token each,
  then prompt chunks, oldest request first) a long prompt is spread over steps that keep decoding.

Memory (`reservation`): with `"paged"` a sequence grows block by block on demand: each chunk reserves
only the blocks its T tokens need (`PagedKVCache.reserve`, all or nothing), as vLLM's block manager
appends a slot per decode. `"max_tokens"` and `"S_max"` are the pools that reserve, for comparison: on
admission a sequence is given every block it could ever need (prompt + max_new_tokens − 1 tokens, or
the model's S_max), so it never grows and is never preempted, as a slot per request would be (at block
granularity, so (b) wastes < block_size slots a sequence more than an exact slot). Same scheduler,
same pool, same memory: only the reservation differs.

Admission keeps a *watermark*: while anything runs, a new prefill (or a swap-in) is admitted only if
it leaves at least ⌊watermark · num_blocks⌋ blocks free (vLLM's `watermark`, 0.01 by default there),
so that the running sequences can grow a while before someone must be preempted.

Preemption (`preemption`): when a running sequence needs a block and none is free (after evicting
unreferenced prefix-cache blocks), the youngest running request is preempted (newest first, as vLLM
V0/V1 do), until the block fits or the request itself was the youngest.

- `"recompute"`: its sequence is freed and it goes back to the head of the queue, to be prefilled
  again, prompt and generated tokens together (with prefix caching it finds its own full blocks still
  cached if nobody evicted them). Its greedy tokens are unchanged: the logits of a prefill equal a
  decode's to fp32 rounding.
- `"swap"`: the blocks of its computed tokens are copied to a host pool (`minigpt.runtime.swap`) and
  freed; it waits in `swapped` and is copied back, into whatever blocks are free, before any new
  request is admitted, in a step in which nobody was preempted (vLLM V0's order: running, then
  swapped, then new prefills) or whose preemptions emptied the batch. A request with nothing computed
  yet, or one for which the host pool is full, is recomputed instead.

Invariant: a step never leaves the batch empty while a request waits or is swapped out. With no
sequence on the device every cached block is evictable, so the whole pool is there for the head of
`swapped` (first) or of `waiting`, and a request the engine did not reject fits in it alone (a prefix
hit whose copy-on-write does not fit stops at whole blocks, `_admit`). The batch can empty by
preemption: its oldest member cannot grow even alone when cached blocks that duplicate its own prefix
(computed twice at once, or left cached when it was swapped out and in) are pinned above its cached
blocks. vLLM (V0 and V1) swaps in or admits nobody in a step that preempted, and so runs an empty step
there; that guard keeps freed blocks for the running requests, and none is left.

Which costs less is priced by `costs.swap_time` and `costs.recompute_time` (Chapter 12).
"""

from __future__ import annotations

from collections import deque
from typing import Literal

import torch

from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.runtime.swap import HostSwapPool
from minigpt.serving.prefix_cache import PrefixCache, block_hashes
from minigpt.serving.request import Chunk, Tracked
from minigpt.serving.scheduler_admission import AdmissionMixin
from minigpt.serving.scheduler_memory import MemoryMixin
from minigpt.serving.scheduler_preemption import PreemptionMixin

__all__ = ["Chunk", "Policy", "Preemption", "Reservation", "Scheduler", "new_generator"]

Policy = Literal["static", "continuous"]
Preemption = Literal["recompute", "swap"]
Reservation = Literal["paged", "max_tokens", "S_max"]


class Scheduler(MemoryMixin, PreemptionMixin, AdmissionMixin):
    """Admission, chunking, memory and preemption over one `PagedKVCache` (see the module docstring). Each
    concern has its module: `scheduler_memory` (what fits, reservations), `scheduler_preemption` (growth that
    preempts, swap out and in, release), `scheduler_admission` (a sequence from the cached prefix, the queue's
    order); this one decides the step."""

    def __init__(
        self, pool: PagedKVCache, *, policy: Policy = "continuous", max_batch: int = 8,
        chunk_size: int | None = None, prefix_cache: PrefixCache | None = None,
        preemption: Preemption = "recompute", reservation: Reservation = "paged", watermark: float = 0.0,
        swap_blocks: int | None = None, cache_aware: bool = False,
    ) -> None:
        if policy not in ("static", "continuous"):
            raise ValueError(f"policy must be 'static' or 'continuous', got {policy!r}")
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ValueError(f"max_batch must be an integer >= 1 (requests per step), got {max_batch!r}")
        if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int)
                                       or chunk_size < 1):
            raise ValueError(f"chunk_size must be None (whole prefills) or an integer >= 1 (tokens per step), "
                             f"got {chunk_size!r}")
        if chunk_size is not None and policy == "static":
            raise ValueError("chunk_size needs policy='continuous': a static batch prefills before it decodes")
        if preemption not in ("recompute", "swap"):
            raise ValueError(f"preemption must be 'recompute' or 'swap', got {preemption!r}")
        if reservation not in ("paged", "max_tokens", "S_max"):
            raise ValueError(f"reservation must be 'paged' (grow on demand), 'max_tokens' or 'S_max' "
                             f"(reserve on admission), got {reservation!r}")
        if isinstance(watermark, bool) or not isinstance(watermark, (int, float)) or not 0 <= watermark < 1:
            raise ValueError(f"watermark must be a share of the pool in [0, 1), got {watermark!r}")
        if swap_blocks is not None and (isinstance(swap_blocks, bool) or not isinstance(swap_blocks, int)
                                        or swap_blocks < 1):
            raise ValueError(f"swap_blocks must be None (as many as the device pool) or an integer >= 1, "
                             f"got {swap_blocks!r}")
        self.pool = pool
        self.preemption, self.reservation = preemption, reservation
        self.watermark_blocks = int(watermark * pool.allocator.num_blocks)
        self.swap_pool = (HostSwapPool(pool, swap_blocks or pool.allocator.num_blocks)
                          if preemption == "swap" else None)
        self.swapped: deque[Tracked] = deque()  # preempted by swap, oldest first
        self.policy = policy
        self.max_batch = max_batch
        self.chunk_size = chunk_size
        if cache_aware and prefix_cache is None:
            raise ValueError("cache_aware=True orders the queue by cached prefix: it needs a prefix_cache "
                             "(EngineConfig(prefix_caching=True))")
        self.prefix_cache = prefix_cache
        self.cache_aware = cache_aware  # admit the longest cached prefix first (SGLang's lpm), else FCFS
        self.waiting: deque[Tracked] = deque()
        self.running: list[Tracked] = []  # in admission order: the last one is preempted first
        self.preempted = 0  # preemptions of both kinds
        self.swapped_out = 0  # ... of which by swap
        self.peak_running = 0  # most sequences in flight in one step
        self.swap_bytes = 0  # bytes the swaps of the last `schedule` moved (out and in)

    # -- one step --------------------------------------------------------------------------------

    def schedule(self) -> list[Chunk]:
        """The chunks of the next step (their blocks reserved); empty when nothing can run."""
        self.swap_bytes = 0
        if self.cache_aware:
            self._order_waiting()
        chunks = self._static() if self.policy == "static" else self._continuous()
        self.peak_running = max(self.peak_running, len(self.running))
        return chunks

    def _static(self) -> list[Chunk]:
        # A static batch reserves its worst case, so it is preempted only when prefix-cache blocks it counted on
        # are gone; its swapped members come back before anyone new is admitted.
        while self.swapped and (not self.running or self.fits(len(self.swapped[0].swapped.blocks))):  # type: ignore[union-attr]
            self._swap_in(self.swapped[0])
        if not self.running:
            budget = self.free_blocks
            while self.waiting and len(self.running) < self.max_batch:
                t = self.waiting[0]
                need = self.worst_case_blocks(t)
                if need > budget or not self._admit(t):
                    break
                budget -= need
        chunks = [Chunk(t, t.pending) for t in self.running]
        for c in list(chunks):
            if c in chunks:
                self._reserve(c.tracked, c.T, chunks)
        return chunks

    def _continuous(self) -> list[Chunk]:
        preempted = self.preempted  # swap-ins wait for a step that preempts nobody (or empties the batch)
        budget = self.chunk_size if self.chunk_size is not None else float("inf")
        chunks: list[Chunk] = []
        for t in list(self.running):  # decodes first, then unfinished prompts, oldest first
            if t.decoding and t in self.running and self._reserve(t, 1, chunks):
                chunks.append(Chunk(t, 1))
                budget -= 1
        for t in list(self.running):
            if not t.decoding and t in self.running and budget > 0:
                T = int(min(t.pending, budget))
                if self._reserve(t, T, chunks):
                    chunks.append(Chunk(t, T))
                    budget -= T
        while (self.swapped and (self.preempted == preempted or not self.running) and len(self.running) < self.max_batch
               and budget > 0 and self.fits_admission(len(self.swapped[0].swapped.blocks))):  # type: ignore[union-attr]
            t = self.swapped[0]
            self._swap_in(t)
            T = int(min(t.pending, budget))
            if self._reserve(t, T, chunks):
                chunks.append(Chunk(t, T))
                budget -= T
        while not self.swapped and self.waiting and len(self.running) < self.max_batch and budget > 0:
            t = self.waiting[0]
            if not self._admit(t):
                break
            T = int(min(t.pending, budget))
            if self._reserve(t, T, chunks):
                chunks.append(Chunk(t, T))
                budget -= T
        return chunks

    def after_step(self, chunks: list[Chunk]) -> None:
        """Cache the full blocks the step completed (prefix caching)."""
        if self.prefix_cache is None:
            return
        b = self.pool.block_size
        for c in chunks:
            t = c.tracked
            if t.seq is None:
                continue
            full = t.computed // b
            if full <= t.registered:
                continue
            t.hashes = block_hashes(t.context[: full * b], b, t.hashes)
            table = self.pool.block_table(t.seq)
            for i in range(t.registered, full):
                self.prefix_cache.insert(t.hashes[i], table[i])
            t.registered = full


def new_generator(t: Tracked, device: torch.device) -> None:
    """The seeded generator of a sampled request, created once (a preempted request keeps its state)."""
    s = t.request.sampling
    if s.temperature > 0 and t.generator is None and s.seed is not None:
        t.generator = torch.Generator(device=device).manual_seed(s.seed)
