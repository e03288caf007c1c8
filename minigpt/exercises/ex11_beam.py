"""Exercise 11 Q4: beam search over shared blocks. The PagedAttention paper (§4.4, Fig. 9) keeps the beams of a
beam search in one pool: at each step every new beam is a fork of the beam it extends, the beams no new beam
extends are freed, a block is freed when its last owner goes, and a partly filled block that several beams share
is copied before one of them writes into it. Chapter 11 measures what n forks of one prompt save
(Eq. (11.3)); beams keep forking and dying at every step, so what they hold follows which beams extend which.

A case: a prompt of P tokens, beams of width k = len(parents[0]); `parents[t][j]` is the beam of step t − 1
that new beam j extends at step t (for t = 0, the prompt's one sequence: parents[0] is all zeros). Each step,
every new beam forks its parent, then every old beam is freed, then each new beam writes its one new token
(copy-on-write as in Q6). The answer: the blocks in use after the prompt is written and after each step,
len(parents) + 1 counts.

The oracle is the package's `minigpt.runtime.paged_cache.PagedKVCache` run on those operations (`fork`,
`free_sequence`, `reserve` and `advance` one token per beam, `allocator.num_used`); the count does not depend on
the order in which the beams write (tests/test_ex11_beam.py checks it). `replay` counts the same in plain
Python, with a switch for each plausible wrong neighbour (`NEIGHBOURS`); the case generator draws each edge of
`BEAM_EDGES` until its neighbour counts otherwise (`DRAWS` at most), then random searches.
"""

from __future__ import annotations

import random

from minigpt.config import ModelConfig
from minigpt.runtime.paged_cache import PagedKVCache

#: The edges, one per wrong neighbour (`NEIGHBOURS`, same order): case i is drawn until neighbour i counts
#: otherwise than the pool.
BEAM_EDGES = (
    "two beams from one parent: the parent's full blocks shared by the fork, not copied",
    "a beam no new beam extends: freed, its blocks given back, not kept",
    "two beams from one parent, the last block partly filled: copied before a write, not written shared",
    "a partly filled block shared by several beams: each copy drops one reference to it and its last owner "
    "writes in place, not a copy for every owner with the shared block kept",
    "P or P + t a multiple of block_size: a new block taken one token early",
    "P or P + t one past a multiple of block_size: a new block taken one token late",
    "a beam whose parent dies the same step: the forks take their references before the old beams are freed",
)
NEIGHBOURS = ("copy on fork", "never freed", "no copy", "copy every owner", "early", "late", "free first")
#: Draws allowed for one edge (over 2,000 seeds, the seven edges together took 7.5 draws on average, 15 at most);
#: random searches after the edges.
DRAWS, RANDOM_CASES = 1_000, 3


def replay(P: int, parents: list[list[int]], block_size: int, wrong: str | None = None) -> list[int]:
    """The blocks in use after the prompt and after each step, by reference counts (`wrong` None) or by the
    neighbour `wrong`. "free first" keeps a running count: +1 for a block taken, −1 when a block's last
    reference goes, and frees the old beams before the forks take their references."""
    b = block_size
    if wrong in ("early", "late"):
        P += 1 if wrong == "early" else -1  # every position one token later (or earlier)
    refs: dict[int, int] = {}
    used = 0

    def take() -> int:
        nonlocal used
        block = len(refs)
        refs[block], used = 1, used + 1
        return block

    def release(block: int) -> None:
        nonlocal used
        refs[block] -= 1
        used -= refs[block] == 0

    beams = [([take() for _ in range(-(-P // b))], P)]
    out = [used]
    for step in parents:
        if wrong == "free first":
            for table, _ in beams:
                for block in table:
                    release(block)
        new = [(list(beams[p][0]), beams[p][1]) for p in step]
        for table, _ in new:
            for i, block in enumerate(table):
                if wrong == "copy on fork":
                    table[i] = take()
                else:
                    refs[block] += 1
        if wrong not in ("free first", "never freed"):
            for table, _ in beams:
                for block in table:
                    release(block)
        for j, (table, S) in enumerate(new):
            if S % b == 0:
                table.append(take())
            elif refs[table[-1]] > 1 and wrong != "no copy":
                old = table[-1]
                table[-1] = take()
                if wrong != "copy every owner":
                    release(old)
            new[j] = (table, S + 1)
        beams = new
        out.append(used if wrong == "free first" else sum(1 for r in refs.values() if r > 0))
    return out


def _parents(rng: random.Random, k: int, steps: int) -> list[list[int]]:
    """parents[0] all zeros; then each step's k parents drawn from 1 to k beams of the step before, few more
    often (real beams concentrate on a few parents): each beam extends one of them, the first more often."""
    out = [[0] * k]
    for _ in range(steps - 1):
        few = rng.sample(range(k), min(k, 1 + int(rng.expovariate(1.0))))
        weights = [2.0 ** -i for i in range(len(few))]
        out.append(rng.choices(few, weights, k=k))
    return out


def _case(rng: random.Random, k_min: int) -> dict:
    """A prompt of 1 to 40 tokens, b from 1 to 16 (from 2 with `k_min` 2: the edges), k_min to 6 beams, 1 to
    16 steps."""
    b = rng.choice([2, 4, 8, 16] if k_min > 1 else [1, 2, 4, 8, 16])
    k = rng.randint(k_min, 6)
    return dict(P=rng.randint(1, 40), parents=_parents(rng, k, rng.randint(1, 16)), block_size=b)


def separates(case: dict, wrong: str) -> bool:
    """Whether neighbour `wrong` counts otherwise than the pool on `case`."""
    return replay(**case, wrong=wrong) != replay(**case)


def _beam_cases(rng: random.Random) -> list[dict]:
    """One case per edge (`BEAM_EDGES`, 2 to 6 beams, b from 2), each drawn until its neighbour counts otherwise
    (`DRAWS` at most), then `RANDOM_CASES` random searches (1 to 6 beams, b from 1)."""
    cases = []
    for wrong in NEIGHBOURS:
        for _ in range(DRAWS):
            case = _case(rng, k_min=2)
            if separates(case, wrong):
                break
        else:
            raise RuntimeError(f"no case in {DRAWS:,} draws separates the pool from {wrong!r}")
        cases.append(case)
    return cases + [_case(rng, k_min=1) for _ in range(RANDOM_CASES)]


def _beam_blocks(P: int, parents: list[list[int]], block_size: int) -> list[int]:
    """The package's `PagedKVCache` on the search's operations: the blocks in use after the prompt, then after
    each step's forks, frees and writes (each beam `reserve`s and `advance`s one token, copy-on-write
    included)."""
    b, k = block_size, len(parents[0])
    longest = P + len(parents)
    config = ModelConfig(L=1, H=1, H_kv=1, d_h=1, d_ffn=1, V=1, S_max=longest)
    pool = PagedKVCache(config, num_blocks=-(-P // b) + k * (-(-longest // b) + 1), block_size=b)
    prompt = pool.add_sequence()
    pool.reserve([prompt], P)
    pool.advance([prompt], P)
    beams, out = [prompt], [pool.allocator.num_used]
    for step in parents:
        if len(step) != k or not all(0 <= p < len(beams) for p in step):
            raise ValueError(f"each step names {k} parents among the {len(beams)} beams before it, got {step}")
        new = [pool.fork(beams[p]) for p in step]
        for seq in beams:
            pool.free_sequence(seq)
        for seq in new:
            pool.reserve([seq], 1)
            pool.advance([seq], 1)
        beams = new
        out.append(pool.allocator.num_used)
    return out
