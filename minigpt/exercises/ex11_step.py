"""Exercise 11 Q2: the slot mapping of one fused engine step over a paged pool.

An engine step runs every scheduled sequence in one forward (Chapter 14): sequence i holds `lengths[i]` tokens
and feeds `counts[i]` new ones, whose blocks are already in its table (reserved before the step). The step's
new keys and values go to their *slots*, block id × b + row, laid end to end in the order of the sequences:
vLLM's `slot_mapping`, the input of `reshape_and_cache`. Chapter 11 prints the write that reads a slot mapping,
not the step that builds one.

The oracle is the package's own step builder, `minigpt.runtime.varlen.flatten`, on a `PagedKVCache` whose
sequences hold the given tables: the reserved blocks are put on top of the free list in the order `reserve`
takes them, so the tables it grows are the given ones (tests/test_exercise_mechanisms.py checks the slots against
the step written from scratch).
"""

from __future__ import annotations

import random

from minigpt.config import ModelConfig
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.runtime.varlen import flatten

STEP_EDGES = ("a sequence with S > 0 cached tokens, S not a multiple of b, writing into a later block of a table "
              "that is not 0, 1, 2, …: positions counted from the step's first token (0 … T − 1) or one late "
              "(S + 1 …), ⌈p / b⌉, the logical slot p (the table not consulted), or block id + row (not × b)",
              "a chunk of 2 or more tokens that crosses into a block whose id is not the next one: the chunk's "
              "slots laid consecutively from its first",
              "sequences of different lengths beside the chunk: one start for every sequence, or one slot per "
              "sequence (counts ignored)")


def _tables(rng: random.Random, lengths: list[int], counts: list[int], b: int, share: bool) -> list[list[int]]:
    """Distinct block ids for every sequence's ⌈(S + T) / b⌉ blocks (a pool with some blocks to spare); with
    `share`, later sequences start with the first sequence's leading full blocks, as a prefix-cache hit
    leaves them (only blocks every holder has filled: a block that will be written is never shared)."""
    need = [-(-(S + T) // b) for S, T in zip(lengths, counts, strict=True)]
    ids = rng.sample(range(sum(need) + rng.randint(0, 12)), sum(need))
    tables, start = [], 0
    for n in need:
        tables.append(ids[start:start + n])
        start += n
    if share:
        for i in range(1, len(tables)):
            k = rng.randint(0, min(lengths[0], lengths[i]) // b)
            tables[i][:k] = tables[0][:k]
    return tables


def _edge_case(rng: random.Random) -> dict:
    """All three `STEP_EDGES` at once, sequences in a random order: a decode at S = b·k + r (k >= 1, 0 < r < b), a
    chunk from S' = b·k' + r' that crosses into its next block (not numbered one after the one it starts in), and
    a decode at a third length; block ids from 20 up (none equals its place in its table), b >= 2."""
    while True:
        b = rng.choice([2, 4, 8, 16])
        lengths = [b * rng.randint(1, 4) + rng.randint(1, b - 1) for _ in range(3)]
        if len(set(lengths)) < 3:
            continue
        counts = [1, b - lengths[1] % b + rng.randint(1, b), 1]  # sequence 1 crosses a boundary
        need = [-(-(S + T) // b) for S, T in zip(lengths, counts, strict=True)]
        ids = rng.sample(range(20, 20 + sum(need) + rng.randint(1, 12)), sum(need))
        tables = [ids[sum(need[:i]):sum(need[:i + 1])] for i in range(3)]
        j = lengths[1] // b
        if tables[1][j + 1] == tables[1][j] + 1:
            continue
        order = rng.sample(range(3), 3)
        return dict(tables=[tables[i] for i in order], lengths=[lengths[i] for i in order],
                    counts=[counts[i] for i in order], block_size=b)


def _step_cases(rng: random.Random) -> list[dict]:
    """The edges first (`STEP_EDGES`: three cases that each hold all three), then random steps: 1 to 6
    sequences, new ones (S = 0) and chunks among one-token decodes, b from 1 to 16, some sharing prefix blocks."""
    cases = [_edge_case(rng) for _ in STEP_EDGES]
    for _ in range(5):
        B, b = rng.randint(1, 6), rng.choice([1, 2, 4, 8, 16])
        lengths = [rng.choice([0, rng.randint(1, 40)]) for _ in range(B)]
        counts = [1 if S and rng.random() < 0.6 else rng.randint(1, 24) for S in lengths]
        tables = _tables(rng, lengths, counts, b, share=rng.random() < 0.5)
        cases.append(dict(tables=tables, lengths=lengths, counts=counts, block_size=b))
    return cases


def pool_holding(tables: list[list[int]], lengths: list[int], block_size: int,
                 reserved: list[list[int]] | None = None) -> tuple[PagedKVCache, list[int]]:
    """A `PagedKVCache` whose live sequences hold `lengths[i]` tokens in the blocks `tables[i]` (a block in several
    tables is shared), and its sequence ids; `reserved[i]`, blocks sequence i will take next, are put on top of
    the free list in the order `reserve` takes them."""
    b, reserved = block_size, reserved or [[] for _ in tables]
    num_blocks = 1 + max((block for table in tables + reserved for block in table), default=0)
    room = max(len(table) + len(r) for table, r in zip(tables, reserved, strict=True)) * b  # the longest's blocks
    config = ModelConfig(L=1, H=1, H_kv=1, d_h=1, d_ffn=1, V=1, S_max=max(1, room))
    pool = PagedKVCache(config, num_blocks=num_blocks, block_size=b)
    for _ in range(num_blocks):
        pool.allocator.allocate()  # every block held once by the set-up, so each sequence can start from its own
    seqs = [pool.add_sequence_from(table, S) for table, S in zip(tables, lengths, strict=True)]
    later = [block for blocks in reserved for block in blocks]
    for block in sorted(set(range(num_blocks)) - set(later)):
        pool.allocator.release(block)  # the set-up lets go: the sequences' own blocks stay, the rest are free
    for block in reversed(later):
        pool.allocator.release(block)  # on top of the stack, in the order reserve takes them
    return pool, seqs


def _step_slots(tables: list[list[int]], lengths: list[int], counts: list[int], block_size: int) -> list[int]:
    """The package's fused step (`flatten`) over a pool whose sequences hold `tables`: its `slot_mapping`."""
    b = block_size
    held = [table[: -(-S // b)] for table, S in zip(tables, lengths, strict=True)]
    later = [table[len(blocks):] for table, blocks in zip(tables, held, strict=True)]
    pool, seqs = pool_holding(held, lengths, b, later)
    return flatten(pool, seqs, [[0] * T for T in counts]).slot_mapping.tolist()
