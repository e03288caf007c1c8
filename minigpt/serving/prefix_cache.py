"""Prefix caching: KV blocks of full token blocks, found again by a hash chain over their contents.

Block i of a context holds tokens i·b .. i·b + b − 1. Its key is

    h_i = SHA-256(h_{i−1} ‖ b ‖ tokens of block i)        (h_{−1} = ROOT, each token id as 8 bytes),

so a key names the whole prefix up to the end of the block, not just the block's own tokens: two
prompts share block i's K/V only if they agree on every token before it (K/V at a position depend on
all earlier tokens). A key carries its parent's digest and its block's tokens as well, and a hit
compares them with the cached entry's: a digest collision (or a forged key) finds no block rather
than the wrong K/V. vLLM's `hash_block_tokens` chains blocks the same way, hashing (parent hash, the
block's token ids, extra keys) with sha256 by default; its `BlockHash` is the digest alone (v0.33.0, the
claims ledger's `vllm-block-hash`), so vLLM trusts the digest where this cache compares the tokens.

The cached keys form a tree (a block's parent is the block before it): the radix tree of SGLang's
RadixAttention, with one node per block instead of one per run of tokens. The cache holds one
reference to each cached block in the pool's allocator, so a block outlives the request that computed
it. A cached block that no sequence holds is evictable once every cached block below it is gone:
`evict` frees *leaves* (blocks with no cached child), least recently used first, and a parent joins
the candidates when its last child goes. So the longest suffixes go first, a chain is never cut in
the middle, and no cached block is ever unreachable from a root (`insert` refuses a block whose parent
is not cached, for the same reason).

Simplifications against the engines: one node per block (SGLang's nodes hold runs of tokens and split
on demand); no extra keys (vLLM mixes LoRA ids, multimodal hashes and a cache salt into h_i); a fixed
ROOT seed (so is vLLM's with sha256; its xxhash options draw one per process unless PYTHONHASHSEED is
set); `evictable` walks the whole cache (SGLang keeps counters updated on every lock and unlock).
"""

from __future__ import annotations

import hashlib
import heapq
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from minigpt.runtime.paged_cache import PagedKVCache

ROOT = hashlib.sha256(b"minigpt prefix cache: the empty prefix").digest()


@dataclass(frozen=True)
class BlockKey:
    """One full block's key: the digest h_i, its parent's digest h_{i−1}, and the block's token ids."""

    digest: bytes
    parent: bytes
    tokens: tuple[int, ...]


def block_key(parent: bytes, tokens: Sequence[int]) -> BlockKey:
    """The key of a block after the prefix named by `parent`: h_i = SHA-256(h_{i−1} ‖ b ‖ tokens) (Chapter 13).

    The encoding is canonical: the 32-byte parent digest, the token count, then each id as a signed
    64-bit little-endian integer, so two different (parent, tokens) never encode to the same bytes.
    """
    ids = tuple(int(t) for t in tokens)
    data = parent + struct.pack(f"<Q{len(ids)}q", len(ids), *ids)
    return BlockKey(hashlib.sha256(data).digest(), parent, ids)


def block_hashes(tokens: Sequence[int], block_size: int, start: list[BlockKey] | None = None) -> list[BlockKey]:
    """The key chain of the full blocks of `tokens`; extends `start` (keys already computed)."""
    keys = list(start or [])
    for i in range(len(keys), len(tokens) // block_size):
        parent = keys[-1].digest if keys else ROOT
        keys.append(block_key(parent, tokens[i * block_size : (i + 1) * block_size]))
    return keys


@dataclass
class _Node:
    key: BlockKey
    block: int
    used: int  # logical time of the last hit or insert
    children: set[bytes] = field(default_factory=set)  # digests of the cached blocks that follow this one


class PrefixCache:
    """Cached blocks as a tree of keys, one allocator reference each; leaves evicted first, LRU among them."""

    def __init__(self, pool: PagedKVCache) -> None:
        self.pool = pool
        self._nodes: dict[bytes, _Node] = {}
        self._clock = 0
        self.hits = self.queries = 0  # in tokens: prompt tokens found / prompt tokens looked up
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, key: BlockKey) -> bool:
        node = self._nodes.get(key.digest)
        return node is not None and node.key == key

    def items(self) -> list[tuple[BlockKey, int]]:
        """Every cached key with its block id (for inspection and tests)."""
        return [(n.key, n.block) for n in self._nodes.values()]

    def _prefix(self, keys: Sequence[BlockKey]) -> list[_Node]:
        """Nodes of the longest cached prefix of `keys`, each verified: same digest, parent and tokens."""
        found = []
        for key in keys:
            node = self._nodes.get(key.digest)
            if node is None or node.key != key:  # a miss, or a collision: never serve another prefix's K/V
                break
            found.append(node)
        return found

    def cached_blocks(self, keys: Sequence[BlockKey]) -> int:
        """Length in blocks of the longest cached prefix of `keys`, without marking anything as used."""
        return len(self._prefix(keys))

    def match(self, keys: Sequence[BlockKey]) -> list[int]:
        """Blocks of the longest cached prefix of `keys`, verified, and marked as just used."""
        found = self._prefix(keys)
        self._clock += 1
        for node in found:
            node.used = self._clock
        return [node.block for node in found]

    def record(self, *, looked_up: int, found: int) -> None:
        """Count one lookup in tokens, for the hit rate."""
        self.queries += looked_up
        self.hits += found

    @property
    def hit_rate(self) -> float:
        """Prompt tokens served from the cache / prompt tokens looked up."""
        return self.hits / self.queries if self.queries else 0.0

    def insert(self, key: BlockKey, block: int) -> bool:
        """Cache `block` under `key` (one more reference to it). False, and nothing cached, if the key is
        already cached (or its digest is taken) or if its parent is not cached (it would be unreachable)."""
        if key.digest in self._nodes:
            return False
        parent = self._nodes.get(key.parent)
        if key.parent != ROOT and parent is None:
            return False
        self.pool.allocator.incref(block)
        self._clock += 1
        self._nodes[key.digest] = _Node(key, block, self._clock)
        if parent is not None:
            parent.children.add(key.digest)
        return True

    def _held(self, node: _Node) -> bool:
        return self.pool.allocator.refcount(node.block) > 1  # a sequence uses it besides the cache

    def _pinned(self) -> set[bytes]:
        """Cached blocks that eviction cannot reach: those a sequence holds, and every block above one."""
        pinned: set[bytes] = set()
        for digest, node in self._nodes.items():
            if not self._held(node):
                continue
            while digest not in pinned:  # climb to the root (every parent is cached) or a marked block
                pinned.add(digest)
                if node.key.parent == ROOT:
                    break
                digest, node = node.key.parent, self._nodes[node.key.parent]
        return pinned

    @property
    def evictable(self) -> int:
        """Cached blocks that `evict` can free: those with no block held by a sequence at or below them."""
        return len(self._nodes) - len(self._pinned())

    def can_evict(self, n: int) -> bool:
        """True if at least n cached blocks are evictable."""
        return n <= 0 or self.evictable >= n

    def _free_leaf(self, node: _Node) -> bool:
        return not node.children and not self._held(node)

    def evict(self, n: int) -> int:
        """Release up to n evictable blocks, leaves first, least recently used first; returns how many."""
        heap = [(node.used, digest) for digest, node in self._nodes.items() if self._free_leaf(node)]
        heapq.heapify(heap)
        freed = 0
        while heap and freed < n:
            _, digest = heapq.heappop(heap)
            node = self._nodes.pop(digest)
            self.pool.allocator.release(node.block)
            freed += 1
            parent = self._nodes.get(node.key.parent)
            if parent is not None:
                parent.children.discard(digest)
                if self._free_leaf(parent):  # its last cached child is gone: now a leaf itself
                    heapq.heappush(heap, (parent.used, node.key.parent))
        self.evictions += freed
        return freed

    def clear(self) -> None:
        """Drop every cached block (blocks still used by a sequence stay with it)."""
        for node in self._nodes.values():
            self.pool.allocator.release(node.block)
        self._nodes.clear()


def longest_prefix_first(keys: Sequence[Sequence[BlockKey]], cache: PrefixCache) -> list[int]:
    """Cache-aware order of a waiting queue (SGLang's `lpm` policy): the indices of `keys` (one key chain
    per waiting request) by cached prefix length, longest first; ties keep their order (first come,
    first served). Requests that can reuse the blocks cached now run before those blocks are evicted."""
    cached = [cache.cached_blocks(k) for k in keys]
    return sorted(range(len(keys)), key=lambda i: -cached[i])
