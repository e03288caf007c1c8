"""Exercise 11 Q3: what a reservation policy does to the batch. A continuous-batching scheduler with the memory
side of vLLM's (first come, first served; a request admitted whole or not at all; the request admitted last
preempted first when a running one needs a block and none is free; a preempted request recomputed: freed, and
put back at the head of the queue to prefill its prompt and the tokens it had generated), run until every
request has finished: how many requests ran in each step. Chapter 11 concludes that paging fits more sequences
in the same memory, hence bigger decode batches; this question makes the student build the scheduler that turns
one into the other.

The oracle is the package's own scheduler, `minigpt.serving.scheduler.Scheduler`, driven by the engine in replay
(`minigpt.serving.Engine.replay`, step times from the formulas, which do not matter here): policy
"continuous", whole prefills (no chunk_size), a max_batch that never binds, watermark 0, no prefix caching,
preemption "recompute", and `reservation` "paged" (blocks taken as the sequence grows) or "max_tokens" (the
blocks of prompt + max_new_tokens − 1 tokens taken on admission). Every request arrives at time 0, in order.

`replay` is the same scheduler in plain Python, with a switch for each plausible wrong neighbour (`NEIGHBOURS`);
tests/test_ex11_running.py holds it to the engine. The case generator draws each edge of `RUNNING_EDGES` until
its neighbour returns other counts (`DRAWS` at most), then random cases.

A neighbour left out on purpose: the admissions run before the decodes. It counts the same here: the requests it
admits are the youngest, so a decode that lacks a block preempts them first and they give back every block they
took (600,000 draws of the edges' kind told the two apart in none).
"""

from __future__ import annotations

import random

from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.serving import Engine, EngineConfig, Request

#: The edges, one per wrong neighbour (`NEIGHBOURS`, same order): case i is drawn until neighbour i counts
#: otherwise than the scheduler.
RUNNING_EDGES = (
    "paged: each request takes blocks as it writes, not the blocks of P + D − 1 tokens on admission",
    "max_tokens: the blocks of P + D − 1 tokens taken on admission, not grown on demand",
    "max_tokens with P + D − 1 a multiple of block_size: the blocks of P + D tokens reserved",
    "paged, a decode at a block boundary: a request that has generated g tokens holds P + g − 1 of them (its "
    "last token is written by its next decode), not P + g, a new block one token early",
    "a paged pool that runs out mid-decode: the oldest running request preempted instead of the youngest",
    "a paged pool that runs out mid-decode: the preempted request requeued at the tail of the queue",
    "a paged pool that runs out mid-decode: the preempted request starting over, its generated tokens forgotten",
    "a paged pool that runs out mid-decode: the recompute prefilling the prompt alone, the blocks of P tokens "
    "on readmission instead of P + g",
    "a head-of-line request that does not fit while a smaller one behind it would: the queue skipped",
    "a request that finishes: its blocks free for the next step, not one step late",
)
NEIGHBOURS = ("max_tokens", "paged", "P + D", "early", "oldest", "tail", "restart", "prompt only", "skip", "late")
#: The reservation each edge is drawn with (None: either).
_EDGE_RESERVATION = ("paged", "max_tokens", "max_tokens", "paged", "paged", "paged", "paged", "paged", "max_tokens",
                     None)
RESERVATIONS = ("paged", "max_tokens")
#: Draws allowed for one edge (over 2,000 seeds, the ten edges together took 23 draws on average, 64 at most);
#: random cases after the edges.
DRAWS, RANDOM_CASES = 2_000, 3
#: Steps after which a neighbour that never finishes (a preemption loop) is cut short, its counts ended by −1.
MAX_STEPS = 2_000

LLAMA, H100 = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]


def _blocks(tokens: int, b: int) -> int:
    return -(-tokens // b)


def replay(requests: list[list[int]], num_blocks: int, block_size: int, reservation: str,
           wrong: str | None = None) -> list[int]:
    """The requests that run in each step, by the scheduler (`wrong` None) or by its neighbour `wrong`."""
    if wrong in ("max_tokens", "paged"):
        reservation = wrong
    b, n = block_size, len(requests)
    paged = reservation == "paged"
    shift = 1 if wrong == "early" else 0  # the neighbour that counts a request's last token as written
    g, held = [0] * n, [0] * n  # tokens generated, blocks held
    waiting, running, free, out, late = list(range(n)), [], num_blocks, [], 0

    def admit(ran: list[int]) -> None:
        nonlocal free
        for r in list(waiting):
            P, D = requests[r]
            tokens = (P if wrong == "prompt only" else P + g[r] + shift) if paged else P + D - 1 + (wrong == "P + D")
            need = _blocks(tokens, b)
            if need > free:
                if wrong == "skip":
                    continue
                return
            waiting.remove(r)
            running.append(r)
            free, held[r] = free - need, need
            ran.append(r)

    while (waiting or running) and len(out) < MAX_STEPS:
        ran: list[int] = []
        for r in list(running):
            if r not in running:
                continue
            need = _blocks(requests[r][0] + g[r] + shift, b) - held[r] if paged else 0
            while need > free:
                victim = running.pop(0 if wrong == "oldest" else -1)
                free, held[victim] = free + held[victim], 0
                if victim in ran:
                    ran.remove(victim)
                if wrong == "restart":
                    g[victim] = 0
                waiting.insert(len(waiting) if wrong == "tail" else 0, victim)
                if victim == r:
                    break
            else:
                free, held[r] = free - max(need, 0), held[r] + max(need, 0)
                ran.append(r)
        admit(ran)
        out.append(len(ran))
        free, late = free + late, 0
        for r in ran:
            g[r] += 1
            if g[r] == requests[r][1]:
                running.remove(r)
                if wrong == "late":
                    late += held[r]
                else:
                    free += held[r]
                held[r] = 0
    return out if not (waiting or running) else [*out, -1]


def _draw(rng: random.Random, reservation: str, tight: bool) -> dict:
    """2 to 5 requests of P and D from 1 to min(40, 6 b) tokens (b from 2 to 16), in a pool of at least the
    largest request's P + D − 1 tokens' blocks; `tight`: at most half of what all of them hold at their longest,
    so that a paged pool runs out."""
    b = rng.choice([2, 4, 8, 16])
    cap = min(40, 6 * b)
    requests = [[rng.randint(1, cap), rng.randint(1, cap)] for _ in range(rng.randint(2, 5))]
    need = [_blocks(P + D - 1, b) for P, D in requests]
    top = max(max(need), sum(need) // 2) if tight else sum(need) + 2
    return dict(requests=requests, num_blocks=rng.randint(max(need), top), block_size=b, reservation=reservation)


def _random(rng: random.Random) -> dict:
    """1 to 5 requests of P and D from 1 to min(40, 6 b) tokens, b from 1 to 16, either reservation, a pool from
    the largest request's blocks to all of them and 2 more."""
    b = rng.choice([1, 2, 4, 8, 16])
    cap = min(40, 6 * b)
    requests = [[rng.randint(1, cap), rng.randint(1, cap)] for _ in range(rng.randint(1, 5))]
    need = [_blocks(P + D - 1, b) for P, D in requests]
    return dict(requests=requests, num_blocks=rng.randint(max(need), sum(need) + 2), block_size=b,
                reservation=rng.choice(RESERVATIONS))


def separates(case: dict, wrong: str) -> bool:
    """Whether neighbour `wrong` finishes and counts otherwise than the scheduler on `case` (a neighbour caught in
    a preemption loop would show a student a time-out, not a count that differs)."""
    counts = replay(**case, wrong=wrong)
    return counts[-1] != -1 and counts != replay(**case)


def _running_cases(rng: random.Random) -> list[dict]:
    """One case per edge (`RUNNING_EDGES`), each drawn until its neighbour counts otherwise (`DRAWS` at most;
    paged pools tight, at most half of what the requests hold at their longest, where a preemption is the
    edge), then `RANDOM_CASES` random cases (`_random`)."""
    cases = []
    for i, (wrong, reservation) in enumerate(zip(NEIGHBOURS, _EDGE_RESERVATION, strict=True)):
        for _ in range(DRAWS):
            case = _draw(rng, reservation or rng.choice(RESERVATIONS), tight=reservation == "paged" or i == 8)
            if separates(case, wrong):
                break
        else:
            raise RuntimeError(f"no case in {DRAWS:,} draws separates the scheduler from {wrong!r}")
        cases.append(case)
    return cases + [_random(rng) for _ in range(RANDOM_CASES)]


def _running_per_step(requests: list[list[int]], num_blocks: int, block_size: int, reservation: str) -> list[int]:
    """The package's engine in replay (`Engine.replay`, Llama-2-7B on an H100: only the schedule matters) on a
    pool of `num_blocks` blocks: the requests each step runs, until every request has finished."""
    config = EngineConfig(policy="continuous", max_batch=max(1, len(requests)), chunk_size=None,
                          prefix_caching=False, preemption="recompute", reservation=reservation, watermark=0.0)
    engine = Engine.replay(LLAMA, H100, num_blocks=num_blocks, block_size=block_size, config=config)
    for i, (P, D) in enumerate(requests):
        engine.submit(Request(f"r{i}", (0,) * P, D))
    counts = []
    while engine.busy:
        counts.append(len(engine.step()))
    rejected = [t.reason for t in engine.requests.values() if t.status.value != "finished"]
    if rejected:
        raise ValueError(f"the engine did not serve every request: {rejected}")
    return counts
