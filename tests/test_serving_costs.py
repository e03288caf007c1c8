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
