"""Exercise 15 (Chapter 18, the overhead floor): the operators of one decode step, the predicted step of
Eqs. (18.1)-(18.2), the crossover size of Eq. (18.3), and the mask a static cache attends through.

The oracles are the package: the dispatch-mode counter of `minigpt.measure.overhead`, the formulas of
`minigpt.costs.overhead`, and `StaticKVCache.visible`. Nothing is timed: every answer is deterministic.
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises.spec import Exercise, Question, close, exact_int, model_spec, tensor
from minigpt.measure.overhead import decode_step_ops
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.static_cache import StaticKVCache


def _count_cases(rng: random.Random) -> list[dict]:
    """Small random MiniGPTs of 1 to 4 layers (the count grows with L), S cached tokens of at most 30 (S_max 32)."""
    cases = []
    for _ in range(6):
        spec = model_spec(rng)
        spec["$model"]["L"] = rng.randint(1, 4)
        cases.append(dict(model=spec, S=rng.randint(1, 30)))
    return cases


def _count(model: MiniGPT, S: int) -> int:
    return sum(decode_step_ops(model, S=S).values())


def _floor_args(rng: random.Random) -> dict[str, Any]:
    """n_ops and t_op spanning both sides of the crossover (t_op log-uniform in 0.1..30 µs)."""
    return dict(n_ops=rng.randint(20, 2000), t_op=float(f"{10 ** rng.uniform(-7, math.log10(3e-5)):.4g}"))


def _presets(rng: random.Random) -> dict[str, Any]:
    return dict(model={"$preset": rng.choice(list(MODELS))}, hardware={"$hardware": rng.choice(list(HARDWARE))})


def _step_cases(rng: random.Random) -> list[dict]:
    """Ten cases, both forms: six of small-batch decode at short contexts (two of them MiniGPT's, where the floor
    binds), four large."""
    cases = []
    for i in range(10):
        S, B = (rng.randint(0, 512), rng.choice([1, 1, rng.randint(2, 8)])) if i < 6 else \
            (rng.randint(513, 32768), rng.randint(9, 1024))
        presets = _presets(rng)
        if i in (0, 3):
            presets["model"] = {"$preset": "MiniGPT"}
        cases.append(dict(**presets, S=S, B=B, **_floor_args(rng), overlap=i % 2 == 0))
    return cases


def _step(model: ModelPreset, hardware: HardwarePreset, S: int, B: int, n_ops: int, t_op: float,
          overlap: bool) -> float:
    return costs.evaluate(costs.overhead_step_time, model, N_params=model.N_params, s=2, bandwidth=hardware.bandwidth,
                          peak_flops=hardware.peak_flops, S=S, B=B, n_ops=n_ops, t_op=t_op, overlap=overlap)


def _crossover_cases(rng: random.Random) -> list[dict]:
    cases = []
    for i in range(10):
        S, B = (rng.randint(0, 256), 1) if i % 3 else (rng.randint(1024, 32768), rng.randint(1, 256))
        cases.append(dict(**_presets(rng), S=S, B=B, **_floor_args(rng)))
    return cases


def _crossover(model: ModelPreset, hardware: HardwarePreset, S: int, B: int, n_ops: int, t_op: float) -> float:
    kv = costs.evaluate(costs.kv_bytes_per_token, model, s=2)
    return costs.overhead_crossover_params(n_ops=n_ops, t_op=t_op, bandwidth=hardware.bandwidth, s=2,
                                           kv_bytes_per_token=kv, S=S, B=B)


def _mask_cases(rng: random.Random) -> list[dict]:
    cases = []
    for _ in range(8):
        S_max = rng.randint(1, 40)
        T = rng.randint(1, min(4, S_max))
        start = rng.randint(0, S_max - T)
        cases.append(dict(S_max=S_max, input_pos={"$long": list(range(start, start + T))}))
    return cases


def _mask(S_max: int, input_pos: torch.Tensor) -> torch.Tensor:
    return StaticKVCache(ModelConfig(L=1, S_max=S_max), 1, S_max=S_max).visible(input_pos)


def _bool_tensor(expected: Any, actual: Any) -> str | None:
    """A boolean tensor equal to the expected one (a 0/1 integer tensor is not a mask `masked_fill` takes)."""
    if isinstance(actual, dict) and "$tensor" in actual:
        leaves = _leaves(actual["$tensor"])
        if not all(isinstance(x, bool) for x in leaves):
            return f"expected a torch.bool tensor, got values like {leaves[:4]} (a comparison gives one: rows <= p)"
    return tensor(atol=0.0, rtol=0.0)(expected, actual)


def _leaves(value: Any) -> list[Any]:
    return [x for v in value for x in _leaves(v)] if isinstance(value, list) else [value]


EXERCISE = Exercise(
    id="ex15",
    notebook="ex15_overhead_floor.ipynb",
    title="The overhead floor",
    questions=(
        Question(
            "q1", "count_decode_ops", "count_decode_ops(model, S) -> int", _count_cases, _count, exact_int,
            "a TorchDispatchMode subclass whose __torch_dispatch__(self, func, types, args=(), kwargs=None) adds one "
            "to a counter and returns func(*args, **(kwargs or {})). Outside the mode: cache = model.new_cache(1, "
            "S_max=S + 1); prefill(model, any [1, S] long prompt, cache); token = torch.zeros(1, 1, dtype=torch.long). "
            "Inside it, only decode_step(model, token, cache) (from minigpt.runtime.generate). Count every aten "
            "operator, views included.",
            runtime=("runtime/generate.py",),
        ),
        Question(
            "q2", "predicted_step", "predicted_step(model, hardware, S, B, n_ops, t_op, overlap) -> float",
            _step_cases, _step, close(1e-9),
            "bf16 (s = 2). t_traffic = Eq. (7.2): max((N·s + B·S·2·L·H_kv·d_h·s) / BW, F / π) with F = "
            "B·(L·(2d(d + 2·H_kv·d_h) + 2d² + 2·ffn_matrices·d·d_ffn + 4·(S + 1)·d) + 2·d·V); floor = n_ops·t_op. "
            "overlap=True: Eq. (18.1), max(t_traffic, floor); overlap=False: Eq. (18.2), t_traffic + floor.",
        ),
        Question(
            "q3", "crossover_params", "crossover_params(model, hardware, S, B, n_ops, t_op) -> float",
            _crossover_cases, _crossover, close(1e-9),
            "Eq. (18.3) in bf16 (s = 2): N* = (n_ops·t_op·BW − B·S·b_token) / s with b_token = 2·L·H_kv·d_h·s "
            "(the model's own cache per token); 0.0 when the cache alone takes longer to read than the floor.",
        ),
        Question(
            "q4", "static_mask", "static_mask(S_max, input_pos) -> torch.Tensor", _mask_cases, _mask, _bool_tensor,
            "a torch.bool tensor of shape [1, T, S_max] (T = len(input_pos)): entry [0, t, j] is True when row j "
            "is visible to the query at position input_pos[t], i.e. j <= input_pos[t]. torch.arange(S_max) "
            "compared with input_pos, broadcast: no Python-sized slice, no loop.",
        ),
    ),
)
