"""Exercise 7 (Chapter 7, batching economics): step time against B, Eqs. (7.2)–(7.3); B_crit, Eq. (7.4);
the memory cap on B; the KV crossover B_× (Eq. 7.5); the latency–throughput frontier."""

from __future__ import annotations

import math
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


STEP_EDGES = ("overlap=False with B = 4096 and 1 <= S <= 256 (the weights' part compute-bound, the KV part "
              "memory-bound): Eq. (7.2) whatever overlap", "B = 4096, S = 0 (compute-bound): the LM head left out of F",
              "B = 1, S > 256 (memory-bound): b_token without the factor 2 for K and V")


def _step_cases(rng: random.Random) -> list[dict]:
    """The edges first (`STEP_EDGES`), then random."""
    edges = ((rng.randint(1, 256), 4096, False), (0, 4096, True), (rng.randint(257, 32768), 1, True))
    cases = [dict(model={"$preset": rng.choice(list(MODELS))}, hardware={"$hardware": rng.choice(list(HARDWARE))},
                  S=S, B=B, overlap=overlap) for S, B, overlap in edges]
    for i in range(3, 10):
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


CRIT_EDGES = ("Llama-3-8B at S = 0: floor instead of ceil, or the LM head left out of F(1, S)",
              "S at 0.5 to 0.9 of the limit: the KV reads left out (the S = 0 formula at every S)",
              "S beyond the limit: no None (max(1, ceil(...)) returns 1 or a negative batch)")


#: Draws allowed for a case with a property (a model and chip whose limit is >= 10; a frontier above B_crit:
#: about 2 draws in 5); past them a generator raises rather than draw forever.
DRAWS = 200


def _crit_at(rng: random.Random, low: float, high: float) -> dict:
    """A case with S between `low` and `high` times the limit `_threshold_S`, on a pair whose limit is >= 10
    (`DRAWS` pairs at most)."""
    for _draw in range(DRAWS):
        model, hardware = rng.choice(list(MODELS)), rng.choice(list(HARDWARE))
        limit = _threshold_S(MODELS[model], HARDWARE[hardware])
        if limit >= 10:
            return dict(model={"$preset": model}, hardware={"$hardware": hardware},
                        S=rng.randint(math.ceil(low * limit), int(high * limit)))
    raise RuntimeError(f"no model and chip in {DRAWS} draws has a limit of S >= 10")


def _crit_cases(rng: random.Random) -> list[dict]:
    """Ten cases: the edges (`CRIT_EDGES`), then three at a cache length where B_crit exists (so the answers
    differ), four anywhere."""
    cases = [dict(model={"$preset": "Llama-3-8B"}, hardware={"$hardware": rng.choice(list(HARDWARE))}, S=0),
             _crit_at(rng, 0.5, 0.9), _crit_at(rng, 1.2, 2)]
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


CAP_EDGES = ("short contexts on the A100 80GB / RTX 4090 (B_crit the cap): always (B_max, 'memory')",
             "Llama-2-13B on the A100 40GB, reserve >= 0.1: the reserve taken off the memory left after the weights",
             "Llama-3-70B or GPT-3 on a chip below 141 GB: no clamp at 0 (a negative B_max)")


def _cap_cases(rng: random.Random) -> list[dict]:
    """Ten cases on the larger chips, the edges first (`CAP_EDGES`): short contexts on the A100 80GB / RTX 4090
    make B_crit the cap; a model that fills most of the chip, then one that does not fit."""
    cases = []
    for i in range(10):
        if i < 3:
            hardware, model, S = rng.choice(["A100 80GB", "RTX 4090"]), "Llama-2-7B", rng.randint(1, 96)
        elif i == 3:
            cases.append(dict(model={"$preset": "Llama-2-13B"}, hardware={"$hardware": "A100 40GB"},
                              S=rng.randint(512, 2048), reserve=round(rng.uniform(0.1, 0.2), 3)))
            continue
        elif i == 4:
            hardware = rng.choice([h for h in _GPUS if HARDWARE[h].memory_bytes < 141 * 10**9])
            model, S = rng.choice(["Llama-3-70B", "GPT-3 175B"]), rng.randint(1, 32768)
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


CROSSOVER_EDGES = ("a GQA model (H_kv < H): b_token with H heads instead of H_kv",)


def _crossover_cases(rng: random.Random) -> list[dict]:
    """The edge first (`CROSSOVER_EDGES`), then random."""
    gqa = [name for name, m in MODELS.items() if m.H_kv < m.H]
    return [dict(model={"$preset": rng.choice(gqa if i == 0 else list(MODELS))}, S=rng.randint(1, 131072))
            for i in range(8)]


def _crossover(model: ModelPreset, S: int) -> float:
    return costs.weight_bytes(N_params=model.N_params, s=2) / (S * _kv_token(model))


FRONTIER_EDGES = ("1 <= S <= 1024 and B = 2048 in Bs, above B_crit (the step compute-bound): Eq. (7.3) "
                  "(overlap=False) instead of Eq. (7.2), or the LM head left out",)


def _frontier_cases(rng: random.Random) -> list[dict]:
    """The edge first (`FRONTIER_EDGES`: a model, a chip and S drawn until B_crit < 2048, `DRAWS` at most;
    where B = 2048 is not above B_crit the step is memory-bound and neither the LM head's FLOPs nor the overlap
    moves it), then random."""
    for _draw in range(DRAWS):
        model, hardware, S = rng.choice(list(MODELS)), rng.choice(list(HARDWARE)), rng.randint(1, 1024)
        crit = roofline.critical_batch_on(MODELS[model], HARDWARE[hardware], S=S)
        if crit is not None and crit < 2048:
            break
    else:
        raise RuntimeError(f"no draw in {DRAWS} puts B = 2048 above B_crit")
    Bs = sorted(rng.sample(range(1, 2048), rng.randint(3, 10)))
    cases = [dict(model={"$preset": model}, hardware={"$hardware": hardware}, S=S, Bs=Bs + [2048])]
    for _k in range(5):
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
            edges=STEP_EDGES,
        ),
        Question(
            "q2", "critical_batch", "critical_batch(model, hardware, S) -> int | None", _crit_cases, _critical,
            exact_int_or_none,
            N_("bf16. With R = peak_flops / bandwidth, decode intensity B·F(1, S) / (N·s + B·S·b_token) reaches R at "
               "B = ceil(R·N·s / (F(1, S) − R·S·b_token)) (at least 1); return None when F(1, S) <= R·S·b_token. "
               "F(1, S) includes the LM head (2dV), as in question 1."),
            edges=CRIT_EDGES,
        ),
        Question(
            "q3", "batch_cap", "batch_cap(model, hardware, S, reserve) -> (B, 'memory' | 'compute')", _cap_cases, _cap,
            pair(exact_int, _bound_name, ("B", "bound")),
            N_("bf16. B_max = floor((floor(memory_bytes·(1 − reserve)) − N·s) / (S·b_token)), 0 if the weights do not "
               "fit; B_crit from question 2. The batch stops paying at B_crit if it exists and is <= B_max "
               "(return (B_crit, 'compute')), otherwise at B_max (return (B_max, 'memory'))."),
            edges=CAP_EDGES,
        ),
        Question(
            "q4", "kv_crossover_batch", "kv_crossover_batch(model, S) -> float", _crossover_cases, _crossover,
            close(1e-9),
            N_("bf16. B_× = N·s / (S·b_token): the batch at which the KV reads of a step equal its weight reads "
               "(b_token = 2·L·H_kv·d_h·s; a float, not rounded)."),
            edges=CROSSOVER_EDGES,
        ),
        Question(
            "q5", "frontier", "frontier(model, hardware, S, Bs) -> [(tok_s_per_user, total_tok_s), ...]",
            _frontier_cases, _frontier, tensor(atol=0.0, rtol=1e-9),
            N_("for each B in Bs, t = Eq. (7.2) (overlap=True) in bf16; each user receives 1/t tokens/s and the "
               "batch B/t in total. Return a list with one (per_user, total) pair per B, in the order of Bs."),
            edges=FRONTIER_EDGES,
        ),
    ),
)
