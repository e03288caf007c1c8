"""Exercise 11 (Chapter 11, PagedAttention): the slack of a pool whose sequences share blocks, the slot mapping of
a fused step, what a reservation policy does to the batch of a continuous-batching scheduler, beam search over
shared blocks, and the mechanism itself: a block table grown on demand over a free list, and copy-on-write of a
shared block.

The oracles are the package: a pool's own count of what it holds (`PagedKVCache.tokens_held`, `ex11_slack`), the
engine's step builder `minigpt.runtime.varlen.flatten` for the slot mapping (`ex11_step`), the engine's scheduler
run in replay for the batch sizes (`ex11_running`), and `minigpt.runtime.paged_cache.PagedKVCache` (its
`BlockAllocator`) run on the same operations for the beams (`ex11_beam`) and the mechanism.
"""

from __future__ import annotations

import random
from typing import Any

from minigpt.exercises.ex11_beam import BEAM_EDGES, _beam_blocks, _beam_cases
from minigpt.exercises.ex11_ops import _apply, _cow_exact, _grow_exhausted, _ops, _pool
from minigpt.exercises.ex11_running import RUNNING_EDGES, _running_cases, _running_per_step
from minigpt.exercises.ex11_slack import SLACK_EDGES, _pool_slack, _slack_cases
from minigpt.exercises.ex11_step import STEP_EDGES, _step_cases, _step_slots
from minigpt.exercises.spec import N_, Compare, Exercise, Question, _, exact_int, int_list
from minigpt.runtime.paged_cache import PagedKVCache

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
            "q3", "running_per_step", "running_per_step(requests, num_blocks, block_size, reservation) -> list[int]",
            _running_cases, _running_per_step, int_list,
            N_("in each step, first every running request decodes, the oldest admitted first. A running request "
               "that has generated g tokens holds P + g − 1 tokens (its last token is not written yet) and its "
               "decode writes one more: in a paged pool it needs a new block when P + g − 1 is a multiple of "
               "block_size (with max_tokens it never needs one). When no block is free, preempt the running request "
               "admitted last (it may be the one decoding): it frees all its blocks and goes back to the head of "
               "the queue, keeping its g tokens; repeat until a block is free or the decoding request itself was "
               "preempted (then it does not run). Then admit from the head of the queue while enough blocks are "
               "free for the head: the blocks of its P + g tokens in a paged pool (its prefill recomputes the "
               "tokens it had generated), of P + D − 1 tokens with max_tokens; stop at the first request that does "
               "not fit. Each request that ran gains a token; one that reaches D finishes, and its blocks are free "
               "from the next step on. Count the requests that ran in each step."),
            edges=RUNNING_EDGES,
        ),
        Question(
            "q4", "beam_blocks", "beam_blocks(P, parents, block_size) -> list[int]", _beam_cases, _beam_blocks,
            int_list,
            N_("a block is in use while the block table of at least one sequence names it. The prompt fills the "
               "blocks of its P tokens. At each step, first every new beam forks its parent (a copy of the "
               "parent's block table, each of those blocks gaining a reference), then every beam of the step "
               "before is freed (each of its blocks loses a reference; a block with none left is free), then each "
               "new beam writes its token: a beam holding S tokens takes a new block when S is a multiple of "
               "block_size; otherwise, if its last block has another owner, it first copies that block into a new "
               "one, and the old block loses a reference. Count the blocks in use after the prompt, then after "
               "each step."),
            edges=BEAM_EDGES,
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
