"""The paged KV cache: block allocation, ragged batches, copy-on-write, and paged ≡ contiguous exactly."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import MiniGPT, ModelConfig, costs, decode_step, prefill
from minigpt.runtime.paged_cache import BlockAllocator, OutOfBlocks, PagedKVCache
from minigpt.runtime.slot_cache import SlotKVCache

CONFIG = ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=64, V=40, S_max=48)


def model() -> MiniGPT:
    torch.manual_seed(0)
    return MiniGPT(CONFIG).eval()


MODEL = model()


@settings(max_examples=examples(25), deadline=None)
@given(block_size=st.integers(1, 7), n=st.integers(2, 5), seed=st.integers(0, 2**16),
       steps=st.lists(st.tuples(st.integers(1, 5), st.sampled_from([1, 1, 2, 3, 6])), min_size=2, max_size=10))
def test_paged_equals_contiguous_exactly_over_ragged_batches(block_size, n, seed, steps):
    """Random subsets of sequences append random chunks: the paged cache and the contiguous slots agree bit for bit."""
    g = torch.Generator().manual_seed(seed)
    paged = PagedKVCache(CONFIG, num_blocks=n * -(-CONFIG.S_max // block_size), block_size=block_size)
    slots = SlotKVCache(CONFIG, slots=n)
    p_ids = [paged.add_sequence() for _ in range(n)]
    s_ids = [slots.add_sequence() for _ in range(n)]
    for k, T in steps:
        chosen = torch.randperm(n, generator=g)[: min(k, n)].tolist()
        if max(paged.length(p_ids[i]) for i in chosen) + T > CONFIG.S_max:
            continue
        tokens = torch.randint(0, CONFIG.V, (len(chosen), T), generator=g)
        with torch.no_grad():
            a = MODEL(tokens, paged.batch([p_ids[i] for i in chosen]))
            b = MODEL(tokens, slots.batch([s_ids[i] for i in chosen]))
        assert torch.equal(a, b)
    for p, s in zip(p_ids, s_ids, strict=True):
        assert paged.length(p) == slots.length(s)
        S = paged.length(p)
        assert len(paged.block_table(p)) == costs.paged_blocks(S=S, block_size=block_size)
        assert len(paged.block_table(p)) * block_size - S == costs.paged_slack_tokens(S=S, block_size=block_size)
        assert costs.paged_slack_tokens(S=S, block_size=block_size) <= block_size - 1


def test_a_ragged_batch_matches_each_sequence_alone_to_fp32_rounding():
    """Batching changes the GEMM shapes (B·T rows), so equality with a lone sequence is up to rounding, and
    greedy tokens agree."""
    prompts = [[1, 2, 3, 4, 5, 6, 7], [8, 9, 10], [11, 12, 13, 14, 15]]
    paged = PagedKVCache(CONFIG, num_blocks=32, block_size=4)
    seqs, alone, tokens = [], [], []
    for p in prompts:
        seq = paged.add_sequence()
        seqs.append(seq)
        logits = prefill(MODEL, torch.tensor([p]), paged.batch([seq]))
        cache = MODEL.new_cache(1)
        torch.testing.assert_close(logits, prefill(MODEL, torch.tensor([p]), cache), rtol=0, atol=0)
        alone.append(cache)
        tokens.append(int(logits.argmax()))
    token = torch.tensor(tokens)
    for _ in range(8):
        batched = decode_step(MODEL, token, paged.batch(seqs))
        single = torch.cat([decode_step(MODEL, token[i : i + 1], alone[i]) for i in range(len(seqs))])
        torch.testing.assert_close(batched, single, rtol=1e-5, atol=1e-5)
        assert torch.equal(batched.argmax(-1), single.argmax(-1))
        token = single.argmax(-1)


def test_fork_shares_blocks_and_copies_on_the_first_divergent_write():
    paged = PagedKVCache(CONFIG, num_blocks=16, block_size=4)
    parent = paged.add_sequence()
    prefill(MODEL, torch.tensor([[1, 2, 3, 4, 5, 6]]), paged.batch([parent]))  # 6 tokens: blocks 4 + 2
    assert paged.allocator.num_used == 2
    children = [paged.fork(parent) for _ in range(3)]
    assert paged.allocator.num_used == 2  # shared, not copied
    assert all(paged.block_table(c) == paged.block_table(parent) for c in children)
    full, last = paged.block_table(parent)
    assert paged.allocator.refcount(full) == 4 and paged.allocator.refcount(last) == 4
    decode_step(MODEL, torch.tensor([7, 8, 9]), paged.batch(children))  # three divergent tokens
    assert paged.allocator.num_used == 2 + 3  # each child copied the shared, partly filled block
    assert paged.allocator.refcount(full) == 4 and paged.allocator.refcount(last) == 1
    for c in children:
        assert paged.block_table(c)[0] == full and paged.block_table(c)[1] != last
    # The copies hold the parent's first rows, then each child's own token.
    for c, token in zip(children, (7, 8, 9), strict=True):
        own = PagedKVCache(CONFIG, num_blocks=4, block_size=4)
        seq = own.add_sequence()
        prefill(MODEL, torch.tensor([[1, 2, 3, 4, 5, 6, token]]), own.batch([seq]))
        blk, mine = paged.block_table(c)[1], own.block_table(seq)[1]
        torch.testing.assert_close(paged.k[:, blk, :, :3], own.k[:, mine, :, :3], rtol=1e-6, atol=1e-6)
    for c in children:
        paged.free_sequence(c)
    paged.free_sequence(parent)
    assert paged.allocator.num_used == 0


def test_out_of_blocks_is_all_or_nothing():
    paged = PagedKVCache(CONFIG, num_blocks=3, block_size=4)
    a, b = paged.add_sequence(), paged.add_sequence()
    prefill(MODEL, torch.tensor([[1, 2, 3, 4, 5]]), paged.batch([a]))  # 2 blocks
    before = (paged.allocator.num_free, paged.block_table(a), paged.length(a))
    with pytest.raises(OutOfBlocks, match="need 2 free KV blocks but only 1"):
        prefill(MODEL, torch.tensor([[1, 2, 3, 4, 5]]), paged.batch([b]))
    assert (paged.allocator.num_free, paged.block_table(a), paged.length(a)) == before
    assert paged.length(b) == 0 and paged.block_table(b) == []


def test_bad_requests_name_what_is_wrong():
    with pytest.raises(ValueError, match="num_blocks must be a positive integer"):
        PagedKVCache(CONFIG, num_blocks=0)
    with pytest.raises(ValueError, match="block_size must be a positive integer"):
        PagedKVCache(CONFIG, num_blocks=4, block_size=0)
    paged = PagedKVCache(CONFIG, num_blocks=4)
    with pytest.raises(KeyError, match="no sequence 7"):
        paged.batch([7])
    seq = paged.add_sequence()
    with pytest.raises(ValueError, match="once per batch"):
        paged.batch([seq, seq])
    with pytest.raises(ValueError, match="at least one sequence"):
        paged.batch([])
    allocator = BlockAllocator(2)
    block = allocator.allocate()
    allocator.release(block)
    with pytest.raises(ValueError, match="already free"):
        allocator.release(block)


def test_slot_cache_equals_kv_cache_for_a_uniform_batch():
    slots = SlotKVCache(CONFIG, slots=2)
    seqs = [slots.add_sequence(), slots.add_sequence()]
    cache = MODEL.new_cache(2)
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])
    assert torch.equal(prefill(MODEL, prompt, slots.batch(seqs)), prefill(MODEL, prompt, cache))
    token = torch.tensor([7, 8])
    assert torch.equal(decode_step(MODEL, token, slots.batch(seqs)), decode_step(MODEL, token, cache))
    assert torch.equal(slots.k[:, :, :, :4], cache.k[:, :, :, :4])


def test_every_owner_of_a_shared_block_writing_at_once_needs_one_copy_fewer():
    """Two forks whose parent is gone share a partly filled block (refcount 2): the first writer copies it, the
    second finds it unshared and writes in place, so the batch needs 1 block, and 1 free block is enough."""
    paged = PagedKVCache(CONFIG, num_blocks=3, block_size=4)
    parent = paged.add_sequence()
    prefill(MODEL, torch.tensor([[1, 2, 3, 4, 5, 6]]), paged.batch([parent]))  # blocks: full + partial
    children = [paged.fork(parent) for _ in range(2)]
    paged.free_sequence(parent)
    assert paged.allocator.num_free == 1
    slots = SlotKVCache(CONFIG, slots=2)
    s_ids = [slots.add_sequence() for _ in range(2)]
    with torch.no_grad():
        MODEL(torch.tensor([[1, 2, 3, 4, 5, 6]] * 2), slots.batch(s_ids))
    a = decode_step(MODEL, torch.tensor([7, 8]), paged.batch(children))  # fits: one copy, one in-place write
    b = decode_step(MODEL, torch.tensor([7, 8]), slots.batch(s_ids))
    assert paged.allocator.num_free == 0
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)  # the children diverge as separate sequences do
    decode_step(MODEL, torch.tensor([1, 1]), paged.batch(children))  # row 3 of the blocks they own: no block
    with pytest.raises(OutOfBlocks, match="need 2 free KV blocks but only 0"):
        decode_step(MODEL, torch.tensor([1, 1]), paged.batch(children))


def _state(paged: PagedKVCache, seqs: list[int]) -> tuple:
    return (paged.allocator.num_free, [paged.block_table(s) for s in seqs], [paged.length(s) for s in seqs])


def _filled(paged: PagedKVCache, S: int) -> int:
    """A sequence holding S tokens (their K/V left as they are: only the tables and counts matter here)."""
    seq = paged.add_sequence()
    paged.reserve([seq], S)
    paged.advance([seq], S)
    return seq


def test_a_reservation_that_does_not_fit_changes_nothing_whatever_the_sharing():
    """Three kinds of last block, each with one free block too few: shared and full (each writer needs a fresh
    block, no copy is spared), unshared and partial (no copy at all), shared and partial written by both owners
    beside a third sequence that needs a fresh block (one copy spared, not two). Each refuses before touching the
    pool. Catches a spared-copy count that counts full blocks, unshared blocks, or each spared copy twice: the
    reservation then passes its check and fails half-way, with blocks taken."""
    # shared, full: a (4 tokens, one full block) and a fork of it; each needs a new block for one more token
    paged = PagedKVCache(CONFIG, num_blocks=2, block_size=4)
    a = _filled(paged, 4)
    b = paged.add_sequence_from(paged.block_table(a), 4)
    before = _state(paged, [a, b])
    with pytest.raises(OutOfBlocks, match="need 2 free KV blocks but only 1"):
        paged.reserve([a, b], 1)
    assert _state(paged, [a, b]) == before
    # unshared, partial: two sequences of 3 tokens, each needs a new block for 2 more, one block free
    paged = PagedKVCache(CONFIG, num_blocks=3, block_size=4)
    x, y = _filled(paged, 3), _filled(paged, 3)
    before = _state(paged, [x, y])
    with pytest.raises(OutOfBlocks, match="need 2 free KV blocks but only 1"):
        paged.reserve([x, y], 2)
    assert _state(paged, [x, y]) == before
    # shared partial block written by both owners (one copy, the other writes in place) + one fresh block
    paged = PagedKVCache(CONFIG, num_blocks=3, block_size=4)
    p = _filled(paged, 2)
    q = paged.add_sequence_from(paged.block_table(p), 2)
    c = _filled(paged, 4)
    before = _state(paged, [p, q, c])
    with pytest.raises(OutOfBlocks, match="need 2 free KV blocks but only 1"):
        paged.reserve([p, q, c], 1)
    assert _state(paged, [p, q, c]) == before


def test_allocator_and_pool_errors_say_what_is_wrong():
    """Messages a caller acts on: the pool is out of blocks, a block is free, a block id is out of range (the
    last valid id is num_blocks - 1), S or a block is not an integer, the lists differ in length; and the
    defaults (vLLM's block of 16 tokens)."""
    allocator = BlockAllocator(1)
    allocator.allocate()
    with pytest.raises(OutOfBlocks, match="the KV pool is full: all 1 blocks are in use"):
        allocator.allocate()
    with pytest.raises(ValueError, match="block 0 is free; only a used block can be shared"):
        BlockAllocator(2).incref(0)
    paged = PagedKVCache(CONFIG, num_blocks=4, block_size=4)
    assert PagedKVCache(CONFIG, num_blocks=4).block_size == 16
    for bad in (2.0, True):
        with pytest.raises(ValueError, match="num_blocks must be a positive integer"):
            PagedKVCache(CONFIG, num_blocks=bad)
    a = _filled(paged, 4)
    with pytest.raises(ValueError, match=r"block ids must be integers in 0\.\.3, got 4"):
        paged.add_sequence_from([4], 4)
    with pytest.raises(ValueError, match=r"block ids must be integers in 0\.\.3, got 0\.0"):
        paged.add_sequence_from([0.0], 4)
    with pytest.raises(ValueError, match="S must be a non-negative integer, got 4.0"):
        paged.add_sequence_from(paged.block_table(a), 4.0)
    other = paged.add_sequence()
    before = _state(paged, [a, other])
    with pytest.raises(ValueError):  # one T per sequence, checked before any block is taken
        paged.reserve_each([a, other], [5])
    assert _state(paged, [a, other]) == before


def test_a_pool_lives_on_its_device_with_its_dtype():
    paged = PagedKVCache(CONFIG, num_blocks=4, block_size=4, dtype=torch.float16, device="meta")
    assert (paged.k.device.type, paged.v.device.type, paged.k.dtype) == ("meta", "meta", torch.float16)
    seqs = [_filled(paged, 3), _filled(paged, 6)]
    tables = paged._padded_tables(seqs, 8)
    assert tables.device.type == "meta" and tables.dtype == torch.int64


def test_the_pool_says_what_it_holds():
    paged = PagedKVCache(CONFIG, num_blocks=4, block_size=4)
    _filled(paged, 6)
    assert repr(paged) == "PagedKVCache(L=2, H_kv=2, d_h=8, block_size=4, blocks 2/4 used, 1 sequences)"


def test_copy_on_write_copies_the_last_block_of_a_long_table():
    """A fork of 10 tokens in blocks of 4 shares three blocks; one more token for the fork copies the third (the
    partly filled last one), not another, and leaves the parent's table and data as they were. Catches a copy
    of the wrong block, which tables of one or two blocks cannot tell from the right one."""
    paged = PagedKVCache(CONFIG, num_blocks=8, block_size=4)
    torch.manual_seed(0)
    paged.k.normal_()
    paged.v.normal_()
    parent = _filled(paged, 10)
    child = paged.fork(parent)
    shared = paged.block_table(parent)
    paged.reserve([child], 1)
    table = paged.block_table(child)
    assert table[:2] == shared[:2] and table[2] not in shared and paged.block_table(parent) == shared
    assert torch.equal(paged.k[:, table[2]], paged.k[:, shared[2]])
    assert torch.equal(paged.v[:, table[2]], paged.v[:, shared[2]])
    assert [paged.allocator.refcount(b) for b in shared] == [2, 2, 1]
