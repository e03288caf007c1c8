"""A grade does not depend on the class seed, exercises 14 to 18: each question's plausible wrong answers, each
named by the edge (`Question.edges`) its case generator draws every time, lose the question under every one of
the harness's seeds (`tests/seed_harness.py`; the file of ex06 and ex11: `tests/test_seed_independence.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from seed_harness import Make, seeds_passed

from minigpt import costs
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.exercises import ex14_rounds, ex18_h2o
from minigpt.exercises.spec import build_case
from minigpt.measure.op_count import HOST_SYNC_OP, decode_step_ops, op_kind
from minigpt.runtime.model import MiniGPT

# ---------------------------------------------------------------------------------------------------------------
# ex14: speculative decoding


def _replacement(kind: str) -> Callable[..., Any]:
    """ex14 Q2 written with a plausible slip: "chapter" returns Chapter 17's residual whatever the rule,
    "unnormalised" p − q·accept as it is, "clipped" max(p − q·accept, 0) normalised where it should say None,
    "p" the target's own distribution, "rejected mass" p·(1 − accept) normalised."""
    def replacement_distribution(p: torch.Tensor, q: torch.Tensor, accept: torch.Tensor) -> Any:
        kept = q * accept
        if kind == "chapter":
            r = (p - q).clamp_min(0)
            return r / r.sum()
        if kind == "clipped":
            r = (p - kept).clamp_min(0)
            return r / r.sum()
        if bool((kept - p > 1e-9).any()):
            return None
        if kind == "unnormalised":
            return p - kept
        if kind == "p":
            return p
        r = p * (1 - accept)
        return r / r.sum()
    return replacement_distribution


def _rounds_best(tokens: Callable[[int, int], int], verify: bool = True, short: bool = False,
                 larger: bool = False) -> Callable[..., int]:
    """ex14 Q4 replayed with one plausible bug, in floats as a student writes it: a round of `n` accepted drafts
    emitting `tokens(n, γ)`, the verify pass left out of the cost, gamma_max never tried, or a tie broken towards
    the larger γ."""
    def best_gamma_from_rounds(accepted: list[int], gamma_max: int, cost_ratio: float, verify_ratio: float) -> int:
        gammas = range(1, gamma_max if short else gamma_max + 1)
        rates = [sum(tokens(n, g) for n in accepted) / (len(accepted) * (g * cost_ratio + verify_ratio * verify))
                 for g in gammas]
        hits = [g for g, rate in zip(gammas, rates, strict=True) if rate == max(rates)]
        return hits[-1] if larger else hits[0]
    return best_gamma_from_rounds


def _alpha_fitted(accepted: list[int], gamma_max: int, cost_ratio: float, verify_ratio: float) -> int:
    """ex14 Q4 through Eq. (17.3), with α fitted to the rounds as accepted drafts over proposed drafts."""
    alpha = min(1.0, max(1e-9, sum(accepted) / (len(accepted) * gamma_max)))
    return costs.speculative_best_gamma(alpha=alpha, cost_ratio=cost_ratio, verify_ratio=verify_ratio,
                                        gamma_max=gamma_max)


def _kept(n: int, g: int) -> int:
    return min(n, g) + 1


# ---------------------------------------------------------------------------------------------------------------
# ex15: the overhead floor


def _kernels_only(model: MiniGPT, S: int) -> int:
    """ex15 Q1 counting only the operators that launch device work (views left out; differs on every input)."""
    return sum(n for name, n in decode_step_ops(model, S=S).items() if op_kind(name) == "kernel")


def _classify(unsafe_view: str = "view", sync: str = "sync") -> Callable[[list[str]], list[str]]:
    def classify_ops(names: list[str]) -> list[str]:
        kinds = [op_kind(n) for n in names]
        return [unsafe_view if n == "aten._unsafe_view" else sync if n == HOST_SYNC_OP else k
                for n, k in zip(names, kinds, strict=True)]
    return classify_ops


def _bound(**override: Any) -> Callable[..., str]:
    """ex15 Q3 with one term of the traffic wrong: `B=1` (the cache of one sequence)."""
    def binding_term(model: ModelPreset, hardware: HardwarePreset, S: int, B: int, n_ops: int, t_op: float) -> str:
        given = dict(N_params=model.N_params, s=2, bandwidth=hardware.bandwidth, peak_flops=hardware.peak_flops,
                     S=S, B=B, n_ops=n_ops, t_op=t_op)
        return costs.evaluate(costs.overhead_bound, model, **{**given, **override})
    return binding_term


def _chunk_mask(S_max: int, input_pos: torch.Tensor) -> torch.Tensor:
    """ex15 Q4 with every query of the chunk seeing up to the chunk's last position (no causal mask within it)."""
    T = input_pos.shape[0]
    return (torch.arange(S_max) <= input_pos[-1]).view(1, 1, S_max).expand(1, T, S_max)


# ---------------------------------------------------------------------------------------------------------------
# ex16: prefill and decode apart


def _transfer(rule: str) -> Callable[..., tuple[float, float]]:
    """ex16 Q1 with one plausible slip in the layer-by-layer pipeline (the whole message right unless the
    slip is the heads): "ready" starts a message when its layer ends even if the link is busy, "chained" sends
    back to back from the prefill's start, "mean" takes every layer to last the mean, "latency once" pays one
    latency for all the layers, "H" counts every query head's K/V."""
    def transfer(model: ModelPreset, P: int, layer_s: list[float], link_bandwidth: float,
                 latency: float) -> tuple[float, float]:
        heads = model.H if rule == "H" else model.H_kv
        layer_bytes = 2 * heads * model.d_h * 2 * P
        send = (0.0 if rule == "latency once" else latency) + layer_bytes / link_bandwidth
        times = [sum(layer_s) / len(layer_s)] * len(layer_s) if rule == "mean" else layer_s
        ready = done = 0.0
        for t in times:
            ready += t
            done = (ready if rule == "ready" else done if rule == "chained" else max(ready, done)) + send
        if rule == "latency once":
            done += latency
        return done - ready, latency + model.L * layer_bytes / link_bandwidth
    return transfer


def _routing(slip: str) -> Callable[..., list[list[int]]]:
    """ex16 Q3 written as a student would, with one slip: "work_left" routes to the prefill worker that frees
    first, "cumulative" never takes a finished request off a worker's load, "decode_tokens" loads decode workers
    by their requests' prompt tokens, "highest" breaks ties towards the highest number, "no_wait" gives the
    prefill's own time as the time to first token, "at_arrival" still counts what ends at the arrival's time."""
    def route_requests(arrivals_ms: list[int], prompt_tokens: list[int], new_tokens: list[int],
                       prefill_workers: int, decode_workers: int, prefill_ms_per_token: int,
                       decode_step_ms: int) -> list[list[int]]:
        free_at, routed, out = [0] * prefill_workers, [], []
        for t, P, D in zip(arrivals_ms, prompt_tokens, new_tokens, strict=True):
            p_load, d_load = [0] * prefill_workers, [0] * decode_workers
            for p, end, n, d, last in routed:
                if end > t or slip == "cumulative" or (slip == "at_arrival" and end == t):
                    p_load[p] += n
                if last > t or slip == "cumulative" or (slip == "at_arrival" and last == t):
                    d_load[d] += n if slip == "decode_tokens" else 1
            if slip == "work_left":
                p_load = [max(0, f - t) for f in free_at]
            pick = (lambda load: max(range(len(load)), key=lambda k: (-load[k], k))) if slip == "highest" else \
                (lambda load: load.index(min(load)))
            p, d = pick(p_load), pick(d_load)
            start = max(t, free_at[p])
            end = start + P * prefill_ms_per_token
            free_at[p] = end
            routed.append((p, end, P, d, end + (D - 1) * decode_step_ms))
            out.append([p, d, end - (start if slip == "no_wait" else t)])
        return out
    return route_requests


def _split_goodput(kind: str) -> Callable[..., tuple[list[float], float]]:
    """ex16 Q2 written as a student would, with one slip: the routing slips of `_routing` above ("no_wait": the
    TTFT from the prefill's start; "work_left": the prefill worker that frees first; "at_arrival": a prefill
    ending at the arrival still counted), "tpot_over_d" (TPOT over D tokens), "one_token_miss" (a one-token request
    a miss), "one_token_dropped" (one-token requests left out of the share), "strict_ttft" and "strict_tpot" (<
    for <=), "strict_target" (above 90 % asked for), "no_stop" (the highest passing rate), "unsorted" (the runs
    in the given order), "whole" (the goodput not per chip)."""
    def split_goodput(runs: list[dict], prefill_workers: int, decode_workers: int, prefill_ms_per_token: int,
                      decode_step_ms: int, ttft_slo: int, tpot_slo: int) -> tuple[list[float], float]:
        route = _routing(kind if kind in ("no_wait", "work_left", "at_arrival") else "")

        def meets(x: float, slo: int, strict: str) -> bool:
            return x < slo if kind == strict else x <= slo

        ordered = list(runs) if kind == "unsorted" else sorted(runs, key=lambda r: r["rate"])
        att = []
        for run in ordered:
            rows = route(run["arrivals_ms"], run["prompt_tokens"], run["new_tokens"], prefill_workers,
                         decode_workers, prefill_ms_per_token, decode_step_ms)
            judged = [(row[2], D) for row, D in zip(rows, run["new_tokens"], strict=True)
                      if D > 1 or kind != "one_token_dropped"]
            ok = 0
            for ttft, D in judged:
                gaps = D if kind == "tpot_over_d" else D - 1
                tpot_met = meets((D - 1) * decode_step_ms / gaps, tpot_slo, "strict_tpot") if D > 1 \
                    else kind != "one_token_miss"
                ok += meets(ttft, ttft_slo, "strict_ttft") and tpot_met
            att.append(ok / len(judged) if judged else 1.0)
        best = 0.0
        for run, a in zip(ordered, att, strict=True):
            if a > 0.9 or (a == 0.9 and kind != "strict_target"):
                best = run["rate"]
            elif kind != "no_stop":
                break
        return att, best if kind == "whole" else best / (prefill_workers + decode_workers)
    return split_goodput


def _receive(order: str = "list", heads_first: bool = True, last: str = "rows") -> Callable[..., Any]:
    """ex16 Q4 with one plausible slip: the free blocks taken in id order (`order="sorted"`) or all of them
    (`"all"`); the payload's [H_kv, P] rows written block by block without moving the heads first
    (`heads_first=False`); the partly filled last block dropped (`last="floor"`) or written whole, its rows
    past P zeroed (`last="padded"`)."""
    def receive_kv(pools: torch.Tensor, free_blocks: list[int], kv: torch.Tensor) -> tuple[list[int], torch.Tensor]:
        b, P = pools.shape[4], kv.shape[3]
        _, L, H_kv, _, d_h = kv.shape
        n = P // b if last == "floor" else -(-P // b)
        free = sorted(free_blocks) if order == "sorted" else list(free_blocks)
        table = free if order == "all" else free[:n]
        out = pools.clone()
        padded = torch.zeros(2, L, H_kv, n * b, d_h)
        padded[:, :, :, : min(P, n * b)] = kv[:, :, :, : n * b]
        if heads_first:  # [2, L, H_kv, n, b, d_h] -> [2, L, n, H_kv, b, d_h]
            blocks = padded.view(2, L, H_kv, n, b, d_h).transpose(2, 3)
        else:  # the rows of the padded payload cut into blocks as they lie, heads and blocks mixed
            blocks = padded.reshape(2, L, n, H_kv, b, d_h)
        for j, block in enumerate(table[:n]):
            rows = b if last == "padded" or j < n - 1 else P - (n - 1) * b
            out[:, :, block, :, :rows] = blocks[:, :, j, :, :rows]
        return table, out
    return receive_kv


# ---------------------------------------------------------------------------------------------------------------
# ex17: tensor parallelism


def _strided_partials(x: torch.Tensor, w: torch.Tensor, W: int) -> torch.Tensor:
    """ex17 Q1 with rank r holding the columns r, r + W, r + 2W, ... instead of the r-th contiguous block."""
    return torch.stack([x[..., r::W] @ w[:, r::W].T for r in range(W)])


def _tiled_rows(H: int, H_kv: int, d_h: int, W: int, rank: int) -> list[int]:
    """ex17 Q2 with a replicated K/V head chosen tiled (rank % H_kv) instead of by group (rank·H_kv // W)."""
    kv = max(H_kv // W, 1)
    first = rank * kv if H_kv >= W else rank % H_kv
    q = list(range(rank * (H // W) * d_h, (rank + 1) * (H // W) * d_h))
    k = [H * d_h + i for i in range(first * d_h, (first + kv) * d_h)]
    return q + k + [i + H_kv * d_h for i in k]


def _placements(kind: str) -> Callable[..., list[list[Any]]]:
    """ex17 Q3 written with one slip, apart from `ex17_placements`: "eager" all-reduces right after every
    row-parallel layer (RowwiseParallel's default output); "no_gather" passes a split on to a column layer or a
    norm; "local_partial" feeds partial sums to a value-wise layer; "gather_slice" and "scatter_slice" count one
    rank's block as the payload; "reduce_for_gather" sums a split; "one_rank" sends with one rank; "end_as_is"
    leaves the output as the last layer left it."""
    def collectives_of_forward(layers: list[list[Any]], B: int, T: int, s: int, W: int) -> list[list[Any]]:
        if W == 1 and kind != "one_rank":
            return []
        out: list[list[Any]] = []
        have, width = "whole", 0
        ends = [] if kind == "end_as_is" else [["output", 0]]
        for layer, new_width in [*layers, *ends]:
            n = B * T * width * s
            need = {"column": "whole", "norm": "whole", "output": "whole", "row": "split"}.get(layer)
            if layer == "local" and have == "partial" and kind != "local_partial":
                need = "whole"
            if need == "whole" and have == "partial":
                out.append(["all_reduce", n])
            elif need == "whole" and have == "split" and (kind != "no_gather" or layer == "output"):
                out.append(["all_reduce" if kind == "reduce_for_gather" else "all_gather",
                            n // W if kind == "gather_slice" else n])
            elif need == "split" and have == "partial":
                out.append(["reduce_scatter", n // W if kind == "scatter_slice" else n])
            have = {"column": "split", "row": "partial", "norm": "whole"}.get(layer, need or have)
            width = new_width
            if kind == "eager" and have == "partial":
                out.append(["all_reduce", B * T * width * s])
                have = "whole"
        return out
    return collectives_of_forward


def _rank_bytes(kind: str) -> Callable[..., int]:
    """ex17 Q4 written with one slip, apart from `ex17_shards`: "over_W" the whole model over W; "no_replicas"
    the fused QKV split W ways, K/V heads too (a fraction of a head when H_kv < W); "row_bias_split" the biases of out
    and down split; "replicated_split" the LayerNorms and the position table split; "embedding_whole" every
    row of the embedding on every rank."""
    def rank_bytes(shapes: dict[str, list[int]], H: int, H_kv: int, W: int, s: int) -> int:
        if kind == "over_W":
            return sum(math.prod(shape) for shape in shapes.values()) * s // W
        d_h = shapes["tok_emb.weight"][1] // H
        kv_rows = max(1, H_kv // W) * d_h
        split = ["attn.out.weight", "mlp.up.weight", "mlp.up.bias", "mlp.down.weight"]
        split += ["attn.out.bias", "mlp.down.bias"] if kind == "row_bias_split" else []
        split += ["ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias", "pos_emb.weight", "ln_f.weight",
                  "ln_f.bias"] if kind == "replicated_split" else []
        split += [] if kind == "embedding_whole" else ["tok_emb.weight"]
        total = 0
        for name, shape in shapes.items():
            part = name.split(".", 2)[2] if name.startswith("blocks.") else name
            n = math.prod(shape)
            if part.startswith("attn.qkv.") and kind == "no_replicas":
                n //= W
            elif part.startswith("attn.qkv."):
                n = n // shape[0] * (H // W * d_h + 2 * kv_rows)
            elif part in split:
                n //= W
            total += n
        return total * s
    return rank_bytes


# ---------------------------------------------------------------------------------------------------------------
# ex18: the cache's memory, 2026


def _turn(v: torch.Tensor, positions: torch.Tensor, theta: float, halves: bool = False) -> torch.Tensor:
    """RoPE written apart from `ex18_latent.rotate`, as DeepSeek's own code writes it: pairs of entries as complex
    numbers times e^(i·p·θ_k), θ_k = theta^(−2k/d_rope); the pairs (2k, 2k + 1), or (`halves`) GPT-NeoX's (k,
    k + d_rope/2)."""
    d_rope = v.shape[-1]
    freqs = torch.tensor([theta ** (-2 * k / d_rope) for k in range(d_rope // 2)], dtype=torch.float64)
    turn = torch.polar(torch.ones_like(freqs), positions.double()[:, None] * freqs)  # [n, d_rope / 2]
    if halves:
        z = torch.complex(v[..., : d_rope // 2].double(), v[..., d_rope // 2:].double()) * turn
        return torch.cat([z.real, z.imag], dim=-1).to(v.dtype)
    z = torch.view_as_complex(v.double().reshape(*v.shape[:-1], d_rope // 2, 2).contiguous()) * turn
    return torch.view_as_real(z).flatten(-2).to(v.dtype)


def _latent_step(position: Callable[[int], int | None] = lambda S: S - 1, halves: bool = False, again: bool = False,
                 width: str = "d_h + d_rope", rope: str = "in the softmax") -> Callable[..., Any]:
    """ex18 Q1 absorbed, written apart, with one plausible slip: the query's RoPE part rotated at `position(S)`
    (0, S, −(S − 1)), or not rotated at all (None), instead of S − 1; the pairs read as halves; the cached RoPE
    keys rotated again; the scores divided by √d_h or √d_c (`width`); the RoPE scores left out or added to the
    softmax's weights (`rope`: "ignored", "after"). With no slip it is the right answer, measured: no [S, H, d_h]
    tensor."""
    def absorbed_decode(x: torch.Tensor, c: torch.Tensor, k_rope: torch.Tensor, w_q: torch.Tensor,
                        w_qr: torch.Tensor, w_uk: torch.Tensor, w_uv: torch.Tensor, w_o: torch.Tensor,
                        theta: float) -> torch.Tensor:
        H, d_h, d_c = w_uk.shape
        S, d_rope = k_rope.shape
        q_lat = torch.einsum("hd,hdc->hc", (w_q @ x).view(H, d_h), w_uk)  # [H, d_c]
        q_rope, p = (w_qr @ x).view(H, d_rope), position(S)
        q_rope = q_rope if p is None else _turn(q_rope, torch.full((H,), p), theta, halves)
        keys = _turn(k_rope, torch.arange(S), theta) if again else k_rope
        scale = math.sqrt({"d_h": d_h, "d_c": d_c, "d_h + d_rope": d_h + d_rope}[width])
        latent, rotary = q_lat @ c.T / scale, q_rope @ keys.T / scale  # [H, S] each
        if rope == "ignored":
            weights = torch.softmax(latent, dim=-1)
        elif rope == "after":
            weights = torch.softmax(latent, dim=-1) + rotary
        else:
            weights = torch.softmax(latent + rotary, dim=-1)
        heads = torch.einsum("hc,hdc->hd", weights @ c, w_uv)  # [H, d_h]
        return w_o @ heads.reshape(-1)
    return absorbed_decode


def _decompressed(x: torch.Tensor, c: torch.Tensor, k_rope: torch.Tensor, w_q: torch.Tensor, w_qr: torch.Tensor,
                  w_uk: torch.Tensor, w_uv: torch.Tensor, w_o: torch.Tensor, theta: float) -> torch.Tensor:
    """ex18 Q1 by the naive path written by hand: keys [W_UK·c ; k^R] and values W_UV·c rebuilt per head
    ([S, H, d_h + d_rope] and [S, H, d_h]), then multi-head attention; its values are right, its method is the
    one the question rules out."""
    H, d_h, d_c = w_uk.shape
    S, d_rope = k_rope.shape
    k = torch.cat([torch.einsum("sc,hdc->shd", c, w_uk), k_rope[:, None].expand(S, H, d_rope)], dim=-1)
    v = torch.einsum("sc,hdc->shd", c, w_uv)
    q = torch.cat([(w_q @ x).view(H, d_h), _turn((w_qr @ x).view(H, d_rope), torch.full((H,), S - 1), theta)], -1)
    weights = torch.softmax(torch.einsum("hd,shd->hs", q, k) / math.sqrt(d_h + d_rope), dim=-1)
    return w_o @ torch.einsum("hs,shd->hd", weights, v).reshape(-1)


def _snapkv(kind: str) -> Callable[..., list[int]]:
    """ex18 Q2 with one of SnapKV's plausible wrong neighbours, written apart from `ex18_snapkv._select`:
    "lowest" (the lowest pooled votes kept), "last" (the last query votes alone), "raw" (no pooling), "spill"
    (the window's votes pooled onto the keys before it), "mean" (an average pool, padded with zeros as
    avg_pool1d pads), "compete" (the window ranked with the rest), "acausal" (a query sees every key),
    "d_h" (scores divided by d_h)."""
    def snapkv_keep(q: torch.Tensor, k: torch.Tensor, window: int, kernel: int, budget: int) -> list[int]:
        T, d_h = k.shape
        if T <= budget:
            return list(range(T))
        w, half = min(window, T), kernel // 2
        votes = [0.0] * T
        for i in ([T - 1] if kind == "last" else range(T - w, T)):
            seen = T if kind == "acausal" else i + 1
            logits = [float(q[i].double() @ k[j].double()) / (d_h if kind == "d_h" else math.sqrt(d_h))
                      for j in range(seen)]
            top = max(logits)
            e = [math.exp(x - top) for x in logits]
            for j in range(seen):
                votes[j] += e[j] / sum(e)
        end = T if kind == "spill" else T - w
        pooled = list(votes)
        for j in range(end):
            near = votes[max(0, j - half): min(end, j + half + 1)]
            if kind == "mean":
                pooled[j] = sum(near) / kernel
            elif kind != "raw":
                pooled[j] = max(near)
        if kind == "compete":
            return sorted(sorted(range(T), key=lambda j: pooled[j], reverse=True)[:budget])
        ranked = sorted(range(T - w), key=lambda j: pooled[j], reverse=kind != "lowest")
        return sorted(ranked[: budget - w]) + list(range(T - w, T))

    return snapkv_keep


def _h2o_reads(kind: str) -> Callable[..., list[list[int]]]:
    """ex18 Q3 with one of H2O's plausible wrong neighbours: "evict first" (down to the budget before the step
    attends), "last" (a key's score is the last weight it got, not the sum), "no recent" (the budget highest
    scores, no recent window), "own" (a new key's own weight not added to its score)."""
    def reads(q: torch.Tensor, k: torch.Tensor, budget: int, recent: int) -> list[list[int]]:
        held: list[int] = []
        score: dict[int, float] = {}
        out = []

        def evict() -> None:
            nonlocal held
            if len(held) > budget:
                keep = 0 if kind == "no recent" else recent
                old, new = held[: len(held) - keep], held[len(held) - keep:]
                held = sorted(sorted(old, key=lambda p: -score[p])[: budget - keep]) + new

        for t in range(q.shape[0]):
            held.append(t)
            score[t] = 0.0
            if kind == "evict first":
                evict()
            w = torch.softmax(torch.stack([k[p] for p in held]) @ q[t] / q.shape[1] ** 0.5, dim=0).tolist()
            out.append(list(held))
            for p, x in zip(held, w, strict=True):
                if not (kind == "own" and p == t):
                    score[p] = x if kind == "last" else score[p] + x
            evict()
        return out
    return reads


def _window_keys(kind: str) -> Callable[..., list[list[int]]]:
    """ex18 Q4 with one of the window cache's plausible wrong neighbours, written apart from
    `ex18_window._replay` (the ring as a dict from slot to position): "write first" (the chunk written into the
    ring before its attention, as a decode step is), "sinks hidden" (no sink rule in the mask), "too wide"
    (keys from t - window), "no chunk window" (the chunk's own tokens masked causally only), "no causal" (a
    query sees the chunk's later tokens), "sinks dropped" (a forward stores its last window tokens only),
    "unshifted" (ring slot sinks + p % window), "empty read" (all sinks + window slots read, empty ones
    included), "position order" (the held slots sorted by position)."""
    def window_chunk_keys(fed: list[int], T: int, window: int, sinks: int) -> list[list[int]]:
        ring: dict[int, int] = {}

        def slot(p: int) -> int:
            return p if p < sinks else sinks + (p if kind == "unshifted" else p - sinks) % window

        S = 0
        for n in fed:
            kept = set(range(max(S, S + n - window), S + n))
            if kind != "sinks dropped":
                kept |= set(range(S, min(S + n, sinks)))
            for p in sorted(kept):
                ring[slot(p)] = p
            S += n
        chunk = list(range(S, S + T))
        if kind == "write first":
            for p in chunk:
                ring[slot(p)] = p
            chunk = []
        if kind == "empty read":
            held: list[int | None] = [ring.get(j) for j in range(sinks + window)]
        else:
            held = sorted(ring.values()) if kind == "position order" else [ring[j] for j in sorted(ring)]
        keys = held + chunk
        rows = []
        for t in range(S, S + T):
            low = t - window if kind == "too wide" else t - window + 1
            rows.append([j for j, p in enumerate(keys) if p is not None and (p <= t or kind == "no causal")
                         and ((p < sinks and kind != "sinks hidden") or p >= low
                              or (kind == "no chunk window" and p >= S))])
        return rows
    return window_chunk_keys


def _fn(f: Callable[..., Any]) -> Make:
    return lambda oracle: f


WRONG: dict[str, list[tuple[str, Make]]] = {
    "ex14.q2": [("max(p − q, 0) whatever the rule", _fn(_replacement("chapter"))),
                ("p − q·accept unnormalised", _fn(_replacement("unnormalised"))),
                ("not a distribution clipped at 0", _fn(_replacement("clipped"))),
                ("not p nor", _fn(_replacement("p"))),
                ("not p nor", _fn(_replacement("rejected mass")))],
    "ex14.q4": [("a rate fitted to them", _fn(_alpha_fitted)),
                ("its bonus token left out", _fn(_rounds_best(lambda n, g: n + 1 if n < g else g))),
                ("the kept drafts alone counted", _fn(_rounds_best(lambda n, g: min(n, g)))),
                ("a round's cost without it", _fn(_rounds_best(_kept, verify=False))),
                ("gamma_max never tried", _fn(_rounds_best(_kept, short=True))),
                ("the larger one", _fn(_rounds_best(_kept, larger=True)))],
    "ex15.q1": [("views not counted", _fn(_kernels_only))],
    "ex15.q2": [("_unsafe_view taken for a kernel", _fn(_classify(unsafe_view="kernel"))),
                ("host sync taken for a kernel", _fn(_classify(sync="kernel")))],
    "ex15.q3": [("the cache of one sequence", _fn(_bound(B=1)))],
    "ex15.q4": [("up to the chunk's last position", _fn(_chunk_mask))],
    "ex16.q1": [("while the link still sends", _fn(_transfer("ready"))),
                ("back to back from the prefill's start", _fn(_transfer("chained"))),
                ("the mean", _fn(_transfer("mean"))), ("latency paid once", _fn(_transfer("latency once"))),
                ("H instead of H_kv", _fn(_transfer("H")))],
    "ex16.q2": [("its TTFT from the prefill's start", _fn(_split_goodput("no_wait"))),
                ("the one that frees first", _fn(_split_goodput("work_left"))),
                ("still counted in its worker's load", _fn(_split_goodput("at_arrival"))),
                ("TPOT over D tokens", _fn(_split_goodput("tpot_over_d"))),
                ("counted as a miss (it has no TPOT)", _fn(_split_goodput("one_token_miss"))),
                ("left out of its run's share", _fn(_split_goodput("one_token_dropped"))),
                ("a TTFT exactly at its objective", _fn(_split_goodput("strict_ttft"))),
                ("a decode step exactly at the TPOT objective", _fn(_split_goodput("strict_tpot"))),
                ("a run at exactly 90 %", _fn(_split_goodput("strict_target"))),
                ("the highest passing rate", _fn(_split_goodput("no_stop"))),
                ("in the given order", _fn(_split_goodput("unsorted"))),
                ("not divided by the prefill and decode workers", _fn(_split_goodput("whole")))],
    "ex16.q3": [("not the work left", _fn(_routing("work_left"))),
                ("not every token ever routed there", _fn(_routing("cumulative"))),
                ("not by those requests' prompt tokens", _fn(_routing("decode_tokens"))),
                ("not the highest", _fn(_routing("highest"))),
                ("the wait counted", _fn(_routing("no_wait"))),
                ("not still counted", _fn(_routing("at_arrival")))],
    "ex16.q4": [("in id order", _fn(_receive(order="sorted"))), ("every free block taken", _fn(_receive(order="all"))),
                ("without moving the heads", _fn(_receive(heads_first=False))),
                ("the last block dropped", _fn(_receive(last="floor"))),
                ("written whole", _fn(_receive(last="padded")))],
    "ex17.q1": [("strided columns", _fn(_strided_partials))],
    "ex17.q2": [("tiled replicas", _fn(_tiled_rows))],
    "ex17.q3": [("an all-reduce right after every row-parallel layer", _fn(_placements("eager"))),
                ("not passed on split", _fn(_placements("no_gather"))),
                ("the partial sums made whole first", _fn(_placements("local_partial"))),
                ("not one rank's block", _fn(_placements("gather_slice"))),
                ("an all-gather, not an all-reduce", _fn(_placements("reduce_for_gather"))),
                ("one rank: nothing sent", _fn(_placements("one_rank"))),
                ("made whole at the end", _fn(_placements("end_as_is"))),
                ("the whole tensor summed", _fn(_placements("scatter_slice")))],
    "ex17.q4": [("the tensors a rank holds whole counted whole", _fn(_rank_bytes("over_W"))),
                ("a whole K/V head copied", _fn(_rank_bytes("no_replicas"))),
                ("the row-parallel layers' biases", _fn(_rank_bytes("row_bias_split"))),
                ("the LayerNorms and the position table", _fn(_rank_bytes("replicated_split"))),
                ("V/W rows on a rank, not all V", _fn(_rank_bytes("embedding_whole")))],
    "ex18.q1": [("not rotated", _fn(_latent_step(position=lambda S: None))),
                ("or rotated at position 0", _fn(_latent_step(position=lambda S: 0))),
                ("rotated at position S", _fn(_latent_step(position=lambda S: S))),
                ("GPT-NeoX's halves", _fn(_latent_step(halves=True))),
                ("rotated backwards", _fn(_latent_step(position=lambda S: 1 - S))),
                ("rotated again", _fn(_latent_step(again=True))),
                ("1/√d_h (the latent part's head width)", _fn(_latent_step(width="d_h"))),
                ("1/√d_c", _fn(_latent_step(width="d_c"))),
                ("the RoPE key ignored", _fn(_latent_step(rope="ignored"))),
                ("added after the softmax", _fn(_latent_step(rope="after"))),
                ("the naive path", lambda oracle: oracle), ("the naive path", _fn(_decompressed))],
    "ex18.q2": [("ranked lowest first", _fn(_snapkv("lowest"))), ("the last query's votes", _fn(_snapkv("last"))),
                ("no pooling", _fn(_snapkv("raw"))), ("spilling onto the keys", _fn(_snapkv("spill"))),
                ("an average pool", _fn(_snapkv("mean"))), ("the window competing", _fn(_snapkv("compete"))),
                ("no causal mask", _fn(_snapkv("acausal"))), ("divided by d_h", _fn(_snapkv("d_h")))],
    "ex18.q3": [("evicting before attending", _fn(_h2o_reads("evict first"))),
                ("the last step's weights", _fn(_h2o_reads("last"))),
                ("keeping the budget highest scores", _fn(_h2o_reads("no recent"))),
                ("starting from 0", _fn(_h2o_reads("own")))],
    "ex18.q4": [("written before its attention", _fn(_window_keys("write first"))),
                ("the sinks seen only inside the window", _fn(_window_keys("sinks hidden"))),
                ("the window one too wide", _fn(_window_keys("too wide"))),
                ("no window mask among the chunk's own tokens", _fn(_window_keys("no chunk window"))),
                ("no causal mask", _fn(_window_keys("no causal"))),
                ("its sinks dropped", _fn(_window_keys("sinks dropped"))),
                ("the ring not offset by the sinks", _fn(_window_keys("unshifted"))),
                ("its empty slots read as keys too", _fn(_window_keys("empty read"))),
                ("the held slots taken in position order", _fn(_window_keys("position order")))],
}


#: The right answers measured for the questions that check the method (`Question.method`).
RIGHT = {"ex18.q1": _latent_step()}


@pytest.mark.parametrize(("qid", "index"), [(q, i) for q, v in sorted(WRONG.items()) for i in range(len(v))])
def test_a_named_wrong_answer_loses_under_every_seed(qid: str, index: int) -> None:
    name, make = WRONG[qid][index]
    assert not seeds_passed(qid, name, make, RIGHT.get(qid)), f"{qid}: the wrong answer ({name}) kept the question"


def test_ex18_q3_generators_neighbours_are_the_named_wrong_answers() -> None:
    """ex18 Q3's case generator picks each edge case with its own replay of a wrong neighbour
    (`ex18_h2o._replay(wrong=...)`); each must read what the wrong answer named above reads, written apart
    from it, or the edge would separate another rule (a neighbour that still keeps one recent key, say)."""
    import random

    from minigpt.exercises import EXERCISES

    kinds = dict(zip(ex18_h2o._NEIGHBOURS, ("evict first", "last", "no recent", "own"), strict=True))
    for seed in range(3):
        for case in EXERCISES["ex18"].question("q3").cases(random.Random(seed)):
            args = build_case(case)
            for neighbour, kind in kinds.items():
                assert ex18_h2o._replay(**args, wrong=neighbour)[0] == _h2o_reads(kind)(**args), (seed, kind)


def test_ex18_q2_generators_neighbours_are_the_named_wrong_answers() -> None:
    """ex18 Q2's case generator draws each edge until its own replay of a wrong neighbour
    (`ex18_snapkv._select(wrong=...)`) keeps other keys; each must keep what the wrong answer named above keeps,
    written apart from it, or the edge would separate another rule (a pool that also spans the window's first
    key, say)."""
    import random

    from minigpt.exercises import EXERCISES, ex18_snapkv

    kinds = dict(zip(ex18_snapkv._NEIGHBOURS, ("lowest", "last", "raw", "spill", "mean", "compete", "acausal",
                                                "d_h"), strict=True))
    for seed in range(3):
        for case in EXERCISES["ex18"].question("q2").cases(random.Random(seed)):
            args = build_case(case)
            for neighbour, kind in kinds.items():
                assert ex18_snapkv._select(**args, wrong=neighbour)[0] == _snapkv(kind)(**args), (seed, kind)


def test_ex18_q4_generators_neighbours_are_the_named_wrong_answers() -> None:
    """ex18 Q4's case generator draws each edge until its own replay of a wrong neighbour
    (`ex18_window._replay(wrong=...)`) reads other keys; each must read what the wrong answer named above reads,
    written apart from it, or the edge would separate another rule (a window one too narrow, say)."""
    import random

    from minigpt.exercises import EXERCISES, ex18_window

    for seed in range(40):
        for case in EXERCISES["ex18"].question("q4").cases(random.Random(seed)):
            for kind in ex18_window._NEIGHBOURS:
                assert ex18_window._replay(**case, wrong=kind)[0] == _window_keys(kind)(**case), (seed, kind)


def test_ex17_q3_generators_neighbours_are_the_named_wrong_answers() -> None:
    """ex17 Q3's case generator draws each edge until the module's own slip (`ex17_placements.collectives(kind=
    ...)`) changes the answer; each must answer what the wrong answer named above answers, written apart from it,
    or the edge would separate another rule (a gather counted short elsewhere, a norm fed a split)."""
    import random

    from minigpt.exercises import EXERCISES, ex17_placements

    for seed in range(20):
        for case in EXERCISES["ex17"].question("q3").cases(random.Random(seed)):
            for kind in ex17_placements.WRONG_KINDS:
                assert ex17_placements.collectives(**case, kind=kind) == _placements(kind)(**case), (seed, kind)


def test_ex17_q4_generators_neighbours_are_the_named_wrong_answers() -> None:
    """ex17 Q4's case generator draws each edge until the module's own slip (`ex17_shards.rank_bytes(kind=...)`)
    changes the count; each must count what the wrong answer named above counts, written apart from it."""
    import random

    from minigpt.exercises import EXERCISES, ex17_shards

    for seed in range(10):
        for case in EXERCISES["ex17"].question("q4").cases(random.Random(seed)):
            for kind in ex17_shards.WRONG_KINDS:
                assert ex17_shards.rank_bytes(**case, kind=kind) == _rank_bytes(kind)(**case), (seed, kind)


def test_ex14_q4_generators_neighbours_are_the_named_wrong_answers() -> None:
    """ex14 Q4's case generator draws each edge until the module's own version of a wrong answer
    (`ex14_rounds.best_from_rounds(kind=...)`) differs from the replay; each must answer what the wrong answer
    named above answers, written apart from it (in floats, as a student writes it), or the edge would separate
    another rule (an α fitted another way, a bonus dropped elsewhere)."""
    import random

    from minigpt.exercises import EXERCISES

    named = dict(zip(ex14_rounds.WRONG_KINDS, (make(None) for _, make in WRONG["ex14.q4"]), strict=True))
    for seed in range(20):
        for case in EXERCISES["ex14"].question("q4").cases(random.Random(seed)):
            for kind, wrong in named.items():
                assert ex14_rounds.best_from_rounds(**case, kind=kind) == wrong(**case), (seed, kind, case)


def test_ex16_q2_generators_neighbours_are_the_named_wrong_answers() -> None:
    """ex16 Q2's generator draws each edge until its own replay of a wrong neighbour
    (`ex16_goodput._replay(wrong=...)`) answers otherwise; each must answer what the wrong answer named above
    answers, written apart from it, or the edge would separate another rule (a tie broken the other way, say)."""
    import random

    from minigpt.exercises import EXERCISES, ex16_goodput

    for seed in range(40):
        for case in EXERCISES["ex16"].question("q2").cases(random.Random(seed)):
            for kind in ex16_goodput._NEIGHBOURS:
                assert ex16_goodput._replay(**case, wrong=kind) == _split_goodput(kind)(**case), (seed, kind)


def test_ex16_q3_generators_neighbours_are_the_named_wrong_answers() -> None:
    """ex16 Q3's generator draws each edge until the module's own slip (`ex16_routing.route(kind=...)`) changes
    the answer; each slip must answer what the wrong answer named above answers, written apart from it, or the
    edge would separate another rule (a load counted another way, a tie broken elsewhere)."""
    import random

    from minigpt.exercises import EXERCISES, ex16_routing

    named = dict(zip(ex16_routing.WRONG_KINDS, (make(None) for _, make in WRONG["ex16.q3"]), strict=True))
    for seed in range(40):
        for case in EXERCISES["ex16"].question("q3").cases(random.Random(seed)):
            for kind, wrong in named.items():
                assert ex16_routing.route(**case, kind=kind) == wrong(**case), (seed, kind, case)


def test_ex16_q3_route_refuses_a_slip_it_does_not_know() -> None:
    """A misspelt slip (`kind="cumulativ"`) must not run the driver's own rule under a wrong answer's name: the
    generator would then draw an edge for a slip that separates nothing."""
    import random

    from minigpt.exercises import EXERCISES, ex16_routing

    case = EXERCISES["ex16"].question("q3").cases(random.Random(0))[0]
    with pytest.raises(ValueError, match=r"kind must be None or one of .*'work_left'.*got 'cumulativ'"):
        ex16_routing.route(**case, kind="cumulativ")


def test_ex16_q3_generator_gives_up_after_its_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no trace tells a slip from the driver's rule (a slip made the same as the rule), ex16 Q3's generator
    raises after `DRAWS` traces instead of drawing forever: a grading child would hang until its time-out, and a
    student would see a time-out, not a question. Guards a draw loop without its bound or its error."""
    import random

    from minigpt.exercises import ex16_routing

    rule = ex16_routing.route
    monkeypatch.setattr(ex16_routing, "route", lambda *args, kind=None, **kwargs: rule(*args, **kwargs))
    monkeypatch.setattr(ex16_routing, "DRAWS", 5)
    with pytest.raises(RuntimeError, match="no trace in 5 draws tells the slip 'work_left'"):
        ex16_routing.routing_cases(random.Random(0))
