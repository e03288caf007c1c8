"""Exercise 6 (Chapter 6, implement the KV cache): a chunk of T new tokens appended to a cache that holds S and
attended with the causal mask aligned bottom-right, one query attending over the cache, decode from the cache and
the weights (`ex06_decode`), generate greedily from the weights with a cache (`ex06_generate`), and write one engine
step's packed rows into a cache with a length per sequence.

Question 1 is the step a second turn of a conversation, a chunk of a chunked prefill (Chapter 14) and a speculative
verify step (Chapter 17) make: Chapter 6's `CausalSelfAttention.forward` with a cache, whose mask
(`minigpt.runtime.model.causal_visible`) the chapter calls but does not print. Query i, at position S + i, sees keys
0 … S + i; `F.scaled_dot_product_attention(..., is_causal=True)` aligns its triangle top-left instead (query i sees
keys 0 … i), which is right only for S = 0. `tests/test_ex06_chunk.py` checks the oracle against PyTorch's
`causal_lower_right` and against an implementation written apart; the named wrong answers (`CHUNK_EDGES`) are
written apart in `tests/test_seed_independence_ex06_09.py`, the reference solution's mutants are in
`tests/test_exercise_mechanisms.py`.
"""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F

from minigpt.config import ModelConfig
from minigpt.exercises.ex06_decode import DECODE_EDGES, TOL, _decode_cases, _decode_from_cache
from minigpt.exercises.ex06_generate import GENERATE_EDGES, _generate_cases, _generate_from_weights, _recomputed
from minigpt.exercises.spec import N_, Exercise, Question, build_case, int_list, pair, randn, tensor, triple
from minigpt.runtime.kv_cache import KVCache
from minigpt.runtime.model import attention, causal_visible
from minigpt.runtime.slot_cache import SlotKVCache

#: Case i is edge i, under every seed (the last: every case but the full one). H_kv = H: GQA is Question 2's.
CHUNK_EDGES = (
    "1 <= S, 2 <= T, S + T < S_max (a second turn, a chunk of a chunked prefill, a verify step): the mask aligned "
    "top-left, query i seeing keys 0 … i (scaled_dot_product_attention with is_causal=True, or with "
    "is_causal=T > 1, the decode step's shortcut); no mask at all (the chunk's queries seeing their future); a "
    "strict mask (a query's own key hidden); the new rows written at row 0; only the first new row written; the "
    "scale 1/d_h instead of 1/√d_h; attention over the new rows alone (the cache forgotten)",
    "T = 1 after 1 <= S (a decode step: every cached key visible): is_causal=True, whose mask shows the one query "
    "key 0 alone; a strict mask, which hides its own key",
    "S = 0, 2 <= T (a plain prefill, where is_causal=True is right): a strict mask, which leaves query 0 no key "
    "(a row of NaN)",
    "S + T = S_max, 1 <= S, 2 <= T (the cache filled to its last row): a room check off by one that refuses it",
    "rows past S + T hold an earlier request's values (every case but the full one), as do rows S … S + T − 1 "
    "before the write: attending over the whole S_max (the stale rows seen), the whole preallocated cache "
    "returned, the new rows never written (attention over a concatenation, the cache left as it was)",
)
#: The neighbours `_replay` runs: the mask top-left, none, strict; the rows written at row 0; the scale 1/d_h;
#: the new rows alone; the whole S_max rows under a mask aligned to the last one.
NEIGHBOURS = ("top-left", "unmasked", "strict", "row 0", "scale", "new only", "whole")
#: The neighbours each edge case is drawn until it separates (case i, edge i).
SEPARATES = (("top-left", "unmasked", "strict", "row 0", "scale", "new only", "whole"),
             ("top-left", "strict", "row 0", "scale", "new only", "whole"),
             ("unmasked", "strict", "scale", "whole"),
             ("top-left", "unmasked", "strict", "row 0", "scale", "new only"),
             ("whole",))
#: A neighbour separates a case when it moves a value by more than this (or returns NaN, or another shape): about
#: ninety times the check's tolerance on an output near 1 (atol 1e-5 + rtol 1e-4). The least move measured over
#: 300 seeds was 0.018 (a decode step's scores over d_h).
MARGIN = 1e-2
#: Draws allowed for one case before the generator gives up (random floats separate every neighbour at once: over
#: 300 seeds, one case in 2,100 was drawn again).
DRAWS = 100


def _chunk_case(rng: random.Random, i: int) -> dict:
    """Case i: B 1 to 3, H 1, 2 or 4, d_h 4 or 8, S_max 8 to 24; T 2 to 5 (edges 0, 2, 3), 1 (edge 1) or 1 to 5
    (random); S from 1 (edges 0, 1), 0 (edge 2), S_max − T (edge 3) or from 0 (random), at least one stale row past
    S + T but in edge 3; every tensor ~ N(0, 1), the caches' rows from S on included (an earlier request's)."""
    B, H, d_h, S_max = rng.randint(1, 3), rng.choice([1, 2, 4]), rng.choice([4, 8]), rng.randint(8, 24)
    T = 1 if i == 1 else rng.randint(2, 5) if i < 4 else rng.randint(1, 5)
    S = (rng.randint(1, S_max - T - 1) if i < 2 else 0 if i == 2 else S_max - T if i == 3
         else rng.randint(0, S_max - T - 1))
    return dict(q=randn([B, H, T, d_h], rng), k_cache=randn([B, H, S_max, d_h], rng),
                v_cache=randn([B, H, S_max, d_h], rng), k_new=randn([B, H, T, d_h], rng),
                v_new=randn([B, H, T, d_h], rng), S=S)


def _apart(expected: tuple[torch.Tensor, ...], got: tuple[torch.Tensor, ...]) -> bool:
    """Whether a neighbour's (out, k_valid, v_valid) is of another shape, holds a NaN or moves a value by MARGIN."""
    return any(e.shape != g.shape or bool(g.isnan().any()) or float((e - g).abs().max()) > MARGIN
               for e, g in zip(expected, got, strict=True))


def _chunk_cases(rng: random.Random) -> list[dict]:
    """The edges first (`CHUNK_EDGES`: cases 0 to 3 sized for theirs, case 4 of random sizes with stale rows, as
    every case but the full one), each drawn until every neighbour `SEPARATES` names for it moves a value by more
    than `MARGIN` (`_replay`), then two random cases."""
    cases = []
    for i in range(len(CHUNK_EDGES) + 2):
        for _ in range(DRAWS):
            case = _chunk_case(rng, i)
            args = build_case(case)
            expected = _chunk_attention(**args)
            if all(_apart(expected, _replay(**args, wrong=w)) for w in (SEPARATES[i] if i < len(SEPARATES) else ())):
                break
        else:
            raise RuntimeError(f"no case in {DRAWS:,} draws separated the neighbours of edge {i}")
        cases.append(case)
    return cases


def _cache(k_cache: torch.Tensor, v_cache: torch.Tensor, S: int) -> KVCache:
    """A one-layer `KVCache` holding copies of `k_cache`, `v_cache` `[B, H, S_max, d_h]`, with S tokens written."""
    B, H, S_max, d_h = k_cache.shape
    cache = KVCache(ModelConfig(L=1, H=H, H_kv=H, d_h=d_h, S_max=S_max), B)
    cache.k[0], cache.v[0] = k_cache, v_cache
    cache.advance(S)
    return cache


def _chunk_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, k_new: torch.Tensor,
                     v_new: torch.Tensor, S: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The package's step over a chunk of T tokens after S cached ones, as `CausalSelfAttention.forward` runs it:
    `KVCache.update` writes the chunk's rows at S … S + T − 1 and returns the valid rows 0 … S + T − 1, and
    `attention` under `causal_visible(S, T)` lets query i (position S + i) see keys 0 … S + i (every key when
    T = 1): (out [B, H, T, d_h], k_valid, v_valid)."""
    k, v = _cache(k_cache, v_cache, S).update(0, k_new, v_new)
    return attention(q, k, v, causal_visible(S, k_new.shape[2], q.device)), k, v


def _replay(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
            S: int, wrong: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The package's cache and attention run as the neighbour `wrong` (one of `NEIGHBOURS`) runs them: query i
    seeing keys 0 … i, every key, or keys 0 … S + i − 1; the rows written at row 0; scores over d_h; the new rows
    alone under a causal mask; all S_max rows, query i seeing keys 0 … S_max − T + i. The valid rows returned."""
    T, S_max, d_h = k_new.shape[2], k_cache.shape[2], q.shape[-1]
    cache = _cache(k_cache, v_cache, 0 if wrong == "row 0" else S)
    cache.update(0, k_new, v_new)
    k, v = cache.k[0, :, :, :S + T], cache.v[0, :, :, :S + T]
    i, j = torch.arange(T).view(1, T, 1), torch.arange(S + T).view(1, 1, S + T)
    keys, values, visible = k, v, causal_visible(S, T, q.device)
    if wrong in ("top-left", "unmasked", "strict"):
        visible = {"top-left": j <= i, "unmasked": None, "strict": j < S + i}[wrong]
    if wrong == "new only":
        keys, values, visible = k_new, v_new, causal_visible(0, T, q.device)
    if wrong == "whole":
        keys, values, visible = cache.k[0], cache.v[0], causal_visible(S_max - T, T, q.device)
    return attention(q / math.sqrt(d_h) if wrong == "scale" else q, keys, values, visible), k, v


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
            "q1", "chunk_attention",
            "chunk_attention(q, k_cache, v_cache, k_new, v_new, S) -> (out, k_valid, v_valid)", _chunk_cases,
            _chunk_attention, triple(("out", "k_valid", "v_valid"), (tensor(1e-5, 1e-4), tensor(0, 0), tensor(0, 0))),
            N_("write k_new and v_new into rows S … S + T − 1 of the caches, in place (the rows from S on still hold "
               "an earlier request's values: never read past row S + T − 1). Query i of the chunk sits at position "
               "S + i and sees keys 0 … S + i, every cached row and the chunk's rows up to its own, nothing later; "
               "its scores are q·kᵀ / √d_h, softmaxed over those keys, times the values. A causal mask aligned "
               "top-left (query i sees keys 0 … i, what is_causal=True builds when the queries are fewer than the "
               "keys) is right only when S = 0. Return the output [B, H, T, d_h] and rows 0 … S + T − 1 of each "
               "cache. H_kv = H here: shared KV heads are Question 2's."),
            edges=CHUNK_EDGES,
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
