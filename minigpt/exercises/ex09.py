"""Exercise 9 (Chapter 9, GQA and MQA): grouped attention, mean-pooled K/V heads, the decode-bytes gain."""

from __future__ import annotations

import random

import torch

from minigpt import costs
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises.spec import N_, Exercise, Question, close, exact_int, randn, tensor
from minigpt.runtime.model import attention, causal_visible

ATTENTION_EDGES = ("H_kv = 2, g = 2, T >= 2: K/V heads tiled (repeat) instead of interleaved, or no causal mask",)


def _attention_cases(rng: random.Random) -> list[dict]:
    """The edge first (`ATTENTION_EDGES`: only 1 < H_kv < H tells tiled heads from interleaved ones), then random."""
    cases = []
    for i in range(6):
        H_kv, g, d_h, T = rng.choice([1, 2, 4]), rng.choice([1, 2, 4]), rng.choice([4, 8]), rng.randint(1, 9)
        if i == 0:
            H_kv, g, T = 2, 2, rng.randint(2, 9)
        B = rng.randint(1, 3)
        cases.append(dict(q=randn([B, H_kv * g, T, d_h], rng), k=randn([B, H_kv, T, d_h], rng),
                          v=randn([B, H_kv, T, d_h], rng)))
    return cases


def _grouped_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return attention(q, k, v, causal_visible(0, q.shape[2], q.device))


POOL_EDGES = ("H_kv = 2, g = 2: strided groups (old heads j, j + H_kv, …) instead of consecutive ones, or their sum "
              "instead of their mean",)


def _pool_cases(rng: random.Random) -> list[dict]:
    """The edge first (`POOL_EDGES`), then random."""
    cases = []
    for i in range(6):
        H_kv = 2 if i == 0 else rng.choice([1, 2, 4])
        g, d_h = 2 if i == 0 else rng.choice([1, 2, 4]), rng.choice([2, 4, 8])
        cases.append(dict(w=randn([H_kv * g * d_h, rng.randint(2, 12)], rng), H_kv=H_kv, d_h=d_h))
    return cases


def _mean_pool(w: torch.Tensor, H_kv: int, d_h: int) -> torch.Tensor:
    return w.unflatten(0, (H_kv, -1, d_h)).mean(dim=1).flatten(0, 1)


GAIN_EDGES = ("a GQA model (the first four cases): the MHA twin with the GQA model's weights",)


def _gain_cases(rng: random.Random) -> list[dict]:
    """The edges first (`GAIN_EDGES`), then random."""
    gqa = [name for name, m in MODELS.items() if m.H_kv < m.H]  # the first four: models with grouped K/V heads
    return [dict(model={"$preset": rng.choice(gqa if i < 4 else list(MODELS))}, S=rng.randint(1, 32768),
                 B=rng.randint(1, 256), s=rng.choice([1, 2])) for i in range(8)]


def _gain(model: ModelPreset, S: int, B: int, s: int) -> float:
    shape = dict(L=model.L, d=model.d, d_h=model.d_h, biases=model.biases)
    N_mha = costs.kv_heads_params(N_params=model.N_params, H_kv=model.H_kv, H_kv_new=model.H, **shape)
    return costs.gqa_decode_gain(N_params=N_mha, H_kv=model.H_kv, s=s, S=S, B=B, **shape)


BATCH_EDGES = ("Llama-3-8B or Mistral-7B with H_kv = 1, S <= 1024, on a chip of 24 GB or more: the weights not rebuilt "
               "(K and V projections not resized), or the 10 % reserve taken off the memory left after the weights",
               "Llama-3-70B or GPT-3 (weights that do not fit): no clamp at 0 (a negative batch)")


def _batch_cases(rng: random.Random) -> list[dict]:
    """The edges first (`BATCH_EDGES`), then random: six where the weights fit, two anywhere."""
    cases = [dict(hardware={"$hardware": rng.choice(["A100 40GB", "A100 80GB", "H100 SXM", "H200", "RTX 4090"])},
                  model={"$preset": rng.choice(["Llama-3-8B", "Mistral-7B"])}, H_kv=1, S=rng.randint(256, 1024))]
    big = rng.choice(["Llama-3-70B", "GPT-3 175B"])
    cases.append(dict(hardware={"$hardware": rng.choice(list(HARDWARE))}, model={"$preset": big},
                      H_kv=rng.choice([h for h in (1, 2, 4, 8, 16, 32, 64) if MODELS[big].H % h == 0]),
                      S=rng.randint(256, 32768)))
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
    N = costs.kv_heads_params(N_params=model.N_params, L=model.L, d=model.d, d_h=model.d_h, H_kv=model.H_kv,
                              H_kv_new=H_kv, biases=model.biases)
    kv = costs.kv_bytes_per_token(L=model.L, H_kv=H_kv, d_h=model.d_h, s=2)
    return costs.max_batch(memory_bytes=hardware.memory_bytes, weight_bytes=N * 2, kv_bytes_per_token=kv, S=S,
                           reserve=costs.FIT_RESERVE)


EXERCISE = Exercise(
    id="ex09",
    notebook="ex09_gqa_mqa.ipynb",
    title="GQA and MQA",
    questions=(
        Question(
            "q1", "grouped_attention", "grouped_attention(q, k, v) -> tensor", _attention_cases, _grouped_attention,
            tensor(atol=1e-5, rtol=1e-5),
            N_("each K/V head serves g = H / H_kv consecutive query heads (query heads 0 … g − 1 read K/V head 0, "
               "and so on); the scores are scaled by 1/√d_h; causal: query i sees keys 0 … i and no later one."),
            edges=ATTENTION_EDGES,
        ),
        Question(
            "q2", "mean_pool_kv", "mean_pool_kv(w, H_kv, d_h) -> tensor", _pool_cases, _mean_pool,
            tensor(atol=1e-6, rtol=1e-6),
            N_("w holds the old heads one after the other, d_h rows each; new head j averages g consecutive old "
               "heads (j·g up to j·g + g − 1), row by row, so row r of new head j is the mean of row r of each of "
               "them. The result keeps d_in columns and has H_kv·d_h rows."),
            edges=POOL_EDGES,
        ),
        Question(
            "q3", "gqa_decode_gain", "gqa_decode_gain(model, S, B, s) -> float", _gain_cases, _gain, close(1e-9),
            N_("Eq. (9.2): a decode step reads the weights once and every sequence's cache. The MHA twin differs in "
               "both: its cache holds H K/V heads instead of H_kv, and its K and V projections have H·d_h output "
               "rows instead of H_kv·d_h in every layer, so its weights are larger too."),
            edges=GAIN_EDGES,
        ),
        Question(
            "q4", "max_batch_with_heads", "max_batch_with_heads(hardware, model, H_kv, S) -> int", _batch_cases,
            _max_batch, exact_int,
            N_("the bf16 weights of the model rebuilt with H_kv K/V heads (its K and V projections change size, "
               "as in Question 3) and B caches of S tokens, each token holding a key and a value per K/V head per "
               "layer, must fit in 90 % of hardware.memory_bytes (rounded down); B is a whole number, 0 when the "
               "weights alone do not fit."),
            edges=BATCH_EDGES,
        ),
    ),
)
