"""Exercise 6 (Chapter 6, implement the KV cache): write, attend, decode from the cache and the weights
(`ex06_decode`), generate greedily from the weights with a cache (`ex06_generate`), and write one engine step's
packed rows into a cache with a length per sequence."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from minigpt.config import ModelConfig
from minigpt.exercises.ex06_decode import DECODE_EDGES, TOL, _decode_cases, _decode_from_cache
from minigpt.exercises.ex06_generate import GENERATE_EDGES, _generate_cases, _generate_from_weights, _recomputed
from minigpt.exercises.spec import N_, Exercise, Question, int_list, pair, randn, tensor
from minigpt.runtime.kv_cache import KVCache
from minigpt.runtime.slot_cache import SlotKVCache

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


PACKED_EDGES = ("lengths differ and counts differ (a prompt chunk of 2 or more rows beside one-row decodes): one "
                "common start for every sequence, one row per sequence, or the packed rows split evenly instead of "
                "by counts",
                "a count of 0 between two scheduled sequences: the rows written to the slots in their order among "
                "the scheduled sequences",
                "lengths[b] + counts[b] = S_max: a write one row late (or early) that fills a slot to its last row",
                "rows past a sequence's new length hold an earlier request's values (every case): a cache rebuilt "
                "from zeros")


def _packed_cases(rng: random.Random) -> list[dict]:
    """The edges first (`PACKED_EDGES`: distinct lengths beside a chunk of 2+ rows, a count of 0 in the middle, a
    slot filled to S_max), then random steps; every slot keeps stale rows past its new length."""
    cases = []
    for i in range(6):
        B = 3 if i < 3 else rng.randint(1, 4)
        H_kv, d_h, S_max = rng.choice([1, 2]), rng.choice([4, 8]), rng.randint(10, 16)
        if i == 0:
            counts = [1, rng.randint(2, 4), 1]
        elif i == 1:
            counts = [rng.randint(1, 3), 0, rng.randint(1, 3)]
        else:
            counts = [rng.randint(0, 4) for _ in range(B)]
            if not any(counts):
                counts[rng.randrange(B)] = 1
        lengths = [rng.randint(0, S_max - c - 1) for c in counts]  # at least one stale row per slot
        if i == 0:
            lengths = rng.sample(range(S_max - 5), 3)  # three different lengths, each with room for 4 rows + 1
        if i == 2:
            b = rng.randrange(B)
            counts[b] = max(counts[b], 1)
            lengths[b] = S_max - counts[b]
        N = sum(counts)
        cases.append(dict(k_cache=randn([B, H_kv, S_max, d_h], rng), v_cache=randn([B, H_kv, S_max, d_h], rng),
                          k_new=randn([N, H_kv, d_h], rng), v_new=randn([N, H_kv, d_h], rng),
                          lengths=lengths, counts=counts))
    return cases


def _packed_write(k_cache: torch.Tensor, v_cache: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
                  lengths: list[int], counts: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The package's slot pool (`SlotKVCache`: one slot of S_max rows per sequence) writing a flat step by its
    slot mapping (`reshape_and_cache`, vLLM's names)."""
    B, H_kv, S_max, d_h = k_cache.shape
    pool = SlotKVCache(ModelConfig(L=1, H=H_kv, H_kv=H_kv, d_h=d_h, S_max=S_max), slots=B, dtype=k_cache.dtype)
    pool.k[0], pool.v[0] = k_cache, v_cache
    seqs = [pool.add_sequence() for _ in range(B)]  # sequence b in slot b
    for seq, S in zip(seqs, lengths, strict=True):
        pool.advance([seq], S)
    mapping = [slot for seq, S, T in zip(seqs, lengths, counts, strict=True) for slot in pool.slot_mapping(seq, S, T)]
    pool.reshape_and_cache(0, torch.tensor(mapping, dtype=torch.long), k_new, v_new)
    return pool.k[0], pool.v[0]


EXERCISE = Exercise(
    id="ex06",
    notebook="ex06_implement_kv_cache.ipynb",
    title="Implement the KV cache",
    questions=(
        Question(
            "q1", "cache_write", "cache_write(k_cache, v_cache, k_new, v_new, S) -> (k_valid, v_valid)", _write_cases,
            _write, pair(tensor(0, 0), tensor(0, 0), ("k_valid", "v_valid")),
            N_("write k_new, v_new ([B, H_kv, T, d_h]) into rows S..S+T−1 of the preallocated [B, H_kv, S_max, d_h] "
               "tensors, in place, and return their valid rows 0..S+T−1."),
            edges=WRITE_EDGES,
        ),
        Question(
            "q2", "attend", "attend(q, k, v) -> tensor [B, H, d_h]", _attend_cases, _attend, tensor(1e-5, 1e-4),
            N_("one query per head, q [B, H, d_h], over S cached keys and values [B, H_kv, S, d_h]: "
               "softmax(q·kᵀ / √d_h)·v. With GQA, query heads h·g … h·g+g−1 (g = H / H_kv) share KV head h: "
               "consecutive query heads, not every H_kv-th one."),
            edges=ATTEND_EDGES,
        ),
        Question(
            "q3", "decode_from_cache", "decode_from_cache(params, config, k_cache, v_cache, token) -> tensor [B, V]",
            _decode_cases, _decode_from_cache, tensor(TOL, TOL),
            N_("the new token's embedding plus the position embedding of row P (the P cached tokens hold rows "
               "0 to P − 1); in each layer, its one query attends over that layer's P cached rows and its own new "
               "key and value, appended after them, with no mask (a decode step's query sees every key) and the KV "
               "heads shared as in Question 2; each residual adds to the block's input, not to its normed input; "
               "the MLP's GELU is the exact one, not GPT-2's tanh approximation; after the last block, the final "
               "LayerNorm and the head, the token embedding matrix."),
            edges=DECODE_EDGES,
        ),
        Question(
            "q4", "generate_from_weights", "generate_from_weights(params, config, prompt, D) -> list[list[int]]",
            _generate_cases, _generate_from_weights, int_list,
            N_("one prefill: the P prompt tokens at positions 0 to P − 1 in a single pass, each attending to itself "
               "and the tokens before it only, which leaves every layer's keys and values in the cache and gives "
               "the first new token, the argmax of the last position's logits. Then D − 1 decode steps: the token "
               "just chosen goes in at the next position, its key and value are appended to each layer's cache, "
               "it attends over everything cached so far, and its argmax is the next token. Each sequence of the "
               "batch takes its own argmax. Return, for each of the B sequences, its D new tokens as Python ints, "
               "without the prompt; recomputing the whole prefix at every step gives the same tokens but does "
               "not use the cache, and the checker measures the work."),
            edges=GENERATE_EDGES, method=_recomputed,
        ),
        Question(
            "q5", "packed_cache_write",
            "packed_cache_write(k_cache, v_cache, k_new, v_new, lengths, counts) -> (k_cache, v_cache)",
            _packed_cases, _packed_write, pair(tensor(0, 0), tensor(0, 0), ("k_cache", "v_cache")),
            N_("sequence b's new rows are the counts[b] rows of k_new and v_new that follow the rows of the "
               "sequences before it; they go to rows lengths[b] … lengths[b] + counts[b] − 1 of slot b, and every "
               "other row of the cache stays as it was (a serving engine writes each new token at its slot, "
               "slot b · S_max + row)."),
            edges=PACKED_EDGES,
        ),
    ),
)
