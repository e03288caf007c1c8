"""Exercise 11 (Chapter 11, PagedAttention): slack per sequence, the block table, utilisation, sharing."""

from __future__ import annotations

import random

from minigpt import costs
from minigpt.exercises.spec import Exercise, Question, close, exact_int, int_list
from minigpt.measure import kv_memory


def _slack_cases(rng: random.Random) -> list[dict]:
    return [dict(S=rng.randint(0, 5000), block_size=rng.choice([1, 8, 16, 32, 128])) for _ in range(10)]


def _slot_cases(rng: random.Random) -> list[dict]:
    cases = []
    for _ in range(8):
        b = rng.choice([2, 4, 16])
        table = rng.sample(range(200), rng.randint(1, 8))
        cases.append(dict(table=table, p=rng.randrange(len(table) * b), block_size=b))
    return cases


def _slot(table: list[int], p: int, block_size: int) -> list[int]:
    return [table[p // block_size], p % block_size]


def _utilisation_cases(rng: random.Random) -> list[dict]:
    cases = []
    for _ in range(6):
        S_max = rng.choice([64, 256, 2048])
        requests = [[r.P, r.D] for r in kv_memory.request_lengths(rng.randint(1, 12), S_max=S_max,
                                                                  P_median=S_max / 16, D_median=S_max / 8,
                                                                  seed=rng.getrandbits(32))]
        cases.append(dict(requests=requests, policy=rng.choice(kv_memory.POLICIES), S_max=S_max,
                          block_size=rng.choice([1, 4, 16])))
    return cases


def _utilisation(requests: list[list[int]], policy: str, S_max: int, block_size: int) -> float:
    reqs = [kv_memory.Request(P, D) for P, D in requests]
    return kv_memory.utilisation(reqs, policy=policy, S_max=S_max, block_size=block_size)


def _saved_cases(rng: random.Random) -> list[dict]:
    return [dict(P=rng.randint(1, 3000), n=rng.randint(1, 16), block_size=rng.choice([8, 16, 32])) for _ in range(8)]


EXERCISE = Exercise(
    id="ex11",
    notebook="ex11_paged_attention.ipynb",
    title="PagedAttention",
    questions=(
        Question(
            "q1", "paged_slack", "paged_slack(S, block_size) -> int", _slack_cases,
            lambda S, block_size: costs.paged_slack_tokens(S=S, block_size=block_size), exact_int,
            "Eq. (11.1): ⌈S / b⌉ blocks of b slots hold S tokens; the slack is ⌈S / b⌉·b − S (0 for S = 0).",
        ),
        Question(
            "q2", "physical_slot", "physical_slot(table, p, block_size) -> [block, row]", _slot_cases, _slot,
            int_list,
            "token p lives in block table[p // b], at row p % b of that block; return the two ints as a list.",
        ),
        Question(
            "q3", "utilisation", "utilisation(requests, policy, S_max, block_size) -> float", _utilisation_cases,
            _utilisation, close(1e-9),
            "Eq. (11.2): over every decode step of every request [P, D] (it holds S_t = P, P+1, …, P+D−1 tokens), "
            "Σ S_t / Σ reserved; reserved is S_max ('max'), P + D ('exact') or ⌈S_t/b⌉·b ('paged').",
        ),
        Question(
            "q4", "fork_saved_blocks", "fork_saved_blocks(P, n, block_size) -> int", _saved_cases,
            lambda P, n, block_size: costs.paged_fork_saved_blocks(P=P, n=n, block_size=block_size), exact_int,
            "Eq. (11.3): n forks share the ⌊P / b⌋ full blocks of the prompt; each of the n − 1 extra samples "
            "saves them (the partly filled last block is copied on its first write).",
        ),
    ),
)
