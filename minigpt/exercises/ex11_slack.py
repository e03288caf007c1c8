"""Exercise 11 Q1: the token slots a paged pool reserves but leaves empty, when its sequences share blocks.

Eq. (11.1) gives one sequence's slack, ⌈S / b⌉·b − S. A pool's sequences share blocks: forks of one prompt
share all of its blocks until one of them writes, a prefix-cache hit shares full blocks. The pool reserves a
shared block once and fills it once, so its slack is not the sum of Eq. (11.1) over the sequences: a shared,
partly filled last block would be counted once per holder. Chapter 11 prints Eq. (11.1), not how a pool
counts what it holds.

The states are real: each case is a pool driven by operations (add, append, fork, free) through the package's
`PagedKVCache` (`ex11_ops._apply`), then read back as its live sequences' block tables and lengths. The oracle is
the package's own count on a pool set up to hold those tables (`ex11_step.pool_holding`): the blocks in use
times b, minus `tokens_held`.
"""

from __future__ import annotations

import random

from minigpt.exercises.ex11_ops import _apply, _ops, _pool
from minigpt.exercises.ex11_step import pool_holding
from minigpt.runtime.paged_cache import PagedKVCache

SLACK_EDGES = ("a fork whose partly filled last block is still shared: Eq. (11.1) summed over the sequences, the "
               "shared block's empty slots counted once per holder",
               "full blocks shared after a copy-on-write: the blocks of every table counted, a shared block once "
               "per holder, or the tokens counted once per holder",
               "S a multiple of block_size (S > 0), and an empty sequence: b − S % b, a whole empty block, instead "
               "of 0; or an empty sequence holding one block")


def _state(ops: list[list], block_size: int) -> dict:
    """Run `ops` on a pool large enough for all of them; the live sequences' tables and lengths."""
    need = sum(-(-(op[2] if isinstance(op[2], int) else len(op[2])) // block_size) + 1
               for op in ops if op[0] == "append")
    cache: PagedKVCache = _pool(max(1, need), block_size)
    ids: list[int] = []
    for op in ops:
        _apply(cache, ids, op)
    live = [seq for seq in ids if seq in cache.sequences]
    return dict(tables=[cache.block_table(seq) for seq in live], lengths=[cache.length(seq) for seq in live],
                block_size=block_size)


def _edge_ops(rng: random.Random, k: int, b: int) -> list[list]:
    """Edge k of `SLACK_EDGES`, as operations."""
    P = b * rng.randint(1, 3) + rng.randint(1, b - 1)  # a partly filled last block, after at least one full one
    if k == 0:
        return [["add"], ["append", 0, P]] + [["fork", 0]] * rng.randint(1, 3)
    if k == 1:
        return [["add"], ["append", 0, P], ["fork", 0], ["append", 1, rng.randint(1, 2 * b)],
                ["fork", rng.randint(0, 1)]]
    return [["add"], ["append", 0, b * rng.randint(1, 4)], ["add"], ["add"], ["append", 2, rng.randint(1, 3 * b)]]


def _slack_cases(rng: random.Random) -> list[dict]:
    """The edges first (`SLACK_EDGES`, one case each, b from 2 to 16), then random pools: add, append, fork and
    free on a few sequences (`ex11_ops._ops`), b from 1 to 16."""
    cases = []
    for k in range(len(SLACK_EDGES)):
        b = rng.choice([2, 4, 8, 16])
        cases.append(_state(_edge_ops(rng, k, b), b))
    for _ in range(5):
        b = rng.choice([1, 2, 4, 8, 16])
        cases.append(_state(_ops(rng, rng.randint(6, 14), b, forks=True), b))
    return cases


def _pool_slack(tables: list[list[int]], lengths: list[int], block_size: int) -> int:
    """The package's pool holding these sequences: slots of the blocks in use, minus the tokens they hold."""
    pool, _ = pool_holding(tables, lengths, block_size)
    return pool.allocator.num_used * block_size - pool.tokens_held
