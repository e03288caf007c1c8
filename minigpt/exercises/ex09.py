"""Exercise 9 (Chapter 9, GQA and MQA): grouped attention, mean-pooled K/V heads, the decode-bytes gain."""

from __future__ import annotations

import random

import torch

from minigpt import costs
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises.spec import Exercise, Question, close, exact_int, randn, tensor
from minigpt.runtime.model import attention, causal_visible


def _attention_cases(rng: random.Random) -> list[dict]:
    cases = []
    for _ in range(6):
        H_kv, g, d_h, T = rng.choice([1, 2, 4]), rng.choice([1, 2, 4]), rng.choice([4, 8]), rng.randint(1, 9)
        B = rng.randint(1, 3)
        cases.append(dict(q=randn([B, H_kv * g, T, d_h], rng), k=randn([B, H_kv, T, d_h], rng),
                          v=randn([B, H_kv, T, d_h], rng)))
    return cases


def _grouped_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return attention(q, k, v, causal_visible(0, q.shape[2], q.device))


def _pool_cases(rng: random.Random) -> list[dict]:
    cases = []
    for _ in range(6):
        H_kv = rng.choice([1, 2, 4])
        g, d_h = rng.choice([1, 2, 4]), rng.choice([2, 4, 8])
        cases.append(dict(w=randn([H_kv * g * d_h, rng.randint(2, 12)], rng), H_kv=H_kv, d_h=d_h))
    return cases


def _mean_pool(w: torch.Tensor, H_kv: int, d_h: int) -> torch.Tensor:
    return w.unflatten(0, (H_kv, -1, d_h)).mean(dim=1).flatten(0, 1)




def _gain_cases(rng: random.Random) -> list[dict]:
    return [dict(model={"$preset": rng.choice(list(MODELS))}, S=rng.randint(1, 32768), B=rng.randint(1, 256),
                 s=rng.choice([1, 2])) for _ in range(8)]


def _gain(model: ModelPreset, S: int, B: int, s: int) -> float:
    weights = costs.weight_bytes(N_params=model.N_params, s=s)

    def step(H_kv: int) -> int:
        kv = costs.kv_bytes_per_token(L=model.L, H_kv=H_kv, d_h=model.d_h, s=s)
        return costs.decode_step_bytes(weight_bytes=weights, kv_bytes_per_token=kv, S=S, B=B)

    return step(model.H) / step(model.H_kv)


def _batch_cases(rng: random.Random) -> list[dict]:
    cases = []
    while len(cases) < 8:
        hardware, model = rng.choice(list(HARDWARE)), rng.choice([n for n in MODELS if n != "MiniGPT"])
        if MODELS[model].N_params * 2 >= HARDWARE[hardware].memory_bytes and len(cases) < 6:
            continue
        m = MODELS[model]
        cases.append(dict(hardware={"$hardware": hardware}, model={"$preset": model},
                          H_kv=rng.choice([h for h in (1, 2, 4, 8, 16, 32, 64) if m.H % h == 0]),
                          S=rng.randint(256, 32768)))
    return cases


def _max_batch(hardware: HardwarePreset, model: ModelPreset, H_kv: int, S: int) -> int:
    kv = costs.kv_bytes_per_token(L=model.L, H_kv=H_kv, d_h=model.d_h, s=2)
    return costs.max_batch(memory_bytes=hardware.memory_bytes, weight_bytes=model.N_params * 2,
                           kv_bytes_per_token=kv, S=S)


EXERCISE = Exercise(
    id="ex09",
    notebook="ex09_gqa_mqa.ipynb",
    title="GQA and MQA",
    questions=(
        Question(
            "q1", "grouped_attention", "grouped_attention(q, k, v) -> tensor", _attention_cases, _grouped_attention,
            tensor(atol=1e-5, rtol=1e-5),
            "query head h uses key/value head h // g with g = H / H_kv (k.repeat_interleave(g, dim=1)); causal: "
            "query i sees keys 0..i; softmax(q·kᵀ/√d_h)·v.",
        ),
        Question(
            "q2", "mean_pool_kv", "mean_pool_kv(w, H_kv, d_h) -> tensor", _pool_cases, _mean_pool,
            tensor(atol=1e-6, rtol=1e-6),
            "rows of w are old K/V heads of d_h rows each; new head j is the mean of old heads j·g … j·g+g−1 "
            "(w.unflatten(0, (H_kv, g, d_h)).mean(1)), flattened back to [H_kv·d_h, d_in].",
        ),
        Question(
            "q3", "gqa_decode_gain", "gqa_decode_gain(model, S, B, s) -> float", _gain_cases, _gain, close(1e-9),
            "Eq. (9.2): bytes of a decode step with H_kv = model.H (MHA) over bytes with model.H_kv, "
            "each N·s + B·S·2·L·H_kv·d_h·s (the weights N·s the same in both).",
        ),
        Question(
            "q4", "max_batch_with_heads", "max_batch_with_heads(hardware, model, H_kv, S) -> int", _batch_cases,
            _max_batch, exact_int,
            "bf16 (s = 2) weights N·s and B caches of S tokens with H_kv K/V heads, 2·L·H_kv·d_h·s bytes per "
            "token, must fit hardware.memory_bytes: ⌊(memory − N·s) / (S·bytes per token)⌋, 0 if the weights "
            "alone do not fit.",
        ),
    ),
)
