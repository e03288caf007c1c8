"""Tests of minigpt.costs.roofline: the roof (Eq. 3.3), model points (Eq. 3.1, 3.5) and Eq. (3.4) backwards."""

from __future__ import annotations

import math

import pytest

from minigpt import costs
from minigpt.costs import roofline
from minigpt.costs.presets import HARDWARE, MODELS

MINI = MODELS["MiniGPT"]
A100 = HARDWARE["A100 80GB"]


def test_roof_is_min_of_two_ceilings() -> None:
    ridge = costs.ridge_point(peak_flops=A100.peak_flops, bandwidth=A100.bandwidth)
    below, at, above = roofline.roofline_curve(
        peak_flops=A100.peak_flops, bandwidth=A100.bandwidth, intensities=[1.0, ridge, 10 * ridge]
    )
    assert below == pytest.approx(A100.bandwidth)
    assert at == pytest.approx(A100.peak_flops)
    assert above == A100.peak_flops


def test_log_grid_endpoints_and_errors() -> None:
    grid = roofline.log_grid(0.1, 1000.0, 5)
    assert grid[0] == pytest.approx(0.1) and grid[-1] == pytest.approx(1000.0)
    assert grid[2] == pytest.approx(10.0)
    with pytest.raises(ValueError):
        roofline.log_grid(0.0, 1.0)


@pytest.mark.parametrize("S", [0, 7, 100])
@pytest.mark.parametrize("B", [1, 3])
def test_step_flops_equal_costs_for_minigpt(S: int, B: int) -> None:
    sym = dict(L=MINI.L, d=MINI.d, H_kv=MINI.H_kv, d_h=MINI.d_h, d_ffn=MINI.d_ffn, V=MINI.V, B=B)
    assert roofline.model_step_flops(MINI, T=1, S=S, B=B) == costs.decode_step_flops(S=S, **sym)
    assert roofline.model_step_flops(MINI, T=5, S=0, B=B) == costs.prefill_flops(P=5, **sym)


def test_swiglu_counts_three_ffn_matrices() -> None:
    llama = MODELS["Llama-2-7B"]
    per_token = roofline.model_step_flops(llama, T=1, S=0, B=1) - 4 * llama.L * llama.d - 2 * llama.d * llama.V
    d = llama.d
    assert per_token == 2 * llama.L * (4 * d * d + 3 * d * llama.d_ffn)


def test_decode_point_matches_costs_intensity_for_minigpt() -> None:
    point = roofline.decode_point(MINI, S=10, s=4, B=2, peak_flops=A100.peak_flops, bandwidth=A100.bandwidth)
    expected = costs.decode_intensity(
        L=MINI.L, S=10, d=MINI.d, s=4, N_params=MINI.N_params, H_kv=MINI.H_kv, d_h=MINI.d_h,
        d_ffn=MINI.d_ffn, V=MINI.V, B=2,
    )
    assert point.intensity == pytest.approx(expected)
    assert point.bound == "memory"
    assert point.time_s == pytest.approx(point.bytes / A100.bandwidth)


def test_decode_is_memory_bound_and_long_prefill_compute_bound() -> None:
    llama = MODELS["Llama-2-7B"]
    hw = dict(peak_flops=A100.peak_flops, bandwidth=A100.bandwidth)
    decode = roofline.decode_point(llama, S=1024, **hw)
    prefill = roofline.prefill_point(llama, P=2048, **hw)
    assert decode.bound == "memory" and 0.9 < decode.intensity < 1.1  # ~1 FLOP/byte in bf16
    assert prefill.bound == "compute" and prefill.time_s == pytest.approx(prefill.flops / A100.peak_flops)


def test_batching_raises_decode_intensity_less_than_B_when_kv_is_read() -> None:
    llama = MODELS["Llama-2-7B"]
    hw = dict(peak_flops=A100.peak_flops, bandwidth=A100.bandwidth)
    one = roofline.decode_point(llama, S=1024, B=1, **hw).intensity
    sixteen = roofline.decode_point(llama, S=1024, B=16, **hw).intensity
    assert one < sixteen < 16 * one


def test_measured_point_and_achieved_bandwidth() -> None:
    p = roofline.measured_point("x", flops=2e9, bytes=1e9, seconds=0.5)
    assert (p.intensity, p.achieved_flops, p.achieved_bandwidth) == (2.0, 4e9, 2e9)
    # gpt-fast: 104.9 tok/s on Llama-2-7B bf16 implies about 1.41 TB/s with N·s bytes per step.
    bw = roofline.achieved_bandwidth(tok_s=104.9, bytes_per_step=2 * 6.74e9)
    assert bw == pytest.approx(1.414e12, rel=1e-3)
    with pytest.raises(ValueError):
        roofline.measured_point("x", flops=1.0, bytes=1.0, seconds=0.0)
    with pytest.raises(ValueError):
        roofline.achieved_bandwidth(tok_s=1.0, bytes_per_step=1.0, B=0)


# ---- each check names its parameter (mutation testing: a check that lets a bool, a string or a
# bound through, or an error that names the wrong parameter, survived every test above) ----

_HW = dict(peak_flops=1e12, bandwidth=1e9)
_SHAPE = dict(L=2, S=3, d=8, N_params=100)
_POS, _NONNEG = "must be a finite number > 0", "must be a number >= 0"
_INT1 = "must be an integer >= 1"
_TOK_S = "^tok_s must be a number > 0"
BAD = [
    (costs.arithmetic_intensity, dict(flops=True, bytes=1), "^flops " + _NONNEG),
    (costs.arithmetic_intensity, dict(flops="1", bytes=1), "^flops " + _NONNEG),
    (costs.arithmetic_intensity, dict(flops=1, bytes=0), "^bytes " + _POS),
    (costs.ridge_point, dict(peak_flops=0, bandwidth=1), "^peak_flops " + _POS),
    (costs.ridge_point, dict(peak_flops=1, bandwidth=0), "^bandwidth " + _POS),
    (costs.attainable_flops, dict(intensity=True, **_HW), "^intensity " + _NONNEG),
    (costs.attainable_flops, dict(intensity="1", **_HW), "^intensity " + _NONNEG),
    (costs.attainable_flops, dict(intensity=1, peak_flops=0, bandwidth=1), "^peak_flops " + _POS),
    (costs.attainable_flops, dict(intensity=1, peak_flops=1, bandwidth=0), "^bandwidth " + _POS),
    (costs.decode_tok_s_ceiling, dict(bandwidth=1, bytes_per_step=1, B=0), "^B " + _INT1),
    (costs.decode_tok_s_ceiling, dict(bandwidth=0, bytes_per_step=1), "^bandwidth " + _POS),
    (costs.decode_tok_s_ceiling, dict(bandwidth=1, bytes_per_step=0), "^bytes_per_step " + _POS),
    (costs.decode_intensity, dict(s=0, **_SHAPE), "^s " + _INT1),
    (costs.decode_intensity, dict(s=0, **{**_SHAPE, "N_params": -1}), "^s " + _INT1),  # s first
    (costs.attention_flops, dict(L=0, T=1, S=0, d=8), "^L " + _INT1),
    (costs.attention_flops, dict(L=1, T=1, S=0, d=8, B=0), "^B " + _INT1),
    (costs.attention_flops, dict(L=1, T=1, S=-1, d=8), "^S must be an integer >= 0"),
    (costs.attention_flops, dict(L=1, T=1, S=0, d=0), "^d " + _INT1),
    (costs.attention_bytes, dict(L=0, T=1, S=0, d=8, s=2), "^L " + _INT1),
    (costs.attention_bytes, dict(L=1, T=1, S=0, d=8, s=2, B=0), "^B " + _INT1),
    (costs.attention_bytes, dict(L=1, T=1, S=-1, d=8, s=2), "^S must be an integer >= 0"),
    (costs.attention_bytes, dict(L=1, T=0, S=0, d=8, s=2), "^T " + _INT1),
    (costs.roofline_time, dict(flops=True, bytes=1, **_HW), "^flops " + _NONNEG),
    (costs.roofline_time, dict(flops="1", bytes=1, **_HW), "^flops " + _NONNEG),
    (costs.roofline_time, dict(flops=1, bytes=True, **_HW), "^bytes " + _NONNEG),
    (costs.roofline_time, dict(flops=1, bytes="1", **_HW), "^bytes " + _NONNEG),
    (costs.roofline_time, dict(flops=1, bytes=1, peak_flops=0, bandwidth=1), "^peak_flops " + _POS),
    (costs.roofline_time, dict(flops=1, bytes=1, peak_flops=1, bandwidth=0), "^bandwidth " + _POS),
    (costs.roofline_bound, dict(intensity=True, **_HW), "^intensity " + _NONNEG),
    (costs.roofline_bound, dict(intensity="1", **_HW), "^intensity " + _NONNEG),
    (costs.critical_batch, dict(s=0, **_SHAPE, **_HW), "^s " + _INT1),
    (costs.critical_batch, dict(s=0, **{**_SHAPE, "N_params": -1}, **_HW), "^s " + _INT1),
    (costs.decode_step_time, dict(s=2, s_kv=0, **_SHAPE, **_HW), "^s_kv " + _INT1),
    (roofline.measured_point, dict(label="x", flops=1, bytes=1, seconds=True),
     "^seconds must be a number > 0"),
    (roofline.achieved_bandwidth, dict(tok_s=1, bytes_per_step=1, B=True), "^B " + _INT1),
    (roofline.achieved_bandwidth, dict(tok_s=True, bytes_per_step=1), _TOK_S),
    (roofline.achieved_bandwidth, dict(tok_s="1", bytes_per_step=1), _TOK_S),
    (roofline.achieved_bandwidth, dict(tok_s=0, bytes_per_step=1), _TOK_S),
    (roofline.achieved_bandwidth, dict(tok_s=1, bytes_per_step=0),
     "^bytes_per_step must be a number > 0"),
]


@pytest.mark.parametrize(("fn", "kwargs", "message"), BAD,
                         ids=[f"{f.__name__}-{m}" for f, _, m in BAD])
def test_each_roofline_check_rejects_and_names_its_parameter(fn, kwargs, message) -> None:
    """A bool or a string passed as a count or a rate, a zero rate, an error naming another
    parameter (or none): each is a bug a reader of the traceback pays for."""
    with pytest.raises(ValueError, match=message):
        fn(**kwargs)


def test_the_bounds_of_the_checks_are_where_the_docstrings_put_them() -> None:
    """Zero FLOPs, bytes or intensity are allowed (an idle step), fractions below 1 too; a check
    written `<= 0` or `< 1` would refuse them."""
    assert costs.arithmetic_intensity(flops=0, bytes=4) == 0
    assert costs.arithmetic_intensity(flops=0.5, bytes=1) == 0.5
    assert costs.attainable_flops(intensity=0, **_HW) == 0
    assert costs.roofline_time(flops=0, bytes=0, **_HW) == 0
    assert costs.roofline_time(flops=0.5, bytes=0.5, peak_flops=1, bandwidth=1) == 0.5
    assert roofline.achieved_bandwidth(tok_s=0.5, bytes_per_step=4) == 2.0
    assert roofline.achieved_bandwidth(tok_s=0.5, bytes_per_step=0.5) == 0.25
    # the smallest model and step each check allows
    assert costs.attention_flops(L=1, T=1, S=0, d=1) == 4
    # Eq. (3.4) backwards divides by B: B sequences share one step's bytes
    assert roofline.achieved_bandwidth(tok_s=100, bytes_per_step=8, B=2) == 400
    # one layer is a model; the KV term of Eq. (3.5) is 2·L·d·s per token
    one = costs.decode_intensity(L=1, S=3, d=8, s=1, N_params=100)
    flops = costs.decode_step_flops(L=1, S=3, d=8)
    assert one == flops / (100 + 3 * 2 * 8)
    kv_token = costs.kv_bytes_per_token(L=MINI.L, H_kv=MINI.H_kv, d_h=MINI.d_h, s=2)
    one_token = roofline.model_step_flops(MINI, T=1, S=1, B=1) / kv_token
    assert roofline.decode_intensity_limit(MINI, S=1) == one_token


def test_log_grid_takes_two_points_and_refuses_an_empty_range() -> None:
    """n = 2 is the two ends (a check `n <= 2` refuses it); lo = hi is no range; 200 points by
    default."""
    assert roofline.log_grid(1.0, 100.0, 2) == pytest.approx([1.0, 100.0])
    assert len(roofline.log_grid(1.0, 100.0)) == 200
    with pytest.raises(ValueError, match="^need 0 < lo < hi and n >= 2"):
        roofline.log_grid(1.0, 1.0)
    with pytest.raises(ValueError, match="^need 0 < lo < hi and n >= 2"):
        roofline.log_grid(1.0, 10.0, 1)


def test_defaults_are_the_documented_case() -> None:
    """Optional symbols default to no LM head (V = 0), one sequence (B = 1), a GELU MLP (2
    matrices), bf16 (s = 2): a default changed in one formula silently moves every caller that
    leaves it out."""
    shape = dict(L=2, S=5, d=8)
    assert costs.decode_intensity(s=2, N_params=100, **shape) == costs.decode_intensity(
        s=2, N_params=100, V=0, B=1, ffn_matrices=2, **shape)
    assert costs.prefill_intensity(L=2, P=5, d=8, s=2, N_params=100) == costs.prefill_intensity(
        L=2, P=5, d=8, s=2, N_params=100, V=0)
    chip = dict(peak_flops=1e9, bandwidth=1e6)
    slow_chip = dict(peak_flops=1.0, bandwidth=1e12)  # compute-bound: every FLOP shows in the time
    for hw in (chip, slow_chip):
        for overlap in (True, False):
            assert costs.decode_step_time(
                s=2, N_params=100, overlap=overlap, **shape, **hw) == costs.decode_step_time(
                s=2, N_params=100, V=0, B=1, ffn_matrices=2, overlap=overlap, **shape, **hw)
    assert costs.critical_batch(s=2, N_params=10**6, **shape, **chip) == costs.critical_batch(
        s=2, N_params=10**6, V=0, ffn_matrices=2, **shape, **chip)
    step = roofline.model_step_flops
    assert step(MINI, T=3, S=4) == step(MINI, T=3, S=4, B=1)
    attention = dict(L=2, T=3, S=4, d=8)
    assert costs.attention_flops(**attention) == costs.attention_flops(**attention, B=1)
    assert costs.attention_bytes(L=2, T=3, S=4, d=8, s=2) == costs.attention_bytes(
        L=2, T=3, S=4, d=8, s=2, B=1)
    hw = dict(peak_flops=A100.peak_flops, bandwidth=A100.bandwidth)
    prefill, decode = roofline.prefill_point, roofline.decode_point
    assert prefill(MINI, P=7, **hw) == prefill(MINI, P=7, s=2, B=1, **hw)
    assert decode(MINI, S=7, **hw) == decode(MINI, S=7, s=2, B=1, **hw)


def test_prefill_point_counts_every_prompt_and_the_kv_it_writes() -> None:
    """A prefill point's FLOPs are Eq. (1.2) over all B prompts from position 0, its bytes the
    weights, the activations of B·P tokens and their K/V written; its label says which point it
    is."""
    hw = dict(peak_flops=A100.peak_flops, bandwidth=A100.bandwidth)
    point = roofline.prefill_point(MINI, P=7, s=4, B=3, **hw)
    sym = dict(L=MINI.L, d=MINI.d, H_kv=MINI.H_kv, d_h=MINI.d_h, d_ffn=MINI.d_ffn, V=MINI.V)
    assert point.flops == costs.prefill_flops(P=7, B=3, **sym)
    kv = costs.kv_bytes_per_token(L=MINI.L, H_kv=MINI.H_kv, d_h=MINI.d_h, s=4)
    assert point.bytes == costs.prefill_bytes(
        weight_bytes=costs.weight_bytes(N_params=MINI.N_params, s=4), P=7, d=MINI.d, s=4, B=3,
        kv_bytes_per_token=kv)
    assert point.label == f"{MINI.name} prefill P=7, B=3"
    decode = roofline.decode_point(MINI, S=1200, B=2, **hw)
    assert decode.label == f"{MINI.name} decode S=1,200, B=2"
    assert point.attainable_flops == costs.attainable_flops(intensity=point.intensity, **hw)


def test_a_measured_point_keeps_what_was_measured() -> None:
    """The label, FLOPs, bytes and seconds of a timed call come back as given (a plot labels and
    places its points by them)."""
    p = roofline.measured_point("matmul", flops=6.0, bytes=3.0, seconds=2.0)
    assert (p.label, p.flops, p.bytes, p.seconds) == ("matmul", 6.0, 3.0, 2.0)


def test_critical_batch_at_the_edges_of_eq_7_4() -> None:
    """A margin of exactly zero is `never` (None), not a division by zero; a margin below one
    FLOP is still a margin; a model whose weights are nothing next to one sequence's FLOPs is
    compute-bound at B = 1, not 2."""
    flops_1 = costs.decode_step_flops(L=1, S=1, d=4)  # 416; one sequence's KV: 2·1·4·1 = 8 bytes
    shape = dict(L=1, S=1, d=4, N_params=1, s=1)
    assert costs.critical_batch(bandwidth=8.0, peak_flops=float(flops_1), **shape) is None
    half = costs.critical_batch(bandwidth=8.0, peak_flops=flops_1 - 0.5, **shape)
    assert half == math.ceil((flops_1 - 0.5) / 8 / 0.5)
    assert costs.critical_batch(bandwidth=1.0, peak_flops=1.0, **shape) == 1


def test_step_time_on_a_preset_is_decode_step_time_with_its_symbols() -> None:
    """`step_time_on` (Chapter 7's exercise calls it) hands a preset model's symbols, N, the chip's
    two rates and the form (overlap or additive) to `decode_step_time`; a symbol, a rate or the
    form lost on the way, or a default other than bf16 and one sequence, is a wrong step time."""
    llama, h100 = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
    for overlap in (True, False):
        for S, B, s in ((0, 1, 2), (300, 7, 1), (4096, 32, 2)):
            expected = costs.decode_step_time(
                L=llama.L, S=S, d=llama.d, N_params=llama.N_params, s=s, bandwidth=h100.bandwidth,
                peak_flops=h100.peak_flops, H_kv=llama.H_kv, d_h=llama.d_h, d_ffn=llama.d_ffn,
                V=llama.V, B=B, ffn_matrices=llama.ffn_matrices, overlap=overlap)
            assert roofline.step_time_on(llama, h100, S=S, B=B, s=s, overlap=overlap) == expected
    assert roofline.step_time_on(llama, h100, S=64) == roofline.step_time_on(
        llama, h100, S=64, B=1, s=2, overlap=True)
