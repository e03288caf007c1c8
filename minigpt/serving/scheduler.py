"""The scheduler: which requests run in the next step, and how many tokens each feeds.

A *step* (one scheduler iteration) is a list of chunks `(request, T)`: T context tokens of that request
go through the model, a prompt chunk (T ≤ what is pending) or a decode (T = 1, the last sampled token).
The executor runs the chunks of equal T together, one forward `[B, T]` per distinct T, since a forward
takes the same T for every sequence of its ragged batch; so a mixed step of prompt chunks and decodes
is two or more forwards, and the step's time is their sum (measured, or predicted in replay).

Policies:

- `static`: when nothing runs, admit up to `max_batch` waiting requests (first come, first served)
  whose worst-case KV blocks (prompt + max_new_tokens) fit together, run their prefills, then decode
  the batch until its last member finishes; nobody joins a running batch.
- `continuous` (iteration-level scheduling, Orca): every step retires finished requests and admits
  waiting ones while the batch has room (`max_batch`) and the pool has blocks for the prompt. Without
  `chunk_size` an admitted prompt is prefilled whole in the step it joins, so the running decodes of
  that step wait for it. With `chunk_size` (a token budget per step: decodes first, one token each,
  then prompt chunks, oldest request first) a long prompt is spread over steps that keep decoding.

Memory: blocks are reserved chunk by chunk (`PagedKVCache.reserve`, all or nothing). When the pool
has too few free blocks (after evicting unreferenced prefix-cache blocks), the youngest running request
is preempted by *recompute*: its sequence is freed and it goes back to the head of the queue, to be
prefilled again (prompt and generated tokens) when blocks are free. Recompute rather than swap: swap
needs a second, slower memory tier and moves 2·L·H_kv·d_h·s bytes per token each way over the host
link, whereas recompute is a prefill, the compute-bound phase (for Llama-2-7B on an H100, about 14 µs
per token at peak against about 33 µs to move its 512 KiB of K/V out and back over a 32 GB/s link),
reuses the prefill path with no second pool, and with prefix caching finds its own full blocks still
cached. A recomputed request's greedy tokens are unchanged (its logits are those of a prefill, equal
to a decode's to fp32 rounding).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

import torch

from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.serving.prefix_cache import PrefixCache, block_hashes, longest_prefix_first
from minigpt.serving.request import Status, Tracked

Policy = Literal["static", "continuous"]


@dataclass(frozen=True)
class Chunk:
    """T tokens of one request's context, fed in this step (starting at `request.computed`)."""

    tracked: Tracked
    T: int

    @property
    def samples(self) -> bool:
        """True when the chunk reaches the end of the context: its last logits give a new token."""
        return self.T == self.tracked.pending


class Scheduler:
    """Admission, chunking, memory and preemption over one `PagedKVCache` (see the module docstring)."""

    def __init__(
        self, pool: PagedKVCache, *, policy: Policy = "continuous", max_batch: int = 8,
        chunk_size: int | None = None, prefix_cache: PrefixCache | None = None, cache_aware: bool = False,
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
        self.pool = pool
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
        self.preempted = 0

    # -- memory ----------------------------------------------------------------------------------

    @property
    def free_blocks(self) -> int:
        """Blocks a reservation can use: free ones plus cached blocks that no sequence holds."""
        evictable = self.prefix_cache.evictable if self.prefix_cache is not None else 0
        return self.pool.allocator.num_free + evictable

    @property
    def kv_usage(self) -> float:
        """Share of the pool held by sequences (cached-only blocks count as free)."""
        return (self.pool.allocator.num_blocks - self.free_blocks) / self.pool.allocator.num_blocks

    def fits(self, needed: int) -> bool:
        """True if `needed` blocks can be had now (free ones first; counting the evictable only if short)."""
        short = needed - self.pool.allocator.num_free
        return short <= 0 or (self.prefix_cache is not None and self.prefix_cache.can_evict(short))

    def _make_room(self, needed: int) -> None:
        short = needed - self.pool.allocator.num_free
        if short > 0 and self.prefix_cache is not None:
            self.prefix_cache.evict(short)

    def _reserve(self, t: Tracked, T: int, chunks: list[Chunk]) -> bool:
        """Reserve T tokens for `t`, preempting younger requests if needed; False if `t` itself was preempted."""
        assert t.seq is not None
        while True:
            needed = self.pool.blocks_needed(t.seq, T)
            if self.fits(needed):
                self._make_room(needed)
                self.pool.reserve([t.seq], T)
                return True
            victim = self.running[-1]
            self.preempt(victim)
            chunks[:] = [c for c in chunks if c.tracked is not victim]
            if victim is t:
                return False

    def preempt(self, t: Tracked) -> None:
        """Preemption by recompute: free the sequence, requeue `t` first; it will prefill its context again."""
        self.release(t)
        t.status, t.computed = Status.WAITING, 0
        t.preemptions += 1
        self.preempted += 1
        self.waiting.appendleft(t)

    def release(self, t: Tracked) -> None:
        """Free `t`'s sequence (blocks in the prefix cache stay there) and take it out of the batch."""
        if t.seq is not None:
            self.pool.free_sequence(t.seq)
            t.seq = None
        if t in self.running:
            self.running.remove(t)

    # -- admission -------------------------------------------------------------------------------

    def _open(self, t: Tracked) -> None:
        """Give `t` a sequence: from the longest cached prefix of its context, or empty."""
        context = t.context
        b = self.pool.block_size
        if self.prefix_cache is None:
            t.seq, t.computed = self.pool.add_sequence(), 0
            return
        t.hashes = block_hashes(context, b, t.hashes)
        blocks = self.prefix_cache.match(t.hashes)
        S = min(len(blocks) * b, len(context) - 1)  # at least one token runs: its logits give the next token
        t.seq = self.pool.add_sequence_from(blocks[: -(-S // b)], S)
        t.computed = S
        t.registered = len(blocks[: S // b])

    def _admit(self, t: Tracked) -> bool:
        """Open a sequence for `t` if the blocks of its pending context fit in the pool; else leave it waiting."""
        self._open(t)
        assert t.seq is not None
        if not self.fits(self.pool.blocks_needed(t.seq, t.pending)):
            self.pool.free_sequence(t.seq)
            t.seq, t.computed = None, 0
            return False
        self.waiting.remove(t)
        if self.prefix_cache is not None:  # count the hit once, on the admission that uses it
            if not t.generated:
                self.prefix_cache.record(looked_up=len(t.request.prompt), found=t.computed)
                t.cached_tokens += t.computed
            else:
                t.recompute_hit_tokens += t.computed
        t.status = Status.RUNNING
        self.running.append(t)
        return True

    def worst_case_blocks(self, t: Tracked) -> int:
        """Blocks `t` holds at its longest: its context plus every token it may still generate, minus one."""
        total = len(t.request.prompt) + t.request.max_new_tokens - 1
        return -(-total // self.pool.block_size)

    # -- one step --------------------------------------------------------------------------------

    def schedule(self) -> list[Chunk]:
        """The chunks of the next step (their blocks reserved); empty when nothing can run."""
        if self.cache_aware:
            self._order_waiting()
        return self._static() if self.policy == "static" else self._continuous()

    def _order_waiting(self) -> None:
        """Longest cached prefix first (`longest_prefix_first`), ties first come, first served."""
        assert self.prefix_cache is not None
        waiting = list(self.waiting)
        for t in waiting:
            t.hashes = block_hashes(t.context, self.pool.block_size, t.hashes)
        order = longest_prefix_first([t.hashes for t in waiting], self.prefix_cache)
        self.waiting = deque(waiting[i] for i in order)

    def _static(self) -> list[Chunk]:
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
        while self.waiting and len(self.running) < self.max_batch and budget > 0:
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
