"""The cost formulas: closed forms against brute-force sums, the seed's convention, the book's numbers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=150, deadline=None)
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


@settings(max_examples=100, deadline=None)
@given(m=shapes(), T=st.integers(1, 30), S=st.integers(0, 50))
def test_layer_flops_matches_ops(m, T, S):
    layer = {k: m[k] for k in ("d", "H_kv", "d_h", "d_ffn", "B")}
    assert costs.layer_flops(T=T, S=S, **layer) == brute_layer(T=T, S=S, **layer)
    assert costs.lm_head_flops(d=m["d"], V=m["V"], T=T, B=m["B"]) == 2 * m["B"] * T * m["d"] * m["V"]


@settings(max_examples=100, deadline=None)
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


@settings(max_examples=100, deadline=None)
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


@settings(max_examples=100, deadline=None)
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
    with pytest.raises(ValueError, match="overlap must be a bool"):
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
