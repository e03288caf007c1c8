"""Tiled attention with an online softmax (FlashAttention) equals the plain attention and torch's fused SDPA,
for a prefill and for a chunk after a cache; its FLOPs, with the causal tiles skipped, equal the formula.

Tolerance (fp32): rtol = atol = 1e-5. The tiled kernel sums exp(score − m)·v in another order than the plain
softmax and rescales its running sums once per key tile (one more rounding each, relative error ~ 2⁻²⁴ ≈ 6e-8
per operation); over ≤ 128 keys in tiles of ≥ 1 key that is at most a few hundred roundings of unit-scale
values, ≲ 1e-5; measured over 300 random shapes: at most 9.5e-7 against the plain path, 1.2e-6 against
SDPA. Whole-model logits agree within the same tolerance.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import MiniGPT, ModelConfig, costs
from minigpt.measure.counting import count_flops
from minigpt.runtime.attention import flash_attention, use_attention
from minigpt.runtime.model import attention, causal_visible

TOL = dict(rtol=1e-5, atol=1e-5)


def qkv(B, H, H_kv, T, S, d_h, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T, d_h, generator=g)
    k = torch.randn(B, H_kv, S + T, d_h, generator=g)
    v = torch.randn(B, H_kv, S + T, d_h, generator=g)
    return q, k, v


def sdpa(q, k, v, S):
    """torch's reference: K/V heads repeated for the g query heads, the offset causal mask as a boolean mask."""
    g = q.shape[1] // k.shape[1]
    mask = causal_visible(S, q.shape[2], q.device)
    return F.scaled_dot_product_attention(
        q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1), attn_mask=None if mask is None else mask[:, None]
    )


shapes = dict(B=st.integers(2, 3), H_kv=st.sampled_from([1, 2]), g=st.sampled_from([1, 2]),
              T=st.integers(1, 40), S=st.integers(0, 40), d_h=st.sampled_from([4, 8, 16]),
              block_q=st.integers(1, 20), block_k=st.integers(1, 20), seed=st.integers(0, 2**16))


@settings(max_examples=examples(60), deadline=None)
@given(**shapes)
def test_tiled_equals_plain_and_sdpa(B, H_kv, g, T, S, d_h, block_q, block_k, seed):
    """S = 0 is a prefill, S > 0 a chunk of T tokens after S cached ones (the offset mask)."""
    q, k, v = qkv(B, H_kv * g, H_kv, T, S, d_h, seed)
    tiled = flash_attention(q, k, v, causal=True, block_q=block_q, block_k=block_k)
    torch.testing.assert_close(tiled, attention(q, k, v, causal_visible(S, T, q.device)), **TOL)
    torch.testing.assert_close(tiled, sdpa(q, k, v, S), **TOL)


@settings(max_examples=examples(20), deadline=None)
@given(**shapes)
def test_non_causal_tiles_equal_full_attention(B, H_kv, g, T, S, d_h, block_q, block_k, seed):
    q, k, v = qkv(B, H_kv * g, H_kv, T, S, d_h, seed)
    tiled = flash_attention(q, k, v, causal=False, block_q=block_q, block_k=block_k)
    torch.testing.assert_close(tiled, attention(q, k, v, None), **TOL)


@pytest.mark.parametrize("T,S,block_q,block_k", [(64, 0, 16, 16), (50, 13, 16, 8), (7, 100, 4, 32), (33, 0, 1, 5)])
def test_flops_counted_with_and_without_tile_skipping(T, S, block_q, block_k):
    B, H, H_kv, d_h = 2, 4, 2, 8
    q, k, v = qkv(B, H, H_kv, T, S, d_h, 0)
    for causal in (True, False):
        counted = count_flops(lambda c=causal: flash_attention(q, k, v, causal=c, block_q=block_q, block_k=block_k))
        assert counted == costs.tiled_attention_flops(T=T, S=S, d_h=d_h, H=H, B=B, block_q=block_q,
                                                      block_k=block_k, causal=causal)
    full = count_flops(lambda: attention(q, k, v, causal_visible(S, T, q.device)))
    assert full == costs.tiled_attention_flops(T=T, S=S, d_h=d_h, H=H, B=B, causal=False)  # the plain path: all
    skipped = costs.tiled_attention_flops(T=T, S=S, d_h=d_h, H=H, B=B, block_q=block_q, block_k=block_k)
    exact_triangle = 4 * B * H * d_h * sum(S + i + 1 for i in range(T))
    assert exact_triangle <= skipped <= full


def test_skipping_approaches_half_at_long_prefill():
    """At S = 0 the skipped kernel computes ≈ (1/2 + b/2P) of the square: a prefill's causal saving."""
    f = lambda causal: costs.tiled_attention_flops(T=1024, d_h=64, block_q=64, block_k=64, causal=causal)  # noqa: E731
    assert f(True) / f(False) == pytest.approx(0.5 + 64 / (2 * 1024))


@settings(max_examples=examples(15), deadline=None)
@given(B=st.integers(2, 3), P=st.integers(1, 30), chunk=st.integers(1, 10), block=st.integers(1, 12),
       H_kv=st.sampled_from([1, 2, 4]), seed=st.integers(0, 2**16))
def test_minigpt_with_the_flash_kernel(B, P, chunk, block, H_kv, seed):
    """The whole model: logits with the tiled kernel equal the default path's, prefill then a chunk via the cache."""
    torch.manual_seed(seed)
    config = ModelConfig(L=2, H=4, H_kv=H_kv, d_h=8, d_ffn=32, V=40, S_max=48)
    plain = MiniGPT(config).eval()
    flash = use_attention(MiniGPT(config).eval(), "flash", block_q=block, block_k=block + 1)
    flash.load_state_dict(plain.state_dict())
    tokens = torch.randint(0, 40, (B, P + chunk), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        caches = plain.new_cache(B), flash.new_cache(B)
        first = [m(tokens[:, :P], c) for m, c in zip((plain, flash), caches, strict=True)]
        second = [m(tokens[:, P:], c) for m, c in zip((plain, flash), caches, strict=True)]
    for a, b in (first, second):
        torch.testing.assert_close(b, a, **TOL)


def test_the_default_path_is_unchanged():
    model = MiniGPT(ModelConfig(L=1, V=20, S_max=8))
    assert model.blocks[0].attn.kernel is attention
    use_attention(model, "flash")
    assert model.blocks[0].attn.kernel is not attention
    assert MiniGPT(ModelConfig(L=1, V=20, S_max=8)).blocks[0].attn.kernel is attention  # per model, not global
    use_attention(model, "plain")
    assert model.blocks[0].attn.kernel is attention


@pytest.mark.parametrize("kernel,options,match", [
    ("fast", {}, "kernel must be one of"),
    ("flash", {"block_q": 0}, "block_q must be an integer >= 1"),
    ("flash", {"splits": 2}, "takes options"),
    ("flash_decoding", {"splits": 0}, "splits must be an integer >= 1"),
])
def test_bad_kernel_choices_are_named(kernel, options, match):
    with pytest.raises(ValueError, match=match):
        use_attention(MiniGPT(ModelConfig(L=1, V=20, S_max=8)), kernel, **options)


def test_bad_block_sizes_are_named():
    q, k, v = qkv(1, 2, 2, 4, 0, 4, 0)
    with pytest.raises(ValueError, match="block_k must be an integer >= 1"):
        flash_attention(q, k, v, block_k=0)
    with pytest.raises(ValueError, match="block_q must be an integer >= 1"):
        costs.tiled_attention_flops(T=4, d_h=4, block_q=0)


def test_hbm_model_orders_of_theorem_2():
    """Standard grows as P² (its score matrix); Flash as P²·d_h²/M: 4× the SRAM, ≈ 4× fewer bytes at long P."""
    std = [costs.standard_attention_hbm_bytes(P=P, d_h=64, s=2) for P in (1024, 2048)]
    assert std[1] / std[0] == pytest.approx(4, rel=0.05)
    small, big = (costs.flash_attention_hbm_bytes(P=16384, d_h=64, s=2, sram_bytes=m) for m in (2**15, 2**17))
    assert small / big == pytest.approx(4, rel=0.1)
    assert costs.flash_attention_hbm_bytes(P=4096, d_h=128, s=2, sram_bytes=192 * 1024) < std[0] * 16
    with pytest.raises(ValueError, match="sram_bytes must hold"):
        costs.flash_attention_hbm_bytes(P=8, d_h=64, s=2, sram_bytes=100)
    assert math.isfinite(costs.flash_attention_hbm_bytes(P=1, d_h=1, s=1, sram_bytes=4))


def test_hbm_saving_is_the_ratio_and_tends_to_its_limit():
    """The saving is standard over flash bytes; at long P, 4P² over (P/B_c)·P·(3d_h + 4) with B_c = M/(4d_h):
    M/(d_h·(3d_h + 4)) for M values of SRAM, ≈ M/(3d_h²)."""
    args = dict(P=8192, d_h=64, s=2, sram_bytes=192 * 1024)
    assert costs.flash_attention_hbm_saving(**args) == (
        costs.standard_attention_hbm_bytes(P=8192, d_h=64, s=2, H=8, B=3)
        / costs.flash_attention_hbm_bytes(**args, H=8, B=3))
    M = 2**20 // 2
    assert costs.flash_attention_hbm_saving(P=2**20, d_h=64, s=2, sram_bytes=2**20) == pytest.approx(
        M / (64 * (3 * 64 + 4)), rel=0.01)
