"""Exercise 2 (Chapter 2, the memory cost of the KV cache): Eqs. (2.1)–(2.3) and the VRAM budget."""

from __future__ import annotations

import random

from minigpt import costs
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises.spec import N_, Exercise, Question, close, exact_int

_REAL = [name for name in MODELS if name != "MiniGPT"]
_GQA = [name for name, model in MODELS.items() if model.H_kv < model.H]  # where H and H_kv differ

PER_TOKEN_EDGES = ("L = 1, H_kv = 1, s = 1: the factor 2 for K and V forgotten (differs on every case)",)
GQA_EDGES = ("a GQA preset (H_kv < H): H instead of H_kv",)
BUDGET_EDGES = ("the weights do not fit: the clamp to 0 left out (a negative answer)",
                "s = 2: the weights as N bytes instead of N·s")


def _per_token_cases(rng: random.Random) -> list[dict]:
    """The edge first (`PER_TOKEN_EDGES`), then random."""
    return [dict(L=1, H_kv=1, d_h=rng.choice([64, 80, 128]), s=1)] + [
        dict(L=rng.randint(1, 128), H_kv=rng.choice([1, 2, 4, 8, 16, 32, 64, 96]), d_h=rng.choice([64, 80, 128]),
             s=rng.choice([1, 2, 4])) for _ in range(7)]


def _kv_bytes(model: ModelPreset, s: int) -> int:
    return costs.kv_bytes_per_token(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=s)


def _gib_cases(rng: random.Random) -> list[dict]:
    """The edge first (`GQA_EDGES`), then random."""
    names = [rng.choice(_GQA)] + [rng.choice(list(MODELS)) for _ in range(7)]
    return [dict(model={"$preset": name}, S=rng.randint(1, 131072), B=rng.randint(1, 64), s=rng.choice([1, 2, 4]))
            for name in names]


def _gib(model: ModelPreset, S: int, B: int, s: int) -> float:
    return costs.kv_cache_bytes(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=s, S=S, B=B) / 2**30


def _budget_cases(rng: random.Random, key: str) -> list[dict]:
    """Eight (hardware, model, s) triples: the edges first (`BUDGET_EDGES`: weights that do not fit; s = 2 with
    an answer that N bytes of weights would change), then five whose weights fit (so the answer is rarely 0),
    then one at random."""
    cases: list[dict] = []
    while len(cases) < 8:
        hardware, model, s = rng.choice(list(HARDWARE)), rng.choice(_REAL), rng.choice([1, 2])
        fits = MODELS[model].N_params * s < HARDWARE[hardware].memory_bytes
        case = dict(hardware={"$hardware": hardware}, model={"$preset": model}, s=s)
        case[key] = rng.randint(1, 16) if key == "B" else rng.randint(256, 32768)
        slot = len(cases)
        wanted = not fits if slot == 0 else s == 2 and _moves(case, key) if slot == 1 else fits or slot == 7
        if wanted:
            cases.append(case)
    return cases


def _moves(case: dict, key: str) -> bool:
    """Whether the budget's answer changes when the weights take N bytes instead of N·s."""
    hardware, model, s = HARDWARE[case["hardware"]["$hardware"]], MODELS[case["model"]["$preset"]], case["s"]
    answer = costs.max_context if key == "B" else costs.max_batch
    return len({answer(memory_bytes=hardware.memory_bytes, weight_bytes=model.N_params * w,
                       kv_bytes_per_token=_kv_bytes(model, s), **{key: case[key]}) for w in (1, s)}) == 2


def _max_context(hardware: HardwarePreset, model: ModelPreset, s: int, B: int) -> int:
    return costs.max_context(memory_bytes=hardware.memory_bytes, weight_bytes=model.N_params * s,
                             kv_bytes_per_token=_kv_bytes(model, s), B=B)


def _max_batch(hardware: HardwarePreset, model: ModelPreset, s: int, S: int) -> int:
    return costs.max_batch(memory_bytes=hardware.memory_bytes, weight_bytes=model.N_params * s,
                           kv_bytes_per_token=_kv_bytes(model, s), S=S)


def _crossover_cases(rng: random.Random) -> list[dict]:
    """The edge first (`GQA_EDGES`), then random."""
    names = [rng.choice(_GQA)] + [rng.choice(list(MODELS)) for _ in range(7)]
    return [dict(model={"$preset": name}, B=rng.randint(1, 128)) for name in names]


def _crossover(model: ModelPreset, B: int) -> float:
    return costs.weight_bytes(N_params=model.N_params, s=1) / (B * _kv_bytes(model, 1))


EXERCISE = Exercise(
    id="ex02",
    notebook="ex02_kv_cache_memory.ipynb",
    title="The memory cost of the KV cache",
    questions=(
        Question(
            "q1", "kv_bytes_per_token", "kv_bytes_per_token(L, H_kv, d_h, s) -> int", _per_token_cases,
            lambda L, H_kv, d_h, s: costs.kv_bytes_per_token(L=L, H_kv=H_kv, d_h=d_h, s=s), exact_int,
            N_("Eq. (2.1): one key and one value (the 2) per layer per KV head, each d_h values of s bytes."),
            edges=PER_TOKEN_EDGES,
        ),
        Question(
            "q2", "kv_cache_gib", "kv_cache_gib(model, S, B, s) -> float", _gib_cases, _gib, close(1e-9),
            N_("Eq. (2.2), B·S·(bytes per token), in GiB = 2**30 bytes (binary units, not 10**9). Read L, H_kv "
               "and d_h from the preset (model.L, model.H_kv, model.d_h)."),
            edges=GQA_EDGES,
        ),
        Question(
            "q3", "max_context", "max_context(hardware, model, s, B) -> int",
            lambda rng: _budget_cases(rng, "B"), _max_context, exact_int,
            N_("weights N·s (model.N_params) plus B·S·(bytes per token) must fit in hardware.memory_bytes; "
               "the largest integer S, or 0 when not even the weights fit. Use integer division (//)."),
            edges=BUDGET_EDGES,
        ),
        Question(
            "q4", "max_batch", "max_batch(hardware, model, s, S) -> int",
            lambda rng: _budget_cases(rng, "S"), _max_batch, exact_int,
            N_("the same budget as q3 solved for B: ⌊(memory − N·s) / (S·bytes per token)⌋, 0 when the weights "
               "alone do not fit."),
            edges=BUDGET_EDGES,
        ),
        Question(
            "q5", "kv_equals_weights", "kv_equals_weights(model, B) -> float", _crossover_cases, _crossover,
            close(1e-9),
            N_("solve N·s = B·S·2·L·H_kv·d_h·s for S: the bytes per value s cancels."),
            edges=GQA_EDGES,
        ),
    ),
)
