"""Exercise 6 (Chapter 6, implement the KV cache): write, attend, decode, generate, and fit the cost curve."""

from __future__ import annotations

import random

import numpy as np
import torch
import torch.nn.functional as F

from minigpt.config import ModelConfig
from minigpt.exercises.spec import N_, Exercise, Question, close, int_list, model_spec, pair, randn, tensor
from minigpt.runtime.generate import generate
from minigpt.runtime.kv_cache import KVCache

WRITE_EDGES = ("1 <= S, 2 <= T, S + T < S_max: only the first new row written (a decode-only write), the new rows "
               "written at row 0, or the whole preallocated cache returned instead of its valid prefix",
               "S + T = S_max: a write that fills the cache to its last row")


def _write_cases(rng: random.Random) -> list[dict]:
    """The edges first (`WRITE_EDGES`), then random writes."""
    cases = []
    for i in range(5):
        B, H_kv, S_max, d_h = rng.randint(1, 3), rng.choice([1, 2, 4]), rng.randint(8, 24), rng.choice([4, 8])
        T = rng.randint(2, 4) if i == 0 else rng.randint(1, 4)
        S = (rng.randint(1, S_max - T - 1) if i == 0 else S_max - T if i == 1 else rng.randint(0, S_max - T))
        cases.append(dict(k_cache=randn([B, H_kv, S_max, d_h], rng), v_cache=randn([B, H_kv, S_max, d_h], rng),
                          k_new=randn([B, H_kv, T, d_h], rng), v_new=randn([B, H_kv, T, d_h], rng), S=S))
    return cases


def _write(k_cache: torch.Tensor, v_cache: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
           S: int) -> tuple[torch.Tensor, torch.Tensor]:
    B, H_kv, S_max, d_h = k_cache.shape
    cache = KVCache(ModelConfig(L=1, H=H_kv, H_kv=H_kv, d_h=d_h, S_max=S_max), B)
    cache.k[0], cache.v[0] = k_cache, v_cache
    cache.advance(S)
    return cache.update(0, k_new, v_new)


ATTEND_EDGES = ("GQA with 1 < H_kv < H: KV heads tiled (repeat) instead of interleaved (repeat_interleave)",
                "MHA, H_kv = H", "MQA, H_kv = 1 < H")


def _attend_cases(rng: random.Random) -> list[dict]:
    """The edges first (`ATTEND_EDGES`: only 1 < H_kv < H tells tiled heads from interleaved ones), then random."""
    shapes = [(2, 4), (4, 4), (1, 4)] + [(H_kv, H_kv * rng.choice([1, 2, 4])) for H_kv in
                                         (rng.choice([1, 2]) for _ in range(3))]
    cases = []
    for H_kv, H in shapes:
        B, d_h, S = rng.randint(1, 3), rng.choice([4, 8, 16]), rng.randint(1, 30)
        cases.append(dict(q=randn([B, H, d_h], rng), k=randn([B, H_kv, S, d_h], rng), v=randn([B, H_kv, S, d_h], rng)))
    return cases


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    g = q.shape[1] // k.shape[1]  # query heads per KV head; heads h·g .. h·g+g−1 share KV head h
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    return F.scaled_dot_product_attention(q.unsqueeze(2), k, v).squeeze(2)


DECODE_EDGES = ("B = 2: the token reshaped as one sequence of B tokens (token.view(1, -1))",)


def _decode_cases(rng: random.Random) -> list[dict]:
    """The edge first (`DECODE_EDGES`: only B > 1 tells view(-1, 1) from view(1, -1)), then random."""
    cases = []
    for i in range(3):
        model = model_spec(rng)
        V, B = model["$model"]["V"], 2 if i == 0 else rng.randint(1, 2)
        P = rng.randint(1, 12)
        cases.append(dict(model=model, prompt={"$long": [[rng.randrange(V) for _ in range(P)] for _ in range(B)]},
                          token={"$long": [rng.randrange(V) for _ in range(B)]}))
    return cases


@torch.no_grad()
def _decode(model: torch.nn.Module, prompt: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
    cache = model.new_cache(prompt.shape[0])
    model(prompt, cache)
    return model(token.view(-1, 1), cache, last_only=True)[:, -1]


GENERATE_EDGES = ("D = 1: the prefill's token alone (a loop that decodes once before checking D returns two)",)


def _generate_cases(rng: random.Random) -> list[dict]:
    """The edge first (`GENERATE_EDGES`), then random."""
    cases = []
    for i in range(3):
        model = model_spec(rng)
        V = model["$model"]["V"]
        cases.append(dict(model=model, prompt=[rng.randrange(V) for _ in range(rng.randint(1, 8))],
                          D=1 if i == 0 else rng.randint(1, 12)))
    return cases


def _generate(model: torch.nn.Module, prompt: list[int], D: int) -> list[int]:
    return generate(model, [prompt], D, use_cache=True).tokens[0]


SLOPE_EDGES = ("t[0] above the line, t[-1] below it: the slope through the two end points",
               "a base time > 0 (every case): the intercept (np.polyfit(S, t, 1)[1]) instead of the slope")


def _slope_cases(rng: random.Random) -> list[dict]:
    """The edge first (`SLOPE_EDGES`: end points off the line in opposite directions), then random."""
    cases = []
    for i in range(5):
        base, per_token = rng.uniform(1e-4, 1e-2), rng.uniform(1e-8, 1e-5)
        S = sorted(rng.sample(range(16, 4096), 10))
        noise = [rng.uniform(0.95, 1.05) for _ in S]
        if i == 0:
            noise[0], noise[-1] = 1.05, 0.95
        cases.append(dict(S_values=S, step_s=[(base + per_token * x) * n for x, n in zip(S, noise, strict=True)]))
    return cases


def _slope(S_values: list[int], step_s: list[float]) -> float:
    return float(np.polyfit(np.array(S_values, dtype=np.float64), np.array(step_s, dtype=np.float64), 1)[0])


EXERCISE = Exercise(
    id="ex06",
    notebook="ex06_implement_kv_cache.ipynb",
    title="Implement the KV cache",
    questions=(
        Question(
            "q1", "cache_write", "cache_write(k_cache, v_cache, k_new, v_new, S) -> (k_valid, v_valid)", _write_cases,
            _write, pair(tensor(0, 0), tensor(0, 0), ("k_valid", "v_valid")),
            N_("write k_new, v_new ([B, H_kv, T, d_h]) into rows S..S+T−1 of the preallocated [B, H_kv, S_max, d_h] "
               "tensors (in place, k_cache[:, :, S:S+T] = k_new) and return the valid prefixes [:, :, :S+T]."),
            edges=WRITE_EDGES,
        ),
        Question(
            "q2", "attend", "attend(q, k, v) -> tensor [B, H, d_h]", _attend_cases, _attend, tensor(1e-5, 1e-4),
            N_("one query per head, q [B, H, d_h], over S cached keys and values [B, H_kv, S, d_h]: "
               "softmax(q·kᵀ / √d_h)·v. With GQA, query heads h·g … h·g+g−1 (g = H / H_kv) share KV head h "
               "(k.repeat_interleave(g, dim=1))."),
            edges=ATTEND_EDGES,
        ),
        Question(
            "q3", "decode_logits", "decode_logits(model, prompt, token) -> tensor [B, V]", _decode_cases, _decode,
            tensor(1e-4, 1e-4),
            N_("prefill the prompt [B, P] into a fresh cache (model.new_cache(B)), then one decode step with "
               "token [B] at position P: model(token.view(-1, 1), cache) — or your own loop over model.blocks — "
               "and return the logits of that step, [B, V]."),
            edges=DECODE_EDGES,
        ),
        Question(
            "q4", "greedy_generate", "greedy_generate(model, prompt, D) -> list[int]", _generate_cases, _generate,
            int_list,
            N_("D new tokens: one prefill gives token 1, then D−1 decode steps, each feeding back the argmax. "
               "Return a list of D Python ints (not including the prompt)."),
            edges=GENERATE_EDGES,
        ),
        Question(
            "q5", "fitted_slope", "fitted_slope(S_values, step_s) -> float", _slope_cases, _slope, close(1e-6),
            N_("least-squares straight line step_s ≈ a + b·S (np.polyfit(S, t, 1)); return the slope b in seconds "
               "per cached token."),
            edges=SLOPE_EDGES,
        ),
    ),
)
