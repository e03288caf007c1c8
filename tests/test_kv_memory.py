"""Chapter 11's memory experiments: policy utilisation by hand, the b − 1 bound, prompt sharing with
fork measured on the real paged cache, and sequences per budget with the real caches."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import MiniGPT, ModelConfig, costs
from minigpt.measure import kv_memory as km

CONFIG = ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=64, V=40, S_max=64)


def test_utilisation_of_one_request_by_hand():
    r = km.Request(P=3, D=2)  # holds 3 then 4 tokens during its two steps
    assert km.utilisation([r], policy="max", S_max=10) == pytest.approx(7 / 20)
    assert km.utilisation([r], policy="exact", S_max=10) == pytest.approx(7 / 10)
    assert km.utilisation([r], policy="paged", S_max=10, block_size=2) == pytest.approx(7 / (4 + 4))
    with pytest.raises(ValueError, match="policy must be"):
        km.utilisation([r], policy="lazy", S_max=10)


@settings(max_examples=examples(40), deadline=None)
@given(b=st.integers(1, 64), S=st.integers(1, 5000))
def test_paged_slack_is_at_most_b_minus_one(b, S):
    slack = costs.paged_slack_tokens(S=S, block_size=b)
    assert 0 <= slack <= km.paged_waste_bound(block_size=b) == b - 1


@settings(max_examples=examples(20), deadline=None)
@given(seed=st.integers(0, 1000), b=st.sampled_from([1, 4, 16, 64]))
def test_preallocation_never_beats_exact_reservation_and_b1_paging_is_perfect(seed, b):
    requests = km.request_lengths(50, S_max=512, P_median=40, D_median=60, seed=seed)
    assert all(1 <= r.P and 1 <= r.D and r.S <= 512 for r in requests)
    u = {p: km.utilisation(requests, policy=p, S_max=512, block_size=b) for p in km.POLICIES}
    assert 0 < u["max"] <= u["exact"] <= 1
    assert u["paged"] <= 1
    if b == 1:
        assert u["paged"] == 1


def test_n_samples_sharing_a_prompt_save_its_full_blocks():
    """Forked samples share the prompt's full blocks; the partly filled last block is copied on write."""
    torch.manual_seed(0)
    model = MiniGPT(CONFIG).eval()
    prompt = torch.arange(1, 22)  # P = 21: one full block of 16 and a partial one
    n, D, b = 4, 6, 16
    per_block = 2 * CONFIG.L * CONFIG.H_kv * b * CONFIG.d_h * 4
    alone = km.shared_prompt_bytes(model, prompt, n=n, D=D, block_size=b, share=False)
    shared = km.shared_prompt_bytes(model, prompt, n=n, D=D, block_size=b, share=True)
    assert alone == n * costs.paged_blocks(S=21 + D, block_size=b) * per_block
    saved = costs.paged_fork_saved_blocks(P=21, n=n, block_size=b)
    assert alone - shared == (n - 1) * (21 // b) * per_block == saved * per_block
    with pytest.raises(ValueError, match="n must be"):
        costs.paged_fork_saved_blocks(P=21, n=0, block_size=b)


def test_concurrent_sequences_with_the_real_caches():
    per_token = costs.kv_bytes_per_token(L=CONFIG.L, H_kv=CONFIG.H_kv, d_h=CONFIG.d_h, s=4)
    budget = per_token * CONFIG.S_max * 5  # five full-length slots
    lengths = [10, 30, 5, 64, 17, 8, 40, 3, 25, 50, 12, 9]
    slots = km.concurrent_sequences(CONFIG, budget_bytes=budget, lengths=lengths, paged=False)
    assert slots.sequences == 5 and slots.tokens == sum(lengths[:5])
    paged = km.concurrent_sequences(CONFIG, budget_bytes=budget, lengths=lengths, paged=True, block_size=8)
    blocks, admitted = budget // (per_token * 8), 0
    for S in lengths:  # the greedy prefix whose blocks fit
        blocks -= costs.paged_blocks(S=S, block_size=8)
        if blocks < 0:
            break
        admitted += 1
    assert paged.sequences == admitted > slots.sequences
    assert paged.bytes_reserved <= budget
    with pytest.raises(ValueError, match="does not hold one"):
        km.concurrent_sequences(CONFIG, budget_bytes=10, lengths=[1], paged=True)
