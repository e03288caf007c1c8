"""Exercise 11 Question 3 (`minigpt.exercises.ex11_running`): how many requests a continuous-batching scheduler runs
in each step, under a reservation policy. The oracle is the package's engine in replay (`Engine.replay`, its
`Scheduler`); the case generator picks its edges with a plain replay (`replay`) and its wrong neighbours. Here: the
replay is the engine, an implementation written apart from the question's hint alone agrees with the oracle, a
case worked by hand, each edge separates its neighbour (written apart, in
`tests/test_seed_independence_ex10_13.py`) under every seed, the reference solution passes, and the generator
gives up when it must. (Mutants of the reference solution: tests/test_exercise_mechanisms.py; the generator's
ranges: tests/test_case_generators.py.)"""

from __future__ import annotations

import random
from collections import deque

import pytest
from reference import reference
from test_seed_independence_ex10_13 import (
    _running_early,
    _running_growing,
    _running_late,
    _running_oldest,
    _running_plus_one,
    _running_prompt_only,
    _running_reserving,
    _running_restart,
    _running_skip,
    _running_tail,
)

from minigpt.exercises import EXERCISES, ex11_running, run_check

#: The neighbours of `ex11_running.NEIGHBOURS`, written apart (same order).
APART = (_running_reserving, _running_growing, _running_plus_one, _running_early, _running_oldest, _running_tail,
         _running_restart, _running_prompt_only, _running_skip, _running_late)


def drawn(seed: int) -> list[dict]:
    return EXERCISES["ex11"].question("q3").cases(random.Random(seed))


def random_cases(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [ex11_running._random(rng) for _ in range(n)] + [
        ex11_running._draw(rng, rng.choice(ex11_running.RESERVATIONS), tight=True) for _ in range(n)]


def from_the_hint(requests: list[list[int]], num_blocks: int, block_size: int, reservation: str) -> list[int]:
    """The question written from its hint alone: each request a small record, the queue a deque, the batch a
    list in admission order."""

    class Req:
        def __init__(self, P: int, D: int) -> None:
            self.P, self.D, self.g, self.blocks = P, D, 0, 0

    def blocks_for(tokens: int) -> int:
        return (tokens + block_size - 1) // block_size

    queue = deque(Req(P, D) for P, D in requests)
    batch: list[Req] = []
    free, counts = num_blocks, []
    while queue or batch:
        ran: list[Req] = []
        for req in list(batch):
            if req not in batch:
                continue
            grow = 0
            if reservation == "paged" and (req.P + req.g - 1) % block_size == 0:
                grow = 1
            while grow > free and req in batch:
                victim = batch.pop()
                free += victim.blocks
                victim.blocks = 0
                queue.appendleft(victim)
            if req in batch:
                free -= grow
                req.blocks += grow
                ran.append(req)
        while queue:
            head = queue[0]
            want = blocks_for(head.P + head.g if reservation == "paged" else head.P + head.D - 1)
            if want > free:
                break
            queue.popleft()
            free -= want
            head.blocks = want
            batch.append(head)
            ran.append(head)
        counts.append(len(ran))
        for req in ran:
            req.g += 1
            if req.g == req.D:
                batch.remove(req)
                free += req.blocks
                req.blocks = 0
    return counts


def test_the_replay_is_the_engine() -> None:
    """`replay`, which picks the edges, must count what the engine's scheduler runs, on random pools (tight ones
    among them, with preemptions) and on the drawn cases. Catches a replay that drifts from the engine (another
    victim, another queue order, another block count): the edges would then separate a rule the grader does not
    hold."""
    for case in random_cases(150, seed=1) + [c for seed in range(10) for c in drawn(seed)]:
        assert ex11_running.replay(**case) == ex11_running._running_per_step(**case), case


def test_the_hint_alone_gives_the_oracles_counts() -> None:
    """An implementation written from the question's hint alone (`from_the_hint`) agrees with the engine on random
    and drawn cases. Catches a hint that leaves out what the engine does (where a preempted request goes, what a
    recompute needs, when a finished request's blocks come back), or an oracle set up otherwise than the hint says
    (a watermark, a max_batch that binds, chunked prefills)."""
    for case in random_cases(150, seed=2) + [c for seed in range(10, 20) for c in drawn(seed)]:
        assert from_the_hint(**case) == ex11_running._running_per_step(**case), case


def test_a_case_worked_by_hand() -> None:
    """b = 2, a pool of 4 blocks, requests [3, 3], [2, 3], [1, 2] (A, B, C).

    Paged. Step 1: nobody runs yet; A takes ⌈3/2⌉ = 2 blocks, B 1, C 1 (free 0): 3 run, each has 1 token.
    Step 2: A holds 3 tokens and writes the 4th into its second block (no new block); B holds 2 and writes the
    3rd, which needs a new block: none is free, so C (admitted last) is preempted, frees its block and waits
    at the head of the queue with its 1 token; B takes that block. C needs ⌈(1 + 1)/2⌉ = 1 block, none free:
    2 run. Step 3: A holds 4 and writes the 5th: a new block, none free, B (now the youngest) is preempted and
    frees 2 (queue B, C); A takes one (free 1). B needs ⌈(2 + 2)/2⌉ = 2: 1 runs, and A, at 3 tokens, finishes
    (free 4). Step 4: B takes 2, C takes 1: 2 run, and both finish. [3, 2, 1, 2].

    max_tokens: A reserves ⌈5/2⌉ = 3 blocks (free 1), B needs ⌈4/2⌉ = 2 and blocks C behind it: A alone for
    its 3 steps; then B and C (1 block) together for 2 steps, and B alone for its last one. [1, 1, 1, 2, 2, 1].
    The bug it catches: any of the rules of a step (the victim, the queue's head, the recompute's blocks, when
    freed blocks come back, all or nothing on admission) wrong on a case small enough to read."""
    case = dict(requests=[[3, 3], [2, 3], [1, 2]], num_blocks=4, block_size=2)
    assert ex11_running._running_per_step(**case, reservation="paged") == [3, 2, 1, 2]
    assert ex11_running._running_per_step(**case, reservation="max_tokens") == [1, 1, 1, 2, 2, 1]


def test_each_edge_separates_its_neighbour_under_every_seed() -> None:
    """Case i of every seed holds edge i of `RUNNING_EDGES`: the neighbour written apart (`APART[i]`, the one the
    seed tests grade) counts otherwise than the engine there. Catches an edge drawn only by luck (a class seed
    would then decide whether that wrong answer passes), and a module neighbour that is not the one written
    apart."""
    assert len(APART) == len(ex11_running.NEIGHBOURS) == len(ex11_running.RUNNING_EDGES)
    for seed in range(60):
        cases = drawn(seed)
        assert len(cases) == len(APART) + ex11_running.RANDOM_CASES
        for i, (wrong, case) in enumerate(zip(APART, cases, strict=False)):
            right = ex11_running._running_per_step(**case)
            assert wrong(**case) != right, (seed, i, case)
            assert wrong(**case) == ex11_running.replay(**case, wrong=ex11_running.NEIGHBOURS[i]), (seed, i)


def test_the_reference_solution_passes_the_check() -> None:
    """The instructors' solution passes `check` under several seeds. Catches a question the reference cannot
    answer (an oracle or a generator that moved away from what the notebook asks)."""
    solution = reference("ex11", "running_per_step")
    for seed in range(8):
        result = run_check("ex11.q3", solution, seed=seed)
        assert result.status == "pass", result.message


def test_the_edges_have_their_property() -> None:
    """Each edge case is what its edge says: every request fits the pool alone; the P + D − 1 edge has a request
    whose P + D − 1 is a multiple of b; a preemption edge's paged pool runs out (its pool is smaller than what
    its requests hold at their longest). Catches a generator whose separating draws no longer hold the edge."""
    for seed in range(100):
        cases = drawn(seed)
        for case in cases:
            b = case["block_size"]
            assert max(-(-(P + D - 1) // b) for P, D in case["requests"]) <= case["num_blocks"], case
        assert any((P + D - 1) % cases[2]["block_size"] == 0 for P, D in cases[2]["requests"]), cases[2]
        for case in cases[4:8]:
            b = case["block_size"]
            assert case["reservation"] == "paged"
            assert sum(-(-(P + D - 1) // b) for P, D in case["requests"]) > case["num_blocks"], case


def test_the_generator_gives_up_after_its_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """When no draw separates a neighbour, the generator raises rather than draw forever or hand out an edge case
    that does not separate. Catches a draw loop without its bound or without its error."""
    monkeypatch.setattr(ex11_running, "separates", lambda case, wrong: False)
    monkeypatch.setattr(ex11_running, "DRAWS", 5)
    with pytest.raises(RuntimeError, match="5 draws"):
        ex11_running._running_cases(random.Random(0))


def test_the_oracle_refuses_a_request_the_pool_cannot_hold() -> None:
    """A request whose P + D − 1 tokens need more blocks than the pool has is rejected by the engine; the oracle
    says so instead of returning the counts of the others. Catches an oracle that would grade a case the question
    rules out."""
    with pytest.raises(ValueError, match="did not serve"):
        ex11_running._running_per_step([[8, 2]], num_blocks=2, block_size=4, reservation="paged")


def test_the_oracles_batch_bound_never_binds() -> None:
    """The question has no batch bound: only memory limits the batch. Ten one-token requests in a pool that holds
    them all run together in one step, under both reservations. Guards an oracle left at the engine's default
    max_batch (8), which the generator's cases (at most five requests) would never show."""
    for reservation in ("paged", "max_tokens"):
        assert ex11_running._running_per_step([[1, 1]] * 10, 10, 1, reservation) == [10], reservation


def test_a_neighbour_caught_in_a_loop_is_cut_at_max_steps() -> None:
    """A neighbour that can never finish is cut after exactly `MAX_STEPS` steps, its counts ended by −1, and is
    never an edge. Worked by hand: one request of P = 3, D = 2 in two blocks of 2; the "early" neighbour counts
    the token its next decode writes, so its decode at g = 1 wants the blocks of 3 + 1 + 1 = 5 tokens (3),
    preempts itself, and is never readmitted (it asks 3 blocks again): one step of 1, then empty steps. The
    scheduler runs it in two steps of 1. Guards a cut-off moved by a step (a bound of MAX_STEPS + 1 steps) and
    a generator that would hand a student a case whose wrong answer is a time-out."""
    case = dict(requests=[[3, 2]], num_blocks=2, block_size=2, reservation="paged")
    assert ex11_running.replay(**case) == [1, 1] == ex11_running._running_per_step(**case)
    looped = ex11_running.replay(**case, wrong="early")
    assert looped == [1] + [0] * (ex11_running.MAX_STEPS - 1) + [-1]
    assert not ex11_running.separates(case, "early")


def test_the_edge_draws_span_their_documented_ranges() -> None:
    """`_draw` gives what its docstring says: 2 to 5 requests, b in {2, 4, 8, 16}, P and D each from 1 to
    min(40, 6 b) (both ends reached), a pool from the largest request's blocks up to, and reaching, half of what
    all of them hold at their longest when tight, or all of it and 2 more blocks when not. Guards a range moved
    by one (no one-token prompt or one-token generation ever drawn as an edge), a pool that is never tight enough
    for a preemption, or tight when it should not be."""
    rng = random.Random(11)
    for tight in (True, False):
        n, b, low, high, top_hit = set(), set(), set(), set(), False
        for _ in range(4_000):
            case = ex11_running._draw(rng, "paged", tight)
            bs, requests = case["block_size"], case["requests"]
            cap = min(40, 6 * bs)
            n.add(len(requests))
            b.add(bs)
            for P, D in requests:
                assert 1 <= P <= cap and 1 <= D <= cap, case
                low.update(k for k, x in (("P", P), ("D", D)) if x == 1)
                high.update(k for k, x in (("P", P), ("D", D)) if x == cap)
            need = [-(-(P + D - 1) // bs) for P, D in requests]
            top = max(max(need), sum(need) // 2) if tight else sum(need) + 2
            assert max(need) <= case["num_blocks"] <= top, case
            top_hit |= case["num_blocks"] == top > max(need)
        assert n == {2, 3, 4, 5} and b == {2, 4, 8, 16}, (n, b)
        assert low == high == {"P", "D"} and top_hit, (tight, low, high)
