"""Exercise 16 (Chapter 19, prefill and decode apart): the K/V transfer sent layer by layer behind the prefill
against one message after it (`ex16_transfer`), the goodput of a small set of runs by hand, the driver's routing
of a trace over the two pools, traced by hand (`ex16_routing`), and the decode worker's side of the handoff (the
payload written into its own pool through a block table taken from its free list).

The oracles are the package: `costs.layerwise_transfer_exposed` with `costs.kv_transfer_time` (Eq. 19.2),
`costs.slo_attainment` with `costs.goodput` (Eqs. 19.3-19.4), the driver's routing rule
(`distributed.disagg_admission.least_loaded`) and `distributed.kv_transfer.scatter_kv` (what `import_kv`
does). Nothing is timed: every answer is exact (or a float to 1e-9).
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from minigpt import costs
from minigpt.distributed.kv_transfer import scatter_kv
from minigpt.exercises.case_inputs import randn
from minigpt.exercises.comparisons import int_list, pair, tensor
from minigpt.exercises.ex16_routing import ROUTE_EDGES, route, routing_cases, routing_check
from minigpt.exercises.ex16_transfer import TRANSFER_EDGES, _short, _transfer, _transfer_cases, _transfer_check
from minigpt.exercises.spec import N_, Exercise, Question, _, fmt_num

GOODPUT_EDGES = ("a run that misses below one that passes: not stopping at the first miss",
                 "a one-token request within the TTFT objective: a one-token request counted as a miss")


def _goodput_case(rng: random.Random, noisy: bool) -> dict:
    """Four to six runs at increasing rates; each 10 requests with arrival and token times; SLOs chosen so that
    attainment falls somewhere along the rates (sometimes at once, sometimes never); with `noisy`, a run that
    misses below one that passes (a noisy measurement)."""
    ttft_slo, tpot_slo = round(rng.uniform(0.1, 0.5), 3), round(rng.uniform(0.01, 0.05), 3)
    runs = []
    rate = round(rng.uniform(0.5, 2.0), 2)
    n_runs = rng.randint(4, 6)
    loads = [k / 3 + rng.uniform(-0.1, 0.2) for k in range(n_runs)]
    if noisy:  # a noisy run: a miss at a middle rate, a pass above it
        i = rng.randint(1, n_runs - 3)
        loads[i], loads[i + 1] = 3.0, -0.2
    for load in loads:
        requests = []
        t = 0.0
        for _k in range(10):
            t = round(t + rng.expovariate(rate), 4)
            ttft = ttft_slo * rng.uniform(0.3, 1.0 + load)
            n = rng.randint(1, 6)
            tpot = tpot_slo * rng.uniform(0.5, 1.0 + load)
            times = [round(t + ttft + i * tpot, 6) for i in range(n)]
            requests.append({"arrival_s": t, "token_s": times})
        runs.append({"rate": rate, "requests": requests})
        rate = round(rate * rng.uniform(1.3, 2.0), 2)
    rng.shuffle(runs)
    return dict(runs=runs, ttft_slo=ttft_slo, tpot_slo=tpot_slo)


def _goodput_edge(case: dict) -> bool:
    """Whether a case holds both `GOODPUT_EDGES`: a passing run above the goodput's rate, and a one-token request
    that meets the TTFT objective."""
    att, g = _goodput(**case)
    rates = sorted(r["rate"] for r in case["runs"])
    one = any(len(q["token_s"]) == 1 and q["token_s"][0] - q["arrival_s"] <= case["ttft_slo"]
              for r in case["runs"] for q in r["requests"])
    return one and any(a >= 0.9 and r > g for r, a in zip(rates, att, strict=True))


def _goodput_cases(rng: random.Random) -> list[dict]:
    """The edges first (`GOODPUT_EDGES`: a noisy case drawn until it holds both), then five random cases, in half of
    which a run misses below one that passes."""
    edge = _goodput_case(rng, noisy=True)
    while not _goodput_edge(edge):
        edge = _goodput_case(rng, noisy=True)
    return [edge] + [_goodput_case(rng, noisy=rng.random() < 0.5) for _ in range(5)]


def _goodput(runs: list[dict], ttft_slo: float, tpot_slo: float) -> tuple[list[float], float]:
    ordered = sorted(runs, key=lambda r: r["rate"])
    att = []
    for run in ordered:
        ttft = [q["token_s"][0] - q["arrival_s"] for q in run["requests"]]
        tpot = [(q["token_s"][-1] - q["token_s"][0]) / (len(q["token_s"]) - 1) if len(q["token_s"]) > 1
                else math.nan for q in run["requests"]]
        att.append(costs.slo_attainment(ttft=ttft, tpot=tpot, ttft_slo=ttft_slo, tpot_slo=tpot_slo))
    return att, costs.goodput(rates=[r["rate"] for r in ordered], attainments=att, target=0.9)


def _goodput_check(expected: Any, actual: Any) -> str | None:
    att, g = expected
    if isinstance(actual, (tuple, list)) and len(actual) == 2 and isinstance(actual[0], dict) \
            and "$tensor" in actual[0] and isinstance(actual[0]["$tensor"], list):
        actual = [actual[0]["$tensor"], actual[1]]  # a numpy array or tensor of attainments, as elsewhere
    if not isinstance(actual, (tuple, list)) or len(actual) != 2 or not isinstance(actual[0], (list, tuple)):
        return _("expected a pair (attainments in increasing rate, goodput), got {actual}").format(
            actual=_short(actual))
    got, gg = actual
    if len(got) != len(att):
        return _("expected {n} attainments, one per run in increasing rate, got {n_got}").format(n=len(att),
                                                                                              n_got=len(got))
    for i, (e, a) in enumerate(zip(att, got, strict=True)):
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not math.isclose(a, e, rel_tol=1e-9,
                                                                                         abs_tol=1e-12):
            return _("the attainment of run {rank} (the runs in increasing rate) should be {expected}, you have "
                     "{actual}: a request attains only if TTFT = first token - arrival <= ttft_slo AND "
                     "TPOT = (last - first) / (n - 1) <= tpot_slo (a one-token request has no TPOT)").format(
                rank=i + 1, expected=fmt_num(e, ".2f"), actual=_short(a))
    if isinstance(gg, bool) or not isinstance(gg, (int, float)) or not math.isclose(gg, g, rel_tol=1e-9,
                                                                                    abs_tol=1e-12):
        return _("attainments right; goodput should be {expected}, you have {actual}: the highest rate whose "
                 "attainment is at least 90 %, counting up from the lowest rate and stopping at the first that "
                 "misses (0.0 if the lowest misses)").format(expected=g, actual=_short(gg))
    return None


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
            "q2", "goodput_by_hand", "goodput_by_hand(runs, ttft_slo, tpot_slo) -> (list[float], float)",
            _goodput_cases, _goodput, _goodput_check,
            N_("for each run, in increasing rate: the share of its requests whose time to the first token and time "
               "per later token both meet their objectives; then the goodput: walking up the rates, the last one "
               "before the first run whose share falls below 90 %"),
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
