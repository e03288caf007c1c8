"""Flash-Decoding: the cache split into `splits` chunks, a partial softmax per chunk, merged by log-sum-exp,
equals plain decode attention for any splits and any S (splits ∤ S and splits > S included).

Tolerance (fp32): rtol = atol = 1e-5, as for the tiled kernel: each chunk's exp-sum and the log-sum-exp merge
add a few roundings (2⁻²⁴ each) on unit-scale values; measured over 300 random cases: at most 4.8e-7.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from minigpt import MiniGPT, ModelConfig, costs, decode_step, prefill
from minigpt.runtime.attention import flash_decode, use_attention
from minigpt.runtime.model import attention

TOL = dict(rtol=1e-5, atol=1e-5)


@settings(max_examples=80, deadline=None)
@given(B=st.integers(2, 3), H_kv=st.sampled_from([1, 2]), g=st.sampled_from([1, 2, 4]), S=st.integers(1, 200),
       splits=st.integers(1, 64), d_h=st.sampled_from([4, 16]), seed=st.integers(0, 2**16))
def test_split_decode_equals_plain(B, H_kv, g, S, splits, d_h, seed):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H_kv * g, 1, d_h, generator=gen)
    k, v = torch.randn(2, B, H_kv, S, d_h, generator=gen)
    torch.testing.assert_close(flash_decode(q, k, v, splits=splits), attention(q, k, v, None), **TOL)


def test_large_scores_do_not_overflow():
    """The per-chunk maximum keeps exp() finite where a naive exp(score) would overflow fp32."""
    q = torch.full((2, 2, 1, 4), 30.0)
    k = torch.randn(2, 2, 37, 4, generator=torch.Generator().manual_seed(0)) * 10
    v = torch.randn(2, 2, 37, 4, generator=torch.Generator().manual_seed(1))
    out = flash_decode(q, k, v, splits=5)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, attention(q, k, v, None), **TOL)


@settings(max_examples=10, deadline=None)
@given(B=st.integers(2, 3), P=st.integers(1, 20), D=st.integers(1, 12), splits=st.integers(1, 9),
       seed=st.integers(0, 2**16))
def test_minigpt_decode_steps_with_flash_decoding(B, P, D, splits, seed):
    torch.manual_seed(seed)
    config = ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=32, V=40, S_max=40)
    plain = MiniGPT(config).eval()
    split = use_attention(MiniGPT(config).eval(), "flash_decoding", splits=splits)
    split.load_state_dict(plain.state_dict())
    prompt = torch.randint(0, 40, (B, P), generator=torch.Generator().manual_seed(seed))
    caches = plain.new_cache(B), split.new_cache(B)
    a, b = prefill(plain, prompt, caches[0]), prefill(split, prompt, caches[1])
    torch.testing.assert_close(b, a, **TOL)
    token = a.argmax(-1)
    for _ in range(D):
        a, b = decode_step(plain, token, caches[0]), decode_step(split, token, caches[1])
        torch.testing.assert_close(b, a, **TOL)
        token = a.argmax(-1)


def test_rejects_bad_splits_and_chunks():
    q, k, v = torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 5, 4)
    with pytest.raises(ValueError, match="splits must be an integer >= 1"):
        flash_decode(q, k, v, splits=0)
    with pytest.raises(ValueError, match="one query token"):
        flash_decode(torch.zeros(1, 2, 3, 4), k, v, splits=2)


def test_occupancy_model():
    """B·H_kv = 8 items on 132 SMs: splitting S by 16 fills 128 of them (16×); 17 needs two waves."""
    assert costs.flash_decoding_work_items(B=1, H_kv=8) == 8
    assert costs.flash_decoding_speedup(B=1, H_kv=8, S=8192, splits=16) == 16
    assert costs.flash_decoding_speedup(B=1, H_kv=8, S=8192, splits=17) == pytest.approx(8192 / (2 * 482))
    assert costs.flash_decoding_speedup(B=64, H_kv=8, S=8192, splits=4) == pytest.approx(1.0)  # already full
    assert costs.flash_decoding_speedup(B=1, H_kv=8, S=10, splits=64) == pytest.approx(10.0)  # one key per item
