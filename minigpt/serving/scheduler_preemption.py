"""The scheduler's preemption: a sequence that needs a block takes it, or preempts the youngest running
request (newest first, as vLLM does) by swap (its blocks to the host pool) or by recompute (freed, requeued
first); a swapped request comes back into free blocks; a finished or cancelled one is released.

A part of `minigpt.serving.scheduler.Scheduler` (its module docstring says when swap-ins may run); the
attributes it reads (`pool`, `swap_pool`, `running`, `swapped`, `waiting`, counters) are set there.
"""

from __future__ import annotations

from minigpt.serving.request import Chunk, Status, Tracked


class PreemptionMixin:
    """Growth that may preempt, swap out and in, release (the preemption part of `Scheduler`)."""

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
        """Preempt `t`: by swap (its blocks to the host pool, `t` to `swapped`) if that is the mode, it has
        computed tokens and the host has room; else by recompute (free it, requeue it first)."""
        t.preemptions += 1
        self.preempted += 1
        assert t.seq is not None
        if (self.swap_pool is not None and t.computed > 0 and t.computed == self.pool.length(t.seq)
                and self.swap_pool.can_swap_out(t.seq)):
            before = self.swap_pool.bytes_out
            t.swapped = self.swap_pool.swap_out(t.seq)
            self.swap_bytes += self.swap_pool.bytes_out - before
            t.seq = None
            self.running.remove(t)
            t.status, t.swaps = Status.SWAPPED, t.swaps + 1
            self.swapped_out += 1
            self.swapped.appendleft(t)
            return
        self.release(t)
        t.status, t.computed = Status.WAITING, 0
        self.waiting.appendleft(t)

    def _swap_in(self, t: Tracked) -> None:
        """Copy `t` back from the host into free blocks; it rejoins the batch as its youngest member."""
        assert self.swap_pool is not None and t.swapped is not None
        before = self.swap_pool.bytes_in
        self._make_room(len(t.swapped.blocks))  # type: ignore[attr-defined]
        t.seq = self.swap_pool.swap_in(t.swapped)  # type: ignore[arg-type]
        self.swap_bytes += self.swap_pool.bytes_in - before
        t.swapped = None
        t.registered = t.computed // self.pool.block_size  # its blocks are new: the cached ones stay as they were
        self._reserve_ahead(t)
        self.swapped.remove(t)
        t.status = Status.RUNNING
        self.running.append(t)

    def release(self, t: Tracked) -> None:
        """Free `t`'s sequence or its swapped blocks (blocks in the prefix cache stay there); out of the batch."""
        if t.seq is not None:
            self.pool.free_sequence(t.seq)
            t.seq = None
        if t.swapped is not None:
            assert self.swap_pool is not None
            self.swap_pool.discard(t.swapped)  # type: ignore[arg-type]
            t.swapped = None
        if t in self.running:
            self.running.remove(t)
        if t in self.swapped:
            self.swapped.remove(t)
