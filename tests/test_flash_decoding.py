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
from profiles import examples

from minigpt import MiniGPT, ModelConfig, costs, decode_step, prefill
from minigpt.runtime.attention import combine_chunks, flash_decode, use_attention
from minigpt.runtime.model import attention

TOL = dict(rtol=1e-5, atol=1e-5)


@settings(max_examples=examples(80), deadline=None)
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


@settings(max_examples=examples(10), deadline=None)
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


@settings(max_examples=examples(60), deadline=None)
@given(B=st.integers(1, 64), H_kv=st.sampled_from([1, 2, 4, 8]), S=st.integers(1, 5000),
       n_sm=st.sampled_from([2, 16, 108, 132]), max_splits=st.integers(1, 80))
def test_best_splits_is_the_first_argmax_of_the_speedup(B, H_kv, S, n_sm, max_splits):
    """The best chunk count is the smallest K in 1..min(max_splits, S) whose predicted speedup is the largest."""
    args = dict(B=B, H_kv=H_kv, S=S, n_sm=n_sm)
    speedups = [costs.flash_decoding_speedup(**args, splits=k) for k in range(1, min(max_splits, S) + 1)]
    best = costs.flash_decoding_best_splits(**args, max_splits=max_splits)
    assert speedups[best - 1] == max(speedups) and max(speedups) not in speedups[: best - 1]


def test_best_splits_on_an_h100():
    """8 items on 132 SMs at S = 8192: 33 chunks (two full waves of 264 slots, 249 keys each) beat 16 (one wave)."""
    assert costs.flash_decoding_best_splits(B=1, H_kv=8, S=8192, max_splits=32) == 16
    assert costs.flash_decoding_best_splits(B=1, H_kv=8, S=8192) == 33
    assert costs.flash_decoding_best_splits(B=1, H_kv=8, S=5) == 5  # one key per chunk
    assert costs.flash_decoding_best_splits(B=132, H_kv=8, S=8192) == 1  # the chip is already full
    with pytest.raises(ValueError, match="max_splits"):
        costs.flash_decoding_best_splits(B=1, H_kv=8, S=8192, max_splits=0)


@settings(max_examples=examples(40), deadline=None)
@given(K=st.integers(1, 9), c=st.integers(1, 12), scale=st.sampled_from([1.0, 100.0]), seed=st.integers(0, 2**16))
def test_combine_chunks_is_the_softmax_over_all_keys(K, c, scale, seed):
    """Partials computed chunk by chunk and merged equal one softmax over all K·c keys, even at scores of ~±300
    (where exp of a raw score overflows fp32); an empty chunk (ℓ = 0) drops out."""
    g = torch.Generator().manual_seed(seed)
    s, v = torch.randn(2, K, c, generator=g) * scale, torch.randn(2, K, c, 4, generator=g)
    m = s.amax(-1)
    p = torch.exp(s - m[..., None])
    l = p.sum(-1)  # noqa: E741
    o = (p[..., None] * v).sum(-2) / l[..., None]
    whole = torch.softmax(s.flatten(1), -1)[..., None].mul(v.flatten(1, 2)).sum(1)
    torch.testing.assert_close(combine_chunks(m, l, o), whole, **TOL)
    empty = combine_chunks(torch.cat([m, torch.zeros(2, 1)], 1), torch.cat([l, torch.zeros(2, 1)], 1),
                           torch.cat([o, torch.zeros(2, 1, 4)], 1))
    torch.testing.assert_close(empty, whole, **TOL)
    with pytest.raises(ValueError, match="o \\[..., K, d_h\\]"):
        combine_chunks(m, l, o[:1])
