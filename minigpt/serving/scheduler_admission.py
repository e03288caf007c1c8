"""The scheduler's admission: a waiting request gets a sequence from the longest cached prefix of its context
(or an empty one) if its pending blocks fit, and the queue's order (first come, first served, or the longest
cached prefix first: SGLang's lpm).

A part of `minigpt.serving.scheduler.Scheduler`; the attributes it reads (`pool`, `prefix_cache`, `waiting`,
`running`) are set there.
"""

from __future__ import annotations

from collections import deque

from minigpt.serving.prefix_cache import block_hashes, longest_prefix_first
from minigpt.serving.request import Status, Tracked


class AdmissionMixin:
    """A sequence for a waiting request, and the queue's order (the admission part of `Scheduler`)."""

    def _open(self, t: Tracked, whole_blocks: bool = False) -> None:
        """Give `t` a sequence: from the longest cached prefix of its context (whole blocks if asked), or empty."""
        context = t.context
        b = self.pool.block_size
        if self.prefix_cache is None:
            t.seq, t.computed = self.pool.add_sequence(), 0
            return
        t.hashes = block_hashes(context, b, t.hashes)
        blocks = self.prefix_cache.match(t.hashes)
        S = min(len(blocks) * b, len(context) - 1)  # at least one token runs: its logits give the next token
        S = S // b * b if whole_blocks else S
        t.seq = self.pool.add_sequence_from(blocks[: -(-S // b)], S)
        t.computed = S
        t.registered = len(blocks[: S // b])

    def _admit(self, t: Tracked) -> bool:
        """Open a sequence for `t` if the blocks of its pending context fit in the pool; else leave it waiting.

        A hit that ends inside a cached block (its whole context cached) shares that block and copies it on
        the first write, one block more than `t` keeps; when the pool cannot spare it, the hit stops at its
        last whole block and `t` computes the rest (vLLM V1's hits always do)."""
        for whole_blocks in (False, True):
            self._open(t, whole_blocks)
            assert t.seq is not None
            if self.fits_admission(self.pool.blocks_needed(t.seq, self._admission_tokens(t))):
                break
            self.pool.free_sequence(t.seq)
            partial = t.computed % self.pool.block_size
            t.seq, t.computed = None, 0
            if not partial:
                return False
        self._reserve_ahead(t)
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

    def _order_waiting(self) -> None:
        """Longest cached prefix first (`longest_prefix_first`), ties first come, first served."""
        assert self.prefix_cache is not None
        waiting = list(self.waiting)
        for t in waiting:
            t.hashes = block_hashes(t.context, self.pool.block_size, t.hashes)
        order = longest_prefix_first([t.hashes for t in waiting], self.prefix_cache)
        self.waiting = deque(waiting[i] for i in order)
