"""Exercise 10 (Chapter 10, a quantized KV cache): absmax int8 round trip, bytes with scales, the KL cost, the
decode gain, and keys quantized per channel (KIVI's layout), checked against `quantize_per_channel`."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from minigpt import costs
from minigpt.costs.preset_types import ModelPreset
from minigpt.costs.presets import MODELS
from minigpt.exercises.spec import N_, Exercise, Question, close, exact_int, pair, randn, tensor
from minigpt.runtime.quantized_cache import dequantize, dequantize_per_channel, quantize, quantize_per_channel

ROUND_TRIP_EDGES = ("several vectors of different sizes in one tensor: one scale for the whole tensor instead of "
                    "one per vector", "the scale kept in fp32 (no .half()): every case tells it")


def _round_trip_cases(rng: random.Random) -> list[dict]:
    """The edge first (`ROUND_TRIP_EDGES`: a tensor of several vectors), then random."""
    edge = dict(x=randn([rng.randint(2, 3), rng.randint(2, 6), rng.choice([8, 16, 64])], rng, scale=1.0))
    return [edge] + [dict(x=randn([rng.randint(1, 3), rng.randint(1, 6), rng.choice([4, 8, 16, 64])], rng,
                                  scale=rng.choice([0.1, 1.0, 5.0]))) for _ in range(5)]


def _round_trip(x: torch.Tensor) -> torch.Tensor:
    d_h = x.shape[-1]
    codes, scales = quantize(x, bits=8, group_size=d_h)
    return dequantize(codes, scales, bits=8, group_size=d_h, dtype=torch.float32)


BYTES_EDGES = ("group_size < d_h: one scale per vector instead of one per group",
               "the factor 2 for K and V left out: every case tells it")


def _bytes_cases(rng: random.Random) -> list[dict]:
    """The edge first (`BYTES_EDGES`: several groups per vector), then random."""
    d_h = rng.choice([64, 128])
    cases = [dict(L=rng.randint(1, 80), H_kv=rng.choice([1, 2, 8, 32]), d_h=d_h, bits=rng.choice([8, 4]),
                  group_size=rng.choice([g for g in (16, 32, 64) if g < d_h]))]
    for _ in range(7):
        d_h = rng.choice([16, 64, 128])
        bits = rng.choice([8, 4])
        cases.append(dict(L=rng.randint(1, 80), H_kv=rng.choice([1, 2, 8, 32]), d_h=d_h, bits=bits,
                          group_size=rng.choice([g for g in (16, 32, 64, 128) if d_h % g == 0])))
    return cases


def _bytes(L: int, H_kv: int, d_h: int, bits: int, group_size: int) -> int:
    return costs.quantized_kv_bytes(L=L, H_kv=H_kv, d_h=d_h, S=1, bits=bits, group_size=group_size)


KL_EDGES = ("several rows: the sum over rows instead of the mean",
            "KL(q‖p) instead of KL(p‖q) (p is the baseline): every case tells it")


def _kl_cases(rng: random.Random) -> list[dict]:
    """The edge first (`KL_EDGES`: several rows), then random."""
    cases = []
    for i in range(6):
        shape = [rng.randint(2, 5) if i == 0 else rng.randint(1, 5), rng.randint(3, 40)]
        cases.append(dict(p_logits=randn(shape, rng, scale=3.0), q_logits=randn(shape, rng, scale=3.0)))
    return cases


def _kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    log_p, log_q = F.log_softmax(p_logits.double(), -1), F.log_softmax(q_logits.double(), -1)
    return (log_p.exp() * (log_p - log_q)).sum(-1).mean().item()


GAIN_EDGES = ("B > 1 sequences: one sequence's cache (B left out)",
              "the scales left out of the quantized cache (codes only): every case tells it")


def _gain_cases(rng: random.Random) -> list[dict]:
    """The edge first (`GAIN_EDGES`: a batch of several sequences), then random."""
    cases = []
    for i in range(8):
        model = rng.choice(list(MODELS))
        d_h = MODELS[model].d_h
        groups = [g for g in (16, 32, 64, 128) if d_h % g == 0]
        cases.append(dict(model={"$preset": model}, S=rng.randint(1, 32768), B=rng.randint(2 if i == 0 else 1, 128),
                          bits=rng.choice([8, 4]), group_size=rng.choice(groups)))
    return cases


def _gain(model: ModelPreset, S: int, B: int, bits: int, group_size: int) -> float:
    weights = costs.weight_bytes(N_params=model.N_params, s=2)
    bf16 = costs.kv_bytes_per_token(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=2)
    quant = costs.quantized_kv_bytes(L=model.L, H_kv=model.H_kv, d_h=model.d_h, S=1, bits=bits, group_size=group_size)
    step = (costs.decode_step_bytes(weight_bytes=weights, kv_bytes_per_token=kv, S=S, B=B) for kv in (bf16, quant))
    return next(step) / next(step)


CHANNEL_EDGES = ("T of several token groups: one scale per channel over all T tokens (token_group ignored)",
                 "one scale per token (q1's layout): every case tells it")


def _channel_cases(rng: random.Random) -> list[dict]:
    """Keys `[H_kv, T, d_h]` with one or two outlier channels (×10 to ×40 in every token), T a multiple of G; the
    edge first (`CHANNEL_EDGES`: several token groups), then random."""
    cases = []
    for i in range(6):
        G, d_h = rng.choice([2, 4, 8]), rng.choice([4, 8, 16])
        outliers = rng.sample(range(d_h), rng.randint(1, 2))
        cases.append(dict(k=randn([rng.randint(1, 3), G * rng.randint(2 if i == 0 else 1, 4), d_h], rng), token_group=G,
                          outliers=outliers, factor=rng.choice([10.0, 20.0, 40.0])))
    return cases


def _keys(k: torch.Tensor, outliers: list[int], factor: float) -> torch.Tensor:
    k = k.clone()
    k[..., outliers] *= factor
    return k


def _per_channel(k: torch.Tensor, token_group: int, outliers: list[int], factor: float
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    keys = _keys(k, outliers, factor)
    codes, scales = quantize_per_channel(keys, bits=8, token_group=token_group)
    back = dequantize_per_channel(codes, scales, bits=8, token_group=token_group, dtype=torch.float32)
    return back, scales.float()


EXERCISE = Exercise(
    id="ex10",
    notebook="ex10_quantized_kv_cache.ipynb",
    title="A quantized KV cache",
    questions=(
        Question(
            "q1", "int8_round_trip", "int8_round_trip(x) -> tensor", _round_trip_cases, _round_trip,
            tensor(atol=1e-5, rtol=1e-5),
            N_("Eq. (10.1) per vector (last dimension): scale = (max|x| / 127) stored as fp16 (.half()), codes = "
               "round(x / scale) clamped to ±127, read back as codes·scale in fp32."),
            edges=ROUND_TRIP_EDGES,
        ),
        Question(
            "q2", "quantized_bytes_per_token", "quantized_bytes_per_token(L, H_kv, d_h, bits, group_size) -> int",
            _bytes_cases, _bytes, exact_int,
            N_("count what one token stores: a key and a value vector for every K/V head of every layer, each as "
               "d_h codes of `bits` bits plus one 2-byte fp16 scale per group of group_size values."),
            edges=BYTES_EDGES,
        ),
        Question(
            "q3", "mean_kl", "mean_kl(p_logits, q_logits) -> float", _kl_cases, _kl, close(1e-6, 1e-9),
            N_("each row is one position: the divergence of the cache's next-token distribution from the baseline's "
               "(p from p_logits is the baseline), in nats, computed from log-probabilities for stability; return the "
               "mean over rows as a float."),
            edges=KL_EDGES,
        ),
        Question(
            "q4", "quantized_decode_gain", "quantized_decode_gain(model, S, B, bits, group_size) -> float",
            _gain_cases, _gain, close(1e-9),
            N_("a memory-bound step's time follows its bytes: the bf16 weights once plus every sequence's cache; with "
               "a fused kernel the quantized cache is read as stored (q2's bytes per token). Return the bf16-cache "
               "step's bytes over the quantized one's."),
            edges=GAIN_EDGES,
        ),
        Question(
            "q5", "keys_per_channel", "keys_per_channel(k, token_group, outliers, factor) -> (keys, scales)",
            _channel_cases, _per_channel, pair(tensor(atol=1e-5, rtol=1e-5), tensor(atol=1e-6, rtol=1e-3),
                                               ("keys", "scales")),
            N_("first multiply the channels listed in outliers by factor (in a copy of k). Then int8 absmax as in q1, "
               "but each scale is shared by one channel (last dimension) over one block of token_group consecutive "
               "tokens (the dimension before it), not by one token's vector: scales have one row per block and one "
               "column per channel, stored in fp16 and returned as fp32. Return the keys read back (fp32, the shape "
               "of k) and the scales."),
            edges=CHANNEL_EDGES,
        ),
    ),
)
