"""The serving engine: every request's tokens equal its generation alone, under any trace and policy;
prefix hits and chunked prefills equal a whole prefill; bad requests end cleanly; a long run leaves
the pool empty; replay prices a step with the book's formulas."""

from __future__ import annotations

import random

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples
from tiny_engine import CONFIG, MODEL, alone, engine

from minigpt import Sampling, costs, prefill
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.serving import Engine, EngineConfig, PrefixCache, Request, Status
from minigpt.serving.prefix_cache import block_hashes
from minigpt.serving.trace import poisson_trace

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


@st.composite
def traces(draw):
    """Requests with shared prefixes, random lengths, arrivals, stop sequences; and an engine's settings."""
    rng = random.Random(draw(st.integers(0, 2**16)))
    n = draw(st.integers(1, 7))
    stem = [rng.randrange(CONFIG.V) for _ in range(draw(st.integers(0, 12)))]  # a shared system prompt
    reqs = []
    for i in range(n):
        own = [rng.randrange(CONFIG.V) for _ in range(rng.randint(1, 14))]
        prompt = (stem[: rng.randint(0, len(stem))] + own)[: CONFIG.S_max - 16]
        stop = ()
        if rng.random() < 0.4:
            stop = (tuple(rng.randrange(CONFIG.V) for _ in range(rng.randint(1, 2))),)
        arrival = rng.choice([0.0, rng.random() * 1e-3])
        sampling = Sampling(stop=stop, include_stop=rng.random() < 0.5)
        reqs.append(Request(f"r{i}", tuple(prompt), rng.randint(1, 16), arrival_s=arrival, sampling=sampling))
    policy = draw(st.sampled_from(["static", "continuous"]))
    block_size = draw(st.integers(1, 5))
    need = max(-(-(r.P + r.max_new_tokens - 1) // block_size) for r in reqs)
    config = dict(policy=policy, max_batch=draw(st.integers(1, 4)), prefix_caching=draw(st.booleans()),
                  chunk_size=draw(st.none() | st.integers(1, 9)) if policy == "continuous" else None)
    num_blocks = need + draw(st.integers(0, need))  # tight pools force preemption
    return reqs, dict(num_blocks=num_blocks, block_size=block_size, **config)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces())
def test_every_request_equals_its_generation_alone(trace):
    """Static or continuous, chunked or not, with prefix hits and preemption: greedy tokens exactly as alone."""
    reqs, settings_ = trace
    e = engine(**settings_)
    out = e.run(reqs)
    for t in out:
        assert t.status is Status.FINISHED
        assert (t.tokens, t.reason) == alone(t.request)
        assert len(t.token_s) == len(t.generated) and t.token_s == sorted(t.token_s)
    e.close()
    assert e.pool.allocator.num_used == 0 and e.pool.sequences == []


def test_sampled_requests_draw_as_they_would_alone():
    reqs = [Request(f"s{i}", (1 + i, 2, 3, 4, 5)[: 2 + i], 12, sampling=Sampling(temperature=0.9, top_k=20, seed=i))
            for i in range(4)]
    out = engine(max_batch=3, chunk_size=4).run(reqs)
    assert [t.tokens for t in out] == [alone(r)[0] for r in reqs]


def test_a_prefix_hit_gives_the_logits_of_a_full_prefill():
    """A sequence started from cached blocks and prefilled on the rest: logits of a full prefill to fp32 rounding."""
    b = 4
    pool = PagedKVCache(CONFIG, num_blocks=16, block_size=b)
    cache = PrefixCache(pool)
    system = list(range(1, 10))  # 9 tokens: 2 full blocks and one partial
    first = pool.add_sequence()
    prefill(MODEL, torch.tensor([system + [20, 21]]), pool.batch([first]))
    for h, block in zip(block_hashes(system + [20, 21], b), pool.block_table(first), strict=False):
        cache.insert(h, block)
    prompt = system + [30, 31, 32]
    blocks = cache.match(block_hashes(prompt, b))
    assert len(blocks) == 2
    pool.free_sequence(first)  # the cached blocks outlive the request that computed them
    assert pool.allocator.num_used == 2 and cache.evictable == 2
    hit = pool.add_sequence_from(blocks, 2 * b)
    assert pool.length(hit) == 8 and pool.block_table(hit) == blocks and cache.evictable == 0
    logits = prefill(MODEL, torch.tensor([prompt[8:]]), pool.batch([hit]))
    full = prefill(MODEL, torch.tensor([prompt]), MODEL.new_cache(1))
    torch.testing.assert_close(logits, full, rtol=1e-5, atol=1e-5)
    assert torch.equal(logits.argmax(-1), full.argmax(-1))
    pool.free_sequence(hit)
    cache.clear()
    assert pool.allocator.num_used == 0


def test_add_sequence_from_checks_its_blocks():
    pool = PagedKVCache(CONFIG, num_blocks=4, block_size=4)
    seq = pool.add_sequence()
    pool.reserve([seq], 8)
    blocks = pool.block_table(seq)
    with pytest.raises(ValueError, match="7 tokens fill 2 blocks of 4, but 1 blocks were given"):
        pool.add_sequence_from(blocks[:1], 7)
    with pytest.raises(ValueError, match="block 3 is free"):
        pool.add_sequence_from([blocks[0], 3], 6)
    with pytest.raises(ValueError, match="S must be a non-negative integer"):
        pool.add_sequence_from([], -1)
    child = pool.add_sequence_from(blocks, 7)  # ends inside a shared block: the next write copies it
    assert pool.allocator.refcount(blocks[1]) == 2 and pool.blocks_needed(child, 1) == 1
    pool.free_sequence(child)
    pool.free_sequence(seq)
    assert pool.allocator.num_used == 0


def test_prefix_caching_serves_a_common_system_prompt_and_evicts_under_pressure():
    system = tuple(range(1, 17))  # 16 tokens = 4 blocks of 4
    reqs = [Request(f"u{i}", system + (20 + i, 21 + i), 4, arrival_s=0.01 * i) for i in range(6)]
    e = engine(num_blocks=24, block_size=4, prefix_caching=True, max_batch=2)
    out = e.run(reqs)
    assert [t.tokens for t in out] == [alone(r)[0] for r in reqs]
    assert out[0].cached_tokens == 0 and all(t.cached_tokens == 16 for t in out[1:])
    assert e.prefix_cache.hit_rate == pytest.approx(5 * 16 / sum(r.P for r in reqs))
    # A stream of different prompts needs the blocks back: the unreferenced cached ones are evicted.
    other = [Request(f"o{i}", tuple(30 + (i + j) % 9 for j in range(18)), 5) for i in range(8)]
    out = e.run(other)
    assert all(t.status is Status.FINISHED for t in out) and e.prefix_cache.evictions > 0
    e.close()
    assert e.pool.allocator.num_used == 0


def test_chunked_prefill_equals_a_whole_prefill():
    prompt = tuple((7 * j) % CONFIG.V for j in range(37))
    whole = engine(chunk_size=None).run([Request("a", prompt, 6)])[0]
    for chunk in (1, 3, 8, 16):
        chunked = engine(chunk_size=chunk).run([Request("a", prompt, 6)])[0]
        assert chunked.tokens == whole.tokens == alone(chunked.request)[0]


def test_a_long_prompt_is_spread_over_steps_that_keep_decoding():
    """With a token budget the running decodes get a token in every step of the long prompt's prefill."""
    short = Request("short", (1, 2, 3), 20)
    long = Request("long", tuple(j % 37 + 1 for j in range(40)), 3, arrival_s=1e-9)
    e = engine(chunk_size=8)
    e.submit(short)
    e.submit(long)
    widths = []
    while e.busy:
        chunks = e.step()
        if chunks:
            widths.append(sorted((c.tracked.request.id, c.T) for c in chunks))
    prefill_steps = [w for w in widths if ("long", 1) not in w and any(i == "long" for i, _ in w)]
    assert len(prefill_steps) >= 5  # 40 tokens in chunks of at most 7 next to the decode
    assert all(("short", 1) in w and sum(T for _, T in w) <= 8 for w in prefill_steps)
    assert e.requests["long"].tokens == alone(long)[0] and e.requests["short"].tokens == alone(short)[0]


def test_bad_requests_end_cleanly_and_harm_no_other():
    good = [Request(f"g{i}", (1 + i, 2, 3), 8, arrival_s=0.0) for i in range(3)]
    too_long = Request("too_long", tuple([1] * 49), 1)  # S_max = 48
    no_room = Request("no_room", tuple([1] * 40), 9)  # 48 positions: fits the model, not the pool below
    past_positions = Request("past", tuple([1] * 40), 10)  # 40 + 10 - 1 = 49 > S_max
    bad_token = Request("bad_token", (1, 2, 40), 2)
    long_stop = Request("long_stop", (4, 5), 3, sampling=Sampling(stop=((1, 2, 3, 4, 5, 6),)))
    e = engine(num_blocks=11, block_size=4)
    out = e.run([*good, too_long, no_room, past_positions, bad_token, long_stop])
    status = {t.request.id: (t.status, t.reason) for t in out}
    assert status["too_long"][0] is Status.REJECTED
    assert "P=49 tokens but the model has S_max=48" in status["too_long"][1]
    assert status["no_room"][0] is Status.REJECTED and "needs 12 KV blocks" in status["no_room"][1]
    assert status["past"][0] is Status.REJECTED and "allowed: max_new_tokens <= 9" in status["past"][1]
    assert status["bad_token"][0] is Status.REJECTED and "token id 40 is out of range" in status["bad_token"][1]
    assert status["long_stop"] == (Status.FINISHED, "max_new_tokens")  # a stop longer than the output never matches
    for t in out:
        if t.status is Status.FINISHED:
            assert (t.tokens, t.reason) == alone(t.request)
    assert e.pool.allocator.num_used == 0


def test_cancelled_requests_stop_and_free_their_blocks():
    reqs = [Request(f"c{i}", (3 + i, 4, 5, 6), 30, arrival_s=0.0) for i in range(3)]
    reqs.append(Request("late", (9, 9, 9), 5, arrival_s=0.0, cancel_s=0.0))  # cancelled on arrival
    reqs.append(Request("never", (9, 8), 5, arrival_s=10.0, cancel_s=1.0))  # cancelled before it arrives
    e = engine(max_batch=4)
    for r in reqs:
        e.submit(r)
    for _ in range(5):
        e.step()
    e.cancel("c1")
    while e.busy:
        e.step()
    c1 = e.requests["c1"]
    assert c1.status is Status.CANCELLED and 0 < len(c1.tokens) < 30
    assert c1.tokens == alone(c1.request)[0][: len(c1.tokens)]
    assert e.requests["late"].status is Status.CANCELLED and e.requests["never"].status is Status.CANCELLED
    for i in (0, 2):
        assert e.requests[f"c{i}"].tokens == alone(reqs[i])[0]
    assert e.pool.allocator.num_used == 0
    e.cancel("c1")  # cancelling an ended request does nothing
    with pytest.raises(KeyError, match="no request 'nope'"):
        e.cancel("nope")


def test_malformed_requests_name_the_parameter():
    with pytest.raises(ValueError, match="max_new_tokens must be an integer >= 1"):
        Request("z", (1, 2), 0)
    with pytest.raises(ValueError, match="prompt is empty"):
        Request("e", (), 3)
    with pytest.raises(ValueError, match="stop sequences must be non-empty"):
        Request("s", (1,), 3, sampling=Sampling(stop=((),)))
    with pytest.raises(ValueError, match="stop sequences must be token ids here"):
        Request("s", (1,), 3, sampling=Sampling(stop=("."),))
    with pytest.raises(ValueError, match="arrival_s must be a finite time"):
        Request("a", (1,), 3, arrival_s=-1.0)
    e = engine()
    e.submit(Request("x", (1,), 1))
    with pytest.raises(ValueError, match="request id 'x' is already in use"):
        e.submit(Request("x", (2,), 1))
    with pytest.raises(ValueError, match="chunk_size needs policy='continuous'"):
        engine(policy="static", chunk_size=4)
    with pytest.raises(ValueError, match="max_batch must be an integer >= 1"):
        engine(max_batch=0)


def test_static_batching_admits_nobody_into_a_running_batch():
    reqs = [Request("a", (1, 2), 10), Request("b", (3, 4), 2), Request("c", (5, 6), 2, arrival_s=1e-9)]
    e = engine(policy="static", max_batch=2)
    out = e.run(reqs)
    a, b, c = out
    assert c.token_s[0] > a.token_s[-1]  # c waited for the whole batch, though b left early
    e2 = engine(policy="continuous", max_batch=2)
    a2, b2, c2 = e2.run(reqs)
    assert c2.token_s[0] < a2.token_s[-1]  # continuous batching gave b's place to c
    assert [t.tokens for t in out] == [t.tokens for t in (a2, b2, c2)]


def test_replay_prices_a_decode_step_by_eq_7_2():
    llama, h100 = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
    e = Engine.replay(llama, h100, config=EngineConfig(max_batch=4))
    for i in range(4):
        e.submit(Request(f"r{i}", tuple([1] * 100), 3))
    first = e.step()  # the four prefills, one forward of [4, 100]
    flops = costs.evaluate(costs.prefill_flops, llama, P=100, B=4)
    expect = costs.roofline_time(flops=flops, bytes=costs.weight_bytes(N_params=llama.N_params, s=2),
                                 peak_flops=h100.peak_flops, bandwidth=h100.bandwidth)
    assert len(first) == 4 and e.now == pytest.approx(expect, rel=1e-12)
    before = e.now
    e.step()  # four decodes at S = 100
    step = costs.evaluate(costs.decode_step_time, llama, S=100, B=4, N_params=llama.N_params, s=2,
                          bandwidth=h100.bandwidth, peak_flops=h100.peak_flops)
    assert e.now - before == pytest.approx(step, rel=1e-12)


def test_a_few_thousand_requests_are_all_accounted_for():
    """Replay of Llama-2-7B on an H100 with a small pool: preemption, prefix hits, chunks, cancels, rejections."""
    llama, h100 = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
    reqs = poisson_trace(3000, rate=40.0, seed=1, P=(16, 600), D=(1, 200), system_prompt=64, V=llama.V,
                         cancel_share=0.02)
    reqs.append(Request("huge", tuple([1] * 5000), 10))  # past S_max = 4096
    e = Engine.replay(llama, h100, num_blocks=400, config=EngineConfig(max_batch=32, chunk_size=256,
                                                                       prefix_caching=True))
    out = e.run(reqs)
    counts = {s: sum(t.status is s for t in out) for s in Status}
    assert counts[Status.WAITING] == counts[Status.RUNNING] == 0
    assert counts[Status.FINISHED] + counts[Status.REJECTED] + counts[Status.CANCELLED] == len(reqs)
    assert counts[Status.REJECTED] >= 1 and counts[Status.CANCELLED] >= 1 and e.scheduler.preempted > 0
    assert all(len(t.generated) == t.request.max_new_tokens for t in out if t.status is Status.FINISHED)
    assert e.prefix_cache.hit_rate > 0
    e.close()
    assert e.pool.allocator.num_used == 0 and e.pool.sequences == []


def test_a_tiny_model_serves_two_thousand_requests():
    reqs = poisson_trace(2000, rate=5000.0, seed=2, P=(1, 20), D=(1, 12), system_prompt=8, V=CONFIG.V)
    e = engine(num_blocks=40, block_size=4, max_batch=8, chunk_size=16, prefix_caching=True)
    out = e.run(reqs)
    assert all(t.status is Status.FINISHED for t in out)
    sample = out[::97]
    assert [t.tokens for t in sample] == [alone(t.request)[0] for t in sample]
    assert e.log.intervals and sum(i.steps for i in e.log.intervals) > 0
    e.close()
    assert e.pool.allocator.num_used == 0


@pytest.mark.parametrize("prefix_caching", [False, True])
def test_preemption_by_recompute_keeps_every_token(prefix_caching):
    """Four requests whose outputs outgrow a pool that holds their prompts: the youngest are preempted
    and recomputed (with prefix caching, from their own cached blocks), and all tokens equal alone."""
    reqs = [Request(f"p{i}", tuple((3 * i + j) % 37 + 1 for j in range(6)), 24) for i in range(4)]
    e = engine(num_blocks=20, block_size=4, max_batch=4, prefix_caching=prefix_caching)
    out = e.run(reqs)
    assert e.scheduler.preempted > 0 and any(t.preemptions for t in out)
    assert [t.tokens for t in out] == [alone(r)[0] for r in reqs]
    if prefix_caching:
        assert e.prefix_cache.hits == 0  # the prompts share nothing ...
        assert any(t.recompute_hit_tokens for t in out)  # ... but a recompute found its own blocks still cached
    e.close()
    assert e.pool.allocator.num_used == 0


def test_the_committed_sweep_accounts_for_every_request():
    """The packaged serving_cpu.json: every run finished all its requests, and continuous batching's
    median TTFT is below static batching's at every load below the capacity (MiniGPT and replay)."""
    from minigpt.measure import sweeps

    data = sweeps.read_json("data/serving_cpu.json")

    def runs(node):
        if isinstance(node, dict):
            if "not_finished" in node:
                yield node
            for v in node.values():
                yield from runs(v)
        elif isinstance(node, list):
            for v in node:
                yield from runs(v)

    found = list(runs(data))
    assert len(found) > 50 and all(r["not_finished"] == 0 for r in found)
    for row in data["batching"]["runs"]:
        if row["load"] < 1:
            for mode in ("minigpt", "llama_h100"):
                assert row[f"{mode}_continuous"]["ttft_p50_s"] < row[f"{mode}_static"]["ttft_p50_s"]


def test_a_fused_mixed_step_is_priced_by_mixed_step_time():
    """Replay by default (fused, as the engine runs a step): a step of B decodes and a prompt chunk costs
    costs.mixed_step_time; T = 0 is Eq. (7.2) and B = 0 a prefill."""
    llama, h100 = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
    chip = dict(N_params=llama.N_params, s=2, bandwidth=h100.bandwidth, peak_flops=h100.peak_flops)
    e = Engine.replay(llama, h100, config=EngineConfig(max_batch=8, chunk_size=300))
    for i in range(3):
        e.submit(Request(f"d{i}", tuple([1] * 50), 100))
    e.step()  # three prefills of 50 tokens
    e.submit(Request("long", tuple([2] * 1000), 2, arrival_s=e.now))
    before = e.now
    chunks = e.step()  # three decodes at S = 50, then 297 prompt tokens
    assert sorted(c.T for c in chunks) == [1, 1, 1, 297]
    expect = costs.evaluate(costs.mixed_step_time, llama, T=297, B=3, S=50, **chip)
    assert e.now - before == pytest.approx(expect, rel=1e-12)
    before = e.now
    e.step()  # the next chunk starts after 297 cached prompt tokens; the decodes are at S = 51
    expect = costs.evaluate(costs.mixed_step_time, llama, T=297, S_prefix=297, B=3, S=51, **chip)
    assert e.now - before == pytest.approx(expect, rel=1e-12)
    decode = costs.evaluate(costs.decode_step_time, llama, S=77, B=5, **chip)
    assert costs.evaluate(costs.mixed_step_time, llama, B=5, S=77, **chip) == pytest.approx(decode, rel=1e-12)
    with pytest.raises(ValueError, match="T \\(prompt tokens\\) or B \\(decodes\\) must be >= 1"):
        costs.evaluate(costs.mixed_step_time, llama, **chip)


def test_the_unfused_replay_pays_a_weight_read_per_chunk_length():
    """fused=False prices the older executor: the chunk's forward and the decodes' forward, each reading the
    weights (kept for Chapter 14's comparison); the default prices one."""
    llama, h100 = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
    chip = dict(N_params=llama.N_params, s=2, bandwidth=h100.bandwidth, peak_flops=h100.peak_flops)
    times = {}
    for fused in (True, False):
        e = Engine.replay(llama, h100, fused=fused, config=EngineConfig(max_batch=8, chunk_size=300))
        for i in range(3):
            e.submit(Request(f"d{i}", tuple([1] * 50), 100))
        e.step()
        e.submit(Request("long", tuple([2] * 1000), 2, arrival_s=e.now))
        before = e.now
        e.step()  # three decodes at S = 50 and a 297-token chunk
        times[fused] = e.now - before
    apart = (costs.evaluate(costs.mixed_step_time, llama, T=297, **chip)
             + costs.evaluate(costs.mixed_step_time, llama, B=3, S=50, **chip))
    assert times[False] == pytest.approx(apart, rel=1e-12)
    assert times[True] == pytest.approx(costs.evaluate(costs.mixed_step_time, llama, T=297, B=3, S=50, **chip),
                                        rel=1e-12)
    assert times[False] > times[True]
