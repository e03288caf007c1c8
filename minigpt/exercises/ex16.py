"""Exercise 16 (Chapter 19, prefill and decode apart): the K/V transfer sent layer by layer behind the prefill
against one message after it (`ex16_transfer`), the goodput of a split of prefill and decode workers over a few
request rates, its times out of the queue of the driver's routing (`ex16_goodput`), the driver's routing of a
trace over the two pools, traced by hand (`ex16_routing`), and the decode worker's side of the handoff (the
payload written into its own pool through a block table taken from its free list).

The oracles are the package: `costs.layerwise_transfer_exposed` with `costs.kv_transfer_time` (Eq. 19.2), the
driver's routing rule (`distributed.disagg_admission.least_loaded`) traced by `ex16_routing.route` and, over its
times, `costs.slo_attainment` with `costs.goodput` (Eqs. 19.3-19.4), and `distributed.kv_transfer.scatter_kv`
(what `import_kv` does). Nothing is timed: every answer is exact (or a float to 1e-9).
"""

from __future__ import annotations

import random

import torch

from minigpt.distributed.kv_transfer import scatter_kv
from minigpt.exercises.case_inputs import randn
from minigpt.exercises.comparisons import int_list, pair, tensor
from minigpt.exercises.ex16_goodput import GOODPUT_EDGES, goodput_cases, goodput_check, split_goodput
from minigpt.exercises.ex16_routing import ROUTE_EDGES, route, routing_cases, routing_check
from minigpt.exercises.ex16_transfer import TRANSFER_EDGES, _transfer, _transfer_cases, _transfer_check
from minigpt.exercises.spec import N_, Exercise, Question

RECEIVE_EDGES = ("a free list out of order: the blocks taken in id order (sorted) instead of the list's order",
                 "H_kv ≥ 2 over several blocks: the payload written as [n, H_kv, b] rows without moving the heads "
                 "first",
                 "P not a multiple of b: the last block dropped (⌊P / b⌋ blocks), or written whole (its rows "
                 "past P overwritten)",
                 "a free list longer than the prompt needs: every free block taken")


def _receive_case(rng: random.Random, edge: bool) -> dict:
    """A decode worker's pool of N blocks, some held by other requests, its free list, and one payload. With
    `edge` (`RECEIVE_EDGES`, all four at once): L = H_kv = 2, two or three blocks of which the last is partly
    filled, a free list longer than that and shuffled so that its first blocks are neither in id order nor the
    smallest free ids."""
    L, H_kv = (2, 2) if edge else (rng.randint(1, 2), rng.choice([1, 2, 3]))
    b, d_h = rng.choice([2, 4]), rng.choice([2, 3])
    n = rng.randint(2, 3) if edge else rng.randint(1, 3)
    P = (n - 1) * b + (rng.randint(1, b - 1) if edge else rng.randint(1, b))
    N = rng.randint(n + 2, 8)
    while True:
        free = rng.sample(range(N), rng.randint(n + 1 if edge else n, N - 1))  # one block at least is held
        if not edge or (free[:n] != sorted(free[:n]) and free[:n] != sorted(free)[:n]):
            break
    return dict(pools=randn([2, L, N, H_kv, b, d_h], rng), free_blocks=free, kv=randn([2, L, H_kv, P, d_h], rng))


def _receive_cases(rng: random.Random) -> list[dict]:
    """The edges first: four cases that hold all of `RECEIVE_EDGES`, then three random ones."""
    return [_receive_case(rng, edge=True) for _ in range(4)] + [_receive_case(rng, edge=False) for _ in range(3)]


def _receive(pools: torch.Tensor, free_blocks: list[int], kv: torch.Tensor) -> tuple[list[int], torch.Tensor]:
    b = pools.shape[4]
    table = list(free_blocks[: -(-kv.shape[3] // b)])
    out = pools.clone()
    scatter_kv(out[0], out[1], table, kv)
    return table, out


EXERCISE = Exercise(
    id="ex16",
    notebook="ex16_disaggregation.ipynb",
    title="Prefill and decode apart",
    questions=(
        Question(
            "q1", "layerwise_transfer",
            "layerwise_transfer(model, P, layer_s, link_bandwidth, latency) -> (float, float)", _transfer_cases,
            _transfer, _transfer_check,
            N_("a layer's message holds that layer's keys and values for the heads that keep their own, in bf16, "
               "and costs the latency plus its bytes at the link's bandwidth; it starts when its layer's prefill "
               "has ended and the link is free, so walk the layers in order keeping two clocks, the prefill's and "
               "the link's; the whole cache is one such message of all L layers, sent when the prefill ends"),
            edges=TRANSFER_EDGES,
        ),
        Question(
            "q2", "split_goodput",
            "split_goodput(runs, prefill_workers, decode_workers, prefill_ms_per_token, decode_step_ms, ttft_slo, "
            "tpot_slo) -> (list[float], float)", goodput_cases, split_goodput, goodput_check,
            N_("route each run's requests as in Question 3, a prefill worker working through its prompts one after "
               "another, and read each request's times off that queue: the time to first token runs from its "
               "arrival to the end of its prefill, waiting included, and the time per later token is one decode "
               "step. A request attains if its first token is within its objective and, when it has later tokens, "
               "its time per later token too; a request of one token is judged by its first token alone. Take the "
               "runs in increasing rate, walk up until the first whose share of attaining requests is below 90 %, "
               "and divide the last rate before it by every chip of the split"),
            edges=GOODPUT_EDGES,
        ),
        Question(
            "q3", "route_requests",
            "route_requests(arrivals_ms, prompt_tokens, new_tokens, prefill_workers, decode_workers, "
            "prefill_ms_per_token, decode_step_ms) -> list[list[int]]", routing_cases, route, routing_check,
            N_("walk the requests in arrival order. At an arrival, a prefill worker's load is the prompt tokens of "
               "the requests routed to it whose prefill has not ended, a decode worker's the number of requests "
               "routed to it whose last token has not come; each pool gives the request to its least loaded "
               "worker, the lowest number on a tie. A prefill starts when the request has arrived and its worker "
               "has finished the prompts it was given before; the first token comes at its end."),
            edges=ROUTE_EDGES,
        ),
        Question(
            "q4", "receive_kv", "receive_kv(pools, free_blocks, kv) -> (list[int], tensor)", _receive_cases,
            _receive, pair(int_list, tensor(atol=0.0, rtol=0.0), ("table", "pools")),
            N_("take the first ⌈P / b⌉ blocks of the free list, in its order: they are the new block table. Token t "
               "of the payload goes to row t % b of block table[t // b], for every layer and K/V head, keys into "
               "pools[0] and values into pools[1]; every other row of the pools stays as it was"),
            edges=RECEIVE_EDGES,
        ),
    ),
)
