"""Exercise 3 (Chapter 3, decode is memory-bound): intensity, roofline and the decode ceiling, Eqs. (3.1)–(3.5)."""

from __future__ import annotations

import random

from minigpt import costs
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises.spec import N_, Exercise, Question, boolean, close

_GQA = [name for name, model in MODELS.items() if model.H_kv < model.H]  # where H and H_kv differ

INTENSITY_EDGES = ("B >= 2: the weights read once per sequence (B·N·s) instead of once per step",)
ROOFLINE_EDGES = ("above the ridge point: the compute roof left out (intensity × bandwidth alone)",
                  "below the ridge point: the memory roof left out (peak_flops alone)")
CEILING_EDGES = ("a GQA preset (H_kv < H): H instead of H_kv",
                 "B >= 2: tokens per second per sequence (the B of the numerator left out)")
ACHIEVED_EDGES = ("s = 2: the weights as N bytes instead of N·s",)
BOUND_EDGES = ("intensity exactly at the ridge point: <= instead of < (compute-bound there)",)


def _intensity_cases(rng: random.Random) -> list[dict]:
    """The edge first (`INTENSITY_EDGES`), then random."""
    cases = []
    for B in [rng.randint(2, 256)] + [rng.randint(1, 256) for _ in range(7)]:
        L, d = rng.randint(1, 96), 64 * rng.randint(1, 192)
        cases.append(dict(L=L, S=rng.randint(0, 32768), d=d, s=rng.choice([1, 2, 4]),
                          N_params=12 * L * d * d + rng.randint(0, 10**9), B=B))
    return cases


def _roofline_cases(rng: random.Random) -> list[dict]:
    """The edges first (`ROOFLINE_EDGES`: 2 to 100 times above, then below, the ridge point), then random."""
    cases = []
    for factor in [rng.uniform(2, 100), rng.uniform(0.01, 0.5)] + [None] * 8:
        peak, bandwidth = 10 ** rng.uniform(12, 15), 10 ** rng.uniform(11, 13)
        intensity = 10 ** rng.uniform(-1, 4) if factor is None else peak / bandwidth * factor
        cases.append(dict(intensity=intensity, peak_flops=peak, bandwidth=bandwidth))
    return cases


def _ceiling_cases(rng: random.Random) -> list[dict]:
    """The edges first (`CEILING_EDGES`: a GQA preset, B >= 2), then random."""
    models = [rng.choice(_GQA)] + [rng.choice(list(MODELS)) for _ in range(7)]
    Bs = [rng.randint(1, 64), rng.randint(2, 64)] + [rng.randint(1, 64) for _ in range(6)]
    return [dict(hardware={"$hardware": rng.choice(list(HARDWARE))}, model={"$preset": model},
                 s=rng.choice([1, 2, 4]), S=rng.randint(1, 32768), B=B) for model, B in zip(models, Bs, strict=True)]


def _ceiling(hardware: HardwarePreset, model: ModelPreset, s: int, S: int, B: int) -> float:
    kv = costs.kv_bytes_per_token(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=s)
    step = costs.decode_step_bytes(weight_bytes=costs.weight_bytes(N_params=model.N_params, s=s),
                                   kv_bytes_per_token=kv, S=S, B=B)
    return costs.decode_tok_s_ceiling(bandwidth=hardware.bandwidth, bytes_per_step=step, B=B)


def _achieved_cases(rng: random.Random) -> list[dict]:
    """The edge first (`ACHIEVED_EDGES`), then random."""
    return [dict(tok_s=round(rng.uniform(1, 200), 2), N_params=rng.randint(10**8, 10**11), s=s)
            for s in [2] + [rng.choice([1, 2, 4]) for _ in range(7)]]


def _bound_cases(rng: random.Random) -> list[dict]:
    """The edge first (`BOUND_EDGES`: an integer ridge point and integer rates, so that intensity = peak/bandwidth
    and intensity·bandwidth = peak both hold exactly in floats), then alternately above and below the ridge."""
    ridge, bandwidth = rng.randint(10, 300), float(rng.randint(10**11, 10**13))
    cases = [dict(intensity=float(ridge), peak_flops=ridge * bandwidth, bandwidth=bandwidth)]
    for i in range(1, 10):
        peak, bandwidth = 10 ** rng.uniform(12, 15), 10 ** rng.uniform(11, 13)
        ridge = peak / bandwidth
        factor = rng.uniform(0.01, 0.9) if i % 2 else rng.uniform(1.1, 100)
        cases.append(dict(intensity=ridge * factor, peak_flops=peak, bandwidth=bandwidth))
    return cases


EXERCISE = Exercise(
    id="ex03",
    notebook="ex03_decode_memory_bound.ipynb",
    title="Decode is memory-bound",
    questions=(
        Question(
            "q1", "decode_intensity", "decode_intensity(L, S, d, s, N_params, B) -> float", _intensity_cases,
            lambda L, S, d, s, N_params, B: costs.decode_intensity(L=L, S=S, d=d, s=s, N_params=N_params, B=B),
            close(1e-9),
            N_("Eq. (3.1) for one decode step: FLOPs of Eq. (1.3) in the 2-FLOP convention (MHA, d_ffn = 4d, no "
               "LM head: B·L·(24·d² + 4·d·(S+1))) over the bytes of Eq. (3.5): N·s + B·S·2·L·d·s."),
            edges=INTENSITY_EDGES,
        ),
        Question(
            "q2", "attainable_flops", "attainable_flops(intensity, peak_flops, bandwidth) -> float", _roofline_cases,
            lambda intensity, peak_flops, bandwidth: costs.attainable_flops(
                intensity=intensity, peak_flops=peak_flops, bandwidth=bandwidth),
            close(1e-9),
            N_("Eq. (3.3), the roofline: the smaller of the compute roof and intensity × bandwidth."),
            edges=ROOFLINE_EDGES,
        ),
        Question(
            "q3", "decode_ceiling", "decode_ceiling(hardware, model, s, S, B) -> float", _ceiling_cases, _ceiling,
            close(1e-9),
            N_("Eq. (3.4) with Eq. (3.5): B·bandwidth / (N·s + B·S·2·L·H_kv·d_h·s) tokens per second "
               "(hardware.bandwidth, model.N_params, model.L, model.H_kv, model.d_h)."),
            edges=CEILING_EDGES,
        ),
        Question(
            "q4", "achieved_bandwidth", "achieved_bandwidth(tok_s, N_params, s) -> float", _achieved_cases,
            lambda tok_s, N_params, s: tok_s * costs.weight_bytes(N_params=N_params, s=s), close(1e-9),
            N_("at B = 1 each decode step reads every weight once (N·s bytes; the KV cache is left out), "
               "so bytes/s = steps/s × bytes per step."),
            edges=ACHIEVED_EDGES,
        ),
        Question(
            "q5", "is_memory_bound", "is_memory_bound(intensity, peak_flops, bandwidth) -> bool", _bound_cases,
            lambda intensity, peak_flops, bandwidth: intensity < costs.ridge_point(
                peak_flops=peak_flops, bandwidth=bandwidth),
            boolean,
            N_("compare the intensity with the ridge point of Eq. (3.2), peak_flops / bandwidth; return a bool."),
            edges=BOUND_EDGES,
        ),
    ),
)
