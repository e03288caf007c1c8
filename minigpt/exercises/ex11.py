"""Exercise 11 (Chapter 11, PagedAttention): the slack of a pool whose sequences share blocks, the slot mapping of
a fused step, utilisation, sharing, and the mechanism itself: a block table grown on demand over a free list, and
copy-on-write of a shared block.

The oracles are the package: the formulas of `minigpt.costs` and `minigpt.measure.kv_memory`, a pool's own count
of what it holds (`PagedKVCache.tokens_held`, `ex11_slack`), the engine's step builder
`minigpt.runtime.varlen.flatten` for the slot mapping (`ex11_step`), and for the mechanism
`minigpt.runtime.paged_cache.PagedKVCache` (its `BlockAllocator`) run on the same operations.
"""

from __future__ import annotations

import random
from typing import Any

from minigpt import costs
from minigpt.exercises.ex11_ops import _apply, _cow_exact, _grow_exhausted, _ops, _pool
from minigpt.exercises.ex11_slack import SLACK_EDGES, _pool_slack, _slack_cases
from minigpt.exercises.ex11_step import STEP_EDGES, _step_cases, _step_slots
from minigpt.exercises.spec import N_, Compare, Exercise, Question, _, close, exact_int, int_list
from minigpt.measure import kv_memory
from minigpt.runtime.paged_cache import PagedKVCache

UTILISATION_EDGES = ("each policy once, paged among them: the blocks of the final length S instead of those of S_t",
                     "held counted after each step's token (P + 1 … S): every case tells it")


def _utilisation_cases(rng: random.Random) -> list[dict]:
    """The edges first (`UTILISATION_EDGES`: each policy once, in order; the paged one with a request that ends in
    more blocks than it starts with), then random."""
    cases: list[dict] = []
    while len(cases) < 6:
        S_max = rng.choice([64, 256, 2048])
        requests = [[r.P, r.D] for r in kv_memory.request_lengths(rng.randint(1, 12), S_max=S_max,
                                                                  P_median=S_max / 16, D_median=S_max / 8,
                                                                  seed=rng.getrandbits(32))]
        k = len(cases)
        policy = kv_memory.POLICIES[k] if k < len(kv_memory.POLICIES) else rng.choice(kv_memory.POLICIES)
        b = rng.choice([1, 4, 16])
        if policy == "paged" and k < len(kv_memory.POLICIES) and all(-(-P // b) == -(-(P + D) // b)
                                                                       for P, D in requests):
            continue  # the edge: draw again
        cases.append(dict(requests=requests, policy=policy, S_max=S_max, block_size=b))
    return cases


def _utilisation(requests: list[list[int]], policy: str, S_max: int, block_size: int) -> float:
    reqs = [kv_memory.Request(P, D) for P, D in requests]
    return kv_memory.utilisation(reqs, policy=policy, S_max=S_max, block_size=block_size)


SAVED_EDGES = ("P not a multiple of block_size, n > 1: ⌈P / b⌉ shared (the partly filled block counted), or n "
               "samples saving instead of n − 1",)


def _saved_cases(rng: random.Random) -> list[dict]:
    """The edge first (`SAVED_EDGES`: a partly filled last block, several samples), then random."""
    b = rng.choice([8, 16, 32])
    edge = dict(P=b * rng.randint(1, 3000 // b - 1) + rng.randint(1, b - 1), n=rng.randint(2, 16), block_size=b)
    return [edge] + [dict(P=rng.randint(1, 3000), n=rng.randint(1, 16), block_size=rng.choice([8, 16, 32]))
                     for _ in range(7)]


# -- the mechanism: a block table grown over a free list, and copy-on-write of a shared block --------------------


def _read(cache: PagedKVCache, seq: int) -> list[int]:
    """The tokens of `seq`, read through its block table."""
    table, b = cache.block_table(seq), cache.block_size
    return [int(cache.k[0, table[p // b]].view(-1)[p % b]) for p in range(cache.length(seq))]


def _trace(ops: list[list], num_blocks: int, block_size: int, with_tokens: bool) -> list[list]:
    cache, ids, trace = _pool(num_blocks, block_size), [], []
    for op in ops:
        k = _apply(cache, ids, op)
        if op[0] == "free":
            state = [[], []] if with_tokens else [[]]
        else:
            state = [cache.block_table(ids[k])] + ([_read(cache, ids[k])] if with_tokens else [])
        trace.append(state + [cache.allocator.num_free])
    return trace


GROW_EDGES = ("an append that lacks blocks allocates some of them (not all or nothing)",
              "an append that exactly fills its last block: a new block taken (S + T) // b + 1",
              "a sequence's blocks freed last to first")


def _grow_cases(rng: random.Random) -> list[dict]:
    cases = [_grow_exhausted(rng)]
    for i in range(5):
        b = rng.choice([1, 2, 4, 8, 16])
        ops = _ops(rng, rng.randint(8, 16), b, forks=False)
        need = sum(-(-op[2] // b) for op in ops if op[0] == "append")  # blocks if nothing were ever freed
        num_blocks = max(1, need // 3) if i % 2 else need + rng.randint(0, 3)  # odd cases: the pool runs out
        cases.append(dict(ops=ops, num_blocks=num_blocks, block_size=b))
    return cases


def _grow(ops: list[list], num_blocks: int, block_size: int) -> list[list]:
    return _trace(ops, num_blocks, block_size, with_tokens=False)


COW_EDGES = ("the copy-on-write block left out of the all-or-nothing count (a write that needs the copy and a new "
             "block, with one block free)", "a write into a shared block without copying it (no free block)",
             "a copy made once the block has one owner left")


def _cow_cases(rng: random.Random) -> list[dict]:
    cases = [_cow_exact(rng, spare=0), _cow_exact(rng, spare=1), _cow_exact(rng, spare=1, grow=True)]  # COW_EDGES
    for i in range(4):
        b = rng.choice([2, 4, 8])
        ops = _ops(rng, rng.randint(10, 18), b, forks=True)
        need = sum(-(-len(op[2]) // b) + 1 for op in ops if op[0] == "append")
        num_blocks = max(2, need // 3) if i % 2 else need  # odd cases: the pool runs out
        cases.append(dict(ops=ops, num_blocks=num_blocks, block_size=b))
    return cases


def _cow(ops: list[list], num_blocks: int, block_size: int) -> list[list]:
    return _trace(ops, num_blocks, block_size, with_tokens=True)


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 100 else text[:97] + "..."


def _trace_compare(names: tuple[str, ...]) -> Compare:
    """Operation by operation: the first one after which the state differs, and how."""

    def compare(expected: Any, actual: Any) -> str | None:
        if not isinstance(actual, list) or len(actual) != len(expected):
            return _("expected a list of {n} states (one after each operation), got {actual}").format(
                n=len(expected), actual=_brief(actual))
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            if not isinstance(a, list) or len(a) != len(e):
                return _("after operation {i}: expected {names}, got {actual}").format(
                    i=i, names=f"[{', '.join(names)}]", actual=_brief(a))
            for name, e_x, a_x in zip(names, e, a, strict=True):
                if e_x != a_x:
                    return _("after operation {i}: {name} expected {expected}, got {actual}").format(
                        i=i, name=name, expected=_brief(e_x), actual=_brief(a_x))
        return None

    return compare


EXERCISE = Exercise(
    id="ex11",
    notebook="ex11_paged_attention.ipynb",
    title="PagedAttention",
    questions=(
        Question(
            "q1", "pool_slack", "pool_slack(tables, lengths, block_size) -> int", _slack_cases, _pool_slack,
            exact_int,
            N_("count what the pool reserves and what it holds, block by block, not sequence by sequence: a block "
               "that several tables name is reserved once and holds its tokens once. Each block in use reserves "
               "block_size slots; a block holds as many tokens as the sequences that name it have written into it. "
               "An empty sequence holds no block."),
            edges=SLACK_EDGES,
        ),
        Question(
            "q2", "slot_mapping", "slot_mapping(tables, lengths, counts, block_size) -> list[int]", _step_cases,
            _step_slots, int_list,
            N_("lay the sequences' new tokens end to end, in the order given. The j-th new token of sequence i is "
               "token lengths[i] + j of that sequence, not token j: its logical block is that position divided by "
               "the block size, rounded down, and the sequence's table maps it to a physical block; its slot is "
               "that block's id times the block size, plus the position's row inside the block. A chunk may run "
               "into the next block of its table, whose id is whatever the table says."),
            edges=STEP_EDGES,
        ),
        Question(
            "q3", "utilisation", "utilisation(requests, policy, S_max, block_size) -> float", _utilisation_cases,
            _utilisation, close(1e-9),
            N_("Eq. (11.2): sum the tokens held and the slots reserved over every decode step of every request, "
               "then divide; each policy reserves differently (the whole S_max, the request's final length, or "
               "whole blocks of what it holds at that step)."),
            edges=UTILISATION_EDGES,
        ),
        Question(
            "q4", "fork_saved_blocks", "fork_saved_blocks(P, n, block_size) -> int", _saved_cases,
            lambda P, n, block_size: costs.paged_fork_saved_blocks(P=P, n=n, block_size=block_size), exact_int,
            N_("Eq. (11.3): only blocks the prompt fills completely stay shared (a partly filled last block is "
               "copied at its owner's first write); count what each extra sample does not have to hold."),
            edges=SAVED_EDGES,
        ),
        Question(
            "q5", "grow_block_tables", "grow_block_tables(ops, num_blocks, block_size) -> list", _grow_cases, _grow,
            _trace_compare(("table", "free blocks")),
            N_("a sequence takes a new block only when its next token does not fit in its last one; the free list "
               "is a stack (block 0 on top at the start, a freed block pushed on top, a sequence's blocks freed "
               "first to last); an append that lacks blocks allocates none and leaves the sequence as it was."),
            edges=GROW_EDGES,
        ),
        Question(
            "q6", "fork_and_write", "fork_and_write(ops, num_blocks, block_size) -> list", _cow_cases, _cow,
            _trace_compare(("table", "tokens", "free blocks")),
            N_("a fork copies the table and adds one reference to each block; before writing into a partly filled "
               "last block that has another owner, take a free block, copy the rows and drop one reference to the "
               "old one (only then grow); a block returns to the free list when its last reference goes."),
            edges=COW_EDGES,
        ),
    ),
)
