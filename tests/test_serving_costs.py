"""The serving formulas of Chapters 12 and 13 against what they count: Eq. (12.1) and Eq. (12.2) by exhaustive
enumeration of every batch of output lengths and against the engine's static batches in replay; Eq. (13.1)
against the engine's prefix hits in replay."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest

from minigpt import costs
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.serving import Engine, EngineConfig, Request

LLAMA, H100 = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
CHIP = dict(N_params=LLAMA.N_params, s=2, bandwidth=H100.bandwidth, peak_flops=H100.peak_flops)
CASES = [(1, 1, 5), (2, 1, 6), (3, 2, 7), (4, 1, 5), (3, 4, 4), (5, 3, 5)]  # (B, D_min, D_max)


def _batches(B: int, D_min: int, D_max: int):
    """Every batch of B output lengths, each equally likely."""
    return itertools.product(range(D_min, D_max + 1), repeat=B)


@pytest.mark.parametrize("B, D_min, D_max", CASES)
def test_eq_12_1_is_the_expected_longest_member(B, D_min, D_max):
    batches = list(_batches(B, D_min, D_max))
    steps = Fraction(sum(max(b) for b in batches), len(batches))
    tokens = Fraction(sum(sum(b) for b in batches), len(batches))
    assert costs.static_batch_steps(B=B, D_max=D_max, D_min=D_min) == pytest.approx(float(steps), rel=1e-12)
    assert costs.static_batch_utilisation(B=B, D_max=D_max, D_min=D_min) == pytest.approx(
        float(tokens / (B * steps)), rel=1e-12)


@pytest.mark.parametrize("B, D_min, D_max", CASES)
@pytest.mark.parametrize("S", [16, 3000])
def test_eq_12_2_prices_each_step_for_the_members_still_running(B, D_min, D_max, S):
    def step(m: int) -> float:
        return costs.evaluate(costs.decode_step_time, LLAMA, S=S, B=m, **CHIP)

    batches = list(_batches(B, D_min, D_max))
    seconds = sum(step(sum(D >= k for D in b)) for b in batches for k in range(1, max(b) + 1)) / len(batches)
    tokens = sum(sum(b) for b in batches) / len(batches)
    got = costs.evaluate(costs.static_batch_tok_s, LLAMA, S=S, B=B, D_min=D_min, D_max=D_max, **CHIP)
    assert got == pytest.approx(tokens / seconds, rel=1e-9)
    # One member, or equal outputs, fill every slot: continuous batching's full-batch rate, Eq. (7.2); else less.
    full = costs.evaluate(costs.decode_tok_s, LLAMA, S=S, B=B, **CHIP)
    if B == 1 or D_min == D_max:
        assert got == pytest.approx(full, rel=1e-12)
    else:
        assert got < full


def test_the_engine_s_static_batches_run_what_eq_12_1_counts():
    """A burst served by static batches in replay: each batch runs max D steps, with #{D_i >= k} members at step
    k, and over many batches the share of slots in use approaches Eq. (12.1)."""
    B, D_min, D_max, K = 8, 1, 32, 250
    rng = random.Random(0)
    reqs = [Request(f"r{i}", (1, 2, 3), rng.randint(D_min, D_max)) for i in range(B * K)]
    e = Engine.replay(LLAMA, H100, config=EngineConfig(policy="static", max_batch=B))
    for r in reqs:
        e.submit(r)
    members = []
    while e.busy:
        chunks = e.step()
        if chunks:
            members.append(len(chunks))
    expect = []
    for j in range(K):
        D = [r.max_new_tokens for r in reqs[j * B:(j + 1) * B]]
        expect += [sum(d >= k for d in D) for k in range(1, max(D) + 1)]
    assert members == expect
    used = sum(r.max_new_tokens for r in reqs) / (B * len(members))
    assert used == pytest.approx(costs.static_batch_utilisation(B=B, D_max=D_max, D_min=D_min), rel=0.02)
    assert used < 0.9  # far from full: the symptom itself


@pytest.mark.parametrize("S_prefix, T, saves", [(40, 4, False), (256, 64, True), (2048, 64, True), (3000, 500, True)])
def test_eq_13_1_is_the_ttft_of_a_prefix_hit_in_replay(S_prefix, T, saves):
    """Two requests with the same S_prefix-token head, one after the other on an idle engine: the first TTFT is
    Eq. (13.1)'s miss, the second its hit (the full blocks of the head served by the prefix cache). A short
    prompt's prefill is bound by the weight read either way, and the hit adds the cached K/V's read: no saving."""
    head = tuple(random.Random(1).randrange(LLAMA.V) for _ in range(S_prefix))
    e = Engine.replay(LLAMA, H100, config=EngineConfig(prefix_caching=True))
    first = e.run([Request("first", head + (7,) * T, 1)])[0]
    later = e.now + 1.0
    second = e.run([Request("second", head + (9,) * T, 1, arrival_s=later)])[0]
    want = costs.evaluate(costs.prefix_hit_ttft, LLAMA, S_prefix=S_prefix, T=T, block_size=16, **CHIP)
    assert first.token_s[0] - first.request.arrival_s == pytest.approx(want.miss_s, rel=1e-12)
    assert second.token_s[0] - second.request.arrival_s == pytest.approx(want.hit_s, rel=1e-12)
    assert want.cached_tokens == S_prefix // 16 * 16 and (want.saved_s > 0) == saves
    assert want.cached_bytes == costs.evaluate(costs.kv_cache_bytes, LLAMA, s=2, S=want.cached_tokens)


def test_bad_workloads_name_the_parameter():
    with pytest.raises(ValueError, match="D_min must be <= D_max"):
        costs.static_batch_utilisation(B=4, D_min=9, D_max=8)
    with pytest.raises(ValueError, match="B must be an integer >= 1"):
        costs.static_batch_steps(B=0, D_max=8)
    with pytest.raises(ValueError, match="T must be an integer >= 1"):
        costs.evaluate(costs.prefix_hit_ttft, LLAMA, S_prefix=64, T=0, **CHIP)


@pytest.mark.parametrize("T, S, B", [(1, 0, 1), (1, 37, 3), (2, 0, 1), (7, 5, 2), (64, 100, 1), (300, 0, 4)])
def test_causal_flops_count_the_keys_the_mask_lets_each_query_see(T, S, B):
    """`causal=True` prices a chunk's attention as causal kernels compute it: the keys MiniGPT's own causal mask
    (`causal_visible`) leaves visible, 4·d FLOPs each (scores and the weighted sum). Bugs caught: an
    off-by-one in T(T+1)/2 (a query not seeing itself, or seeing one past), the dense count kept, and a decode
    (T = 1) priced differently one way or the other."""
    import torch

    from minigpt.runtime.model import causal_visible

    d, shape = 64, dict(d=64, H_kv=4, d_h=16, d_ffn=256)
    mask = causal_visible(S, T, torch.device("cpu"))
    visible = T * (S + T) if mask is None else int(mask.sum())
    dense = costs.layer_flops(T=T, S=S, B=B, **shape)
    causal = costs.layer_flops(T=T, S=S, B=B, causal=True, **shape)
    assert dense - causal == 4 * B * d * (T * (S + T) - visible)
    assert (causal == dense) == (T == 1)
    assert type(causal) is int  # a float count (true division) would round beyond 2^53 FLOPs
    with pytest.raises(ValueError, match="causal must be True or False"):
        costs.layer_flops(T=T, S=S, causal=1, **shape)


def test_mfu_slows_the_compute_side_only():
    """F/(mfu·π): a compute-bound prefill takes exactly 1/mfu as long, a memory-bound decode not a bit longer; an
    mfu outside (0, 1] is refused by name. Bugs caught: mfu applied to the bytes too, or inverted (mfu·F/π)."""
    prefill = dict(T=4096, **CHIP)
    floor = costs.evaluate(costs.mixed_step_time, LLAMA, **prefill)
    assert costs.evaluate(costs.mixed_step_time, LLAMA, mfu=0.5, **prefill) == pytest.approx(2 * floor, rel=1e-12)
    decode = dict(B=1, S=1024, **CHIP)
    assert costs.evaluate(costs.mixed_step_time, LLAMA, mfu=0.5, **decode) == costs.evaluate(
        costs.mixed_step_time, LLAMA, **decode)
    for bad in (0, 1.5, True, "0.5"):
        with pytest.raises(ValueError, match="mfu must be a share of the peak in \\(0, 1\\]"):
            costs.evaluate(costs.mixed_step_time, LLAMA, mfu=bad, **prefill)
    hit = costs.evaluate(costs.prefix_hit_ttft, LLAMA, S_prefix=2048, T=64, mfu=0.5, causal=True, **CHIP)
    assert hit.miss_s == costs.evaluate(costs.mixed_step_time, LLAMA, T=2048 + 64, mfu=0.5, causal=True, **CHIP)


@pytest.mark.parametrize("mfu, causal", [(1.0, False), (0.5, True), (0.4, False)])
def test_the_replay_prices_a_mixed_step_with_its_mfu_and_causal_flops(mfu, causal):
    """Engine.replay(mfu=, causal=) prices each fused step as `mixed_step_time` with the same knobs (a prompt
    chunk after cached tokens included), so the chapters' replays and Eq. (13.1) agree. Bug caught: a knob
    accepted by the replay but not passed to the step's FLOPs or to the peak."""
    e = Engine.replay(LLAMA, H100, config=EngineConfig(max_batch=8, chunk_size=2048), mfu=mfu, causal=causal)
    for i in range(3):
        e.submit(Request(f"d{i}", tuple([1] * 50), 100))
    e.step()
    e.submit(Request("long", tuple([2] * 4000), 2, arrival_s=e.now))
    times = []
    for _ in range(2):
        before = e.now
        e.step()
        times.append(e.now - before)
    knobs = dict(mfu=mfu, causal=causal, **CHIP)
    first = costs.evaluate(costs.mixed_step_time, LLAMA, T=2045, B=3, S=50, **knobs)
    second = costs.evaluate(costs.mixed_step_time, LLAMA, T=1955, S_prefix=2045, B=3, S=51, **knobs)
    assert times == pytest.approx([first, second], rel=1e-12)
    with pytest.raises(ValueError, match="mfu must be"):
        Engine.replay(LLAMA, H100, mfu=0)
