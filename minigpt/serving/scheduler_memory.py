"""The scheduler's memory: how many blocks a reservation can use, whether a request fits (with the watermark),
and what a sequence is given on admission (paged: nothing ahead of need; or its whole reservation).

A part of `minigpt.serving.scheduler.Scheduler` (its module docstring describes the policies); the attributes
it reads (`pool`, `prefix_cache`, `running`, `reservation`, `watermark_blocks`) are set there.
"""

from __future__ import annotations

from minigpt.serving.request import Tracked


class MemoryMixin:
    """Blocks: free, evictable, needed (the memory part of `Scheduler`)."""

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

    def fits_admission(self, needed: int) -> bool:
        """`fits`, keeping the watermark free while anything runs (an empty batch admits whatever fits)."""
        return self.fits(needed + (self.watermark_blocks if self.running else 0))

    def _make_room(self, needed: int) -> None:
        short = needed - self.pool.allocator.num_free
        if short > 0 and self.prefix_cache is not None:
            self.prefix_cache.evict(short)

    def reserved_tokens(self, t: Tracked) -> int:
        """Tokens a sequence of `t` is given on admission: S_max, its worst case (prompt + max_new_tokens − 1),
        or (paged) none ahead of need."""
        if self.reservation == "S_max":
            return self.pool.config.S_max
        if self.reservation == "max_tokens":
            return len(t.request.prompt) + t.request.max_new_tokens - 1
        return 0

    def _admission_tokens(self, t: Tracked) -> int:
        """Tokens whose blocks must be free to admit `t`: its pending context, or its whole reservation."""
        return max(t.pending, self.reserved_tokens(t) - t.computed)

    def _reserve_ahead(self, t: Tracked) -> None:
        """Give `t`'s sequence its whole reservation now (no-op when paged)."""
        assert t.seq is not None
        ahead = self.reserved_tokens(t) - self.pool.length(t.seq)
        if ahead > 0:
            self._make_room(self.pool.blocks_needed(t.seq, ahead))
            self.pool.reserve([t.seq], ahead)

    def worst_case_blocks(self, t: Tracked) -> int:
        """Blocks `t` holds at its longest: its context plus every token it may still generate, minus one."""
        total = len(t.request.prompt) + t.request.max_new_tokens - 1
        return -(-total // self.pool.block_size)

