"""The operation lists of Exercise 11's mechanism questions (q5, q6, and the pools of q1): random operations on a
few sequences, and the edges drawn every time (a pool that runs short; a fork whose shared last block is written),
each a list of `["add"]`, `["append", seq, T or tokens]`, `["fork", seq]`, `["free", seq]`; and how one runs on
the package's `PagedKVCache` (`_apply`)."""

from __future__ import annotations

import random

from minigpt.config import ModelConfig
from minigpt.runtime.paged_cache import OutOfBlocks, PagedKVCache


def _ops(rng: random.Random, n: int, block_size: int, forks: bool) -> list[list]:
    """Random operations on a few sequences: add, append (crossing block boundaries or not), fork, free."""
    ops: list[list] = [["add"]]
    live, count = [0], 1
    while len(ops) < n:
        r = rng.random()
        if not live or (r < 0.15 and len(live) < 4):
            ops.append(["add"])
        elif forks and r < 0.35 and len(live) < 5:
            ops.append(["fork", rng.choice(live)])
        elif r < 0.45 and len(live) > 1:
            ops.append(["free", rng.choice(live)])
            live.remove(ops[-1][1])
            continue
        else:
            T = rng.choice([1, 1, rng.randint(1, block_size), rng.randint(1, 3 * block_size)])
            seq = live[-1] if forks and rng.random() < 0.5 else rng.choice(live)  # often the newest fork
            ops.append(["append", seq, [rng.randrange(100) for _ in range(T)] if forks else T])
            continue
        live.append(count)
        count += 1
    return ops


def _grow_exhausted(rng: random.Random) -> dict:
    """A pool that runs short (`GROW_EDGES`): an append that needs three blocks when two are free must allocate
    none; an append fills a block exactly; a sequence of several blocks is freed, then its blocks are reused."""
    b = rng.choice([2, 4, 8])
    n = rng.randint(2, 6)  # blocks of sequence 0
    S0 = (n - 1) * b + rng.randint(1, b)
    ops = [["add"], ["append", 0, S0], ["add"], ["append", 1, b],  # one block left free
           ["append", 1, 2 * b + rng.randint(1, b)],  # needs 3 more blocks, 2 are free: refused
           ["append", 1, rng.randint(1, b)],  # needs 1: fits
           ["free", 0], ["append", 1, rng.randint(2 * b + 1, 3 * b)]]  # sequence 0's blocks, last first
    return dict(ops=ops, num_blocks=n + 3, block_size=b)


def _cow_exact(rng: random.Random, spare: int, grow: bool = False) -> dict:
    """A fork whose shared last block is partly filled, in a pool with `spare` free blocks: with one, the child's
    write copies the block; with none, that write is refused; with `grow`, the write also needs a new block, so
    with one free it is refused whole (the copy counts). Once the parent is gone the child owns its blocks
    alone and writes in place."""
    b = rng.choice([2, 4, 8])
    P = rng.randint(1, 3) * b + rng.randint(1, b - 1)  # the last block is partly filled
    room = b - P % b

    def tokens(n: int) -> list[int]:
        return [rng.randrange(100) for _ in range(n)]

    first = room + rng.randint(1, b) if grow else rng.randint(1, room)
    ops = [["add"], ["append", 0, tokens(P)], ["fork", 0], ["append", 1, tokens(first)],
           ["free", 0], ["append", 1, tokens(room)], ["free", 1],
           ["add"], ["append", 2, tokens(b)], ["fork", 2], ["append", 3, tokens(rng.randint(1, b))],  # no copy
           ["append", 2, tokens(rng.randint(1, 2 * b))]]
    return dict(ops=ops, num_blocks=-(-P // b) + spare, block_size=b)


def _pool(num_blocks: int, block_size: int) -> PagedKVCache:
    """A paged cache whose K pool holds one number per slot (L = H_kv = d_h = 1): the token written there."""
    config = ModelConfig(L=1, H=1, H_kv=1, d_h=1, d_ffn=1, V=1, S_max=1)
    return PagedKVCache(config, num_blocks=num_blocks, block_size=block_size)


def _apply(cache: PagedKVCache, ids: list[int], op: list) -> int:
    """Run one operation on `cache` (sequence k of the ops is `ids[k]` in the cache); the sequence it touched."""
    kind = op[0]
    if kind == "add":
        ids.append(cache.add_sequence())
        return len(ids) - 1
    if kind == "fork":
        ids.append(cache.fork(ids[op[1]]))
        return len(ids) - 1
    seq = ids[op[1]]
    if kind == "free":
        cache.free_sequence(seq)
        return op[1]
    if kind != "append":
        raise ValueError(f"operation {op!r}: the kind must be 'add', 'fork', 'free' or 'append'")
    tokens = op[2] if isinstance(op[2], list) else [0] * op[2]
    try:
        cache.reserve([seq], len(tokens))
    except OutOfBlocks:
        return op[1]  # all or nothing: the sequence does not grow
    S, table, b = cache.length(seq), cache.block_table(seq), cache.block_size
    for i, token in enumerate(tokens):
        cache.k[0, table[(S + i) // b]].view(-1)[(S + i) % b] = float(token)  # H_kv = d_h = 1: b slots
    cache.advance([seq], len(tokens))
    return op[1]
