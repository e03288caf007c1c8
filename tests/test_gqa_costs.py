"""Chapter 9's accounting: GQA shrinks the K/V projections as well as the cache (Eqs. 9.2-9.3), and the
fit check of Eq. (9.4). Each formula is set against a count: parameters of real MiniGPT modules, bytes
summed by hand, the smallest chip count found by trying."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import MiniGPT, ModelConfig, costs
from minigpt.costs.presets import HARDWARE, MODELS


def _params(config: ModelConfig) -> int:
    with torch.device("meta"):
        return sum(p.numel() for p in MiniGPT(config).parameters())


@settings(max_examples=examples(15), deadline=None)
@given(L=st.integers(1, 3), H_kv=st.sampled_from([1, 2, 4]), g=st.sampled_from([1, 2, 4]),
       d_h=st.sampled_from([4, 8]), new=st.sampled_from([1, 2, 4, 8]))
def test_kv_heads_params_counts_a_real_models_parameters(L, H_kv, g, d_h, new):
    """Catches: GQA accounting that keeps N fixed (the erratum this replaces), or that forgets the
    K/V biases MiniGPT has (N off by 2·L·d_h·ΔH_kv)."""
    H = H_kv * g
    if H % new:
        return
    config = ModelConfig(L=L, H=H, H_kv=H_kv, d_h=d_h, d_ffn=24, V=30, S_max=8)
    other = ModelConfig(L=L, H=H, H_kv=new, d_h=d_h, d_ffn=24, V=30, S_max=8)
    N = _params(config)
    assert costs.kv_heads_params(N_params=N, L=L, d=H * d_h, d_h=d_h, H_kv=H_kv, H_kv_new=new,
                                 biases=True) == _params(other)
    # Eq. (9.3)'s projections: the difference between a model and its MQA twin, plus the MQA twin's own.
    kv = costs.kv_projection_params(L=L, d=H * d_h, H_kv=H_kv, d_h=d_h, biases=True)
    mqa = costs.kv_projection_params(L=L, d=H * d_h, H_kv=1, d_h=d_h, biases=True)
    assert kv - mqa == N - _params(ModelConfig(L=L, H=H, H_kv=1, d_h=d_h, d_ffn=24, V=30, S_max=8))


def test_llama2_7b_kv_projections_are_12_percent_and_the_gain_is_1_17():
    """The issue's numbers recomputed: Llama-2-7B, 32 -> 8 K/V heads at B = 1, S = 1,024 in bf16."""
    m = MODELS["Llama-2-7B"]
    shape = dict(L=m.L, d=m.d, d_h=m.d_h)
    N8 = costs.kv_heads_params(N_params=m.N_params, H_kv=m.H, H_kv_new=8, **shape)
    assert 0.11 < 1 - N8 / m.N_params < 0.13
    gain = costs.gqa_decode_gain(N_params=m.N_params, H_kv=8, s=2, S=1024, B=1, **shape)
    by_hand = (m.N_params * 2 + 1024 * 2 * 32 * 32 * 128 * 2) / (N8 * 2 + 1024 * 2 * 32 * 8 * 128 * 2)
    assert gain == pytest.approx(by_hand, rel=1e-15)
    assert round(gain, 2) == 1.17
    # With the weights held fixed (the old accounting) the same case gives 1.03: the mutant this replaces.
    fixed = (m.N_params * 2 + 1024 * 524_288) / (m.N_params * 2 + 1024 * 131_072)
    assert round(fixed, 2) == 1.03


@settings(max_examples=examples(30), deadline=None)
@given(S=st.integers(0, 10**6), B=st.integers(1, 512), memory=st.integers(1, 2**40),
       reserve=st.sampled_from([0.0, 0.1, 0.5]))
def test_chips_needed_is_the_fewest_chips_that_hold_the_bytes(S, B, memory, reserve):
    """Catches: a floor instead of a ceiling, the reserve left out, or 0 chips when it fits."""
    w, kv = 13_480_000_000, 131_072
    budget = costs.memory_budget(memory_bytes=memory, reserve=reserve)
    if budget == 0:
        return
    n = costs.chips_needed(memory_bytes=memory, weight_bytes=w, kv_bytes_per_token=kv, S=S, B=B, reserve=reserve)
    used = w + B * S * kv
    assert n >= 1 and n * budget >= used and (n == 1 or (n - 1) * budget < used)
    assert (n == 1) == costs.fits_in_memory(memory_bytes=memory, weight_bytes=w, kv_bytes_per_token=kv, S=S, B=B,
                                            reserve=reserve)


def test_chips_needed_the_issues_configurations():
    """Llama-3-8B (GQA) on an H100 at 64 sequences of 32,768: the cache alone is 256 GiB."""
    m, h100 = MODELS["Llama-3-8B"], HARDWARE["H100 SXM"]
    kv = costs.kv_bytes_per_token(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2)
    assert 64 * 32768 * kv == 256 * 2**30
    n = costs.chips_needed(memory_bytes=h100.memory_bytes, weight_bytes=m.N_params * 2, kv_bytes_per_token=kv,
                           S=32768, B=64)
    assert n == -(-(m.N_params * 2 + 256 * 2**30) // int(0.9 * h100.memory_bytes)) == 4
    with pytest.raises(ValueError, match="reserve must be a number in"):
        costs.chips_needed(memory_bytes=2**30, weight_bytes=1, kv_bytes_per_token=1, S=1, reserve=1.0)
    with pytest.raises(ValueError, match="N_params must hold"):
        costs.kv_heads_params(N_params=10, L=32, d=4096, d_h=128, H_kv=8, H_kv_new=32)
