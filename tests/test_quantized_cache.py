"""The quantized KV cache: storage = formula, round-trip error ≤ half a step, and the model runs on it."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from minigpt import MiniGPT, ModelConfig, costs, decode_step, prefill
from minigpt.runtime.quantized_cache import QuantizedKVCache, dequantize, quantize


@st.composite
def configs(draw) -> ModelConfig:
    H_kv = draw(st.sampled_from([1, 2, 4]))
    H = H_kv * draw(st.sampled_from([1, 2]))
    d_h = draw(st.sampled_from([4, 8, 16, 32]))
    return ModelConfig(L=draw(st.integers(1, 3)), H=H, H_kv=H_kv, d_h=d_h, d_ffn=4 * H * d_h, V=30, S_max=24)


@settings(max_examples=30, deadline=None)
@given(config=configs(), B=st.integers(1, 3), bits=st.sampled_from([8, 4]), data=st.data())
def test_allocated_bytes_equal_the_formula(config, B, bits, data):
    group_size = data.draw(st.sampled_from([g for g in (2, 4, 8, 16, 32) if config.d_h % g == 0]))
    cache = QuantizedKVCache(config, B, bits=bits, group_size=group_size)
    formula = costs.quantized_kv_bytes(L=config.L, H_kv=config.H_kv, d_h=config.d_h, S=config.S_max, B=B,
                                       bits=bits, group_size=group_size)
    assert cache.nbytes == formula
    if bits == 8 and group_size == config.d_h:
        assert formula == costs.int8_kv_bytes(L=config.L, H_kv=config.H_kv, d_h=config.d_h, S=config.S_max, B=B)


@settings(max_examples=40, deadline=None)
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
