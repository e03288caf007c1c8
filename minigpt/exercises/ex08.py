"""Exercise 8 (Chapter 8, your own hardware): the roofline from probes, predictions by Eq. (8.1), reading a
measured table, and the overhead floor of Eq. (8.2)."""

from __future__ import annotations

import random
from typing import Any

import torch

from minigpt import costs
from minigpt.exercises.spec import N_, Exercise, Question, _, close, pair, tensor
from minigpt.measure import sweeps

PROBE_EDGES = ("the fastest copy and matmul first: the first timing dropped (a warm-up run)",
               "timings that vary (every case): their mean instead of the best")


def _probe_cases(rng: random.Random) -> list[dict]:
    """The edge first (`PROBE_EDGES`: the best timings first), then random."""
    cases = []
    for k in range(8):
        bandwidth, peak = 10 ** rng.uniform(10, 12.6), 10 ** rng.uniform(10.5, 15)
        copy_bytes, n = rng.choice([64, 256, 512]) * 2**20, rng.choice([512, 1024, 4096])
        copy_s = [2 * copy_bytes / bandwidth * rng.uniform(1.0, 1.5) for _ in range(rng.randint(3, 9))]
        matmul_s = [2 * n**3 / peak * rng.uniform(1.0, 1.5) for _ in range(rng.randint(3, 9))]
        if k == 0:
            copy_s, matmul_s = sorted(copy_s), sorted(matmul_s)
        cases.append(dict(copy_bytes=copy_bytes, copy_s=copy_s, n=n, matmul_s=matmul_s))
    return cases


def _probes(copy_bytes: int, copy_s: list[float], n: int, matmul_s: list[float]) -> tuple[float, float]:
    # What minigpt.measure.probe_bandwidth / probe_peak_flops return from their timings: best of the repeats.
    return 2 * copy_bytes / min(copy_s), 2 * n**3 / min(matmul_s)


PREDICT_EDGES = ("P >= 2, S >= 1, s >= 2: the prefill rate of one token (P left out), the KV reads left out, or "
                 "the weights at one byte per parameter (s left out)",)


def _predict_cases(rng: random.Random) -> list[dict]:
    """The edge first (`PREDICT_EDGES`), then random."""
    cases = []
    for k in range(8):
        N = rng.randint(10**5, 10**10)
        cases.append(dict(P=rng.randint(2 if k == 0 else 1, 8192),
                          prefill_flops=2 * N * rng.randint(1, 8192) + rng.randint(0, 10**9),
                          N_params=N, kv_bytes_per_token=rng.choice([2, 4]) * rng.randint(1, 200) * 1024,
                          S=rng.randint(1 if k == 0 else 0, 32768), s=rng.choice([2, 4] if k == 0 else [1, 2, 4]),
                          bandwidth=10 ** rng.uniform(10, 12.6),
                          peak_flops=10 ** rng.uniform(10.5, 15)))
    return cases


def _predict(P: int, prefill_flops: int, N_params: int, kv_bytes_per_token: int, S: int, s: int, bandwidth: float,
             peak_flops: float) -> tuple[float, float]:
    step = costs.decode_step_bytes(weight_bytes=costs.weight_bytes(N_params=N_params, s=s),
                                   kv_bytes_per_token=kv_bytes_per_token, S=S)
    return P * peak_flops / prefill_flops, costs.decode_tok_s_ceiling(bandwidth=bandwidth, bytes_per_step=step)


def _rows(rng: random.Random, bandwidth: float, peak: float) -> list[dict[str, Any]]:
    """A measured table like chapters/data/hardware_cpu.json: one `SizePoint` record per model, timed by Eq. (8.2)."""
    t0, P, S = 10 ** rng.uniform(-5, -3), rng.choice([64, 128, 256]), rng.choice([16, 32, 64])
    rows = []
    for k in sorted(rng.sample(range(2, 60), rng.randint(4, 8))):
        d = 32 * k
        L = rng.randint(2, 24)
        N = 12 * L * d * d + 600 * d
        weights, decode_bytes = 4 * N, 4 * N + S * 2 * L * d * 4
        prefill_flops = 2 * N * P + 4 * L * P * P * d
        step = (t0 + decode_bytes / (bandwidth * rng.uniform(0.6, 1.0))) * rng.uniform(0.97, 1.03)
        prefill = (t0 * L + prefill_flops / (peak * rng.uniform(0.1, 0.9))) * rng.uniform(0.97, 1.03)
        rows.append(dict(name=f"L{L}-d{d}", config={"L": L, "d": d}, N_params=N, weight_bytes=weights, P=P,
                         prefill_flops=prefill_flops, prefill_s=prefill, prefill_median_s=prefill * 1.02, S=S,
                         decode_bytes=decode_bytes, decode_flops=2 * N, decode_step_s=step,
                         decode_step_median_s=step * 1.02))
    rng.shuffle(rows)
    return rows


TABLE_EDGES = ("rows out of decode_bytes order: the rows sorted by decode_bytes instead of the given order",
               "best and median times that differ (every case): the medians instead of the best times")


def _table_cases(rng: random.Random) -> list[dict]:
    """The edge first (`TABLE_EDGES`: rows out of order), then random."""
    cases = []
    for k in range(6):
        bandwidth, peak = 10 ** rng.uniform(10, 12.6), 10 ** rng.uniform(10.5, 15)
        rows = _rows(rng, bandwidth, peak)
        if k == 0 and rows == sorted(rows, key=lambda r: r["decode_bytes"]):
            rows.reverse()
        cases.append(dict(rows=rows, bandwidth=bandwidth, peak_flops=peak))
    return cases


def _ratios(rows: list[dict[str, Any]], bandwidth: float, peak_flops: float) -> torch.Tensor:
    points = [sweeps.size_point_from_dict(r) for r in rows]
    return torch.tensor([[p.prefill_tok_s / sweeps.predicted_prefill_tok_s(p, peak_flops),
                          p.decode_tok_s / sweeps.predicted_decode_tok_s(p, bandwidth)] for p in points],
                        dtype=torch.float64)


FLOOR_EDGES = ("noisy steps (every case): unweighted least squares (no w = 1/step_s)",)


def _floor_cases(rng: random.Random) -> list[dict]:
    """Every case is an edge (`FLOOR_EDGES`): the steps are noisy, so weighted and unweighted fits differ."""
    cases = []
    for _k in range(6):
        rows = _rows(rng, 10 ** rng.uniform(10, 12.6), 1e12)
        cases.append(dict(decode_bytes=[r["decode_bytes"] for r in rows], step_s=[r["decode_step_s"] for r in rows]))
    return cases


FIRST_EDGES = ("all but one model above the threshold, the first row qualifying but not the smallest such: the "
               "first in the given order, or the rows sorted largest first", "no model reaches the threshold: None")


def _ratio(row: dict[str, Any], bandwidth: float) -> float:
    return sweeps.predicted_decode_tok_s(sweeps.size_point_from_dict(row), bandwidth) ** -1 / row["decode_step_s"]


def _first_cases(rng: random.Random) -> list[dict]:
    """The edges first (`FIRST_EDGES`), then random."""
    cases = []
    for i in range(8):
        bandwidth = 10 ** rng.uniform(10, 12.6)
        rows = _rows(rng, bandwidth, 1e12)
        ratios = sorted(_ratio(r, bandwidth) for r in rows)
        # A threshold between two measured ratios (most cases), or above all of them (no such model).
        threshold = ratios[-1] * 1.05 if i == 1 else rng.uniform(ratios[0], ratios[-1])
        if i == 0:  # every model but the one of the smallest ratio qualifies
            threshold = (ratios[0] + ratios[1]) / 2
            rows.sort(key=lambda r: r["decode_bytes"])
            qualify = [r for r in rows if _ratio(r, bandwidth) >= threshold]
            rows.remove(qualify[1])
            rows.insert(0, qualify[1])  # the first row qualifies but is not the answer (qualify[0])
        cases.append(dict(rows=rows, bandwidth=bandwidth, threshold=threshold))
    return cases


def _first(rows: list[dict[str, Any]], bandwidth: float, threshold: float) -> str | None:
    points = sorted((sweeps.size_point_from_dict(r) for r in rows), key=lambda p: p.decode_bytes)
    for p in points:
        if p.decode_tok_s / sweeps.predicted_decode_tok_s(p, bandwidth) >= threshold:
            return p.name
    return None


def name_or_none(expected: Any, actual: Any) -> str | None:
    """The same model name (a string), or None where no model qualifies."""
    if expected is None:
        return None if actual is None else _("expected None (no model reaches the threshold), got {actual}").format(
            actual=repr(actual))
    if not isinstance(actual, str):
        return _("expected the model name {expected}, got {actual}").format(expected=repr(expected),
                                                                           actual=repr(actual))
    return None if actual == expected else _("expected {expected}, got {actual}").format(expected=repr(expected),
                                                                                        actual=repr(actual))


EXERCISE = Exercise(
    id="ex08",
    notebook="ex08_your_hardware.ipynb",
    title="Your own hardware",
    questions=(
        Question(
            "q1", "roofline_from_probes", "roofline_from_probes(copy_bytes, copy_s, n, matmul_s) -> (bandwidth, "
            "peak_flops)", _probe_cases, _probes, pair(close(1e-9), close(1e-9), ("bandwidth", "peak_flops")),
            N_("a copy of copy_bytes reads and writes every byte (2·copy_bytes moved); an n×n @ n×n matmul is "
               "2·n³ FLOPs. "
               "Other processes can only slow a probe down: use the best (smallest) time of each list."),
            edges=PROBE_EDGES,
        ),
        Question(
            "q2", "predict_rates", "predict_rates(P, prefill_flops, N_params, kv_bytes_per_token, S, s, bandwidth, "
            "peak_flops) -> (prefill_tok_s, decode_tok_s)", _predict_cases, _predict,
            pair(close(1e-9), close(1e-9), ("prefill_tok_s", "decode_tok_s")),
            N_("Eq. (8.1): prefill P·peak_flops / prefill_flops; decode bandwidth / (N·s + "
               "S·kv_bytes_per_token), B = 1."),
            edges=PREDICT_EDGES,
        ),
        Question(
            "q3", "measured_over_predicted", "measured_over_predicted(rows, bandwidth, peak_flops) -> "
            "[(prefill_ratio, decode_ratio), ...]", _table_cases, _ratios, tensor(atol=0.0, rtol=1e-9),
            N_("for each row (in the given order): measured prefill rate P / prefill_s over Eq. (8.1)'s "
               "prediction, and "
               "measured decode rate 1 / decode_step_s over bandwidth / decode_bytes. Use the best times (prefill_s, "
               "decode_step_s), not the medians."),
            edges=TABLE_EDGES,
        ),
        Question(
            "q4", "overhead_floor", "overhead_floor(decode_bytes, step_s) -> (t0, bw_eff)", _floor_cases,
            lambda decode_bytes, step_s: sweeps.fit_step_overhead(decode_bytes, step_s),
            pair(close(1e-6), close(1e-6), ("t0", "bw_eff")),
            N_("Eq. (8.2): fit step_s ≈ t0 + decode_bytes / bw_eff by least squares with weights 1/step_s "
               "(np.polyfit(decode_bytes, step_s, 1, w=1 / step_s) gives (slope, t0)); bw_eff = 1 / slope."),
            edges=FLOOR_EDGES,
        ),
        Question(
            "q5", "first_bandwidth_bound", "first_bandwidth_bound(rows, bandwidth, threshold) -> str | None",
            _first_cases, _first, name_or_none,
            N_("sort the rows by decode_bytes (smallest first) and return the name of the first whose decode ratio "
               "(measured 1 / decode_step_s over bandwidth / decode_bytes) is >= threshold; None if none is."),
            edges=FIRST_EDGES,
        ),
    ),
)
