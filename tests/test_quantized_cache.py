"""The quantized KV cache: storage = formula, round-trip error ≤ half a step, and the model runs on it."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import MiniGPT, ModelConfig, costs, decode_step, prefill
from minigpt.runtime.quantized_cache import (
    FP8KVCache,
    QuantizedKVCache,
    dequantize,
    dequantize_per_channel,
    quantize,
    quantize_per_channel,
)


@st.composite
def configs(draw) -> ModelConfig:
    H_kv = draw(st.sampled_from([1, 2, 4]))
    H = H_kv * draw(st.sampled_from([1, 2]))
    d_h = draw(st.sampled_from([4, 8, 16, 32]))
    return ModelConfig(L=draw(st.integers(1, 3)), H=H, H_kv=H_kv, d_h=d_h, d_ffn=4 * H * d_h, V=30, S_max=24)


@settings(max_examples=examples(30), deadline=None)
@given(config=configs(), B=st.integers(1, 3), bits=st.sampled_from([8, 4]), data=st.data())
def test_allocated_bytes_equal_the_formula(config, B, bits, data):
    group_size = data.draw(st.sampled_from([g for g in (2, 4, 8, 16, 32) if config.d_h % g == 0]))
    cache = QuantizedKVCache(config, B, bits=bits, group_size=group_size)
    formula = costs.quantized_kv_bytes(L=config.L, H_kv=config.H_kv, d_h=config.d_h, S=config.S_max, B=B,
                                       bits=bits, group_size=group_size)
    assert cache.nbytes == formula
    if bits == 8 and group_size == config.d_h:
        assert formula == costs.int8_kv_bytes(L=config.L, H_kv=config.H_kv, d_h=config.d_h, S=config.S_max, B=B)


@settings(max_examples=examples(40), deadline=None)
@given(bits=st.sampled_from([8, 4]), group_size=st.sampled_from([2, 4, 8, 16]), seed=st.integers(0, 2**16),
       scale=st.floats(1e-3, 1e3))
def test_round_trip_error_is_at_most_half_a_step(bits, group_size, seed, scale):
    x = torch.randn(3, 5, 16, generator=torch.Generator().manual_seed(seed)) * scale
    codes, scales = quantize(x, bits=bits, group_size=group_size)
    back = dequantize(codes, scales, bits=bits, group_size=group_size, dtype=torch.float32)
    q_max = 2 ** (bits - 1) - 1
    step = x.abs().unflatten(-1, (-1, group_size)).amax(-1, keepdim=True) / q_max  # exact absmax / q_max
    error = (back - x).abs().unflatten(-1, (-1, group_size))
    # Half a step, plus the fp16 rounding of the scale itself (relative 2^-11 on each of up to q_max steps),
    # for every group whose scale is a normal fp16 number (>= 2^-14; trained K/V vectors are far above it).
    normal = step >= 2**-14
    assert bool((error <= step * (0.5 + q_max * 2**-10))[normal.expand_as(error)].all())


def test_the_first_layer_stores_exactly_the_quantized_rows_of_the_fp32_cache():
    torch.manual_seed(0)
    model = MiniGPT(ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=64, V=30, S_max=16)).eval()
    prompt = torch.randint(0, 30, (3, 7))
    for bits, group_size in ((8, 8), (4, 4)):
        plain, quant = model.new_cache(3), QuantizedKVCache(model.config, 3, bits=bits, group_size=group_size)
        prefill(model, prompt, plain)
        prefill(model, prompt, quant)
        opts = {"bits": bits, "group_size": group_size}
        codes, scales = quantize(plain.k[0, :, :, :7], **opts)  # layer 0 sees identical inputs
        assert torch.equal(codes, quant.k[0, :, :, :7]) and torch.equal(scales, quant.k_scale[0, :, :, :7])
        assert quant.S == 7 and quant.bytes_used == quant.nbytes * 7 // 16


def test_the_model_decodes_on_a_quantized_cache_close_to_fp32():
    torch.manual_seed(1)
    model = MiniGPT(ModelConfig(L=2, H=4, H_kv=2, d_h=16, d_ffn=64, V=30, S_max=16)).eval()
    prompt = torch.randint(0, 30, (2, 6))
    plain, quant = model.new_cache(2), QuantizedKVCache(model.config, 2, bits=8)
    a, b = prefill(model, prompt, plain), prefill(model, prompt, quant)
    token = a.argmax(-1)
    for _ in range(4):
        a, b = decode_step(model, token, plain), decode_step(model, token, quant)
        # int8 keeps each value within half a step of 1/127 of its vector's absmax: logits move by far less than 0.05
        assert (a - b).abs().max() < 0.05
        token = a.argmax(-1)


def test_bad_settings_name_the_parameter():
    config = ModelConfig(L=1, H=2, H_kv=1, d_h=6, d_ffn=8, V=10, S_max=8)
    with pytest.raises(ValueError, match="bits must be 8 or 4"):
        QuantizedKVCache(config, bits=3)
    with pytest.raises(ValueError, match="group_size must divide d_h=6"):
        QuantizedKVCache(config, bits=8, group_size=4)
    with pytest.raises(ValueError, match="int4 packs two values per byte"):
        QuantizedKVCache(config, bits=4, group_size=3)


# ---- keys per channel (KIVI) and FP8 E4M3 ----

OUTLIER = ModelConfig(L=1, H=1, H_kv=1, d_h=16, d_ffn=16, V=10, S_max=64)
OUTLIER_CHANNEL = 5


def keys_with_an_outlier_channel(T: int = 32, seed: int = 0) -> torch.Tensor:
    """Keys `[1, 1, T, d_h]` of N(0, 1) but for one channel that is 30 ± 1 in every token: the pattern KIVI found
    in real models' keys (a few large channels), which a per-token scale spreads over every channel."""
    k = torch.randn(1, 1, T, OUTLIER.d_h, generator=torch.Generator().manual_seed(seed))
    k[..., OUTLIER_CHANNEL] += 30.0
    return k


def normal_channel_error(cache: QuantizedKVCache, k: torch.Tensor) -> tuple[float, float]:
    """(max error on the channels without the outlier, the per-channel half-step bound there) after one write."""
    got, _ = cache.update(0, k, torch.randn_like(k))
    normal = [c for c in range(OUTLIER.d_h) if c != OUTLIER_CHANNEL]
    q_max = 2 ** (cache.bits - 1) - 1
    G = cache.token_group
    step = k.abs().unflatten(-2, (-1, G)).amax(-2, keepdim=True) / q_max  # per block and channel
    bound = (step * (0.5 + q_max * 2**-10)).expand(*k.shape[:2], -1, G, -1).flatten(-3, -2)
    err = (got - k).abs()
    return float(err[..., normal].max()), float(bound[..., normal].max())


@pytest.mark.parametrize("bits", [8, 4])
def test_keys_per_channel_isolate_an_outlier_channel(bits):
    """Per channel, the other channels keep steps set by their own range (≈ 3/q_max), within half a step;
    per token, the outlier sets every channel's step (≈ 31/q_max), ten times coarser."""
    k = keys_with_an_outlier_channel()
    channel, bound = normal_channel_error(QuantizedKVCache(OUTLIER, bits=bits, key_axis="channel"), k)
    token, _ = normal_channel_error(QuantizedKVCache(OUTLIER, bits=bits, group_size=16), k)
    assert channel <= bound, f"per-channel keys off by {channel:.3g} > half a step {bound:.3g}"
    assert token > 3 * bound, "the per-token layout should lose the normal channels to the outlier's scale"


def test_a_cache_that_quantizes_keys_per_token_fails_the_outlier_test(monkeypatch):
    """The mutant: `key_axis="channel"` silently storing keys per token, as the values are. It must fail the
    bound of the test above."""
    import minigpt.runtime.quantized_cache as qc

    def keys_per_token(self, layer, k_new):
        codes, scales = qc.quantize(k_new, bits=self.bits, group_size=self.group_size)
        return qc.dequantize(codes, scales, bits=self.bits, group_size=self.group_size, dtype=self.dtype)

    monkeypatch.setattr(qc.QuantizedKVCache, "_update_keys_per_channel", keys_per_token)
    for bits in (8, 4):
        err, bound = normal_channel_error(QuantizedKVCache(OUTLIER, bits=bits, group_size=16, key_axis="channel"),
                                          keys_with_an_outlier_channel())
        assert err > bound


@settings(max_examples=examples(30), deadline=None)
@given(bits=st.sampled_from([8, 4]), G=st.sampled_from([1, 4, 8]), seed=st.integers(0, 2**16),
       scale=st.floats(1e-2, 1e2))
def test_per_channel_round_trip_and_scale_shape(bits, G, seed, scale):
    x = torch.randn(2, 3, 16, 8, generator=torch.Generator().manual_seed(seed)) * scale  # [B, H_kv, T, d_h]
    codes, scales = quantize_per_channel(x, bits=bits, token_group=G)
    assert scales.shape == (2, 3, 16 // G, 8) and scales.dtype == torch.float16  # per block and channel
    assert codes.shape == ((2, 3, 16, 8) if bits == 8 else (2, 3, 16, 4))
    back = dequantize_per_channel(codes, scales, bits=bits, token_group=G, dtype=torch.float32)
    q_max = 2 ** (bits - 1) - 1
    step = x.abs().unflatten(-2, (-1, G)).amax(-2, keepdim=True) / q_max
    error = (back - x).abs().unflatten(-2, (-1, G))
    normal = (step >= 2**-14).expand_as(error)  # fp16 scales above the subnormal range, as in the test above
    assert bool((error <= step * (0.5 + q_max * 2**-10))[normal].all())


@settings(max_examples=examples(20), deadline=None)
@given(chunks=st.lists(st.integers(1, 9), min_size=1, max_size=8), bits=st.sampled_from([8, 4]),
       G=st.sampled_from([2, 4, 8]), cut=st.integers(0, 60), seed=st.integers(0, 999))
def test_per_channel_keys_written_in_chunks_equal_one_quantization(chunks, bits, G, cut, seed):
    """Whatever the chunking (prefill, decode steps, verify passes), the keys read back are the whole blocks
    quantized per channel and the unfilled block as written; after a rewind inside a quantized block and a
    rewrite, the kept rows are still within half a step; `bytes_used` counted on the tensors = Eq. (10.2)."""
    S = sum(chunks)
    k = torch.randn(2, 1, S, OUTLIER.d_h, generator=torch.Generator().manual_seed(seed))
    cache = QuantizedKVCache(OUTLIER, 2, bits=bits, key_axis="channel", token_group=G)
    at = 0
    for T in chunks:
        got, _ = cache.update(0, k[:, :, at : at + T], k[:, :, at : at + T])
        cache.advance(T)
        at += T
    full = S // G * G
    codes, scales = quantize_per_channel(k[:, :, :full], bits=bits, token_group=G)
    expected = torch.cat([dequantize_per_channel(codes, scales, bits=bits, token_group=G, dtype=torch.float32),
                          k[:, :, full:]], dim=2)
    assert torch.equal(got, expected)
    c = OUTLIER
    assert cache.bytes_used == costs.kivi_kv_bytes(L=c.L, H_kv=c.H_kv, d_h=c.d_h, S=S, B=2, bits=bits,
                                                   group_size=cache.group_size, token_group=G, s=4)
    keep = min(cut, S)
    cache.truncate(keep)
    got, _ = cache.update(0, k[:, :, keep:S], k[:, :, keep:S])
    q_max = 2 ** (bits - 1) - 1
    assert (got - k[:, :, :S]).abs().max() <= 2 * k.abs().max() / q_max  # within two steps of the originals


def test_fp8_cache_round_trip_and_bytes():
    """E4M3 keeps 3 mantissa bits: relative error ≤ 2^-4 for values above the subnormal range, and the per-layer
    scale is set once, by the first write (later values beyond 448·scale saturate, as in vLLM)."""
    torch.manual_seed(0)
    config = ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=32, V=30, S_max=16)
    cache = FP8KVCache(config, 3)
    k, v = torch.randn(3, 2, 5, 8) * 4, torch.randn(3, 2, 5, 8)
    got_k, got_v = cache.update(1, k, v)
    for x, got, scale in ((k, got_k, cache.k_scale[1]), (v, got_v, cache.v_scale[1])):
        normal = x.abs() >= 2**-6 * scale
        assert ((got - x).abs() <= 2**-4 * x.abs())[normal].all()
        assert ((got - x).abs() <= 2**-10 * scale)[~normal].all()
    assert float(cache.k_scale[1]) == pytest.approx(float(k.abs().max()) / 200)
    assert float(cache.v_scale[1]) == pytest.approx(float(v.abs().max()) / 100)
    assert cache.k.dtype == torch.float8_e4m3fn and cache.k.element_size() == 1
    cache.advance(5)
    scale = float(cache.k_scale[1])
    big = torch.full((3, 2, 1, 8), 1000 * scale)
    got_k, _ = cache.update(1, big, big)
    assert float(cache.k_scale[1]) == scale and got_k[:, :, -1].max() == pytest.approx(448 * scale)
    assert cache.bytes_used == costs.fp8_kv_bytes(L=2, H_kv=2, d_h=8, S=5, B=3)
    assert cache.nbytes == costs.fp8_kv_bytes(L=2, H_kv=2, d_h=8, S=16, B=3)


@pytest.mark.parametrize("make", [
    lambda c: QuantizedKVCache(c, 2, bits=8, key_axis="channel", token_group=4),
    lambda c: QuantizedKVCache(c, 2, bits=4, key_axis="channel", token_group=4),
    lambda c: FP8KVCache(c, 2),
])
def test_the_model_decodes_on_the_new_formats_close_to_fp32(make):
    torch.manual_seed(1)
    model = MiniGPT(ModelConfig(L=2, H=4, H_kv=2, d_h=16, d_ffn=64, V=30, S_max=16)).eval()
    prompt = torch.randint(0, 30, (2, 6))
    plain, quant = model.new_cache(2), make(model.config)
    a, b = prefill(model, prompt, plain), prefill(model, prompt, quant)
    token = a.argmax(-1)
    for _ in range(6):  # crosses block boundaries (token_group 4) at S = 8 and 12
        a, b = decode_step(model, token, plain), decode_step(model, token, quant)
        assert (a - b).abs().max() < 0.3
        token = a.argmax(-1)


def test_bad_layouts_name_the_parameter():
    with pytest.raises(ValueError, match="key_axis must be one of"):
        QuantizedKVCache(OUTLIER, key_axis="head")
    with pytest.raises(ValueError, match="token_group must be an integer >= 1"):
        QuantizedKVCache(OUTLIER, key_axis="channel", token_group=0)
    with pytest.raises(ValueError, match="must fill whole blocks of token_group=4"):
        quantize_per_channel(torch.zeros(1, 6, 8), bits=8, token_group=4)


@pytest.mark.parametrize("layout,bits,make", [
    ("per_token", 8, lambda c, B: QuantizedKVCache(c, B, bits=8)),
    ("per_token", 4, lambda c, B: QuantizedKVCache(c, B, bits=4, group_size=4)),
    ("kivi", 8, lambda c, B: QuantizedKVCache(c, B, bits=8, key_axis="channel", token_group=4)),
    ("kivi", 4, lambda c, B: QuantizedKVCache(c, B, bits=4, key_axis="channel", token_group=4)),
    ("fp8", 8, lambda c, B: FP8KVCache(c, B)),
])
def test_each_layout_by_name_is_the_bytes_its_cache_holds(layout, bits, make):
    """`costs.kv_storage_bytes` (Chapter 10's explorer) names each layout: its bytes for S = 7 tokens (a KIVI
    block and a residual of 3) equal what a cache of that layout counts on its tensors. A layout mapped to
    another's formula fails here (KIVI's keys cost more than per-token ones at int4, FP8 has no group scales)."""
    config = ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=32, V=30, S_max=16)
    cache = make(config, 3)
    k = torch.randn(3, 2, 7, 8, generator=torch.Generator().manual_seed(0))
    for layer in range(config.L):
        cache.update(layer, k, k)
    cache.advance(7)
    group = None if layout == "fp8" else getattr(cache, "group_size", None)
    extra = dict(token_group=4, s=4) if layout == "kivi" else {}
    assert cache.bytes_used == costs.kv_storage_bytes(L=2, H_kv=2, d_h=8, S=7, B=3, layout=layout, bits=bits,
                                                      group_size=group, **extra)


def test_the_repr_names_the_format_and_the_key_axis():
    """What a reader prints in a chapter: bits, group, and the per-channel key blocks only when keys are
    quantized per channel (a repr that wrote `None` in their place, or omitted them, would mislead)."""
    config = ModelConfig(L=1, H=2, H_kv=1, d_h=4, d_ffn=16, V=11, S_max=16)
    token = repr(QuantizedKVCache(config, 2, group_size=4))
    channel = repr(QuantizedKVCache(config, 2, bits=4, group_size=4, key_axis="channel", token_group=4))
    assert token.startswith("QuantizedKVCache(int8, group_size=4, L=1, B=2, H_kv=1, S=0/16, d_h=4, ")
    assert channel.startswith("QuantizedKVCache(int4, group_size=4, keys per channel in blocks of 4, L=1, B=2, ")
