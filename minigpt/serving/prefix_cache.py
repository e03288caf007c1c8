"""Prefix caching: KV blocks of full token blocks, found again by a hash chain over their contents.

Block i of a context holds tokens i·b .. i·b + b − 1. Its key is `h_i = hash((h_{i−1}, tokens of block i))`,
so a key names the whole prefix up to the end of the block, not just the block's own tokens: two
prompts share block i's K/V only if they agree on every token before it (K/V at a position depend on
all earlier tokens). A hit is the longest run of leading keys found in the cache.

The cache holds one reference to each cached block in the pool's allocator, so a block outlives the
request that computed it. A block that only the cache references is evictable: when the pool runs
short, `evict` releases evictable blocks in least-recently-used order.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from itertools import islice

from minigpt.runtime.paged_cache import PagedKVCache


def block_hashes(tokens: Sequence[int], block_size: int, start: list[int] | None = None) -> list[int]:
    """The hash chain of the full blocks of `tokens`: h_i = hash((h_{i-1}, block i)); extends `start`."""
    hashes = list(start or [])
    for i in range(len(hashes), len(tokens) // block_size):
        parent = hashes[-1] if hashes else None
        hashes.append(hash((parent, tuple(tokens[i * block_size : (i + 1) * block_size]))))
    return hashes


class PrefixCache:
    """Block hash → block id, holding one reference per cached block; LRU eviction of unreferenced ones."""

    def __init__(self, pool: PagedKVCache) -> None:
        self.pool = pool
        self._blocks: OrderedDict[int, int] = OrderedDict()  # hash -> block, least recently used first
        self.hits = self.queries = 0  # in tokens: prompt tokens found / prompt tokens looked up
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, h: int) -> bool:
        return h in self._blocks

    def match(self, hashes: Sequence[int]) -> list[int]:
        """Blocks of the longest cached prefix of `hashes`, marked as just used (the first one most recent)."""
        found = []
        for h in hashes:
            if h not in self._blocks:
                break
            found.append(h)
        for h in reversed(found):  # the head of a chain is evicted last: its descendants need it
            self._blocks.move_to_end(h)
        return [self._blocks[h] for h in found]

    def record(self, *, looked_up: int, found: int) -> None:
        """Count one lookup in tokens, for the hit rate."""
        self.queries += looked_up
        self.hits += found

    @property
    def hit_rate(self) -> float:
        """Prompt tokens served from the cache / prompt tokens looked up."""
        return self.hits / self.queries if self.queries else 0.0

    def insert(self, h: int, block: int) -> bool:
        """Cache `block` under key `h` (one more reference to it); False if `h` is already cached."""
        if h in self._blocks:
            return False
        self.pool.allocator.incref(block)
        self._blocks[h] = block
        return True

    def _evictable(self) -> Iterator[int]:
        refcount = self.pool.allocator.refcount
        return (h for h, b in self._blocks.items() if refcount(b) == 1)

    @property
    def evictable(self) -> int:
        """Cached blocks that no sequence references: what `evict` can free."""
        return sum(1 for _ in self._evictable())

    def can_evict(self, n: int) -> bool:
        """True if at least n cached blocks are evictable (stops counting at n)."""
        return n <= 0 or sum(1 for _ in islice(self._evictable(), n)) == n

    def evict(self, n: int) -> int:
        """Release up to n evictable blocks, least recently used first; returns how many were freed."""
        victims = list(islice(self._evictable(), max(n, 0)))
        for h in victims:
            self.pool.allocator.release(self._blocks.pop(h))
        self.evictions += len(victims)
        return len(victims)

    def clear(self) -> None:
        """Drop every cached block (blocks still used by a sequence stay with it)."""
        for block in self._blocks.values():
            self.pool.allocator.release(block)
        self._blocks.clear()
