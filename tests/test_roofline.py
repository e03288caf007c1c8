"""Tests of minigpt.costs.roofline: the roof (Eq. 3.3), model points (Eq. 3.1, 3.5) and Eq. (3.4) backwards."""

from __future__ import annotations

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
