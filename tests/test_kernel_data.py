"""The committed sweeps of the attention kernels and speculative decoding are complete, and every formula value
they record is what `minigpt.costs` computes from the recorded inputs (a formula change shows up here)."""

from __future__ import annotations

import json

import pytest

from minigpt import costs
from minigpt.measure.sweep_files import DATA_DIR

DATA = DATA_DIR


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_flash_sweep_records_every_path_and_the_occupancy_model():
    data = load("flash_cpu.json")
    assert {"device", "torch", "cpu_threads"} <= set(data["environment"])
    assert "process memory" in data["memory_measure"]
    Ps = sorted({p["P"] for p in data["memory"]})
    assert len(Ps) >= 4 and all({p["path"] for p in data["memory"] if p["P"] == P} == {"plain", "sdpa", "tiles"}
                                for P in Ps)
    shape = data["attention_shape"]
    for p in data["memory"]:
        assert p["scores_bytes"] == shape["B"] * shape["H"] * p["P"] ** 2 * 4
    for d in data["decode"]:
        assert d["predicted_speedup"] == costs.flash_decoding_speedup(
            B=data["decode_shape"]["B"], H_kv=data["decode_shape"]["H_kv"], S=d["S"], splits=d["splits"],
            n_sm=d["units"])
        assert d["measured_speedup"] == pytest.approx(d["plain_s"] / d["split_s"])
        # every time comes with its spread, and the speedup's range brackets the ratio of the medians
        assert d["plain_q1_s"] <= d["plain_s"] <= d["plain_q3_s"] and d["split_q1_s"] <= d["split_s"] <= d["split_q3_s"]
        lo, hi = d["speedup_iqr"]
        assert lo == pytest.approx(d["plain_q1_s"] / d["split_q3_s"]) and lo <= d["measured_speedup"] <= hi


def test_speculative_sweep_formulas_are_the_packages():
    data = load("speculative_cpu.json")
    assert data["draft"]["L"] == 1 and data["target"]["L"] == 4
    c = data["cost_ratio"]
    assert c == pytest.approx(data["step_costs"]["draft_step_s"] / data["step_costs"]["target_step_s"])
    seen = {(r["temperature"], r["gamma"]) for r in data["runs"]}
    assert len(seen) == len(data["runs"]) >= 12
    for r in data["runs"]:
        a, g = min(r["alpha_counted"], 1.0), r["gamma"]
        assert r["tokens_per_pass_formula"] == costs.speculative_tokens_per_pass(alpha=a, gamma=g)
        assert r["predicted_speedup"] == costs.speculative_speedup(alpha=a, gamma=g, cost_ratio=c)
        assert r["predicted_speedup_measured_verify"] == costs.speculative_speedup(
            alpha=a, gamma=g, cost_ratio=c, verify_ratio=r["verify_ratio"])
        assert 1 <= r["tokens_per_pass"] <= g + 1
    for T, g in data["best_gamma_measured"].items():
        runs = [r for r in data["runs"] if str(r["temperature"]) == T]
        assert g == max(runs, key=lambda r: r["measured_speedup"])["gamma"]
