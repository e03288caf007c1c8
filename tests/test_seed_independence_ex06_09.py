"""A grade does not depend on the class seed, exercises 6 to 9: each question's plausible wrong answers, each named
by the edge (`Question.edges`) that catches it, lose the question under every one of the harness's seeds
(`tests/seed_harness.py`). ex06 Q2 is in `tests/test_seed_independence.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from seed_harness import Make, seeds_passed

from minigpt import costs
from minigpt.costs import roofline
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.costs.shape import evaluate
from minigpt.exercises.wire_inputs import Record

# ---------------------------------------------------------------------------------------------
# ex06


def _chunk(visible: Callable[[int, int, int, int, int], bool] = lambda i, j, S, T, K: j <= S + i,
           at: Callable[[int], int] = lambda S: S, rows: str = "all", keys: str = "valid",
           scale: Callable[[int], float] = math.sqrt, returned: str = "valid", room: bool = False,
           sdpa: Callable[[int], bool] | None = None, dtype: torch.dtype = torch.float32) -> Callable[..., Any]:
    """ex06 Q1 written from scratch (the mask built key by key, `visible(i, j, S, T, K)` over K keys, the scores
    in `dtype`) with one plausible bug: another mask (top-left, none, strict, or aligned to the last of all S_max
    rows); `sdpa(T)`: F.scaled_dot_product_attention with is_causal=sdpa(T) instead of the mask; the rows written
    at `at(S)`, the first alone (`rows="first"`) or none (`"none"`, attention over a concatenation); the keys the
    new rows alone (`keys="new"`) or all S_max rows (`"whole"`); scores over `scale(d_h)`; the whole cache
    returned (`returned="whole"`); or a room check that refuses to fill the last row (`room`)."""
    def chunk_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, k_new: torch.Tensor,
                        v_new: torch.Tensor, S: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        T, S_max, d_h = q.shape[2], k_cache.shape[2], q.shape[3]
        if room and S + T >= S_max:
            raise ValueError(f"no room for {T} rows after {S} in {S_max}")
        before = (k_cache[:, :, :S].clone(), v_cache[:, :, :S].clone())
        n = {"all": T, "first": 1, "none": 0}[rows]
        k_cache[:, :, at(S):at(S) + n], v_cache[:, :, at(S):at(S) + n] = k_new[:, :, :n], v_new[:, :, :n]
        k_valid, v_valid = k_cache[:, :, :S + T], v_cache[:, :, :S + T]
        k, v = {"valid": (k_valid, v_valid), "new": (k_new, v_new), "whole": (k_cache, v_cache),
                "concatenated": (torch.cat([before[0], k_new], 2), torch.cat([before[1], v_new], 2))}[
                    "concatenated" if rows == "none" else keys]
        if sdpa is not None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=sdpa(T))
        else:
            K = k.shape[2]
            seen = torch.tensor([[visible(i, j, S, T, K) for j in range(K)] for i in range(T)])
            scores = (q.to(dtype) @ k.to(dtype).transpose(-2, -1)) / scale(d_h)
            out = (torch.softmax(scores.masked_fill(~seen, -math.inf), dim=-1) @ v.to(dtype)).to(q.dtype)
        if returned == "whole":
            return out, k_cache, v_cache
        return out, k_valid, v_valid
    return chunk_attention


def _decode_step(position: Callable[[int], int] = lambda P: P, keys: str = "both", tiled: bool = False,
                 causal_sdpa: bool = False, residual_from_normed: bool = False, ln2: bool = True,
                 scale_by_d: bool = False, final_norm: bool = True, heads_across: bool = False,
                 kqv: bool = False, relu: bool = False, tanh_gelu: bool = False) -> Callable[..., Any]:
    """ex06 Q3 written from scratch with one plausible bug: the token at another position (`position(P)`); its
    query over the cached rows alone or its own key alone (`keys`: "cache", "own"); the KV heads tiled; the mask
    of SDPA's is_causal=True (top-left: one query over P + 1 keys sees the first alone); the residual added to the
    normed input; the MLP fed the un-normed stream; the scores scaled by √d; no final LayerNorm; the query's heads
    read across the width (`heads_across`: [d_h, H], not [H, d_h]); the qkv rows split as k, q, v (`kqv`); or ReLU
    or GPT-2's tanh GELU, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), in the MLP instead of the exact GELU."""
    def norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5) * w + b

    def decode(params: dict[str, torch.Tensor], config: dict[str, int], k_cache: torch.Tensor,
               v_cache: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
        L, H, H_kv, d_h, d = (config[n] for n in ("L", "H", "H_kv", "d_h", "d"))
        B, P, g = token.shape[0], k_cache.shape[3], H // H_kv
        x = params["tok_emb.weight"][token] + params["pos_emb.weight"][position(P)]
        for layer in range(L):
            w = lambda n: params[f"blocks.{layer}.{n}"]  # noqa: E731, B023 - used within this iteration
            h = norm(x, w("ln1.weight"), w("ln1.bias"))
            qkv = h @ w("attn.qkv.weight").T + w("attn.qkv.bias")
            if kqv:  # the first H_kv·d_h rows read as the key, the next H·d_h as the query
                k_rows, q_rows = qkv[:, :H_kv * d_h], qkv[:, H_kv * d_h:(H + H_kv) * d_h]
                qkv = torch.cat([q_rows, k_rows, qkv[:, (H + H_kv) * d_h:]], 1)
            q = qkv[:, :H * d_h].view(B, d_h, H).transpose(1, 2) if heads_across else qkv[:, :H * d_h].view(B, H, d_h)
            q = q.reshape(B, H, 1, d_h)
            k_new = qkv[:, H * d_h:(H + H_kv) * d_h].view(B, H_kv, 1, d_h)
            v_new = qkv[:, (H + H_kv) * d_h:].view(B, H_kv, 1, d_h)
            k = {"both": torch.cat([k_cache[layer], k_new], 2), "cache": k_cache[layer], "own": k_new}[keys]
            v = {"both": torch.cat([v_cache[layer], v_new], 2), "cache": v_cache[layer], "own": v_new}[keys]
            k, v = (k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1)) if tiled else (k.repeat_interleave(g, 1),
                                                                                v.repeat_interleave(g, 1))
            if causal_sdpa:
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                scores = q @ k.transpose(-2, -1) / math.sqrt(d if scale_by_d else d_h)
                a = torch.softmax(scores, -1) @ v
            x = (h if residual_from_normed else x) + a.reshape(B, d) @ w("attn.out.weight").T + w("attn.out.bias")
            h = norm(x, w("ln2.weight"), w("ln2.bias")) if ln2 else x
            up = h @ w("mlp.up.weight").T + w("mlp.up.bias")
            if tanh_gelu:
                act = 0.5 * up * (1 + torch.tanh(math.sqrt(2 / math.pi) * (up + 0.044715 * up ** 3)))
            else:
                act = F.relu(up) if relu else F.gelu(up)
            x = x + act @ w("mlp.down.weight").T + w("mlp.down.bias")
        if final_norm:
            x = norm(x, params["ln_f.weight"], params["ln_f.bias"])
        return x @ params["tok_emb.weight"].T
    return decode


def _generation(causal: bool = True, append: bool = True, shift: int = 0, first: int = -1, mixed: bool = False,
                one: bool = False, with_prompt: bool = False, recompute: bool = False, at_least: int = 1,
                dtype: torch.dtype = torch.float32) -> Callable[..., Any]:
    """ex06 Q4 written from scratch (explicit softmax and mask, a list of keys and values per layer, few operations:
    the harness measures every call), with one plausible bug: the prefill without its causal mask; the decode
    steps' keys and values not appended (each step sees the prompt's rows and its own); each decode step at
    position P + i − 1 + `shift`; token 1 from the prefill's position `first`; one argmax over the flattened [B, V]
    for every sequence (`mixed`); the first sequence alone (`one`: B = 1 assumed); the prompt returned with the new
    tokens; at least `at_least` tokens (a loop that decodes once before checking D); or, right but not the
    question's method, the whole sequence recomputed at every step (`recompute`). `dtype=torch.float64`: right, in
    another precision."""
    def generate_from_weights(params: dict[str, torch.Tensor], config: dict[str, int], prompt: torch.Tensor,
                              D: int) -> list[list[int]]:
        p = {n: t.to(dtype) for n, t in params.items()}
        L, H, H_kv, d_h, d = (config[n] for n in ("L", "H", "H_kv", "d_h", "d"))
        prompt = prompt[:1] if one else prompt
        B, P, g = prompt.shape[0], prompt.shape[1], H // H_kv

        def forward(tokens: torch.Tensor, start: int, cache: list | None, mask: bool) -> torch.Tensor:
            T = tokens.shape[1]
            x = p["tok_emb.weight"][tokens] + p["pos_emb.weight"][start:start + T]
            for layer in range(L):
                w = lambda n: p[f"blocks.{layer}.{n}"]  # noqa: E731, B023 - used within this iteration
                h = F.layer_norm(x, (d,), w("ln1.weight"), w("ln1.bias"))
                qkv = F.linear(h, w("attn.qkv.weight"), w("attn.qkv.bias")).view(B, T, H + 2 * H_kv, d_h)
                q, k, v = qkv.transpose(1, 2).split([H, H_kv, H_kv], dim=1)
                if cache is not None and cache[layer] is not None:
                    k, v = torch.cat([cache[layer][0], k], 2), torch.cat([cache[layer][1], v], 2)
                if cache is not None and (cache[layer] is None or append):
                    cache[layer] = (k, v)
                K = k.shape[2]
                if g > 1:
                    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
                scores = q @ k.transpose(-2, -1) / math.sqrt(d_h)
                if mask and T > 1:  # query i (position K - T + i) sees keys 0 .. K - T + i
                    scores = scores.masked_fill(torch.ones(T, K, dtype=torch.bool).triu(K - T + 1), float("-inf"))
                a = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, T, d)
                x = x + F.linear(a, w("attn.out.weight"), w("attn.out.bias"))
                h = F.gelu(F.linear(F.layer_norm(x, (d,), w("ln2.weight"), w("ln2.bias")), w("mlp.up.weight"),
                                    w("mlp.up.bias")))
                x = x + F.linear(h, w("mlp.down.weight"), w("mlp.down.bias"))
            return F.layer_norm(x, (d,), p["ln_f.weight"], p["ln_f.bias"]) @ p["tok_emb.weight"].T

        def pick(logits: torch.Tensor) -> torch.Tensor:
            return logits.argmax().repeat(B) if mixed else logits.argmax(-1)

        out: list[torch.Tensor] = []
        if recompute:
            seq = prompt
            for _ in range(D):
                out.append(pick(forward(seq, 0, None, True)[:, -1]))
                seq = torch.cat([seq, out[-1].view(B, 1)], 1)
        else:
            cache: list = [None] * L
            out.append(pick(forward(prompt, 0, cache, causal)[:, first]))
            for i in range(1, max(D, at_least)):
                out.append(pick(forward(out[-1].view(B, 1), P + i - 1 + shift, cache, True)[:, -1]))
        tokens = torch.stack(out, 1)
        return (torch.cat([prompt, tokens], 1) if with_prompt else tokens).tolist()
    return generate_from_weights


def _packed(start_of: Callable[[int, list[int]], int] = lambda b, lengths: lengths[b],
            rows_of: Callable[[list[int], int], list[int]] | None = None, scheduled_slots: bool = False,
            from_zeros: bool = False) -> Callable[..., Any]:
    """ex06 Q5 with one plausible bug: every sequence starting where `start_of` says (one common start, one row
    late), its packed rows taken as `rows_of` counts them (an even split, one row each), the slots numbered among
    the scheduled sequences only, or the cache rebuilt from zeros around the written rows."""
    def write(k_cache: torch.Tensor, v_cache: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
              lengths: list[int], counts: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        taken = counts if rows_of is None else rows_of(counts, k_new.shape[0])
        if from_zeros:
            keep = torch.arange(k_cache.shape[2]).view(1, 1, -1, 1) < torch.tensor(lengths).view(-1, 1, 1, 1)
            k_cache, v_cache = k_cache * keep, v_cache * keep
        order = [b for b in range(len(counts)) if counts[b]] if scheduled_slots else range(len(counts))
        start = 0
        for slot, b in enumerate(order):
            S, T, target = start_of(b, lengths), taken[b], slot if scheduled_slots else b
            k_cache[target, :, S:S + T] = k_new[start:start + T].transpose(0, 1)
            v_cache[target, :, S:S + T] = v_new[start:start + T].transpose(0, 1)
            start += T
        return k_cache, v_cache
    return write


# ---------------------------------------------------------------------------------------------
# ex07


def _overlap_ignored(oracle: Callable[..., Any]) -> Callable[..., Any]:
    """ex07 Q1 with Eq. (7.2) whatever `overlap` (the two maxes of Eq. (7.3) agree unless one part is compute-bound
    and the other memory-bound)."""
    return lambda model, hardware, S, B, overlap: oracle(model, hardware, S, B, True)


def _no_lm_head(oracle: Callable[..., Any]) -> Callable[..., Any]:
    """ex07 with the LM head's 2dV left out of the FLOPs (V = 0): wrong where the FLOPs decide. The model comes as
    the grading child builds it, a read-only record of the preset's fields, so V = 0 is a record of its own."""
    return lambda model, *args, **kwargs: oracle(Record("ModelPreset", {**model._fields, "V": 0}), *args, **kwargs)


def _k_only_step(model: ModelPreset, hardware: HardwarePreset, S: int, B: int, overlap: bool) -> float:
    """ex07 Q1 with b_token = L·H_kv·d_h·s (the factor 2 for K and V forgotten): wrong where the cache's bytes
    decide."""
    return evaluate(roofline.decode_step_time, model, S=S, B=B, N_params=model.N_params, s=2, s_kv=1,
                    bandwidth=hardware.bandwidth, peak_flops=hardware.peak_flops, overlap=overlap)


def _floor_critical(model: ModelPreset, hardware: HardwarePreset, S: int) -> int | None:
    """ex07 Q2 rounding B down (floor) instead of up."""
    R = hardware.peak_flops / hardware.bandwidth
    margin = costs.of(model).decode_step_flops(S=S) - R * S * costs.of(model).kv_bytes_per_token(s=2)
    return None if margin <= 0 else max(1, math.floor(R * model.N_params * 2 / margin))


def _critical_no_none(model: ModelPreset, hardware: HardwarePreset, S: int) -> int | None:
    """ex07 Q2 without the None check: max(1, ceil(...)) of a negative margin returns 1."""
    R = hardware.peak_flops / hardware.bandwidth
    margin = costs.of(model).decode_step_flops(S=S) - R * S * costs.of(model).kv_bytes_per_token(s=2)
    return max(1, math.ceil(R * model.N_params * 2 / margin))


def _cap_with(max_batch: Callable[..., int]) -> Callable[..., Any]:
    """ex07 Q3 with its B_max computed by `max_batch(memory_bytes, weights, b_token, S, reserve)`."""
    def cap(model: ModelPreset, hardware: HardwarePreset, S: int, reserve: float) -> tuple[int, str]:
        b_max = max_batch(hardware.memory_bytes, model.N_params * 2, costs.of(model).kv_bytes_per_token(s=2), S,
                          reserve)
        b_crit = roofline.critical_batch_on(model, hardware, S=S)
        return (b_max, "memory") if b_crit is None or b_crit > b_max else (b_crit, "compute")
    return cap


def _cap_memory_only(model: ModelPreset, hardware: HardwarePreset, S: int, reserve: float) -> tuple[int, str]:
    """ex07 Q3 that never stops at B_crit: always (B_max, 'memory')."""
    return costs.max_batch(memory_bytes=hardware.memory_bytes, weight_bytes=model.N_params * 2,
                           kv_bytes_per_token=costs.of(model).kv_bytes_per_token(s=2), S=S, reserve=reserve), "memory"


def _crossover_H(model: ModelPreset, S: int) -> float:
    """ex07 Q4 with b_token = 2·L·H·d_h·s (the query heads H instead of the K/V heads H_kv): right for MHA only."""
    return model.N_params * 2 / (S * 2 * model.L * model.H * model.d_h * 2)


def _frontier_additive(model: ModelPreset, hardware: HardwarePreset, S: int, Bs: list[int]) -> torch.Tensor:
    """ex07 Q5 with t from Eq. (7.3) (overlap=False) instead of Eq. (7.2)."""
    steps = [roofline.step_time_on(model, hardware, S=S, B=B, overlap=False) for B in Bs]
    return torch.tensor([[1 / t, B / t] for B, t in zip(Bs, steps, strict=True)], dtype=torch.float64)



# ---------------------------------------------------------------------------------------------
# ex08


def _probes_warmup(copy_bytes: int, copy_s: list[float], n: int, matmul_s: list[float]) -> tuple[float, float]:
    """ex08 Q1 dropping each list's first timing as a warm-up: wrong when the fastest run is the first."""
    return 2 * copy_bytes / min(copy_s[1:]), 2 * n**3 / min(matmul_s[1:])


def _probes_mean(copy_bytes: int, copy_s: list[float], n: int, matmul_s: list[float]) -> tuple[float, float]:
    """ex08 Q1 with the mean timing instead of the best (differs on every input: the timings vary)."""
    return 2 * copy_bytes * len(copy_s) / sum(copy_s), 2 * n**3 * len(matmul_s) / sum(matmul_s)


def _predict_with(P_factor: bool = True, kv: bool = True, s_factor: bool = True) -> Callable[..., Any]:
    """ex08 Q2 with P, the KV reads or s left out when its flag is False."""
    def predict(P: int, prefill_flops: int, N_params: int, kv_bytes_per_token: int, S: int, s: int,
                bandwidth: float, peak_flops: float) -> tuple[float, float]:
        step = N_params * (s if s_factor else 1) + (S * kv_bytes_per_token if kv else 0)
        return (P if P_factor else 1) * peak_flops / prefill_flops, bandwidth / step
    return predict


def _ratios_with(key: Callable[[dict], Any] | None = None, medians: bool = False) -> Callable[..., Any]:
    """ex08 Q3 with the rows sorted by `key`, or the median times instead of the best."""
    def ratios(rows: list[dict[str, Any]], bandwidth: float, peak_flops: float) -> torch.Tensor:
        out = []
        for r in sorted(rows, key=key) if key else rows:
            prefill, step = (r["prefill_median_s"], r["decode_step_median_s"]) if medians else (r["prefill_s"],
                                                                                               r["decode_step_s"])
            out.append([r["P"] / prefill / (r["P"] * peak_flops / r["prefill_flops"]),
                        1 / step / (bandwidth / r["decode_bytes"])])
        return torch.tensor(out, dtype=torch.float64)
    return ratios


def _floor_unweighted(decode_bytes: list[int], step_s: list[float]) -> tuple[float, float]:
    """ex08 Q4 fitted by unweighted least squares (no w = 1/step_s): differs on every input, the steps being
    noisy."""
    slope, t0 = np.polyfit(np.array(decode_bytes, dtype=np.float64), np.array(step_s, dtype=np.float64), 1)
    return float(t0), float(1 / slope)


def _first_in(order: Callable[[list[dict]], list[dict]]) -> Callable[..., Any]:
    """ex08 Q5 scanning the rows in `order` instead of smallest decode_bytes first."""
    def first(rows: list[dict[str, Any]], bandwidth: float, threshold: float) -> str | None:
        for r in order(rows):
            if 1 / r["decode_step_s"] / (bandwidth / r["decode_bytes"]) >= threshold:
                return r["name"]
        return None
    return first



# ---------------------------------------------------------------------------------------------
# ex09


def _grouped_with(tiled: bool = False, causal: bool = True) -> Callable[..., Any]:
    """ex09 Q1 with the K/V heads tiled (query head h reads K/V head h % H_kv), or without the causal mask."""
    def grouped(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        g = q.shape[1] // k.shape[1]
        k, v = (k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1)) if tiled else (k.repeat_interleave(g, dim=1),
                                                                            v.repeat_interleave(g, dim=1))
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return grouped


def _pool_strided(w: torch.Tensor, H_kv: int, d_h: int) -> torch.Tensor:
    """ex09 Q2 averaging old heads j, j + H_kv, … (strided) instead of the g consecutive heads j·g … j·g + g − 1."""
    return w.unflatten(0, (-1, H_kv, d_h)).mean(dim=0).flatten(0, 1)


def _pool_sum(w: torch.Tensor, H_kv: int, d_h: int) -> torch.Tensor:
    """ex09 Q2 summing the g old heads instead of averaging them: right when g = 1 only."""
    return w.unflatten(0, (H_kv, -1, d_h)).sum(dim=1).flatten(0, 1)


def _gain_same_weights(model: ModelPreset, S: int, B: int, s: int) -> float:
    """ex09 Q3 with the MHA twin's weights those of the GQA model: only the cache differs (right for MHA models)."""
    def step(heads: int) -> int:
        return model.N_params * s + B * S * 2 * model.L * heads * model.d_h * s
    return step(model.H) / step(model.H_kv)


def _batch_with(rebuilt: bool = True, reserve_on_free: bool = False, clamp: bool = True) -> Callable[..., Any]:
    """ex09 Q4 with the weights of the model as published (not rebuilt with H_kv heads), the 10 % reserve taken
    off the memory left after the weights, or no clamp at 0."""
    def max_batch(hardware: HardwarePreset, model: ModelPreset, H_kv: int, S: int) -> int:
        N = model.N_params + (2 * model.L * (model.d + model.biases) * model.d_h * (H_kv - model.H_kv) if rebuilt
                              else 0)
        M = hardware.memory_bytes
        free = math.floor((M - 2 * N) * 0.9) if reserve_on_free else math.floor(M * 0.9) - 2 * N
        B = free // (S * 2 * model.L * H_kv * model.d_h * 2)
        return max(0, B) if clamp else B
    return max_batch


WRONG: dict[str, list[tuple[str, Make]]] = {
    "ex06.q1": [("is_causal=True", lambda oracle: _chunk(sdpa=lambda T: True)),
                ("is_causal=T > 1", lambda oracle: _chunk(sdpa=lambda T: T > 1)),
                ("the mask aligned top-left", lambda oracle: _chunk(visible=lambda i, j, S, T, K: j <= i)),
                ("no mask at all", lambda oracle: _chunk(visible=lambda i, j, S, T, K: True)),
                ("a strict mask", lambda oracle: _chunk(visible=lambda i, j, S, T, K: j < S + i)),
                ("the new rows written at row 0", lambda oracle: _chunk(at=lambda S: 0)),
                ("only the first new row written", lambda oracle: _chunk(rows="first")),
                ("the scale 1/d_h instead of 1/√d_h", lambda oracle: _chunk(scale=lambda d_h: d_h)),
                ("the cache forgotten", lambda oracle: _chunk(keys="new", visible=lambda i, j, S, T, K: j <= i)),
                ("attending over the whole S_max", lambda oracle: _chunk(
                    keys="whole", visible=lambda i, j, S, T, K: j <= K - T + i)),
                ("the whole preallocated cache returned", lambda oracle: _chunk(returned="whole")),
                ("the new rows never written", lambda oracle: _chunk(rows="none")),
                ("a room check off by one", lambda oracle: _chunk(room=True))],
    "ex06.q3": [("position P − 1", lambda oracle: _decode_step(position=lambda P: P - 1)),
                ("or 0", lambda oracle: _decode_step(position=lambda P: 0)),
                ("the cache ignored", lambda oracle: _decode_step(keys="own")),
                ("its own key and value left out", lambda oracle: _decode_step(keys="cache")),
                ("tiled (repeat)", lambda oracle: _decode_step(tiled=True)),
                ("is_causal=True", lambda oracle: _decode_step(causal_sdpa=True)),
                ("the residual added to the normed input", lambda oracle: _decode_step(residual_from_normed=True)),
                ("the LayerNorm before the MLP left out", lambda oracle: _decode_step(ln2=False)),
                ("scaled by √d instead of √d_h", lambda oracle: _decode_step(scale_by_d=True)),
                ("the final LayerNorm left out", lambda oracle: _decode_step(final_norm=False)),
                ("the query's heads read across the width", lambda oracle: _decode_step(heads_across=True)),
                ("the qkv rows split as k, q, v", lambda oracle: _decode_step(kqv=True)),
                ("ReLU instead of GELU", lambda oracle: _decode_step(relu=True)),
                ("the tanh GELU (GPT-2's)", lambda oracle: _decode_step(tanh_gelu=True))],
    "ex06.q4": [("D = 1", lambda oracle: _generation(at_least=2)),
                ("the prefill without the causal mask", lambda oracle: _generation(causal=False)),
                ("the whole prefix recomputed at every step", lambda oracle: _generation(recompute=True)),
                ("the decode's new key and value not appended", lambda oracle: _generation(append=False)),
                ("the decode step at position P + i − 1", lambda oracle: _generation(shift=-1)),
                ("the prefill's first or second-to-last position", lambda oracle: _generation(first=0)),
                ("the prefill's first or second-to-last position", lambda oracle: _generation(first=-2)),
                ("an argmax over the flattened [B, V]", lambda oracle: _generation(mixed=True)),
                ("or B = 1 assumed", lambda oracle: _generation(one=True)),
                ("the prompt returned with the new tokens", lambda oracle: _generation(with_prompt=True))],
    "ex06.q5": [("one common start", lambda oracle: _packed(start_of=lambda b, lengths: lengths[0])),
                ("one row per sequence", lambda oracle: _packed(rows_of=lambda counts, N: [1] * len(counts))),
                ("split evenly", lambda oracle: _packed(rows_of=lambda counts, N: [N // len(counts)] * len(counts))),
                ("in their order among the scheduled sequences", lambda oracle: _packed(scheduled_slots=True)),
                ("one row late", lambda oracle: _packed(start_of=lambda b, lengths: lengths[b] + 1)),
                ("or early", lambda oracle: _packed(start_of=lambda b, lengths: max(lengths[b] - 1, 0))),
                ("a cache rebuilt from zeros", lambda oracle: _packed(from_zeros=True))],
    "ex07.q1": [("Eq. (7.2) whatever overlap", _overlap_ignored), ("the LM head left out", _no_lm_head),
                ("without the factor 2 for K and V", lambda oracle: _k_only_step)],
    "ex07.q2": [("floor instead of ceil", lambda oracle: _floor_critical), ("the LM head left out", _no_lm_head),
                ("the KV reads left out", lambda oracle: lambda model, hardware, S: oracle(model, hardware, 0)),
                ("no None", lambda oracle: _critical_no_none)],
    "ex07.q3": [("always (B_max, 'memory')", lambda oracle: _cap_memory_only),
                ("the reserve taken off the memory left after the weights", lambda oracle: _cap_with(
                    lambda M, W, b, S, r: max(0, math.floor((M - W) * (1 - r)) // (S * b)))),
                ("no clamp at 0", lambda oracle: _cap_with(
                    lambda M, W, b, S, r: (math.floor(M * (1 - r)) - W) // (S * b)))],
    "ex07.q4": [("H heads instead of H_kv", lambda oracle: _crossover_H)],
    "ex07.q5": [("Eq. (7.3) (overlap=False) instead of Eq. (7.2)", lambda oracle: _frontier_additive),
                ("LM head left out", _no_lm_head)],
    "ex08.q1": [("the first timing dropped", lambda oracle: _probes_warmup),
                ("their mean instead of the best", lambda oracle: _probes_mean)],
    "ex08.q2": [("P left out", lambda oracle: _predict_with(P_factor=False)),
                ("the KV reads left out", lambda oracle: _predict_with(kv=False)),
                ("s left out", lambda oracle: _predict_with(s_factor=False))],
    "ex08.q3": [("the rows sorted by decode_bytes", lambda oracle: _ratios_with(key=lambda r: r["decode_bytes"])),
                ("the medians instead of the best", lambda oracle: _ratios_with(medians=True))],
    "ex08.q4": [("unweighted least squares", lambda oracle: _floor_unweighted)],
    "ex08.q5": [("the first in the given order", lambda oracle: _first_in(list)),
                ("sorted largest first", lambda oracle: _first_in(
                    lambda rows: sorted(rows, key=lambda r: r["decode_bytes"], reverse=True)))],
    "ex09.q1": [("tiled (repeat)", lambda oracle: _grouped_with(tiled=True)),
                ("no causal mask", lambda oracle: _grouped_with(causal=False))],
    "ex09.q2": [("strided groups", lambda oracle: _pool_strided), ("their sum", lambda oracle: _pool_sum)],
    "ex09.q3": [("the MHA twin with the GQA model's weights", lambda oracle: _gain_same_weights)],
    "ex09.q4": [("the weights not rebuilt", lambda oracle: _batch_with(rebuilt=False)),
                ("reserve taken off the memory left after the weights", lambda oracle: _batch_with(
                    reserve_on_free=True)),
                ("no clamp at 0", lambda oracle: _batch_with(clamp=False))],
}


#: The right answers measured for the questions that check the method (`Question.method`): ex06 Q4's written
#: apart, in float64 (arithmetic in another order and precision must not flip a greedy token).
RIGHT = {"ex06.q4": _generation(dtype=torch.float64)}


@pytest.mark.parametrize(("qid", "index"), [(q, i) for q, v in sorted(WRONG.items()) for i in range(len(v))])
def test_a_named_wrong_answer_loses_under_every_seed(qid: str, index: int) -> None:
    name, make = WRONG[qid][index]
    assert not seeds_passed(qid, name, make, RIGHT.get(qid)), f"{qid}: the wrong answer ({name}) kept the question"
