"""Grouped-query attention: H_kv shared key/value heads equal multi-head attention with those heads
repeated, and mean-pooling a checkpoint's K/V heads (GQA uptraining's starting point)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import MiniGPT, ModelConfig, costs, prefill
from minigpt.runtime.gqa import mean_pool_kv_heads, repeat_kv_heads
from minigpt.runtime.model import attention, causal_visible


@settings(max_examples=examples(20), deadline=None)
@given(H_kv=st.sampled_from([1, 2]), g=st.sampled_from([2, 4]), d_h=st.sampled_from([4, 8]), B=st.integers(2, 3),
       P=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_grouped_attention_equals_mha_with_repeated_kv_heads(H_kv, g, d_h, B, P, seed):
    """Equal up to fp32 rounding, and the same greedy tokens. Not bit for bit: the grouped path stacks the g
    query heads of a K/V head into one matrix (g·T rows), the MHA path multiplies T rows per head, and this
    CPU's GEMM rounds those shapes differently in the last bit (measured up to 4.8e-7 on unit-scale values)."""
    torch.manual_seed(seed)
    config = ModelConfig(L=2, H=H_kv * g, H_kv=H_kv, d_h=d_h, d_ffn=32, V=20, S_max=16)
    gqa = MiniGPT(config).eval()
    mha = repeat_kv_heads(gqa)
    tokens = torch.randint(0, 20, (B, P), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        a, b = gqa(tokens), mha(tokens)
    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    assert torch.equal(a.argmax(-1), b.argmax(-1))
    gqa_cache, mha_cache = gqa.new_cache(B), mha.new_cache(B)
    prefill(gqa, tokens, gqa_cache)
    prefill(mha, tokens, mha_cache)
    # The cache holds H_kv heads, not H: g times fewer bytes, Eq. (2.1) with H_kv.
    assert gqa_cache.nbytes * g == mha_cache.nbytes
    assert gqa_cache.nbytes == costs.kv_cache_bytes(L=2, H_kv=H_kv, d_h=d_h, s=4, S=16, B=B)


def test_mean_pooling_to_the_same_head_count_changes_nothing():
    torch.manual_seed(0)
    model = MiniGPT(ModelConfig(L=1, H=4, H_kv=4, d_h=8, d_ffn=32, V=20, S_max=8)).eval()
    same = mean_pool_kv_heads(model, 4)
    tokens = torch.randint(0, 20, (2, 6))
    with torch.no_grad():
        assert torch.equal(model(tokens), same(tokens))


def test_mean_pooling_averages_each_group():
    torch.manual_seed(0)
    model = MiniGPT(ModelConfig(L=1, H=4, H_kv=4, d_h=2, d_ffn=8, V=10, S_max=8))
    pooled = mean_pool_kv_heads(model, 2)
    assert pooled.config.H_kv == 2
    w = model.blocks[0].attn.qkv.weight  # rows: q (4 heads · 2), k (4 · 2), v (4 · 2)
    k = w[8:16].view(4, 2, -1)
    expected = torch.stack([k[0:2].mean(0), k[2:4].mean(0)]).view(4, -1)
    torch.testing.assert_close(pooled.blocks[0].attn.qkv.weight[8:12], expected)
    with pytest.raises(ValueError, match="H_kv must be a positive integer dividing the model's H_kv=4"):
        mean_pool_kv_heads(model, 3)


@settings(max_examples=examples(40), deadline=None)
@given(H_kv=st.sampled_from([1, 2, 4]), g=st.sampled_from([1, 2, 4]), T=st.integers(1, 6), S=st.integers(0, 9),
       B=st.integers(2, 3), seed=st.integers(0, 2**16))
def test_the_attention_function_with_repeated_heads(H_kv, g, T, S, B, seed):
    """The shared attention function: grouped K/V ≈ repeated K/V (fp32 rounding), exactly equal when g = 1."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H_kv * g, T, 8, generator=gen)
    k, v = torch.randn(B, H_kv, S + T, 8, generator=gen), torch.randn(B, H_kv, S + T, 8, generator=gen)
    visible = causal_visible(S, T, q.device)
    grouped = attention(q, k, v, visible)
    repeated = attention(q, k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1), visible)
    if g == 1:
        assert torch.equal(grouped, repeated)
    torch.testing.assert_close(grouped, repeated, rtol=1e-6, atol=1e-6)
