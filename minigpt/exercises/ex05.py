"""Exercise 5 (Chapter 5, MiniGPT and its corpus): parameters, next token, loss, sampling."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from minigpt import costs
from minigpt.exercises.spec import (
    N_,
    Exercise,
    Question,
    argmax_of,
    build,
    build_case,
    close,
    exact_int,
    model_spec,
    randn,
    tensor,
)

PARAM_EDGES = ("d_ffn != 4·d: 4·d assumed instead of the d_ffn given",
               "an untied LM head, V·d more (differs on every case)")
NEXT_TOKEN_EDGES = ("the argmax of the first position is not the last's: the logits of the first position read",)
LOSS_EDGES = ("T >= 3 tokens: the cross-entropy summed over positions instead of averaged (equal at T = 2)",)
TOPK_EDGES = ("k < V with masked logits that keep mass: 0 instead of −inf for the others",)


def _param_cases(rng: random.Random) -> list[dict]:
    """The edges first (`PARAM_EDGES`: d_ffn = 2·d or 8·d, then a case with d_ffn = 4·d), then random."""
    cases = []
    for ratio in [rng.choice([2, 8])] + [4] * 7:
        d = 16 * rng.randint(1, 128)
        cases.append(dict(L=rng.randint(1, 48), d=d, V=rng.randint(2, 60000), S_max=rng.choice([128, 1024, 2048]),
                          d_ffn=ratio * d))
    return cases


def _token_case(rng: random.Random, T_min: int = 2) -> dict:
    model = model_spec(rng)
    V = model["$model"]["V"]
    return dict(model=model, tokens=[rng.randrange(V) for _ in range(rng.randint(T_min, 20))])


def _next_token_cases(rng: random.Random) -> list[dict]:
    """The edge first (`NEXT_TOKEN_EDGES`: drawn until the first position's argmax is 1e-3 below the best logit
    at the last position), then random."""
    while True:
        edge = _token_case(rng)
        logits = _all_logits(**build_case(edge))
        if logits[-1, logits[0].argmax()] < logits[-1].max() - 1e-3:
            return [edge] + [_token_case(rng) for _ in range(3)]


def _loss_cases(rng: random.Random) -> list[dict]:
    """The edge first (`LOSS_EDGES`), then random."""
    return [_token_case(rng, T_min=3)] + [_token_case(rng) for _ in range(3)]


@torch.no_grad()
def _all_logits(model: torch.nn.Module, tokens: list[int]) -> torch.Tensor:
    return model(torch.tensor([tokens]))[0]


@torch.no_grad()
def _logits(model: torch.nn.Module, tokens: list[int]) -> torch.Tensor:
    return model(torch.tensor([tokens]))[0, -1]


@torch.no_grad()
def _loss(model: torch.nn.Module, tokens: list[int]) -> float:
    x = torch.tensor([tokens])
    logits = model(x[:, :-1])[0]  # [T-1, V]
    return float(F.cross_entropy(logits, x[0, 1:]))


def _topk_cases(rng: random.Random) -> list[dict]:
    """The edge first (`TOPK_EDGES`: k < V, drawn until the V − k masked logits, set to 0, would take over 1e-4
    of the probability), then random."""
    while True:
        V = rng.randint(5, 60)
        edge = dict(logits=randn([V], rng, scale=3.0), k=rng.randint(1, V - 1), temperature=rng.uniform(0.2, 2.0))
        scaled = torch.sort(build(edge["logits"]) / edge["temperature"], descending=True).values
        if (V - edge["k"]) / (torch.exp(scaled[:edge["k"]]).sum() + V - edge["k"]) > 1e-4:
            break
    cases = [edge]
    for _ in range(5):
        V = rng.randint(5, 60)
        cases.append(dict(logits=randn([V], rng, scale=3.0), k=rng.randint(1, V), temperature=rng.uniform(0.2, 2.0)))
    return cases


def _topk(logits: torch.Tensor, k: int, temperature: float) -> torch.Tensor:
    """The distribution `minigpt.runtime.generate.sample` draws from (the same top-k + temperature steps)."""
    scaled = logits.float() / temperature
    kth = torch.topk(scaled, k, dim=-1).values[..., -1:]
    return torch.softmax(scaled.masked_fill(scaled < kth, float("-inf")), dim=-1)


EXERCISE = Exercise(
    id="ex05",
    notebook="ex05_minigpt_and_corpus.ipynb",
    title="MiniGPT and its corpus",
    questions=(
        Question(
            "q1", "param_count", "param_count(L, d, V, S_max, d_ffn) -> int", _param_cases,
            lambda **kw: costs.param_count(**kw), exact_int,
            N_("GPT-2-style MiniGPT with biases and a tied LM head: token (V·d) and position (S_max·d) "
               "embeddings; per layer QKV (3d² + 3d), output (d² + d), MLP (2·d·d_ffn + d_ffn + d), two "
               "LayerNorms (2·2d); one final LayerNorm (2d)."),
            edges=PARAM_EDGES,
        ),
        Question(
            "q2", "next_token", "next_token(model, tokens) -> int", _next_token_cases, _logits, argmax_of(1e-4),
            N_("run the model on the whole list (a [1, T] long tensor), take the logits at the last position "
               "and return the argmax as a Python int."),
            edges=NEXT_TOKEN_EDGES,
        ),
        Question(
            "q3", "sequence_loss", "sequence_loss(model, tokens) -> float", _loss_cases, _loss, close(1e-5, 1e-5),
            N_("the training loss: the mean cross-entropy (natural log) of predicting tokens[1:] from "
               "tokens[:-1]; F.cross_entropy(logits, targets) with logits [T−1, V]."),
            edges=LOSS_EDGES,
        ),
        Question(
            "q4", "top_k_probs", "top_k_probs(logits, k, temperature) -> tensor [V]", _topk_cases, _topk,
            tensor(1e-6, 1e-5),
            N_("divide the logits by the temperature, keep the k largest (set the others to −inf), then softmax: "
               "the other V−k probabilities are exactly 0."),
            edges=TOPK_EDGES,
        ),
    ),
)
