"""Unit tests of minigpt.measure.sweeps: the byte and FLOP accounting of the timed steps, and the timers' contracts."""

from __future__ import annotations

import pytest
import torch

from minigpt import costs, measure
from minigpt.config import ModelConfig
from minigpt.measure import count_flops, sweeps
from minigpt.runtime.generate import decode_step, prefill

TINY = ModelConfig(L=2, H=2, H_kv=1, d_h=8, d_ffn=32, V=50, S_max=32)


@pytest.fixture()
def model():
    return sweeps.random_model(TINY)


def test_random_model_is_seeded(model):
    other = sweeps.random_model(TINY)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), other.parameters(), strict=True))
    assert sweeps.n_params(model) == costs.config_param_count(TINY)


def test_filled_cache_holds_S_tokens(model):
    cache = sweeps.filled_cache(model, B=3, S=5)
    assert (cache.B, cache.S, cache.S_max) == (3, 5, 6)


def test_decode_bytes_is_weights_plus_kv(model):
    kv = costs.kv_bytes_per_token(L=TINY.L, H_kv=TINY.H_kv, d_h=TINY.d_h, s=4)
    weights = 4 * sweeps.n_params(model)
    assert sweeps.model_decode_bytes(model, B=4, S=10) == weights + 4 * 10 * kv


@pytest.mark.parametrize("B, S", [(1, 3), (4, 7)])
def test_decode_flops_match_the_counter(model, B, S):
    cache = sweeps.filled_cache(model, B=B, S=S)
    token = torch.zeros(B, dtype=torch.long)
    assert count_flops(lambda: decode_step(model, token, cache)) == costs.of(TINY).decode_step_flops(B=B, S=S)


def test_prefill_flops_match_the_counter(model):
    cache = model.new_cache(2, S_max=9)
    prompt = torch.zeros(2, 9, dtype=torch.long)
    assert count_flops(lambda: prefill(model, prompt, cache)) == costs.of(TINY).prefill_flops(B=2, P=9)


def test_time_decode_step_keeps_S(model):
    timing = sweeps.time_decode_step(model, B=2, S=4, warmup=1, repeats=2)
    assert timing.repeats == 2 and timing.min_s > 0


def test_batching_sweep_points(model):
    points = sweeps.batching_sweep(model, Bs=[1, 2], S=3, warmup=0, repeats=1)
    assert [p.B for p in points] == [1, 2]
    for p in points:
        assert p.tok_s == pytest.approx(p.B / p.step_s)
        assert p.step_median_s >= p.step_s


def test_measure_size_round_trips_through_json(tmp_path):
    point = sweeps.measure_size("tiny", TINY, device="cpu", dtype=torch.float32, P=8, S=4,
                                decode_repeats=1, prefill_repeats=1)
    assert point.weight_bytes == 4 * point.N_params
    assert point.achieved_bandwidth == pytest.approx(point.decode_bytes / point.decode_step_s)
    assert sweeps.predicted_decode_tok_s(point, 1e9) == pytest.approx(1e9 / point.decode_bytes)
    assert sweeps.predicted_prefill_tok_s(point, 1e9) == pytest.approx(8 * 1e9 / point.prefill_flops)
    sweeps.write_json(tmp_path / "x.json", {"models": [sweeps.to_record(point)]})
    back = sweeps.size_point_from_dict(sweeps.read_json(tmp_path / "x.json")["models"][0])
    assert back.name == "tiny" and back.N_params == point.N_params


def test_environment_records_what_the_book_needs():
    env = measure.environment("cpu", torch.float32)
    assert set(env) >= {"device", "dtype", "torch", "cpu_threads", "date"}
    assert env["dtype"] == "float32" and env["device"] == "cpu"


def test_filled_cache_rejects_empty_prompt(model):
    with pytest.raises(ValueError, match="S must be >= 1"):
        sweeps.filled_cache(model, B=1, S=0)


def test_thread_clock_needs_one_cpu_thread(model, monkeypatch):
    # probe() on the thread clock; a 1 MiB copy, not the 8x-the-L3 default (3.75 GiB on a 480 MiB L3).
    monkeypatch.setattr(measure.probes, "probe_buffer_bytes", lambda device: 2**20)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        timing = sweeps.time_decode_step(model, B=1, S=2, warmup=0, repeats=2, clock="thread")
        assert timing.min_s >= 0
        roof = measure.probe(device="cpu", dtype=torch.float32, rounds=1, clock="thread")
        assert roof["bandwidth"] > 0 and roof["peak_flops"] > 0
        torch.set_num_threads(2)  # whatever this process ran with (one thread per xdist worker)
        with pytest.raises(ValueError, match="one CPU thread"):
            measure.time_fn(lambda: None, clock="thread")
    finally:
        torch.set_num_threads(threads)
    with pytest.raises(ValueError, match="clock must be"):
        measure.time_fn(lambda: None, clock="cpu")


def test_fit_step_overhead_recovers_t0_and_bandwidth():
    """Eq. (8.2): on exact points t = t0 + bytes / BW the weighted fit returns t0 and BW."""
    t0, bw = 8.9e-4, 9.0e9
    sizes = [1e6, 3.6e6, 2e7, 1e8, 3.3e8, 7.7e8]
    fitted_t0, fitted_bw = sweeps.fit_step_overhead(sizes, [t0 + b / bw for b in sizes])
    assert fitted_t0 == pytest.approx(t0, rel=1e-9)
    assert fitted_bw == pytest.approx(bw, rel=1e-9)
    with pytest.raises(ValueError, match="at least 2 points"):
        sweeps.fit_step_overhead([1e6], [1e-3])
    with pytest.raises(ValueError, match="step_s must be finite and > 0"):
        sweeps.fit_step_overhead([1e6, 2e6], [1e-3, 0.0])
    with pytest.raises(ValueError, match="not positive"):
        sweeps.fit_step_overhead([1e6, 2e6], [2e-3, 1e-3])
