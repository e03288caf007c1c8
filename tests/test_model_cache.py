"""Cache ≡ no cache, the cache as an object, and the model's shapes, over random configs."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import KVCache, MiniGPT, ModelConfig, generate


@st.composite
def configs(draw):
    H_kv = draw(st.sampled_from([1, 2, 4]))
    H = H_kv * draw(st.sampled_from([1, 2, 3]))
    return ModelConfig(
        L=draw(st.integers(1, 3)), H=H, H_kv=H_kv, d_h=draw(st.sampled_from([4, 8, 16])),
        d_ffn=draw(st.sampled_from([16, 64, 96])), V=draw(st.integers(5, 50)), S_max=32,
    )


def incremental_logits(model: MiniGPT, tokens: torch.Tensor, P: int) -> tuple[torch.Tensor, KVCache]:
    """Prefill P tokens into a cache, then feed the rest one at a time; logits for every position."""
    cache = model.new_cache(tokens.shape[0])
    parts = [model(tokens[:, :P], cache)]
    for i in range(P, tokens.shape[1]):
        parts.append(model(tokens[:, i : i + 1], cache))
    return torch.cat(parts, dim=1), cache


@settings(max_examples=examples(25), deadline=None)
@given(cfg=configs(), B=st.integers(1, 3), P=st.integers(1, 6), D=st.integers(1, 8), seed=st.integers(0, 99))
def test_cache_equals_no_cache_fp32(cfg, B, P, D, seed):
    torch.manual_seed(seed)
    model = MiniGPT(cfg).eval()
    tokens = torch.randint(0, cfg.V, (B, P + D))
    with torch.no_grad():
        full = model(tokens)
        inc, cache = incremental_logits(model, tokens, P)
    assert cache.S == P + D
    torch.testing.assert_close(inc, full, rtol=1e-5, atol=1e-5)


@settings(max_examples=examples(10), deadline=None)
@given(cfg=configs(), B=st.integers(1, 3), P=st.integers(1, 5), seed=st.integers(0, 99))
def test_greedy_tokens_identical_with_and_without_cache(cfg, B, P, seed):
    torch.manual_seed(seed)
    model = MiniGPT(cfg).eval()
    prompt = torch.randint(0, cfg.V, (B, P))
    with_cache = generate(model, prompt, 10, use_cache=True)
    without = generate(model, prompt, 10, use_cache=False)
    assert with_cache.tokens == without.tokens
    assert all(len(t) == 10 for t in with_cache.tokens)


def test_cache_equals_no_cache_bf16_within_stated_tolerance():
    """bf16 keeps 8 mantissa bits: cached and recomputed logits agree to ~1e-2 relative, not bitwise."""
    torch.manual_seed(0)
    model = MiniGPT(ModelConfig(H_kv=2)).eval().to(torch.bfloat16)
    tokens = torch.randint(0, 600, (2, 24))
    with torch.no_grad():
        full = model(tokens).float()
        inc, _ = incremental_logits(model, tokens, 8)
    torch.testing.assert_close(inc.float(), full, rtol=2e-2, atol=5e-2)


def test_cache_writes_rows_and_reads_only_the_valid_prefix():
    cfg = ModelConfig(L=2, H=2, H_kv=1, d_h=4, d_ffn=8, V=11, S_max=16)
    cache = KVCache(cfg, B=2)
    assert cache.k.shape == (2, 2, 1, 16, 4)  # [L, B, H_kv, S_max, d_h]
    k = torch.ones(2, 1, 3, 4)
    kk, vv = cache.update(1, k, 2 * k)
    assert kk.shape == (2, 1, 3, 4) and cache.S == 0  # S advances once every layer has written
    cache.advance(3)
    assert cache.S == 3 and torch.equal(cache.v[1, :, :, :3], 2 * k) and cache.k[1, :, :, 3:].abs().sum() == 0
    assert cache.bytes_used == 2 * 2 * 2 * 1 * 3 * 4 * 4
    assert cache.nbytes == 2 * 2 * 2 * 1 * 16 * 4 * 4
    cache.reset()
    assert cache.S == 0


def test_model_output_shapes_and_last_only():
    model = MiniGPT(ModelConfig(L=1, V=20, S_max=8))
    x = torch.randint(0, 20, (3, 5))
    assert model(x).shape == (3, 5, 20)
    out = model(x, last_only=True)
    assert out.shape == (3, 1, 20)
    torch.testing.assert_close(out[:, 0], model(x)[:, -1])


def test_parameter_count_matches_formula():
    from minigpt.costs import param_count

    for cfg in [ModelConfig(), ModelConfig(H=8, H_kv=2, d_h=8, d_ffn=100, V=37, S_max=50)]:
        model = MiniGPT(cfg)
        expected = param_count(L=cfg.L, d=cfg.d, d_ffn=cfg.d_ffn, H_kv=cfg.H_kv, d_h=cfg.d_h, V=cfg.V,
                               S_max=cfg.S_max)
        assert sum(p.numel() for p in model.parameters()) == expected


@pytest.mark.parametrize("dtype,s", [(torch.float32, 4), (torch.bfloat16, 2), (torch.float16, 2)])
def test_nbytes_equals_kv_formula(dtype, s):
    from minigpt.costs import kv_cache_bytes

    cfg = ModelConfig(H_kv=2)
    cache = KVCache(cfg, B=3, dtype=dtype)
    assert cache.s == s
    assert cache.nbytes == kv_cache_bytes(L=cfg.L, H_kv=cfg.H_kv, d_h=cfg.d_h, s=s, S=cfg.S_max, B=3)
