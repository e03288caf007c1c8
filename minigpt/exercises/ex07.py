"""Exercise 7 (Chapter 7, batching economics): step time against B, Eqs. (7.2)–(7.3); B_crit, Eq. (7.4);
the memory cap on B; the KV crossover B_× (Eq. 7.5); the latency–throughput frontier."""

from __future__ import annotations

import random
from typing import Any

import torch

from minigpt import costs
from minigpt.costs import roofline
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises.spec import N_, Exercise, Question, _, close, exact_int, fmt_num, pair, tensor

_REAL = [name for name in MODELS if name != "MiniGPT"]
_GPUS = [name for name in HARDWARE if HARDWARE[name].memory_bytes >= 16 * 2**30]


def _step_cases(rng: random.Random) -> list[dict]:
    cases = []
    for i in range(10):
        cases.append(dict(model={"$preset": rng.choice(list(MODELS))},
                          hardware={"$hardware": rng.choice(list(HARDWARE))},
                          S=rng.choice([0, rng.randint(1, 256), rng.randint(257, 32768)]),
                          B=rng.choice([1, rng.randint(2, 64), rng.randint(65, 4096)]), overlap=i % 2 == 0))
    return cases


def _step_time(model: ModelPreset, hardware: HardwarePreset, S: int, B: int, overlap: bool) -> float:
    return roofline.step_time_on(model, hardware, S=S, B=B, overlap=overlap)


def _kv_token(model: ModelPreset) -> int:
    return costs.of(model).kv_bytes_per_token(s=2)


def _threshold_S(model: ModelPreset, hardware: HardwarePreset) -> float:
    """The cache length beyond which the decode intensity never reaches the ridge point (about F(1, S)/(R·b))."""
    ridge = costs.ridge_point(peak_flops=hardware.peak_flops, bandwidth=hardware.bandwidth)
    return costs.of(model).decode_step_flops(S=0) / (ridge * _kv_token(model))


def _crit_cases(rng: random.Random) -> list[dict]:
    """Ten cases: six at a cache length where B_crit exists (so the answers differ), four anywhere."""
    cases = []
    while len(cases) < 10:
        model, hardware = rng.choice(list(MODELS)), rng.choice(list(HARDWARE))
        limit = _threshold_S(MODELS[model], HARDWARE[hardware])
        if len(cases) < 6:
            if limit < 2:
                continue
            S = rng.randint(0, int(0.9 * limit))
        else:
            S = rng.randint(0, 16384)
        cases.append(dict(model={"$preset": model}, hardware={"$hardware": hardware}, S=S))
    return cases


def _critical(model: ModelPreset, hardware: HardwarePreset, S: int) -> int | None:
    return roofline.critical_batch_on(model, hardware, S=S)


def exact_int_or_none(expected: Any, actual: Any) -> str | None:
    """The same integer, or None where the expected answer is None (no such batch)."""
    if expected is None:
        return None if actual is None else _("expected None (no batch reaches the ridge point), got {actual}").format(
            actual=repr(actual))
    if actual is None:
        return _("expected the integer {expected}, got None").format(expected=fmt_num(expected))
    return exact_int(expected, actual)


def _bound_name(expected: Any, actual: Any) -> str | None:
    if actual not in ("memory", "compute"):
        return _("expected the string {expected} ('memory' or 'compute'), got {actual}").format(
            expected=repr(expected), actual=repr(actual))
    return None if actual == expected else _("expected {expected}, got {actual}").format(expected=repr(expected),
                                                                                        actual=repr(actual))


def _cap_cases(rng: random.Random) -> list[dict]:
    """Ten cases on the larger chips; short contexts on the A100 80GB / RTX 4090 make B_crit the cap."""
    cases = []
    for i in range(10):
        if i < 3:
            hardware, model, S = rng.choice(["A100 80GB", "RTX 4090"]), "Llama-2-7B", rng.randint(1, 96)
        else:
            hardware, model, S = rng.choice(_GPUS), rng.choice(_REAL), rng.randint(1, 32768)
        cases.append(dict(model={"$preset": model}, hardware={"$hardware": hardware}, S=S,
                          reserve=rng.choice([0.0, round(rng.uniform(0.02, 0.2), 3)])))
    return cases


def _cap(model: ModelPreset, hardware: HardwarePreset, S: int, reserve: float) -> tuple[int, str]:
    weights = costs.weight_bytes(N_params=model.N_params, s=2)
    B_max = costs.max_batch(memory_bytes=hardware.memory_bytes, weight_bytes=weights,
                            kv_bytes_per_token=_kv_token(model), S=S, reserve=reserve)
    B_crit = _critical(model, hardware, S)
    if B_crit is None or B_crit > B_max:
        return B_max, "memory"
    return B_crit, "compute"


def _crossover_cases(rng: random.Random) -> list[dict]:
    return [dict(model={"$preset": rng.choice(list(MODELS))}, S=rng.randint(1, 131072)) for _ in range(8)]


def _crossover(model: ModelPreset, S: int) -> float:
    return costs.weight_bytes(N_params=model.N_params, s=2) / (S * _kv_token(model))


def _frontier_cases(rng: random.Random) -> list[dict]:
    cases = []
    for _k in range(6):
        Bs = sorted(rng.sample(range(1, 2049), rng.randint(3, 10)))
        cases.append(dict(model={"$preset": rng.choice(list(MODELS))},
                          hardware={"$hardware": rng.choice(list(HARDWARE))}, S=rng.randint(0, 16384), Bs=Bs))
    return cases


def _frontier(model: ModelPreset, hardware: HardwarePreset, S: int, Bs: list[int]) -> torch.Tensor:
    steps = [roofline.step_time_on(model, hardware, S=S, B=B) for B in Bs]
    return torch.tensor([[1 / t, B / t] for B, t in zip(Bs, steps, strict=True)], dtype=torch.float64)


EXERCISE = Exercise(
    id="ex07",
    notebook="ex07_batching_economics.ipynb",
    title="Batching economics",
    questions=(
        Question(
            "q1", "decode_step_time", "decode_step_time(model, hardware, S, B, overlap) -> float", _step_cases,
            _step_time, close(1e-9),
            N_("bf16 (s = 2). FLOPs F(B, S) = B·(L·(2d(d + 2·H_kv·d_h) + 2d² + 2·ffn_matrices·d·d_ffn + "
               "4(S+1)d) + 2dV); "
               "bytes N·s + B·S·2·L·H_kv·d_h·s. overlap=True, Eq. (7.2): max(bytes/bandwidth, F(B, S)/peak_flops). "
               "overlap=False, Eq. (7.3): max(N·s/bandwidth, F(B, 0)/peak_flops) + "
               "max(B·S·b_token/bandwidth, (F(B, S) − F(B, 0))/peak_flops)."),
        ),
        Question(
            "q2", "critical_batch", "critical_batch(model, hardware, S) -> int | None", _crit_cases, _critical,
            exact_int_or_none,
            N_("bf16. With R = peak_flops / bandwidth, decode intensity B·F(1, S) / (N·s + B·S·b_token) reaches R at "
               "B = ceil(R·N·s / (F(1, S) − R·S·b_token)) (at least 1); return None when F(1, S) <= R·S·b_token. "
               "F(1, S) includes the LM head (2dV), as in question 1."),
        ),
        Question(
            "q3", "batch_cap", "batch_cap(model, hardware, S, reserve) -> (B, 'memory' | 'compute')", _cap_cases, _cap,
            pair(exact_int, _bound_name, ("B", "bound")),
            N_("bf16. B_max = floor((floor(memory_bytes·(1 − reserve)) − N·s) / (S·b_token)), 0 if the weights do not "
               "fit; B_crit from question 2. The batch stops paying at B_crit if it exists and is <= B_max "
               "(return (B_crit, 'compute')), otherwise at B_max (return (B_max, 'memory'))."),
        ),
        Question(
            "q4", "kv_crossover_batch", "kv_crossover_batch(model, S) -> float", _crossover_cases, _crossover,
            close(1e-9),
            N_("bf16. B_× = N·s / (S·b_token): the batch at which the KV reads of a step equal its weight reads "
               "(b_token = 2·L·H_kv·d_h·s; a float, not rounded)."),
        ),
        Question(
            "q5", "frontier", "frontier(model, hardware, S, Bs) -> [(tok_s_per_user, total_tok_s), ...]",
            _frontier_cases, _frontier, tensor(atol=0.0, rtol=1e-9),
            N_("for each B in Bs, t = Eq. (7.2) (overlap=True) in bf16; each user receives 1/t tokens/s and the "
               "batch B/t in total. Return a list with one (per_user, total) pair per B, in the order of Bs."),
        ),
    ),
)
