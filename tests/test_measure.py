"""Measurement helpers: FLOP counts match 2·m·n·k, timers and probes return sane numbers."""

from __future__ import annotations

import math

import pytest
import torch

from minigpt import measure


def test_count_flops_of_a_matmul_is_2mnk():
    a, b = torch.randn(3, 5), torch.randn(5, 7)
    assert measure.count_flops(lambda: a @ b) == 2 * 3 * 5 * 7
    x = torch.randn(2, 4, 5)
    w = torch.nn.Linear(5, 6)
    assert measure.count_flops(lambda: w(x)) == 2 * 2 * 4 * 5 * 6  # the bias add is not counted
    assert measure.count_flops(lambda: torch.softmax(x, -1)) == 0


def test_count_flops_by_op():
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    w = torch.nn.Linear(4, 6)
    by_op = measure.count_flops_by_op(lambda: (a @ b, w(a)))
    assert by_op == {"aten.bmm": 2 * 2 * 3 * 4 * 5, "aten.addmm": 2 * 6 * 4 * 6}
    assert sum(by_op.values()) == measure.count_flops(lambda: (a @ b, w(a)))


def test_time_fn():
    calls = []
    timing = measure.time_fn(lambda: calls.append(1), warmup=2, repeats=5)
    assert len(calls) == 7
    assert timing.repeats == 5 and len(timing.times) == 5
    assert 0 < timing.min_s <= timing.median_s
    with pytest.raises(ValueError, match="repeats"):
        measure.time_fn(lambda: None, repeats=0)


def test_probes_return_positive_finite_rates():
    bandwidth = measure.probe_bandwidth(device="cpu", nbytes=4 * 1024**2, repeats=3)
    peak = measure.probe_peak_flops(device="cpu", n=128, repeats=3)
    for rate in (bandwidth, peak):
        assert math.isfinite(rate) and rate > 0
    with pytest.raises(ValueError, match="nbytes"):
        measure.probe_bandwidth(device="cpu", nbytes=0)
    with pytest.raises(ValueError, match="n must"):
        measure.probe_peak_flops(device="cpu", n=0)


def test_bytes():
    t = torch.zeros(3, 4, dtype=torch.bfloat16)
    assert measure.tensor_bytes(t, torch.zeros(5)) == 3 * 4 * 2 + 5 * 4
    emb = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = emb.weight  # tied: counted once
    module = torch.nn.ModuleDict({"emb": emb, "head": head})
    module.register_buffer("mask", torch.ones(2, 2, dtype=torch.bool))
    assert measure.module_bytes(module) == 10 * 4 * 4 + 4


def test_default_device(monkeypatch):
    monkeypatch.setenv("MINIGPT_DEVICE", "cpu")
    assert measure.default_device() == torch.device("cpu")
    monkeypatch.setenv("MINIGPT_DEVICE", "tpu")
    with pytest.raises(ValueError, match="MINIGPT_DEVICE"):
        measure.default_device()
    monkeypatch.delenv("MINIGPT_DEVICE")
    assert measure.default_device().type == ("cuda" if torch.cuda.is_available() else "cpu")
    measure.sync("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised when cuda is absent")
def test_cuda_requested_without_cuda_is_an_error(monkeypatch):
    monkeypatch.setenv("MINIGPT_DEVICE", "cuda")
    with pytest.raises(RuntimeError, match="cuda"):
        measure.default_device()
