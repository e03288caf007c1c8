"""The case generators of Exercise 11's formula questions (q1 to q4: slack, the physical slot, utilisation, blocks a
fork saves), each with the edges it draws every time (`Question.edges`) before its random cases."""

from __future__ import annotations

import random

from minigpt.measure import kv_memory

SLACK_EDGES = ("S a multiple of block_size (S > 0): b − S % b, a whole empty block, instead of 0",
               "S = 0: an empty sequence holding one block")


def _slack_cases(rng: random.Random) -> list[dict]:
    """The edges first (`SLACK_EDGES`), then random."""
    b = rng.choice([8, 16, 32, 128])
    edges = [dict(S=b * rng.randint(1, 5000 // b), block_size=b), dict(S=0, block_size=rng.choice([8, 16, 32, 128]))]
    return edges + [dict(S=rng.randint(0, 5000), block_size=rng.choice([1, 8, 16, 32, 128])) for _ in range(8)]


SLOT_EDGES = ("p inside a block (p % b > 0), not in the table's first block: ⌈p / b⌉ instead of ⌊p / b⌋, or "
              "the logical block (the table not consulted)",)


def _slot_cases(rng: random.Random) -> list[dict]:
    """The edge first (`SLOT_EDGES`: a token inside a later block of a table that is not 0, 1, 2, ...), then
    random."""
    cases = []
    for k in range(8):
        b = rng.choice([2, 4, 16])
        table = rng.sample(range(200), rng.randint(2 if k == 0 else 1, 8))
        p = rng.randrange(len(table) * b)
        if k == 0:
            j = rng.randrange(1, len(table))
            table[j] += 200  # not its own index, nor any other entry
            p = j * b + rng.randint(1, b - 1)
        cases.append(dict(table=table, p=p, block_size=b))
    return cases


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


SAVED_EDGES = ("P not a multiple of block_size, n > 1: ⌈P / b⌉ shared (the partly filled block counted), or n "
               "samples saving instead of n − 1",)


def _saved_cases(rng: random.Random) -> list[dict]:
    """The edge first (`SAVED_EDGES`: a partly filled last block, several samples), then random."""
    b = rng.choice([8, 16, 32])
    edge = dict(P=b * rng.randint(1, 3000 // b - 1) + rng.randint(1, b - 1), n=rng.randint(2, 16), block_size=b)
    return [edge] + [dict(P=rng.randint(1, 3000), n=rng.randint(1, 16), block_size=rng.choice([8, 16, 32]))
                     for _ in range(7)]
