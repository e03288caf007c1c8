"""Exercise 12 (Chapters 12-14, serving many users): prefix-cache hits, static vs continuous steps, chunk steps.

The oracle is the engine itself (`minigpt.serving`), run in replay for Llama-2-7B on an H100: only the
schedule matters here, not the step times.
"""

from __future__ import annotations

import random

from minigpt import costs
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises.spec import N_, Exercise, Question, close, exact_int, int_list, pair
from minigpt.serving import Engine, EngineConfig, Request

LLAMA, H100 = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]


def _engine(block_size: int = 16, **config: object) -> Engine:
    return Engine.replay(LLAMA, H100, num_blocks=2048, block_size=block_size, config=EngineConfig(**config))


HIT_EDGES = ("a whole prompt of full blocks seen before: all its blocks, not at most P − 1",
             "a block cached after another prefix: blocks matched by their own tokens only")


def _hit_edge(rng: random.Random) -> dict:
    """`HIT_EDGES`: A = [a, x], C = [c, y], then [a, y] (block y is cached, but after c, not after a), then one
    prompt of two full blocks twice (the second finds both, but its last token must run)."""
    b = rng.choice([2, 4, 8])

    def block() -> list[int]:
        return [rng.randrange(50) for _ in range(b)]

    def tail() -> list[int]:
        return [rng.randrange(50) for _ in range(rng.randint(1, b))]

    a, x, y, whole = block(), block(), block(), block() + block()
    c = block()
    while c == a:
        c = block()
    while y == x:
        y = block()
    prompts = [a + x + tail(), c + y + tail(), a + y + tail(), whole, list(whole)]
    return dict(prompts=prompts, block_size=b)


def _hit_cases(rng: random.Random) -> list[dict]:
    """The edges first (`_hit_edge`), then random."""
    cases = [_hit_edge(rng)]
    for _ in range(4):
        b = rng.choice([2, 4, 8])
        stems = [[rng.randrange(50) for _ in range(rng.randint(0, 4 * b))] for _ in range(2)]
        prompts = []
        for _ in range(rng.randint(2, 6)):
            stem = rng.choice(stems + [prompts[-1] if prompts else []])
            keep = rng.randint(len(stem) // 2, len(stem))
            prompts.append(stem[:keep] + [rng.randrange(50) for _ in range(rng.randint(1, 2 * b))])
        cases.append(dict(prompts=prompts, block_size=b))
    return cases


def _hits(prompts: list[list[int]], block_size: int) -> list[int]:
    engine = _engine(block_size, max_batch=1, prefix_caching=True)
    out = engine.run(Request(f"r{i}", tuple(p), 1, arrival_s=float(i)) for i, p in enumerate(prompts))
    return [t.cached_tokens for t in out]


STEP_EDGES = ("static batches of different lengths: every batch as long as the longest request of all",
              "continuous with max_batch + 1 equal requests: max(longest, ⌈total tokens / max_batch⌉) steps")


def _step_cases(rng: random.Random) -> list[dict]:
    """The edges first (`STEP_EDGES`), then random."""
    mb, a = rng.randint(2, 4), rng.randint(2, 12)
    edges = [dict(max_new_tokens=[a] * mb + [rng.randint(1, a - 1)] * rng.randint(1, mb), max_batch=mb),
             dict(max_new_tokens=[a] * (mb + 1), max_batch=mb)]
    return edges + [dict(max_new_tokens=[rng.randint(1, 12) for _ in range(rng.randint(1, 9))],
                         max_batch=rng.randint(1, 4)) for _ in range(4)]


def _steps(max_new_tokens: list[int], max_batch: int) -> tuple[int, int]:
    counts = []
    for policy in ("static", "continuous"):
        engine = _engine(policy=policy, max_batch=max_batch)
        for i, D in enumerate(max_new_tokens):
            engine.submit(Request(f"r{i}", (1 + i,), D))
        steps = 0
        while engine.busy:
            steps += bool(engine.step())
        counts.append(steps)
    return counts[0], counts[1]


CHUNK_EDGES = ("P a multiple of chunk_size − decodes: P // per_step + 1 steps instead of ⌈P / per_step⌉",
               "decodes > 0: the whole chunk_size for the prompt, not chunk_size − decodes")


def _chunk_cases(rng: random.Random) -> list[dict]:
    """The edges first (`CHUNK_EDGES`), then random."""
    decodes, per_step = rng.randint(0, 8), rng.randint(1, 64)
    cases = [dict(P=per_step * rng.randint(1, 600 // per_step), chunk_size=decodes + per_step, decodes=decodes)]
    while True:  # the prompt tokens per step with and without the decodes' share give different counts
        P, decodes, per_step = rng.randint(1, 600), rng.randint(1, 8), rng.randint(1, 64)
        if -(-P // per_step) != -(-P // (per_step + decodes)):
            break
    cases.append(dict(P=P, chunk_size=decodes + per_step, decodes=decodes))
    for _ in range(4):
        decodes = rng.randint(0, 8)
        cases.append(dict(P=rng.randint(1, 600), chunk_size=decodes + rng.randint(1, 64), decodes=decodes))
    return cases


def _chunk_steps(P: int, chunk_size: int, decodes: int) -> int:
    engine = _engine(max_batch=decodes + 1, chunk_size=chunk_size)
    for i in range(decodes):
        engine.submit(Request(f"d{i}", (1 + i,), 4000))
    if decodes:
        engine.step()  # their one-token prompts: from now on they decode
    engine.submit(Request("long", tuple(range(P)), 1, arrival_s=engine.now))
    steps = 0
    while not engine.requests.get("long") or not engine.requests["long"].token_s:
        steps += bool(engine.step())
    return steps


PREEMPT_EDGES = ("a short S, where reading the weights takes longer than the FLOPs: the FLOPs' time alone",
                 "the K/V crossing the link once: every case tells it")


def _preempt_cases(rng: random.Random) -> list[dict]:
    """The edge first (`PREEMPT_EDGES`: a recompute bound by the weights' bytes), then random."""
    names = sorted(MODELS)
    return [dict(model=rng.choice(names), S=rng.randint(16, 48) if i == 0 else rng.randint(16, 4096),
                 mfu=rng.choice([0.3, 0.4, 0.5, 0.6, 1.0]), link_bandwidth=rng.choice([25e9, 32e9, 64e9]))
            for i in range(6)]


def _preempt(model: str, S: int, mfu: float, link_bandwidth: float) -> tuple[float, float]:
    m = MODELS[model]
    flops = costs.evaluate(costs.prefill_flops, m, P=S)
    weights = costs.weight_bytes(N_params=m.N_params, s=2)
    recompute = costs.roofline_time(flops=flops, bytes=weights, peak_flops=mfu * H100.peak_flops,
                                    bandwidth=H100.bandwidth)
    swap = 2 * S * costs.evaluate(costs.kv_bytes_per_token, m, s=2) / link_bandwidth
    return recompute, swap


EXERCISE = Exercise(
    id="ex12",
    notebook="ex12_serving.ipynb",
    title="Serving many users",
    questions=(
        Question(
            "q1", "prefix_hit_tokens", "prefix_hit_tokens(prompts, block_size) -> list[int]", _hit_cases, _hits,
            int_list,
            N_("requests run one after the other; after each, every full block of its prompt is cached. A request "
               "finds the longest run of leading full blocks (block i = tokens i·b .. i·b+b−1, compared with every "
               "token before it) cached, S = blocks·b tokens, but at most P − 1 (its last token always runs)."),
            edges=HIT_EDGES,
        ),
        Question(
            "q2", "batching_steps", "batching_steps(max_new_tokens, max_batch) -> (static, continuous)",
            _step_cases, _steps, pair(exact_int, exact_int, ("static", "continuous")),
            N_("all requests (1-token prompts) arrive at once, in order. A step gives every running request one token "
               "(a new request's first token comes from its prefill, in the step it joins). static: take the next "
               "max_batch requests, run until all are done, repeat. continuous: at the start of each step, requests "
               "that finished leave and waiting ones join while fewer than max_batch run."),
            edges=STEP_EDGES,
        ),
        Question(
            "q3", "chunk_steps", "chunk_steps(P, chunk_size, decodes) -> int", _chunk_cases, _chunk_steps, exact_int,
            N_("a step processes at most chunk_size tokens: the `decodes` running requests first (1 token each), then "
               "as much of the long prompt as is left of the budget. Count the steps until the prompt's first token "
               "(the step that prefills its last chunk samples it): how many prompt tokens fit in each step?"),
            edges=CHUNK_EDGES,
        ),
        Question(
            "q4", "preemption_costs", "preemption_costs(model, S, mfu, link_bandwidth) -> (recompute_s, swap_s)",
            _preempt_cases, _preempt, pair(close(1e-9), close(1e-9), ("recompute_s", "swap_s")),
            N_("recompute is a prefill of S tokens on the roofline of Chapter 3: it reads the bf16 weights once and "
               "does the FLOPs of Eq. (1.2), with compute at mfu of the peak, and takes as long as the slower of "
               "the two. swap: the request's K/V (Eq. (2.1) per token, bf16) crosses the host link twice."),
            formulas=("evaluate", "prefill_flops", "kv_bytes_per_token"),
            edges=PREEMPT_EDGES,
        ),
    ),
)
