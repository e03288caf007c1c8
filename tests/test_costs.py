"""The cost formulas: closed forms against brute-force sums, the seed's convention, the book's numbers."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import costs
from minigpt.costs.presets import HARDWARE, MODELS

KiB, MiB, GiB = 1024, 1024**2, 1024**3


@st.composite
def shapes(draw, gqa: bool = True) -> dict:
    """Random model symbols; half the time the MHA defaults (H_kv = d_h = None)."""
    H_kv = draw(st.integers(1, 4))
    group = draw(st.integers(1, 4))
    d_h = draw(st.integers(1, 16))
    d = H_kv * group * d_h
    explicit = gqa and draw(st.booleans())
    return dict(
        d=d,
        H_kv=H_kv if explicit else None,
        d_h=d_h if explicit else None,
        d_ffn=draw(st.one_of(st.none(), st.integers(1, 300))),
        V=draw(st.integers(0, 700)),
        B=draw(st.integers(1, 4)),
    )


def brute_layer(*, T, S, d, H_kv, d_h, d_ffn, B):
    """One layer, op by op, as the model runs it (2 FLOPs per multiply-add)."""
    if H_kv is None:
        H_kv, d_h = 1, d  # MHA viewed as one "head" of width d: same FLOPs
    H = d // d_h
    d_ffn = 4 * d if d_ffn is None else d_ffn
    qkv = 2 * B * T * d * (H + 2 * H_kv) * d_h
    scores = 2 * B * H * T * (S + T) * d_h
    mix = 2 * B * H * T * (S + T) * d_h
    out = 2 * B * T * d * d
    mlp = 2 * B * T * d * d_ffn + 2 * B * T * d_ffn * d
    return qkv + scores + mix + out + mlp


def brute_forward(*, L, T, S, m):
    """L layers on T tokens with S cached, plus the LM head at one position per sequence."""
    layer = brute_layer(T=T, S=S, **{k: m[k] for k in ("d", "H_kv", "d_h", "d_ffn", "B")})
    return L * layer + 2 * m["B"] * m["d"] * m["V"]


@settings(max_examples=examples(150), deadline=None)
@given(m=shapes(), L=st.integers(1, 5), P=st.integers(1, 40), D=st.integers(1, 40))
def test_closed_forms_equal_brute_force_sums(m, L, P, D):
    assert costs.prefill_flops(L=L, P=P, **m) == brute_forward(L=L, T=P, S=0, m=m)
    steps = [brute_forward(L=L, T=1, S=P + t - 1, m=m) for t in range(1, D)]
    assert costs.decode_flops(L=L, P=P, D=D, **m) == sum(steps)
    for t in range(1, D):
        assert costs.decode_step_flops(L=L, S=P + t - 1, **m) == steps[t - 1]
    assert costs.no_cache_flops(L=L, P=P, D=D, **m) == sum(
        brute_forward(L=L, T=P + t, S=0, m=m) for t in range(D)
    )
    assert costs.generation_flops(L=L, P=P, D=D, **m) == costs.prefill_flops(L=L, P=P, **m) + sum(steps)


@settings(max_examples=examples(100), deadline=None)
@given(m=shapes(), T=st.integers(1, 30), S=st.integers(0, 50))
def test_layer_flops_matches_ops(m, T, S):
    layer = {k: m[k] for k in ("d", "H_kv", "d_h", "d_ffn", "B")}
    assert costs.layer_flops(T=T, S=S, **layer) == brute_layer(T=T, S=S, **layer)
    assert costs.lm_head_flops(d=m["d"], V=m["V"], T=T, B=m["B"]) == 2 * m["B"] * T * m["d"] * m["V"]


@settings(max_examples=examples(100), deadline=None)
@given(L=st.integers(1, 8), P=st.integers(1, 60), D=st.integers(1, 60), d=st.integers(1, 256))
def test_flops_are_twice_the_seed_macs(L, P, D, d):
    """MHA, d_ffn = 4d, no LM head: our 2-FLOP counts are exactly twice the seed's boxed formulas."""
    assert costs.prefill_flops(L=L, P=P, d=d) == 2 * costs.prefill_macs(L=L, P=P, d=d)
    # Our S counts keys already cached; the seed's boxed S is the length after appending the new one.
    assert costs.decode_step_flops(L=L, S=P, d=d) == 2 * costs.decode_step_macs(L=L, S=P + 1, d=d)
    # The seed sums D steps from S = P; the engine runs D − 1 steps (prefill yields token 1),
    # and its step t has the seed's S = P + t: the seed's total minus its first term.
    seed = costs.decode_macs_seed(L=L, P=P, D=D, d=d)
    assert costs.decode_flops(L=L, P=P, D=D, d=d) == 2 * (seed - costs.decode_step_macs(L=L, S=P, d=d))
    assert costs.no_cache_flops(L=L, P=P, D=D, d=d) == 2 * costs.no_cache_macs_seed(L=L, P=P, D=D, d=d)


@settings(max_examples=examples(100), deadline=None)
@given(L=st.integers(1, 8), P=st.integers(1, 60), D=st.integers(1, 60), d=st.integers(1, 256))
def test_seed_sums_equal_their_closed_forms(L, P, D, d):
    assert costs.decode_macs_seed(L=L, P=P, D=D, d=d) == sum(
        costs.decode_step_macs(L=L, S=P + t, d=d) for t in range(D)
    )
    assert costs.no_cache_macs_seed(L=L, P=P, D=D, d=d) == sum(
        costs.prefill_macs(L=L, P=P + t, d=d) for t in range(D)
    )


def test_counts_are_exact_ints_at_large_sizes():
    """GPT-3-sized generation of a million tokens: exact integers, no float rounding."""
    big = dict(L=96, P=2048, D=1_000_000, d=12288, V=50257)
    total = costs.no_cache_flops(**big)
    assert isinstance(total, int) and total > 2**64
    assert (
        total == 2 * costs.no_cache_macs_seed(L=96, P=2048, D=1_000_000, d=12288) + 2 * 12288 * 50257 * 10**6
    )


def test_one_token_generation_is_just_the_prefill():
    assert costs.decode_flops(L=4, P=2, D=1, d=64, V=600) == 0
    assert costs.generation_flops(L=4, P=2, D=1, d=64, V=600) == costs.prefill_flops(L=4, P=2, d=64, V=600)
    assert costs.no_cache_flops(L=4, P=2, D=1, d=64, V=600) == costs.prefill_flops(L=4, P=2, d=64, V=600)


def test_minigpt_numbers_of_the_seed():
    # Seed 002 quotes "12·4·2·64² = 393 K" for "Yesterday I": the matrix term alone.
    assert 12 * 4 * 2 * 64**2 == 393_216
    assert costs.prefill_macs(L=4, P=2, d=64) == 393_216 + 2 * 4 * 2**2 * 64 == 395_264
    assert costs.prefill_flops(L=4, P=2, d=64) == 790_528
    # With the tied LM head (V = 600) at the last prompt position.
    assert costs.prefill_flops(L=4, P=2, d=64, V=600) == 790_528 + 2 * 64 * 600
    assert costs.fmt_flops(393_216) == "393.2 kFLOP"


def test_gqa_shrinks_qkv_only():
    mha = costs.layer_flops(T=1, S=100, d=4096)
    gqa = costs.layer_flops(T=1, S=100, d=4096, H_kv=8, d_h=128)
    assert mha - gqa == 2 * 4096 * 2 * (4096 - 8 * 128)


def test_crossover_and_attention_share():
    assert costs.prefill_crossover_P(d=4096) == 24_576
    assert costs.prefill_attention_share(P=24_576, d=4096) == 0.5
    # Seed: for a 4,096-token prompt on Llama-2-7B, attention is "~15%" (exactly 1/7).
    assert costs.prefill_attention_share(P=4096, d=4096) == pytest.approx(1 / 7)


def test_cache_saving_factor_grows_with_D():
    factors = [costs.cache_saving_factor(L=32, P=100, D=D, d=4096) for D in (1, 10, 100, 1000)]
    assert factors[0] == 1.0
    assert all(a < b for a, b in zip(factors, factors[1:], strict=False))


def test_params_of_minigpt():
    assert costs.non_embedding_matrix_params(L=4, d=64) == 196_608 == 12 * 4 * 64**2
    parts = costs.params_by_component(L=4, d=64, V=600, S_max=128)
    assert parts["token_embedding"] == 38_400
    assert parts["lm_head"] == 0
    total = costs.param_count(L=4, d=64, V=600, S_max=128)
    assert total == sum(parts.values()) == 246_656
    no_bias = costs.param_count(L=4, d=64, V=600, S_max=128, biases=False)
    assert total - no_bias == 4 * (3 * 64 + 64 + 256 + 64)


@pytest.mark.parametrize(
    ("name", "L", "H_kv", "d_h", "s", "expected"),
    [
        ("MiniGPT fp32", 4, 4, 16, 4, 2 * KiB),
        ("MiniGPT bf16", 4, 4, 16, 2, 1 * KiB),
        ("MiniGPT int8", 4, 4, 16, 1, 512),
        ("Llama-2-7B", 32, 32, 128, 2, 512 * KiB),
        ("Llama-2-13B", 40, 40, 128, 2, 800 * KiB),
        ("Llama-3-8B", 32, 8, 128, 2, 128 * KiB),
        ("Llama-3-70B bf16", 80, 8, 128, 2, 320 * KiB),
        ("Llama-3-70B int8", 80, 8, 128, 1, 160 * KiB),
        ("GPT-3 175B", 96, 96, 128, 2, 4.5 * MiB),
    ],
)
def test_kv_bytes_per_token(name, L, H_kv, d_h, s, expected):
    assert costs.kv_bytes_per_token(L=L, H_kv=H_kv, d_h=d_h, s=s) == expected


def test_kv_cache_totals_of_the_reference_table():
    assert costs.kv_cache_bytes(L=32, H_kv=32, d_h=128, s=2, S=4096) == 2 * GiB
    assert costs.kv_cache_bytes(L=32, H_kv=8, d_h=128, s=2, S=8192) == 1 * GiB
    assert costs.kv_cache_bytes(L=96, H_kv=96, d_h=128, s=2, S=2048) == 9 * GiB
    assert costs.fmt_bytes(costs.kv_cache_bytes(L=40, H_kv=40, d_h=128, s=2, S=2048)) == "1.6 GiB"
    # rasbt: d = 4096, 32 layers, 32k context, bf16: 17.18 GB MHA vs 4.29 GB with 8 KV heads.
    assert costs.kv_cache_bytes(L=32, H_kv=32, d_h=128, s=2, S=32768) / 1e9 == pytest.approx(17.18, abs=0.005)
    assert costs.kv_cache_bytes(L=32, H_kv=8, d_h=128, s=2, S=32768) / 1e9 == pytest.approx(4.29, abs=0.005)
    assert costs.kv_cache_bytes(L=4, H_kv=4, d_h=16, s=4, S=5, B=3) == 3 * 5 * 2048


def test_int8_kv_bytes_counts_the_scales():
    assert costs.int8_kv_bytes(L=4, H_kv=4, d_h=16, S=1, s_scale=0) == 512
    # One fp16 scale per token, layer, KV head, for K and for V: 2·L·H_kv·2 bytes per token.
    assert costs.int8_kv_bytes(L=4, H_kv=4, d_h=16, S=1) == 512 + 2 * 4 * 4 * 2
    assert costs.int8_kv_bytes(L=4, H_kv=4, d_h=16, S=10, B=2, s_scale=4) == 2 * 10 * 2 * 4 * 4 * 20


def test_weight_and_step_bytes():
    assert costs.weight_bytes(N_params=196_608, s=4) == 786_432
    step = costs.decode_step_bytes(weight_bytes=1000, kv_bytes_per_token=10, S=7, B=3)
    assert step == 1000 + 3 * 7 * 10
    assert (
        costs.prefill_bytes(weight_bytes=1000, P=5, d=8, s=2, B=2, kv_bytes_per_token=3)
        == 1000 + 2 * 10 * 16 + 30
    )


def test_roofline():
    assert costs.ridge_point(peak_flops=989e12, bandwidth=3.35e12) == pytest.approx(295.2, abs=0.1)
    assert costs.ridge_point(peak_flops=312e12, bandwidth=1.5e12) == 208
    assert costs.attainable_flops(intensity=1.0, peak_flops=989e12, bandwidth=3.35e12) == 3.35e12
    assert costs.attainable_flops(intensity=1e4, peak_flops=989e12, bandwidth=3.35e12) == 989e12
    assert costs.arithmetic_intensity(flops=10, bytes=4) == 2.5
    # Seed 000: 8 GB of weights at ~400 GB/s effective is a ceiling of 50 tok/s; batching multiplies it.
    assert costs.decode_tok_s_ceiling(bandwidth=400e9, bytes_per_step=8e9) == 50.0
    assert costs.decode_tok_s_ceiling(bandwidth=400e9, bytes_per_step=8e9, B=8) == 400.0


def test_decode_is_about_one_flop_per_byte_and_prefill_grows_with_P():
    llama = dict(L=32, d=4096, d_ffn=4 * 4096, V=32000, N_params=6_740_000_000, s=2)
    assert 0.9 < costs.decode_intensity(S=0, **llama) < 1.1
    assert costs.decode_intensity(S=0, B=16, **llama) > 10 * costs.decode_intensity(S=0, **llama)
    low, high = (costs.prefill_intensity(P=P, **llama) for P in (16, 4096))
    assert 10 < low < high and high > 1000


def test_wall_clock_of_seed_examples():
    chat = costs.wall_clock(P=1000, D=300, prefill_tok_s=2000, decode_tok_s=40)
    assert (chat.ttft_s, chat.decode_s, chat.total_s, chat.decode_share) == (0.5, 7.5, 8.0, 0.9375)
    rag = costs.wall_clock(P=12_000, D=500, prefill_tok_s=1500, decode_tok_s=40)
    assert (rag.ttft_s, rag.decode_s, rag.total_s) == (8.0, 12.5, 20.5)


@settings(max_examples=examples(100), deadline=None)
@given(
    memory=st.integers(0, 10**12),
    weights=st.integers(0, 10**12),
    kv=st.integers(1, 10**7),
    B=st.integers(1, 64),
    reserve=st.sampled_from([0.0, 0.1, 0.25]),
)
def test_max_context_and_batch_are_the_largest_that_fit(memory, weights, kv, B, reserve):
    budget = dict(memory_bytes=memory, weight_bytes=weights, kv_bytes_per_token=kv, reserve=reserve)
    S = costs.max_context(B=B, **budget)
    if S > 0:
        assert costs.fits_in_memory(S=S, B=B, **budget)
    assert not costs.fits_in_memory(S=S + 1, B=B, **budget)
    Bmax = costs.max_batch(S=S + 1, **budget)
    if Bmax > 0:
        assert costs.fits_in_memory(S=S + 1, B=Bmax, **budget)
    assert not costs.fits_in_memory(S=S + 1, B=Bmax + 1, **budget)


def test_memory_budget_examples():
    # CS336: Llama-2-13B at B = 256, S = 1024 (bf16) does not fit in 80 GB.
    kv = costs.kv_bytes_per_token(L=40, H_kv=40, d_h=128, s=2)
    w = costs.weight_bytes(N_params=13_000_000_000, s=2)
    assert not costs.fits_in_memory(
        memory_bytes=80 * 10**9, weight_bytes=w, kv_bytes_per_token=kv, S=1024, B=256
    )
    assert costs.max_batch(memory_bytes=80 * 10**9, weight_bytes=w, kv_bytes_per_token=kv, S=1024) == 64
    assert costs.max_context(memory_bytes=10, weight_bytes=20, kv_bytes_per_token=1) == 0


def test_formatting():
    assert costs.fmt_bytes(512 * KiB) == "512 KiB"
    assert costs.fmt_bytes(2 * GiB) == "2.0 GiB"
    assert costs.fmt_bytes(4.5 * MiB) == "4.5 MiB"
    assert costs.fmt_bytes(1000) == "1000 B"
    assert costs.fmt_bytes(17_179_869_184, binary=False) == "17.2 GB"
    assert costs.fmt_flops(5.73e12) == "5.73 TFLOP"
    assert costs.fmt_flops(12) == "12 FLOP"
    assert costs.fmt_count(196_608) == "196,608"
    assert costs.fmt_count(6_740_000_000) == "6.74 B"
    assert costs.fmt_count(70_600_000_000) == "70.6 B"
    assert costs.fmt_count(175_000_000_000) == "175 B"


BAD = [
    (costs.prefill_flops, dict(L=0, P=2, d=64), "L"),
    (costs.prefill_flops, dict(L=4, P=0, d=64), "P"),
    (costs.prefill_flops, dict(L=4, P=2, d=64.0), "d"),
    (costs.prefill_flops, dict(L=4, P=2, d=64, V=-1), "V"),
    (costs.prefill_flops, dict(L=4, P=2, d=64, B=0), "B"),
    (costs.prefill_flops, dict(L=4, P=2, d=64, H_kv=2), "H_kv and d_h"),
    (costs.prefill_flops, dict(L=4, P=2, d=64, H_kv=3, d_h=16), "H_kv must divide"),
    (costs.prefill_flops, dict(L=4, P=2, d=64, H_kv=1, d_h=10), "d_h must divide"),
    (costs.prefill_flops, dict(L=4, P=2, d=64, d_ffn=0), "d_ffn"),
    (costs.decode_step_flops, dict(L=4, S=-1, d=64), "S"),
    (costs.decode_flops, dict(L=4, P=2, D=0, d=64), "D"),
    (costs.layer_flops, dict(T=True, S=0, d=64), "T"),
    (costs.kv_bytes_per_token, dict(L=4, H_kv=4, d_h=16, s=0), "s"),
    (costs.weight_bytes, dict(N_params=-1, s=2), "N_params"),
    (costs.ridge_point, dict(peak_flops=0, bandwidth=1), "peak_flops"),
    (costs.decode_tok_s_ceiling, dict(bandwidth=float("nan"), bytes_per_step=1), "bandwidth"),
    (costs.wall_clock, dict(P=1, D=1, prefill_tok_s=0, decode_tok_s=1), "prefill_tok_s"),
    (costs.max_context, dict(memory_bytes=10, weight_bytes=1, kv_bytes_per_token=1, reserve=1.0), "reserve"),
    (costs.int8_kv_bytes, dict(L=1, H_kv=1, d_h=1, S=1, s_scale=-2), "s_scale"),
]


@pytest.mark.parametrize(("fn", "kwargs", "message"), BAD, ids=[f"{f.__name__}-{m}" for f, _, m in BAD])
def test_bad_inputs_name_the_parameter(fn, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fn(**kwargs)


def test_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        costs.prefill_flops(4, 2, 64)  # type: ignore[misc]


def test_float_results_are_floats_and_counts_are_ints():
    assert isinstance(costs.prefill_flops(L=1, P=1, d=1), int)
    assert isinstance(costs.cache_saving_factor(L=1, P=1, D=2, d=1), float)
    assert math.isclose(costs.prefill_attention_share(P=6, d=1), 0.5)


@given(
    L=st.integers(1, 8), P=st.integers(1, 64), D=st.integers(1, 64), d_h=st.sampled_from([8, 16, 128]),
    H=st.integers(1, 8), half_ffn=st.integers(1, 512), V=st.integers(0, 1000),
)
def test_swiglu_ffn_counts_three_matrices(L, P, D, d_h, H, half_ffn, V):
    """ffn_matrices=3 (SwiGLU) costs what a 2-matrix FFN 1.5× as wide costs, in every FLOP formula."""
    d, d_ffn = H * d_h, 2 * half_ffn
    for fn, extra in [(costs.prefill_flops, dict(P=P)), (costs.decode_step_flops, dict(S=P)),
                      (costs.decode_flops, dict(P=P, D=D)), (costs.no_cache_flops, dict(P=P, D=D))]:
        swiglu = fn(L=L, d=d, d_ffn=d_ffn, V=V, ffn_matrices=3, **extra)
        assert swiglu == fn(L=L, d=d, d_ffn=3 * half_ffn, V=V, **extra)
    with pytest.raises(ValueError, match="ffn_matrices must be 2"):
        costs.prefill_flops(L=L, P=P, d=d, ffn_matrices=4)


# ---- Chapter 3: attention's intensity with a cache (Eq. 3.6), tensor parallelism (Eqs. 3.7-3.8);
# ---- Chapter 4: cost per million tokens (Eq. 4.3)


@pytest.mark.parametrize(("H_kv", "B", "S", "T"), [(4, 1, 0, 5), (4, 3, 10, 1), (2, 2, 7, 4), (1, 3, 20, 1)])
def test_attention_flops_and_bytes_are_what_minigpt_counts_and_caches(H_kv, B, S, T):
    """Eq. (3.6)'s FLOPs are FlopCounterMode's bmm FLOPs of a forward; its K/V bytes are the cache's bytes."""
    import torch

    from minigpt import MiniGPT
    from minigpt.config import ModelConfig
    from minigpt.measure import count_flops_by_op

    torch.manual_seed(0)
    config = ModelConfig(H_kv=H_kv)
    model = MiniGPT(config).eval()
    cache = model.new_cache(B=B)
    with torch.inference_mode():
        if S:
            model(torch.randint(0, config.V, (B, S)), cache)
        counted = count_flops_by_op(lambda: model(torch.randint(0, config.V, (B, T)), cache))["aten.bmm"]
    shape = dict(L=config.L, T=T, S=S, d=config.d, B=B)
    assert costs.attention_flops(**shape) == counted
    s = 4  # fp32
    q_and_out = 2 * config.L * B * T * config.d * s  # queries read, attention outputs written
    assert cache.S == S + T
    assert costs.attention_bytes(**shape, s=s, H_kv=H_kv, d_h=config.d_h) == cache.bytes_used + q_and_out
    intensity = costs.attention_intensity(T=T, S=S, d=config.d, s=s, H_kv=H_kv, d_h=config.d_h)
    assert math.isclose(intensity, counted / (cache.bytes_used + q_and_out))


@given(T=st.integers(1, 4096), S=st.integers(0, 10**6), s=st.sampled_from([1, 2, 4]), B=st.integers(1, 512),
       L=st.integers(1, 96))
def test_attention_intensity_ignores_batch_and_has_the_mha_closed_form(T, S, s, B, L):
    d = 4096
    ratio = costs.attention_flops(L=L, T=T, S=S, d=d, B=B) / costs.attention_bytes(L=L, T=T, S=S, d=d, s=s, B=B)
    intensity = costs.attention_intensity(T=T, S=S, d=d, s=s)
    assert math.isclose(ratio, intensity, rel_tol=1e-12)
    K = S + T  # keys attended
    assert math.isclose(intensity, 2 * T * K / (s * (K + T)), rel_tol=1e-12)
    # grouped-query attention: g query heads per K/V head lift it; a decode step tends to 2·g/s
    g = 8
    gqa = costs.attention_intensity(T=1, S=S, d=d, s=s, H_kv=32 // g, d_h=128)
    assert math.isclose(gqa, 2 * (S + 1) * g / (s * ((S + 1) + g)), rel_tol=1e-12)
    assert gqa <= 2 * g / s


def test_attention_formulas_reject_bad_inputs():
    with pytest.raises(ValueError, match="T must be"):
        costs.attention_flops(L=1, T=0, S=3, d=8)
    with pytest.raises(ValueError, match="s must be"):
        costs.attention_bytes(L=1, T=1, S=3, d=8, s=0)
    with pytest.raises(ValueError, match="H_kv must divide"):
        costs.attention_intensity(T=1, S=3, d=64, s=2, H_kv=3, d_h=16)


def test_tensor_parallel_decode_step():
    """One GPU is Eq. (3.5) over the bandwidth; n GPUs split the bytes and pay a ring all-reduce."""
    L, d, s, B = 80, 8192, 2, 4
    allreduce = costs.tp_allreduce_bytes(L=L, B=B, d=d, s=s)
    assert allreduce == 2 * L * B * d * s
    step = 10**9
    one = costs.tp_decode_step_time(bytes_per_step=step, n_gpus=1, bandwidth=1e12, allreduce_bytes=allreduce,
                                    link_bandwidth=1e11)
    assert one == step / 1e12  # nothing to all-reduce on one GPU
    two = costs.tp_decode_step_time(bytes_per_step=step, n_gpus=2, bandwidth=1e12, allreduce_bytes=allreduce,
                                    link_bandwidth=1e11)
    assert math.isclose(two, step / 2e12 + allreduce / 1e11)  # ring on 2 GPUs: 2(n-1)/n = 1 payload
    eight = costs.tp_decode_step_time(bytes_per_step=step, n_gpus=8, bandwidth=1e12, allreduce_bytes=allreduce,
                                      link_bandwidth=1e11)
    assert math.isclose(eight, step / 8e12 + 1.75 * allreduce / 1e11)
    with pytest.raises(ValueError, match="n_gpus"):
        costs.tp_decode_step_time(bytes_per_step=step, n_gpus=0, bandwidth=1e12, allreduce_bytes=0,
                                  link_bandwidth=1e11)
    with pytest.raises(ValueError, match="link_bandwidth"):
        costs.tp_decode_step_time(bytes_per_step=step, n_gpus=2, bandwidth=1e12, allreduce_bytes=0,
                                  link_bandwidth=0)


def test_cost_per_million_tokens():
    # 3600 tok/s for one hour is 12.96 M tokens; at 2.00 an hour a million costs 2/12.96
    assert math.isclose(costs.cost_per_million_tokens(price_per_hour=2.0, tok_s=3600), 2.0 / 12.96)
    assert math.isclose(costs.cost_per_million_tokens(price_per_hour=3.0, tok_s=100),
                        10 * costs.cost_per_million_tokens(price_per_hour=3.0, tok_s=1000))
    for bad in (dict(price_per_hour=0, tok_s=1), dict(price_per_hour=1, tok_s=-5)):
        with pytest.raises(ValueError, match=next(k for k, v in bad.items() if v <= 0)):
            costs.cost_per_million_tokens(**bad)


def test_critical_batch_is_the_first_compute_bound_batch():
    """Eq. (7.4) for a preset on a preset chip: the first B whose decode step the roofline points call compute-bound."""
    from minigpt.costs import roofline
    from minigpt.costs.presets import HARDWARE, MODELS

    for model, hw, S in [("Llama-2-7B", "A100 80GB", 128), ("Llama-3-8B", "H100 SXM", 128),
                         ("Llama-2-7B", "H100 SXM", 1), ("Llama-3-70B", "H200", 1024), ("Llama-3-8B", "T4", 0)]:
        m, h = MODELS[model], HARDWARE[hw]
        hw_args = dict(peak_flops=h.peak_flops, bandwidth=h.bandwidth)
        B = roofline.critical_batch_on(m, h, S=S)
        assert roofline.decode_point(m, S=S, B=B, **hw_args).bound == "compute"
        assert B == 1 or roofline.decode_point(m, S=S, B=B - 1, **hw_args).bound == "memory"
    a100 = HARDWARE["A100 80GB"]
    assert roofline.critical_batch_on(MODELS["Llama-2-7B"], a100, S=128) == 685
    # multi-head attention at 4,096 tokens: the asymptote stays below the ridge, no batch reaches it
    assert roofline.critical_batch_on(MODELS["Llama-2-7B"], a100, S=4096) is None
    assert roofline.decode_intensity_limit(MODELS["Llama-2-7B"], S=4096) < costs.ridge_point(
        peak_flops=a100.peak_flops, bandwidth=a100.bandwidth)


def test_decode_intensity_limit_is_approached_from_below_as_B_grows():
    from minigpt.costs import roofline
    from minigpt.costs.presets import HARDWARE, MODELS

    h100 = HARDWARE["H100 SXM"]
    for name in ("Llama-2-7B", "Llama-3-8B"):
        m = MODELS[name]
        limit = roofline.decode_intensity_limit(m, S=1024)
        points = [roofline.decode_point(m, S=1024, B=B, peak_flops=h100.peak_flops, bandwidth=h100.bandwidth)
                  for B in (1, 64, 10**6)]
        assert points[0].intensity < points[1].intensity < points[2].intensity < limit
        assert points[2].intensity == pytest.approx(limit, rel=1e-3)
    with pytest.raises(ValueError, match="S must be"):
        roofline.decode_intensity_limit(MODELS["MiniGPT"], S=0)


@given(P=st.integers(0, 20_000), D=st.integers(0, 600), kv=st.integers(0, 10**6), W=st.integers(1, 10**10),
       rate=st.floats(1.0, 1e4))
@settings(max_examples=examples(50))
def test_decode_time_with_kv_is_the_sum_of_its_steps(P, D, kv, W, rate):
    """Closed form = the step-by-step sum of Eq. (3.5)'s bytes over the weights' bytes, at the short-context rate."""
    steps = sum(costs.decode_step_bytes(weight_bytes=W, kv_bytes_per_token=kv, S=P + t - 1) for t in range(1, D + 1))
    got = costs.decode_time_with_kv(P=P, D=D, decode_tok_s=rate, weight_bytes=W, kv_bytes_per_token=kv)
    assert math.isclose(got, steps / W / rate, rel_tol=1e-12, abs_tol=1e-15)
    if kv == 0:
        assert math.isclose(got, costs.wall_clock(P=P, D=D, prefill_tok_s=1, decode_tok_s=rate).decode_s)
    with pytest.raises(ValueError, match="weight_bytes"):
        costs.decode_time_with_kv(P=P, D=D, decode_tok_s=rate, weight_bytes=0, kv_bytes_per_token=kv)
@given(P=st.integers(1, 300), D=st.integers(1, 300), d=st.integers(1, 256))
def test_no_cache_attention_share_is_the_brute_force_split_of_eq_1_5(P, D, d):
    """Chapter 6: attention's share of the no-cache total equals its share of the sum of per-step macs."""
    lengths = range(P, P + D)
    attention = sum(2 * n * n * d for n in lengths)
    matrices = sum(12 * n * d * d for n in lengths)
    assert math.isclose(costs.no_cache_attention_share(P=P, D=D, d=d), attention / (attention + matrices))
    assert attention + matrices == costs.no_cache_macs_seed(L=1, P=P, D=D, d=d)


@pytest.mark.parametrize("d", [1, 64, 512, 4096])
def test_no_cache_crossover_is_9d_for_a_one_token_prompt(d):
    """The share passes ½ between D = 9d − 1 and D = 9d (exactly ½ at 9d − ½); one step's crossover is 6d."""
    D = costs.no_cache_crossover_D(d=d)
    assert D == 9 * d == 1.5 * costs.prefill_crossover_P(d=d)
    assert costs.no_cache_attention_share(P=1, D=D - 1, d=d) < 0.5 < costs.no_cache_attention_share(P=1, D=D, d=d)
    with pytest.raises(ValueError, match="d must be"):
        costs.no_cache_crossover_D(d=0)


def test_fmt_sig_rounds_to_significant_digits():
    assert costs.fmt_sig(2 / 3) == 0.666667
    assert costs.fmt_sig(123_456_789, 3) == 123_000_000.0
    assert costs.fmt_sig(-0.000123456, 2) == -0.00012
    with pytest.raises(ValueError, match="x must be a finite number"):
        costs.fmt_sig(float("nan"))
    with pytest.raises(ValueError, match="digits must be"):
        costs.fmt_sig(1.0, 0)
# ---- the explorers' formulas (minigpt.book.explorers names them; JS twins in test_costs_js.py) ----


def test_last_decode_step_floor_is_weights_plus_cache_over_bandwidth():
    L, d, V, P, D, bw = 4, 64, 600, 2, 3, 1e12
    weights = (12 * L * d * d + V * d) * 2
    cache = (P + D - 2) * 2 * L * d * 2
    assert costs.last_decode_step_floor_s(L=L, d=d, V=V, P=P, D=D, bandwidth=bw) == (weights + cache) / bw
    assert costs.last_decode_step_floor_s(L=L, d=d, V=V, P=P, D=1, bandwidth=bw) == 0.0  # no decode step


def test_fractional_weight_bytes_and_quantized_cache_scales():
    assert costs.weight_bytes(N_params=7, s=0.5) == 4  # int4: rounded up to whole bytes
    assert costs.weight_bytes(N_params=8, s=0.5) == 4 and costs.weight_bytes(N_params=8, s=2) == 16
    per_token = costs.kv_bytes_per_token(L=4, H_kv=2, d_h=16, s=1, s_scale=2)
    assert per_token == 2 * 4 * 2 * (16 + 2)
    assert costs.int8_kv_bytes(L=4, H_kv=2, d_h=16, S=10, B=3) == 30 * per_token
    assert costs.kv_cache_bytes(L=4, H_kv=2, d_h=16, s=1, S=10, B=3, s_scale=2) == 30 * per_token


def test_kv_heads_schemes():
    assert [costs.kv_heads(H=32, H_kv=8, scheme=s) for s in ("published", "mha", "gqa", "mqa")] == [8, 32, 4, 1]
    assert costs.kv_heads(H=4, H_kv=4, scheme="gqa") == 1  # fewer than 8 query heads: one group


def test_memory_fit_agrees_with_the_budget_formulas():
    budget = dict(memory_bytes=80 * 2**30, weight_bytes=13_500_000_000, kv_bytes_per_token=524_288, reserve=0.1)
    fit = costs.memory_fit(**budget, S=4096, B=8)
    assert fit == costs.MemoryFit(
        weights_fit=True, fits=costs.fits_in_memory(**budget, S=4096, B=8),
        max_context=costs.max_context(**budget, B=8), max_batch=costs.max_batch(**budget, S=4096))
    assert costs.memory_budget(memory_bytes=1000, reserve=0.25) == 750
    tight = costs.memory_fit(memory_bytes=1000, weight_bytes=1001, kv_bytes_per_token=1, S=1)
    assert not tight.weights_fit and not tight.fits and tight.max_batch == 0
    assert costs.fmt_memory_fit(fit) == costs.fmt_memory_fit(dataclasses.asdict(fit))
    assert costs.fmt_memory_fit(tight) == "weights alone do not fit"


def test_roofline_time_and_bound_are_the_roofline_point():
    point = costs.roofline.roofline_point("x", flops=3e12, bytes=2e10, peak_flops=312e12, bandwidth=2.039e12)
    assert costs.roofline_time(flops=3e12, bytes=2e10, peak_flops=312e12, bandwidth=2.039e12) == point.time_s
    assert costs.roofline_bound(intensity=point.intensity, peak_flops=312e12, bandwidth=2.039e12) == point.bound
    assert costs.roofline_bound(intensity=153.0, peak_flops=306.0, bandwidth=2.0) == "compute"  # at the ridge


def test_decode_step_time_max_and_additive_forms():
    """Eq. (7.2): the max form is the roofline of Eqs. (7.1) and (1.3); the additive form is never faster,
    at most 2x slower, and equal while the weight matmuls are memory-bound too."""
    from minigpt.costs.presets import HARDWARE, MODELS

    m, hw = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
    chip = dict(bandwidth=hw.bandwidth, peak_flops=hw.peak_flops)
    for B, S in [(1, 128), (8, 1024), (256, 4096), (1024, 32768)]:
        shape = dict(m.symbols(), N_params=m.N_params, s=2, S=S, B=B, **chip)
        flops = costs.decode_step_flops(**m.symbols(), S=S, B=B)
        kv = costs.kv_bytes_per_token(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2)
        moved = costs.decode_step_bytes(weight_bytes=costs.weight_bytes(N_params=m.N_params, s=2),
                                        kv_bytes_per_token=kv, S=S, B=B)
        t_max = costs.decode_step_time(**shape)
        t_add = costs.decode_step_time(**shape, overlap=False)
        assert t_max == costs.roofline_time(flops=flops, bytes=moved, **chip)
        assert t_max * (1 - 1e-12) <= t_add <= 2 * t_max  # (W + KV)/BW vs W/BW + KV/BW: one rounding apart
        assert costs.decode_tok_s(**shape) == B / t_max
        assert math.isclose(costs.batching_gain(**shape), (B / t_max) / costs.decode_tok_s(**dict(shape, B=1)))
        assert costs.ideal_batching_tok_s(**shape) == B / costs.decode_step_time(**dict(shape, B=1))
        assert math.isclose(costs.kv_read_share(weight_bytes=moved - B * S * kv, kv_bytes_per_token=kv, S=S, B=B),
                            B * S * kv / moved)
        weight_flops = flops - 4 * B * m.L * (S + 1) * m.d  # Eq. (1.3) without attention over the cache
        if (moved - B * S * kv) / hw.bandwidth >= weight_flops / hw.peak_flops:  # the matmuls memory-bound too
            assert math.isclose(t_add, t_max)
    # matmuls compute-bound and KV reads of the same order: the max form is ~1.4x optimistic here
    big = dict(m.symbols(), N_params=m.N_params, s=2, S=128, B=1024, **chip)
    assert costs.decode_step_time(**big, overlap=False) > 1.3 * costs.decode_step_time(**big)
    with pytest.raises(ValueError, match="s_kv must be given"):
        costs.decode_step_time(**dict(big, s=0.5))
    assert costs.decode_step_time(**dict(big, s=0.5, s_kv=2)) < costs.decode_step_time(**big)


def test_explorer_formatters():
    assert costs.fmt_fixed(1234.56, 1, "×") == "1,234.6×"
    assert costs.fmt_int(2.5) == "3" and costs.fmt_int(1_048_576, " tokens") == "1,048,576 tokens"
    assert costs.fmt_percent(0.857) == "85.7%" and costs.fmt_percent(0.25, decimals=0) == "25%"
    assert [costs.fmt_duration(x) for x in (0, 4.73e-7, 0.00498, 0.0443, 12.34)] == [
        "0.00 s", "473 ns", "4.98 ms", "44.3 ms", "12.3 s"]
    assert costs.fmt_flops(393_216, exact=True) == "393,216 (393.2 kFLOP)"
    assert costs.fmt_bytes(2.039e12, binary=False, suffix="/s") == "2.0 TB/s"
def test_sliding_window_cache_stops_growing_at_the_window():
    """Eq. (2.4): Mistral 7B's 4,096-token window bounds its cache at 4,096 tokens' worth per sequence."""
    kv = dict(L=32, H_kv=8, d_h=128, s=2)
    for S in [1, 4095, 4096]:
        assert costs.window_kv_cache_bytes(**kv, S=S, window=4096, B=3) == costs.kv_cache_bytes(**kv, S=S, B=3)
    for S in [4097, 32_768, 10**6]:
        assert costs.window_kv_cache_bytes(**kv, S=S, window=4096) == 512 * 1024**2
    with pytest.raises(ValueError, match="window"):
        costs.window_kv_cache_bytes(**kv, S=10, window=0)


def test_latent_kv_bytes_per_token():
    """Eq. (2.5): DeepSeek-V3 caches 512 + 64 values per layer and token, 61 layers, bf16."""
    assert costs.latent_kv_bytes_per_token(L=61, d_c=512, d_rope=64, s=2) == 61 * 576 * 2 == 70_272
    with pytest.raises(ValueError, match="d_c"):
        costs.latent_kv_bytes_per_token(L=61, d_c=0, d_rope=64, s=2)


def test_moe_active_params_and_expected_experts():
    """Eqs. (2.6)-(2.7): a dense model is the E = k case; a batch reads more experts than one token does."""
    dense = dict(N_params=10**9, L=4, d=64, d_ffn=256)
    assert costs.moe_active_params(**dense, experts=1, active_experts=1) == 10**9
    assert costs.moe_active_params(**dense, experts=8, active_experts=2) == 10**9 - 4 * 6 * 3 * 64 * 256
    assert costs.moe_expected_experts(experts=8, active_experts=2, B=1) == 2
    assert costs.moe_expected_experts(experts=8, active_experts=2, B=2) == pytest.approx(8 * (1 - 0.75**2))
    grow = [costs.moe_expected_experts(experts=8, active_experts=2, B=B) for B in range(1, 64)]
    assert all(a < b for a, b in zip(grow, grow[1:], strict=False)) and 7.99 < grow[-1] < 8
    with pytest.raises(ValueError, match="active_experts"):
        costs.moe_expected_experts(experts=2, active_experts=3)
    with pytest.raises(ValueError, match="N_params"):
        costs.moe_active_params(N_params=10, L=4, d=64, d_ffn=256, experts=8, active_experts=2)


@given(L=st.integers(1, 8), P=st.integers(1, 300), H=st.sampled_from([1, 2, 4, 8]), g=st.sampled_from([1, 2]),
       d_h=st.sampled_from([8, 16]), V=st.integers(0, 700), B=st.integers(1, 4), m=st.sampled_from([2, 3]))
def test_prefill_terms_sum_to_eq_1_2(L, P, H, g, d_h, V, B, m):
    """The terms of Eq. (1.2) add up to prefill_flops, for MHA and GQA, GELU and SwiGLU."""
    model = dict(L=L, P=P, d=H * g * d_h, H_kv=H, d_h=d_h, d_ffn=3 * d_h, V=V, B=B, ffn_matrices=m)
    terms = costs.prefill_flops_by_term(**model)
    assert sum(terms.values()) == costs.prefill_flops(**model)
    assert terms["attention"] == L * 4 * B * P * P * model["d"] and terms["lm_head"] == 2 * B * model["d"] * V


def test_moe_decode_params_grows_from_active_to_all():
    """Eq. (2.8): a batch of one reads the active parameters (Eq. 2.6); a large batch reads nearly all."""
    mixtral = dict(N_params=46_700_000_000, L=32, d=4096, d_ffn=14336, experts=8, active_experts=2)
    assert costs.moe_decode_params(**mixtral) == pytest.approx(costs.moe_active_params(**mixtral), rel=1e-12)
    reads = [costs.moe_decode_params(**mixtral, B=B) for B in (1, 2, 8, 64)]
    assert all(a < b for a, b in zip(reads, reads[1:], strict=False))
    assert reads[-1] == pytest.approx(46_700_000_000, rel=1e-6)
    expert = 32 * 3 * 4096 * 14336
    extra = costs.moe_expected_experts(experts=8, active_experts=2, B=2) - 2
    assert reads[1] == pytest.approx(reads[0] + extra * expert)
# ---- Chapter 7: decode_step_time (Eqs. 7.2, 7.3) and critical_batch (Eq. 7.4) ----


@given(S=st.integers(0, 65536), B=st.integers(1, 2048), model=st.sampled_from(sorted(MODELS)),
       hw=st.sampled_from(sorted(HARDWARE)))
def test_decode_step_time_overlap_and_additive(S, B, model, hw):
    """Eq. (7.2) is the roofline time of the whole step; Eq. (7.3) adds the two parts, so it lies between
    Eq. (7.2) and twice Eq. (7.2), and equals it when there is no cache (S = 0)."""
    m, h = MODELS[model], HARDWARE[hw]
    args = dict(S=S, B=B, N_params=m.N_params, s=2, bandwidth=h.bandwidth, peak_flops=h.peak_flops)
    overlap = costs.evaluate(costs.decode_step_time, m, **args)
    additive = costs.evaluate(costs.decode_step_time, m, overlap=False, **args)
    flops = costs.evaluate(costs.decode_step_flops, m, S=S, B=B)
    moved = costs.decode_step_bytes(weight_bytes=2 * m.N_params,
                                    kv_bytes_per_token=costs.evaluate(costs.kv_bytes_per_token, m, s=2), S=S, B=B)
    assert math.isclose(overlap, max(moved / h.bandwidth, flops / h.peak_flops), rel_tol=1e-12)
    assert overlap * (1 - 1e-12) <= additive <= 2 * overlap * (1 + 1e-12)
    if S == 0:
        assert math.isclose(additive, overlap, rel_tol=1e-12)


def test_decode_step_time_additive_charges_the_cache_at_bandwidth():
    """Llama-2-7B at S = 4096, B = 64 on an H100: the cache reads (attention intensity about 1 FLOP/byte)
    are added to a compute-bound weight part, not hidden under it."""
    m, h = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
    args = dict(S=4096, B=64, N_params=m.N_params, s=2, bandwidth=h.bandwidth, peak_flops=h.peak_flops)
    kv = 64 * 4096 * costs.evaluate(costs.kv_bytes_per_token, m, s=2)
    dense = max(2 * m.N_params / h.bandwidth, costs.evaluate(costs.decode_step_flops, m, S=0, B=64) / h.peak_flops)
    assert math.isclose(costs.evaluate(costs.decode_step_time, m, overlap=False, **args), dense + kv / h.bandwidth)
    with pytest.raises(ValueError, match="overlap must be True"):
        costs.evaluate(costs.decode_step_time, m, overlap="no", **args)


@pytest.mark.parametrize("hw", sorted(HARDWARE))
@pytest.mark.parametrize("model", ["Llama-2-7B", "Llama-3-8B", "MiniGPT"])
@pytest.mark.parametrize("S", [0, 1, 128, 512])
def test_critical_batch_is_the_first_batch_at_the_ridge(hw, model, S):
    """Eq. (7.4)'s closed form equals a search for the smallest B with decode intensity >= the ridge point."""
    m, h = MODELS[model], HARDWARE[hw]
    ridge = costs.ridge_point(peak_flops=h.peak_flops, bandwidth=h.bandwidth)

    def intensity(B):
        return costs.evaluate(costs.decode_intensity, m, S=S, s=2, N_params=m.N_params, B=B)

    found = costs.evaluate(costs.critical_batch, m, S=S, s=2, N_params=m.N_params, bandwidth=h.bandwidth,
                           peak_flops=h.peak_flops)
    if found is None:
        assert intensity(2**20) < ridge
    else:
        assert intensity(found) >= ridge * (1 - 1e-12)
        assert found == 1 or intensity(found - 1) < ridge


def test_the_seed_sums_stay_exact_past_the_floats_53_bits():
    """The sums of n and n² over a generation are exact integers (D·(D−1) is even, (D−1)·D·(2D−1) a
    multiple of 6): divided with `/` they become floats and lose the last units past 2⁵³, so the
    totals are no longer counts and the no-cache attention share is off by an ulp at D ≈ 10⁶."""
    from fractions import Fraction

    D = 1_000_000_009
    total = costs.decode_macs_seed(L=1, P=1, D=D, d=3)
    assert isinstance(total, int) and total == 12 * D * 9 + 2 * 3 * (D + D * (D - 1) // 2)
    flops = costs.decode_flops(L=1, P=1, D=D, d=3)  # D−1 steps over keys 2..D: Σ = (D−1)(D+2)/2
    per_token = 2 * 3 * (3 + 2 * 3) + 2 * 3 * 3 + 2 * 2 * 3 * 12
    assert isinstance(flops, int) and flops == (D - 1) * per_token + 4 * 3 * ((D - 1) * (D + 2) // 2)
    P, D, d = 1, 1_000_003, 1
    n = range(P, P + D)
    tokens, squares = sum(n), sum(k * k for k in n)
    exact = Fraction(squares, 6 * d * tokens + squares)
    assert costs.no_cache_attention_share(P=P, D=D, d=d) == float(exact)


def test_the_traffic_and_parameter_formulas_default_to_the_documented_case():
    """One sequence, no K/V written by prefill unless given, bf16, GPT-2's biases in MiniGPT's count
    and none in Eq. (9.3)'s K/V projections (Llama's): a default changed moves every caller that
    leaves it out."""
    assert costs.decode_step_bytes(weight_bytes=100, kv_bytes_per_token=8, S=3) == 100 + 3 * 8
    assert costs.prefill_bytes(weight_bytes=100, P=3, d=8, s=2) == 100 + 2 * 3 * 8 * 2
    floor = dict(L=2, d=8, V=5, P=3, D=4, bandwidth=1.0)
    assert costs.last_decode_step_floor_s(**floor) == costs.last_decode_step_floor_s(**floor, s=2)
    gqa = dict(N_params=10**6, L=2, d=64, d_h=16, H_kv=1, s=2, S=100)
    assert costs.gqa_decode_gain(**gqa) == costs.gqa_decode_gain(**gqa, B=1, biases=False)
    assert costs.gqa_decode_gain(**gqa) != costs.gqa_decode_gain(**gqa, biases=True)
    shape = dict(L=2, d=8, V=5, S_max=16)
    assert costs.params_by_component(**shape) == costs.params_by_component(**shape, biases=True,
                                                                          d_ffn=32)
    assert costs.param_count(**shape) == costs.param_count(**shape, biases=True, d_ffn=32)
    assert costs.kv_projection_params(L=2, d=8, H_kv=2, d_h=2) == 2 * 2 * 8 * 2 * 2
    heads = dict(N_params=10**4, L=2, d=8, d_h=2, H_kv=2, H_kv_new=4)
    assert costs.kv_heads_params(**heads) == 10**4 + 2 * 2 * 8 * 2 * 2


def test_memory_formulas_at_their_edges():
    """Weights that fill the budget exactly fit (Eq. 2.9 is ≤); one sequence by default in the fit
    and the chip count; GQA's H // 8 and H // 4 are whole heads (12 heads in groups of 8 is one K/V
    head, not 1.5); Eq. (2.7) at B = 1 by default; Eq. (2.8) with the model's own FFN matrices."""
    fit = costs.memory_fit(memory_bytes=100, weight_bytes=100, kv_bytes_per_token=1, S=1)
    assert fit.weights_fit and not fit.fits
    budget = dict(memory_bytes=120, weight_bytes=100, kv_bytes_per_token=2, S=10)  # 100 + B·20
    assert costs.fits_in_memory(**budget) and not costs.fits_in_memory(**budget, B=2)
    assert costs.chips_needed(**budget, reserve=0.0) == 1
    assert costs.chips_needed(**budget, reserve=0.0, B=2) == 2
    for H, scheme, heads in ((12, "gqa", 1), (20, "gqa", 2), (6, "gqa4", 1), (20, "gqa4", 5)):
        got = costs.kv_heads(H=H, H_kv=1, scheme=scheme)
        assert got == heads and isinstance(got, int)
    assert costs.moe_expected_experts(experts=8, active_experts=2) == 2.0
    moe = dict(N_params=10**6, L=2, d=8, d_ffn=16, experts=8, active_experts=2, ffn_matrices=2)
    assert costs.moe_decode_params(**moe, B=1) == costs.moe_active_params(**moe)
    assert costs.moe_decode_params(**moe, B=1) == 10**6 - 2 * 6 * 2 * 8 * 16
