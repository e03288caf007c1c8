"""The prefix cache as the engines keep it: keys are a SHA-256 chain and a hit verifies the tokens; eviction
frees leaves first (LRU among leaves) and never leaves a cached block unreachable; the pool's counts add
up under any sequence of opens, registrations, hits, frees and evictions; cache-aware ordering admits
the longest cached prefix first and changes no request's tokens.

Each test names the bug it catches; every one was checked by mutating `minigpt/serving/prefix_cache.py`
by hand (see the report of issue 22's prefix-cache branch):

- evicting any unreferenced block in LRU order (the old cache) fails the 4-block regression and the
  state machine (an orphan: a cached block whose parent was evicted);
- a hit that compares digests only fails `test_a_forged_collision_is_not_served`;
- `insert` without the parent check fails `test_insert_refuses_a_block_whose_parent_is_gone` (the state
  machine reaches that orphan too, but only for some seeds: it takes seven particular steps);
- `evictable` counting only the current leaves fails `test_a_block_in_use_below_keeps_its_ancestors` and
  the state machine (the scheduler would then evict fewer blocks than `can_evict` promised);
- eviction ignoring recency, or a hit that does not refresh it, fails the LRU test; no reordering fails
  the `longest_prefix_first` test.
"""

from __future__ import annotations

import random

import pytest
import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from profiles import examples

from minigpt import MiniGPT, ModelConfig, generate
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.serving import Engine, EngineConfig, PrefixCache, Request
from minigpt.serving.prefix_cache import ROOT, BlockKey, block_hashes, block_key, longest_prefix_first

TINY = ModelConfig(L=1, H=1, H_kv=1, d_h=2, d_ffn=4, V=16, S_max=64)


def cached_chain(prompt: list[int], b: int, num_blocks: int = 16) -> tuple[PagedKVCache, PrefixCache, list[int]]:
    """A pool and cache holding the full blocks of `prompt`, computed by a sequence that has finished."""
    pool = PagedKVCache(TINY, num_blocks=num_blocks, block_size=b)
    cache = PrefixCache(pool)
    seq = pool.add_sequence()
    pool.reserve([seq], len(prompt))
    table = pool.block_table(seq)
    for key, block in zip(block_hashes(prompt, b), table, strict=False):
        assert cache.insert(key, block)
    pool.free_sequence(seq)
    return pool, cache, table


# -- keys ---------------------------------------------------------------------------------------------


def test_keys_name_the_whole_prefix_and_the_encoding_is_unambiguous():
    """Bug caught: a key of the block's own tokens only (two prompts that differ early would share block 1), or an
    encoding without the token count or with narrow ids (different blocks hashing the same bytes)."""
    a, c = block_hashes([1, 2, 3, 4], 2), block_hashes([9, 2, 3, 4], 2)
    assert a[1].tokens == c[1].tokens and a[1].digest != c[1].digest  # same block, different prefix
    assert a[1].parent == a[0].digest and a[0].parent == ROOT
    assert block_key(ROOT, [1, 2]).digest != block_key(ROOT, [1, 2, 0]).digest
    assert block_key(ROOT, [1]).digest != block_key(ROOT, [1 + 2**32]).digest
    assert len(a[0].digest) == 32  # SHA-256
    assert block_hashes([1, 2, 3, 4, 5], 2, start=a[:1]) == a  # extending a chain computes the rest only


# -- regressions ----------------------------------------------------------------------------------------


def test_a_never_hit_chain_loses_its_tail_first():
    """Issue 22's case. Bug caught: the old cache appended a chain head first and evicted in LRU order, so
    `evict(1)` freed the head; `match` then found 0 blocks while 3 orphaned blocks still held pool memory."""
    b, prompt = 4, list(range(16))
    pool, cache, table = cached_chain(prompt, b)
    free = pool.allocator.num_free
    assert cache.evict(1) == 1
    assert cache.match(block_hashes(prompt, b)) == table[:3]
    assert len(cache) == 3 and pool.allocator.num_free == free + 1
    assert pool.allocator.refcount(table[3]) == 0  # the tail went back to the pool
    assert cache.evict(10) == 3 and pool.allocator.num_free == pool.allocator.num_blocks


def test_leaves_go_least_recently_used_first_and_a_parent_waits_for_its_children():
    """Bug caught: eviction in insertion order, or by a parent's age while it still has a cached child."""
    b = 2
    pool = PagedKVCache(TINY, num_blocks=16, block_size=b)
    cache = PrefixCache(pool)
    stem, x, y = [1, 2], [3, 4], [5, 6]  # two chains sharing their first block: stem+x and stem+y
    for prompt in (stem + x, stem + y):
        keys = block_hashes(prompt, b)
        got = cache.match(keys)
        seq = pool.add_sequence_from(got, len(got) * b)
        pool.reserve([seq], len(prompt) - len(got) * b)
        for key, block in zip(keys[len(got):], pool.block_table(seq)[len(got):], strict=True):
            cache.insert(key, block)
        pool.free_sequence(seq)
    cache.match(block_hashes(stem + x, b))  # stem+x is now the most recently used
    assert cache.evict(1) == 1
    assert cache.cached_blocks(block_hashes(stem + y, b)) == 1  # y's leaf went, the shared head stayed
    assert cache.cached_blocks(block_hashes(stem + x, b)) == 2
    assert cache.evict(1) == 1 and cache.cached_blocks(block_hashes(stem, b)) == 1  # then x's leaf
    assert cache.evict(1) == 1 and len(cache) == 0  # the head last


def test_a_block_in_use_below_keeps_its_ancestors():
    """Bug caught: evicting an unreferenced parent of a block a running sequence holds (the child would be
    cached but unreachable), or `evictable` promising blocks that `evict` cannot free."""
    b, prompt = 2, [1, 2, 3, 4, 5, 6]
    pool, cache, table = cached_chain(prompt, b)
    keys = block_hashes(prompt, b)
    # a sequence holding only the last block (as one that recomputed the head itself and cached the tail)
    holder = pool.add_sequence_from([table[2]], 1)
    assert cache.evictable == 0 and not cache.can_evict(1)
    assert cache.evict(3) == 0 and cache.cached_blocks(keys) == 3
    pool.free_sequence(holder)
    assert cache.evictable == 3 and cache.evict(3) == 3


def test_a_forged_collision_is_not_served():
    """Bug caught: a hit that trusts the digest (Python's `hash`, or any hash, can collide): a key with a
    cached digest but other tokens, or another parent, must find nothing, and must not replace the entry."""
    b, prompt = 2, [1, 2, 3, 4]
    pool, cache, table = cached_chain(prompt, b)
    real = block_hashes(prompt, b)
    forged_tokens = BlockKey(real[0].digest, ROOT, (7, 7))
    assert cache.match([forged_tokens]) == [] and forged_tokens not in cache
    forged_parent = BlockKey(real[1].digest, block_key(ROOT, [7, 7]).digest, real[1].tokens)
    assert cache.match([real[0], forged_parent]) == table[:1]
    assert not cache.insert(forged_tokens, table[0])  # the digest is taken: nothing replaced, no reference
    assert pool.allocator.refcount(table[0]) == 1
    assert cache.match(real) == table[:2]


def test_insert_refuses_a_block_whose_parent_is_gone():
    """Bug caught: a sequence that computed block 0 itself (another copy was cached), whose cached copy was
    then evicted, registering block 1: cached, but no lookup can ever reach it."""
    b, prompt = 2, [1, 2, 3, 4]
    pool, cache, table = cached_chain(prompt[:2], b)
    keys = block_hashes(prompt, b)
    seq = pool.add_sequence()
    pool.reserve([seq], 4)
    mine = pool.block_table(seq)
    assert not cache.insert(keys[0], mine[0])  # block 0 is cached already (the other copy)
    assert cache.evict(1) == 1  # the other copy goes
    used = pool.allocator.num_used
    assert not cache.insert(keys[1], mine[1]) and len(cache) == 0 and pool.allocator.num_used == used
    pool.free_sequence(seq)
    assert pool.allocator.num_free == pool.allocator.num_blocks


# -- the property: any sequence of operations ------------------------------------------------------------


class CacheMachine(RuleBasedStateMachine):
    """Sequences open from the longest cached prefix of prompts that share stems, register their full blocks
    (all at once or a few at a time, as chunked prefills do), release; lookups touch blocks; evictions free."""

    def __init__(self) -> None:
        super().__init__()
        self.b = 2
        self.pool = PagedKVCache(TINY, num_blocks=12, block_size=self.b)
        self.cache = PrefixCache(self.pool)
        rng = random.Random(0)
        self.stems = [[rng.randrange(4) for _ in range(8)] for _ in range(2)]
        self.live: dict[int, tuple[list[BlockKey], int]] = {}  # seq -> (its keys, blocks registered)

    def prompt(self, stem: int, keep: int, own: list[int]) -> list[int]:
        return self.stems[stem][:keep] + own

    @rule(stem=st.integers(0, 1), keep=st.sampled_from([0, 2, 4, 8]), own=st.lists(st.integers(0, 3), max_size=3),
          look_up=st.booleans())
    def open(self, stem, keep, own, look_up):
        """Open a sequence from the longest cached prefix, or (`look_up` False) computing every block itself, as
        a request admitted in the same step as another with the same prefix does."""
        tokens = self.prompt(stem, keep, own)
        keys = block_hashes(tokens, self.b)
        blocks = self.cache.match(keys) if look_up else []
        seq = self.pool.add_sequence_from(blocks, len(blocks) * self.b)
        T = len(tokens) - len(blocks) * self.b
        short = self.pool.blocks_needed(seq, T) - self.pool.allocator.num_free
        if short > 0:
            if not self.cache.can_evict(short):
                self.pool.free_sequence(seq)
                return
            assert self.cache.evict(short) == short  # what can_evict promised
        self.pool.reserve([seq], T)
        self.live[seq] = (keys, len(blocks))

    @precondition(lambda self: self.live)
    @rule(pick=st.integers(0, 99))
    def register(self, pick):
        """Cache the next full block of a sequence, as a chunked prefill completes it."""
        seq = sorted(self.live)[pick % len(self.live)]
        keys, done = self.live[seq]
        if done < len(keys):
            self.cache.insert(keys[done], self.pool.block_table(seq)[done])
            self.live[seq] = (keys, done + 1)

    @precondition(lambda self: self.live)
    @rule(pick=st.integers(0, 99))
    def free(self, pick):
        seq = sorted(self.live)[pick % len(self.live)]
        self.pool.free_sequence(seq)
        del self.live[seq]

    @rule(stem=st.integers(0, 1), keep=st.integers(0, 8))
    def look_up(self, stem, keep):
        keys = block_hashes(self.prompt(stem, keep, []), self.b)
        blocks = self.cache.match(keys)
        assert len(blocks) == self.cache.cached_blocks(keys) <= len(keys)

    @rule(n=st.integers(0, 6))
    def evict(self, n):
        before = self.cache.evictable
        assert self.cache.evict(n) == min(n, before)

    @invariant()
    def every_cached_block_is_reachable_from_a_root(self):
        cached = {key.digest: key for key, _ in self.cache.items()}
        for key in cached.values():
            chain = [key]
            while chain[-1].parent != ROOT:
                assert chain[-1].parent in cached, "a cached block whose parent is not cached (an orphan)"
                chain.append(cached[chain[-1].parent])
            keys = chain[::-1]
            assert self.cache.cached_blocks(keys) == len(keys)  # found by a lookup of its whole prefix

    @invariant()
    def the_pool_counts_add_up(self):
        a = self.pool.allocator
        refs = [0] * a.num_blocks
        for seq in self.live:
            for block in self.pool.block_table(seq):
                refs[block] += 1
        blocks = [block for _, block in self.cache.items()]
        assert len(set(blocks)) == len(blocks), "a block cached under two keys"
        for block in blocks:
            refs[block] += 1
        assert [a.refcount(i) for i in range(a.num_blocks)] == refs
        assert a.num_free == refs.count(0)

    @invariant()
    def evictable_counts_the_blocks_no_sequence_needs(self):
        held = {d for d in self._digests() if self._held(d)}
        items = {key.digest: key for key, _ in self.cache.items()}
        needed = set()
        for d in held:  # a held block and everything above it
            while d != ROOT and d not in needed:
                needed.add(d)
                d = items[d].parent
        assert self.cache.evictable == len(items) - len(needed)

    def _digests(self):
        return [key.digest for key, _ in self.cache.items()]

    def _held(self, digest):
        block = next(b for k, b in self.cache.items() if k.digest == digest)
        return self.pool.allocator.refcount(block) > 1

    def teardown(self):
        for seq in list(self.live):
            self.pool.free_sequence(seq)
        self.live.clear()
        assert self.cache.evictable == len(self.cache)
        assert self.cache.evict(len(self.cache)) >= 0 and len(self.cache) == 0
        assert self.pool.allocator.num_free == self.pool.allocator.num_blocks, "a block leaked"


CacheMachine.TestCase.settings = settings(max_examples=examples(200), stateful_step_count=40, deadline=None,
                                          suppress_health_check=[HealthCheck.too_slow])
test_any_sequence_of_operations_keeps_the_cache_whole = CacheMachine.TestCase


# -- cache-aware scheduling ---------------------------------------------------------------------------


def test_longest_prefix_first_orders_by_cached_blocks_and_keeps_ties_in_arrival_order():
    """Bug caught: sorting the wrong way, an unstable sort (ties must stay first come, first served), or a
    lookup that touches the LRU clock (ordering must not change what is evicted)."""
    b = 2
    pool, cache, _ = cached_chain([1, 2, 3, 4, 5, 6], b)
    queue = [[9, 9, 9, 9], [1, 2, 7, 7], [1, 2, 3, 4, 5, 6], [8, 8], [1, 2, 3, 4]]
    clock = cache._clock
    order = longest_prefix_first([block_hashes(p, b) for p in queue], cache)
    assert order == [2, 4, 1, 0, 3] and cache._clock == clock


MODEL_CONFIG = ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=64, V=40, S_max=48)
torch.manual_seed(0)
MODEL = MiniGPT(MODEL_CONFIG).eval()


def _trace(seed: int, n: int = 12) -> list[Request]:
    """Requests from three system prompts, interleaved, all arriving at once."""
    rng = random.Random(seed)
    systems = [[rng.randrange(MODEL_CONFIG.V) for _ in range(12)] for _ in range(3)]
    return [Request(f"r{i}", tuple(systems[i % 3] + [rng.randrange(MODEL_CONFIG.V) for _ in range(3)]),
                    rng.randint(1, 6)) for i in range(n)]


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("seed", [0, 1])
def test_cache_aware_admission_changes_no_token(seed):
    """Bug caught: a reordering that loses or duplicates a request or serves the wrong blocks: every request's
    greedy tokens equal its generation alone, and the pool is empty at the end."""
    reqs = _trace(seed)
    e = Engine.for_model(MODEL, num_blocks=14, block_size=4,
                         config=EngineConfig(max_batch=2, prefix_caching=True, cache_aware=True))
    out = e.run(reqs)
    for r, t in zip(reqs, out, strict=True):
        assert t.tokens == generate(MODEL, list(r.prompt), r.max_new_tokens).tokens[0]
    e.close()
    assert e.pool.allocator.num_free == e.pool.allocator.num_blocks


@pytest.mark.usefixtures("one_torch_thread")
def test_longest_prefix_first_serves_a_cached_system_prompt_before_it_is_evicted():
    """Two system prompts of 2 blocks, requests A1 B1 A2 B2 A3 B3 all waiting, a pool of one request's 3 blocks.
    First come, first served alternates, and each request evicts the other prompt: no hit. Longest prefix
    first runs A2 and A3 while A's blocks are cached, then B1, B2, B3: 4 hits of 8 tokens. Bug caught: an
    ordering that is not applied, or applied before the finished request's blocks are cached."""
    rng = random.Random(3)
    systems = [[rng.randrange(MODEL_CONFIG.V) for _ in range(8)] for _ in range(2)]
    own = [[rng.randrange(MODEL_CONFIG.V) for _ in range(3)] for _ in range(6)]
    reqs = [Request(f"{'AB'[i % 2]}{i // 2 + 1}", tuple(systems[i % 2] + own[i]), 2) for i in range(6)]
    order, hits = {}, {}
    for aware in (False, True):
        e = Engine.for_model(MODEL, num_blocks=3, block_size=4,
                             config=EngineConfig(max_batch=1, prefix_caching=True, cache_aware=aware))
        out = e.run(reqs)
        hits[aware] = e.prefix_cache.hits
        order[aware] = [t.request.id for t in sorted(out, key=lambda t: t.admitted_s)]
    assert hits == {False: 0, True: 4 * 8}
    assert order[True] == ["A1", "A2", "A3", "B1", "B2", "B3"]


def test_cache_aware_needs_a_prefix_cache():
    with pytest.raises(ValueError, match="prefix_caching=True"):
        Engine.for_model(MODEL, num_blocks=8, block_size=4, config=EngineConfig(cache_aware=True))


def test_the_chapter_figure_is_drawn_from_the_cache():
    """Bug caught: a figure that drifts from the mechanism. Prompts 1 and 2 finished, prompt 3 runs: prompt 1's
    leaf goes first (least recently used), then prompt 2's, then their shared run; prompt 3's path is held."""
    from minigpt.book.figures_prefix import prefix_state

    state = prefix_state()
    first, second, running = state.keys
    assert state.held == {k.digest for k in running}
    assert state.evict_order[first[-1].digest] == 1 and state.evict_order[second[-1].digest] == 2
    assert [state.evict_order[k.digest] for k in first[2:5]] == [5, 4, 3]  # the shared run, from its end
    assert first[0] == running[0] and first[0].digest not in state.evict_order


def test_membership_is_the_digest_and_the_tokens_together():
    """`key in cache` holds for a cached key and not for a key with the same digest but other tokens (a forged
    or colliding key finds no block). Guards a membership test that answers the opposite."""
    b, prompt = 4, list(range(8))
    pool, cache, table = cached_chain(prompt, b)
    keys = block_hashes(prompt, b)
    assert all(k in cache for k in keys)
    assert block_hashes([9, 9, 9, 9], b)[0] not in cache
    forged = type(keys[0])(keys[0].digest, keys[0].parent, (7, 7, 7, 7))
    assert forged not in cache
