"""Exercise 11 Question 4 (`minigpt.exercises.ex11_beam`): the blocks a beam search holds when its beams share
blocks. The oracle is the package's `PagedKVCache` run on the search's forks, frees and writes; the case generator
picks its edges with a plain replay (`replay`) and its wrong neighbours. Here: the count does not depend on the
order in which the beams write, the replay is the pool, two implementations written apart (one from the hint's
steps, one from which ancestor filled each block) agree with the oracle, a case worked by hand, each edge
separates its neighbour (written apart, in `tests/test_seed_independence_ex10_13.py`) under every seed, the
reference solution passes, and the generator gives up when it must. (Mutants of the reference solution:
tests/test_exercise_mechanisms.py; the generator's ranges: tests/test_case_generators.py.)"""

from __future__ import annotations

import random

import pytest
from reference import reference
from test_seed_independence_ex10_13 import (
    _beam_copy_fork,
    _beam_early,
    _beam_free_first,
    _beam_keep_copied,
    _beam_keep_dead,
    _beam_late,
    _beam_write_shared,
)

from minigpt.config import ModelConfig
from minigpt.exercises import EXERCISES, ex11_beam, run_check
from minigpt.runtime.paged_cache import PagedKVCache

#: The neighbours of `ex11_beam.NEIGHBOURS`, written apart (same order).
APART = (_beam_copy_fork, _beam_keep_dead, _beam_write_shared, _beam_keep_copied, _beam_early, _beam_late,
         _beam_free_first)


def drawn(seed: int) -> list[dict]:
    return EXERCISES["ex11"].question("q4").cases(random.Random(seed))


def random_cases(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [ex11_beam._case(rng, k_min=rng.choice([1, 2])) for _ in range(n)]


def in_order(P: int, parents: list[list[int]], block_size: int, order: random.Random) -> list[int]:
    """The oracle's operations on a `PagedKVCache`, with the forks, the frees and the writes of each step in an
    order drawn by `order`: the blocks in use after the prompt and after each step."""
    b, k = block_size, len(parents[0])
    config = ModelConfig(L=1, H=1, H_kv=1, d_h=1, d_ffn=1, V=1, S_max=P + len(parents))
    pool = PagedKVCache(config, num_blocks=-(-P // b) + k * (-(-(P + len(parents)) // b) + 1), block_size=b)
    prompt = pool.add_sequence()
    pool.reserve([prompt], P)
    pool.advance([prompt], P)
    beams, out = [prompt], [pool.allocator.num_used]
    for step in parents:
        forks = order.sample(range(k), k)
        new = [0] * k
        for j in forks:
            new[j] = pool.fork(beams[step[j]])
        for seq in order.sample(beams, len(beams)):
            pool.free_sequence(seq)
        for seq in order.sample(new, k):
            pool.reserve([seq], 1)
            pool.advance([seq], 1)
        beams = new
        out.append(pool.allocator.num_used)
    return out


def from_the_hint(P: int, parents: list[list[int]], block_size: int) -> list[int]:
    """The question written from its hint's steps: reference counts per block, a new id for every block taken."""
    b, refs, fresh = block_size, {}, iter(range(10**9))

    def take() -> int:
        block = next(fresh)
        refs[block] = 1
        return block

    beams = [[take() for _ in range((P + b - 1) // b)]]
    lengths, counts = [P], [len(refs)]
    for step in parents:
        tables = [list(beams[p]) for p in step]
        new_lengths = [lengths[p] for p in step]
        for table in tables:
            for block in table:
                refs[block] += 1
        for table in beams:
            for block in table:
                refs[block] -= 1
                if refs[block] == 0:
                    del refs[block]
        for table, S in zip(tables, new_lengths, strict=True):
            if S % b == 0:
                table.append(take())
            elif refs[table[-1]] > 1:
                refs[table[-1]] -= 1
                table[-1] = take()
        beams, lengths = tables, [S + 1 for S in new_lengths]
        counts.append(len(refs))
    return counts


def by_ancestors(P: int, parents: list[list[int]], block_size: int) -> list[int]:
    """The count without simulating a pool: a block holds positions i·b … (i + 1)·b − 1, and beams share it when
    they descend from the beam that wrote the last position written into it (the prompt, for a position < P):
    a later writer would have copied it. So after step t the pool holds, for each block index, as many blocks as
    the live beams have distinct ancestors at the step that wrote that block's last position."""
    b = block_size
    out = [-(-P // b)]
    lineage: list[list[int]] = []  # lineage[s][j]: the beam of step s that beam j of the last step descends from
    for t, step in enumerate(parents):
        lineage = [[row[p] for p in step] for row in lineage] + [list(range(len(step)))]
        L = P + t + 1  # tokens each beam holds
        total = 0
        for i in range(-(-L // b)):
            last = min(L, (i + 1) * b) - 1  # the last position written into block i
            total += 1 if last < P else len(set(lineage[last - P]))
        out.append(total)
    return out


def test_the_count_does_not_depend_on_the_order_of_the_operations() -> None:
    """The package's pool gives the same counts whatever order a step's forks, frees (after all forks) and writes
    (after all frees) run in. Catches a question whose answer depends on something it does not state (when
    several beams share a partly filled block, which of them copies it)."""
    for i, case in enumerate(random_cases(120, seed=1) + [c for seed in range(5) for c in drawn(seed)]):
        assert in_order(**case, order=random.Random(i)) == ex11_beam._beam_blocks(**case), case


def test_the_replay_is_the_pool() -> None:
    """`replay`, which picks the edges, counts what the package's pool holds. Catches a replay that drifts from
    `PagedKVCache` (another copy-on-write rule, frees in another place): the edges would then separate a rule the
    grader does not hold."""
    for case in random_cases(300, seed=2) + [c for seed in range(20) for c in drawn(seed)]:
        assert ex11_beam.replay(**case) == ex11_beam._beam_blocks(**case), case


def test_the_hint_and_the_ancestors_give_the_oracles_counts() -> None:
    """Two implementations written apart agree with the pool: one from the hint's steps alone (`from_the_hint`),
    one from which ancestor filled each block (`by_ancestors`, no pool at all). Catches a hint that leaves out
    what the pool does, and an oracle that counts something else than the blocks the live beams name."""
    for case in random_cases(300, seed=3) + [c for seed in range(20, 40) for c in drawn(seed)]:
        expected = ex11_beam._beam_blocks(**case)
        assert from_the_hint(**case) == expected, case
        assert by_ancestors(**case) == expected, case


def test_a_case_worked_by_hand() -> None:
    """P = 5, b = 4, two beams, parents [[0, 0], [0, 0], [1, 1], [0, 1]]. The prompt fills A (4 tokens) and B (1):
    2 blocks. Step 0: both beams fork the prompt (A and B at 3 references), the prompt is freed (2 each); beam 0
    writes token 5 into B, shared: it copies B into C; beam 1 finds B its own and writes in place: A, B, C = 3.
    Step 1: both extend beam 0 [A, C]; freeing the old beams leaves B with no owner; the first writer copies C
    into D, the second writes in C: A, C, D = 3. Step 2: both extend beam 1 [A, C]; D dies; C is copied once
    more (E), the other writes in C, now full (8 tokens): A, C, E = 3. Step 3: beam 0 [A, E] and beam 1 [A, C]
    go on, each 8 tokens, a multiple of b: each takes a new block: A, C, E and two more = 5. [2, 3, 3, 3, 5].
    The bug it catches: a pool rule (sharing on fork, freeing the dead, copy-on-write, the block boundary)
    wrong on a case small enough to read."""
    case = dict(P=5, parents=[[0, 0], [0, 0], [1, 1], [0, 1]], block_size=4)
    assert ex11_beam._beam_blocks(**case) == [2, 3, 3, 3, 5]
    assert by_ancestors(**case) == [2, 3, 3, 3, 5]


def test_each_edge_separates_its_neighbour_under_every_seed() -> None:
    """Case i of every seed holds edge i of `BEAM_EDGES`: the neighbour written apart (`APART[i]`, the one the seed
    tests grade) counts otherwise than the pool there, and as the module's neighbour does. Catches an edge drawn
    only by luck (a class seed would then decide whether that wrong answer passes), and a module neighbour that
    is not the one written apart."""
    assert len(APART) == len(ex11_beam.NEIGHBOURS) == len(ex11_beam.BEAM_EDGES)
    for seed in range(200):
        cases = drawn(seed)
        assert len(cases) == len(APART) + ex11_beam.RANDOM_CASES
        for i, (wrong, case) in enumerate(zip(APART, cases, strict=False)):
            assert wrong(**case) != ex11_beam._beam_blocks(**case), (seed, i, case)
            assert wrong(**case) == ex11_beam.replay(**case, wrong=ex11_beam.NEIGHBOURS[i]), (seed, i)


def test_the_reference_solution_passes_the_check() -> None:
    """The instructors' solution passes `check` under several seeds. Catches a question the reference cannot
    answer (an oracle or a generator that moved away from what the notebook asks)."""
    solution = reference("ex11", "beam_blocks")
    for seed in range(8):
        result = run_check("ex11.q4", solution, seed=seed)
        assert result.status == "pass", result.message


def test_the_generator_gives_up_after_its_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """When no draw separates a neighbour, the generator raises rather than draw forever or hand out an edge case
    that does not separate. Catches a draw loop without its bound or without its error."""
    monkeypatch.setattr(ex11_beam, "separates", lambda case, wrong: False)
    monkeypatch.setattr(ex11_beam, "DRAWS", 5)
    with pytest.raises(RuntimeError, match="5 draws"):
        ex11_beam._beam_cases(random.Random(0))


def test_the_oracle_refuses_a_parent_that_is_not_a_beam() -> None:
    """A step that names a beam the step before did not have is refused. Catches an oracle that would read
    past the beams (Python's negative indices) and grade a search that cannot happen."""
    with pytest.raises(ValueError, match="parents"):
        ex11_beam._beam_blocks(P=3, parents=[[0, 0], [0, 2]], block_size=2)
