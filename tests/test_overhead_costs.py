"""The overhead floor's formulas, Eqs. (18.1)-(18.3): against the recorded sweep of Chapter 18, and their algebra."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.measure.sweep_files import read_json

RUN = read_json("data/overhead_cpu.json")


@pytest.mark.parametrize("row", RUN["models"], ids=lambda r: r["name"])
def test_floor_and_crossover_reproduce_the_recorded_sweep(row: dict) -> None:
    cfg = ModelConfig(**row["config"])
    floor = costs.overhead_floor_s(n_ops=row["n_ops"], t_op=row["per_op_s"])
    assert math.isclose(floor, row["floor_s"], rel_tol=1e-12)
    kv = costs.evaluate(costs.kv_bytes_per_token, cfg, s=4)
    assert row["N_params"] * 4 + row["S"] * kv == row["bytes_per_step"]  # the sweep's bytes are Eq. (3.5)'s
    n_star = costs.overhead_crossover_params(n_ops=row["n_ops"], t_op=row["per_op_s"], bandwidth=RUN["bandwidth"],
                                             s=4, kv_bytes_per_token=kv, S=row["S"])
    # At N*, Eq. (18.1)'s two terms are equal; a smaller model is overhead-bound, a larger one traffic-bound.
    assert math.isclose((n_star * 4 + row["S"] * kv) / RUN["bandwidth"], floor, rel_tol=1e-9)
    assert (row["N_params"] < n_star) == (row["floor_s"] > row["bandwidth_step_s"])


def test_the_recorded_family_crosses_over() -> None:
    """The sweep spans the crossover: MiniGPT is overhead-bound on this CPU, the largest model is not."""
    bound = [r["floor_s"] > r["bandwidth_step_s"] for r in RUN["models"]]
    assert bound[0] and not bound[-1]


shapes = st.sampled_from(list(MODELS.values()))
chips = st.sampled_from(list(HARDWARE.values()))


@settings(max_examples=examples(60), deadline=None)
@given(m=shapes, hw=chips, n_ops=st.integers(1, 5000), t_op=st.floats(1e-8, 1e-4), B=st.integers(1, 256),
       S=st.integers(0, 32768))
def test_step_time_is_the_max_or_the_sum_of_its_terms(m, hw, n_ops, t_op, B, S) -> None:
    args = dict(N_params=m.N_params, s=2, bandwidth=hw.bandwidth, peak_flops=hw.peak_flops, B=B, S=S)
    traffic = costs.evaluate(costs.decode_step_time, m, **args)
    floor = costs.overhead_floor_s(n_ops=n_ops, t_op=t_op)
    step = costs.evaluate(costs.overhead_step_time, m, **args, n_ops=n_ops, t_op=t_op)
    serial = costs.evaluate(costs.overhead_step_time, m, **args, n_ops=n_ops, t_op=t_op, overlap=False)
    assert step == max(traffic, floor) and serial == traffic + floor
    assert step <= serial <= 2 * step
    bound = costs.evaluate(costs.overhead_bound, m, **args, n_ops=n_ops, t_op=t_op)
    assert bound == ("overhead" if floor >= traffic else "traffic")


@settings(max_examples=examples(60), deadline=None)
@given(m=shapes, hw=chips, n_ops=st.integers(1, 5000), t_op=st.floats(1e-7, 1e-4), s=st.sampled_from([0.5, 1, 2, 4]))
def test_crossover_is_where_the_weights_read_as_long_as_the_floor(m, hw, n_ops, t_op, s) -> None:
    n_star = costs.overhead_crossover_params(n_ops=n_ops, t_op=t_op, bandwidth=hw.bandwidth, s=s)
    assert math.isclose(n_star * s / hw.bandwidth, n_ops * t_op, rel_tol=1e-12)
    kv = costs.evaluate(costs.kv_bytes_per_token, m, s=2)
    with_cache = costs.overhead_crossover_params(n_ops=n_ops, t_op=t_op, bandwidth=hw.bandwidth, s=s,
                                                 kv_bytes_per_token=kv, S=4096, B=8)
    assert with_cache == max(0.0, n_star - 8 * 4096 * kv / s)


def test_bad_inputs_name_the_parameter() -> None:
    with pytest.raises(ValueError, match="n_ops must be an integer >= 1"):
        costs.overhead_floor_s(n_ops=0, t_op=1e-6)
    with pytest.raises(ValueError, match="t_op must be a finite number > 0"):
        costs.overhead_floor_s(n_ops=10, t_op=-1e-6)
    with pytest.raises(ValueError, match="overlap must be True"):
        costs.evaluate(costs.overhead_step_time, MODELS["MiniGPT"], N_params=1, s=4, bandwidth=1e9, peak_flops=1e12,
                       S=1, n_ops=10, t_op=1e-6, overlap="max")
    with pytest.raises(ValueError, match="s must be a finite number > 0"):
        costs.overhead_crossover_params(n_ops=10, t_op=1e-6, bandwidth=1e9, s=0)


def test_overhead_step_model_adds_its_parts() -> None:
    from minigpt.costs.overhead import overhead_step_model

    assert overhead_step_model(n_ops=236, t_op=4e-6, kernel_s=1e-4) == pytest.approx(236 * 4e-6 + 1e-4)
    assert overhead_step_model(n_ops=0, t_op=1e-6, kernel_s=2e-3, t_call=3e-4) == pytest.approx(2.3e-3)
    # ρ scales the matmuls only: a mutant that scales the whole step, or ignores ρ, fails here
    assert overhead_step_model(n_ops=100, t_op=1e-6, kernel_s=1e-3, t_call=5e-4,
                               kernel_slowdown=0.25) == pytest.approx(5e-4 + 1e-4 + 1.25e-3)
    for bad in (dict(kernel_s=-1.0), dict(kernel_s=0.0, t_call=-1.0), dict(kernel_s=float("nan")),
                dict(kernel_s=1.0, kernel_slowdown=-0.1), dict(kernel_s=1.0, kernel_slowdown=float("inf"))):
        with pytest.raises(ValueError):
            overhead_step_model(n_ops=1, t_op=1e-6, **bad)
