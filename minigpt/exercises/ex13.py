"""Exercise 13 (Chapters 15-16, FlashAttention and Flash-Decoding): the log-sum-exp merge of partial softmaxes,
the FLOPs of a tiled causal attention, the online-softmax tile loop, and Flash-Decoding's split-KV partials.

The oracles: `minigpt.runtime.attention.combine_chunks` (the merge `flash_decode` uses), the formula
`minigpt.costs.tiled_attention_flops`, and plain `torch.softmax(q·kᵀ/√d_h)·v` (with `torch.logsumexp`) for the
tile loop and for each chunk of the split. Half the inputs of the last two have scores of a few hundred,
where a naive exp overflows fp32.
"""

from __future__ import annotations

import math
import random

import torch

from minigpt import costs
from minigpt.exercises.spec import N_, Exercise, Question, build, exact_int, pair, randn, tensor, triple, uniform
from minigpt.runtime.attention import combine_chunks

COMBINE_EDGES = ("scores in the hundreds: exp of a raw m overflows fp32",
                 "each chunk weighted by exp(m − max) alone, its l left out: every case tells it")


def _combine_cases(rng: random.Random) -> list[dict]:
    """Random, the last two the edge (`COMBINE_EDGES`: scores in the hundreds)."""
    cases = []
    for i in range(6):
        B, H, K, d_h = rng.randint(1, 3), rng.choice([1, 2, 4]), rng.randint(1, 9), rng.choice([4, 8])
        scale = 3.0 if i < 4 else 200.0  # the last two: scores in the hundreds, where exp(m) overflows fp32
        cases.append(dict(m=randn([B, H, K], rng, scale), l=uniform([B, H, K], rng, 1.0, 64.0),
                          o=randn([B, H, K, d_h], rng)))
    return cases


def _combine(m: torch.Tensor, l: torch.Tensor, o: torch.Tensor) -> torch.Tensor:  # noqa: E741
    return combine_chunks(m, l, o)


FLOPS_EDGES = ("causal, S + T not a multiple of block_k: the last key tile counted past the S + T keys",
               "T not a multiple of block_q: the last query tile counted as a whole block_q rows",
               "causal with S > 0 cached keys: each query row sees them all")


def _flops_cases(rng: random.Random) -> list[dict]:
    """The first case is the edge of `FLOPS_EDGES` (T a multiple of neither block, causal; cases 4 to 6 have
    S > 0), then random."""
    cases = []
    for i in range(8):
        block_q, block_k = rng.choice([4, 8, 16, 32, 64]), rng.choice([4, 8, 16, 32, 64])
        T = rng.randint(1, 300)
        while i == 0 and (T % block_q == 0 or T % block_k == 0):
            T = rng.randint(1, 300)
        cases.append(dict(T=T, S=0 if i < 4 else rng.randint(1, 200), d_h=rng.choice([16, 64, 128]),
                          block_q=block_q, block_k=block_k, causal=i != 7))
    return cases


def _flops(T: int, S: int, d_h: int, block_q: int, block_k: int, causal: bool) -> int:
    return costs.tiled_attention_flops(T=T, S=S, d_h=d_h, block_q=block_q, block_k=block_k, causal=causal)


ONLINE_EDGES = ("several key tiles, a row's largest score in a later one: the sums not rescaled by exp(old − new)",
                "scores of a few hundred: exp(score) without the running max overflows")


def _rises(q: dict, k: dict, block_k: int) -> bool:
    """Whether some row's largest score is past the first key tile (the running max rises)."""
    if k["$randn"][-2] <= block_k:
        return False
    q_, k_ = build(q), build(k)
    scores = q_ @ k_.transpose(-2, -1)
    return bool((scores[..., block_k:].amax(-1) > scores[..., :block_k].amax(-1)).any())


def _online_cases(rng: random.Random) -> list[dict]:
    """The first case is the edge of `ONLINE_EDGES` where the running max rises; from the fourth, scores of a few
    hundred."""
    cases = []
    for i in range(7):
        H, T, S, d_h = rng.randint(1, 2), rng.randint(1, 6), rng.randint(1, 40), rng.choice([4, 8])
        block_k = rng.choice([1, 3, 4, 8, 16, 64])
        scale = 1.0 if i < 3 else 12.0  # from the fourth case: scores of a few hundred, where exp(score) is inf
        case = dict(q=randn([H, T, d_h], rng, scale), k=randn([H, S, d_h], rng, scale), v=randn([H, S, d_h], rng),
                    block_k=block_k)
        while i == 0 and not _rises(case["q"], case["k"], case["block_k"]):
            S, block_k = rng.randint(2, 40), rng.choice([1, 3, 4, 8])
            case = dict(q=randn([H, T, d_h], rng), k=randn([H, S, d_h], rng), v=randn([H, S, d_h], rng),
                        block_k=block_k)
        cases.append(case)
    return cases


def _online(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference the tile loop must reproduce: the whole score row at once, softmax, then V."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # [H, T, S]
    return torch.softmax(scores, dim=-1) @ v, torch.logsumexp(scores, dim=-1)


PARTIAL_EDGES = ("GQA with H_kv = 2 < H: query head h reading K/V head h % H_kv instead of h // g",
                 "S not a multiple of splits: ⌊S / splits⌋ keys per chunk instead of ⌈S / splits⌉")


def _partial_cases(rng: random.Random) -> list[dict]:
    """The first case is the edge of `PARTIAL_EDGES` (H_kv = 2, g > 1, S not a multiple of splits), then random."""
    cases = []
    for i in range(7):
        B, H_kv, g, d_h = rng.randint(1, 2), rng.choice([1, 2]), rng.choice([1, 2, 4]), rng.choice([4, 8])
        if i == 0:
            H_kv, g = 2, rng.choice([2, 4])
        while True:  # no empty chunk: (splits − 1) chunks of ⌈S / splits⌉ keys hold fewer than S
            S, splits = rng.randint(1, 40), rng.randint(1, 8)
            if (splits - 1) * -(-S // splits) < S and (i or S % splits):
                break
        scale = 1.0 if i < 3 else 12.0
        cases.append(dict(q=randn([B, H_kv * g, d_h], rng, scale), k=randn([B, H_kv, S, d_h], rng, scale),
                          v=randn([B, H_kv, S, d_h], rng), splits=splits))
    return cases


def _partials(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              splits: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each chunk's (max score, Σ exp(score − max), normalised output): the inputs of `combine_chunks`."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)  # [B, H, S, d_h]
    c = -(-k.shape[2] // splits)  # keys per chunk, as `flash_decode` splits them
    ms, ls, os_ = [], [], []
    for j0 in range(0, k.shape[2], c):
        s = (q.unsqueeze(2) @ k[:, :, j0:j0 + c].transpose(-2, -1)).squeeze(2) / math.sqrt(q.shape[-1])  # [B, H, c]
        ms.append(s.amax(dim=-1))
        ls.append(torch.exp(s - ms[-1].unsqueeze(-1)).sum(dim=-1))
        os_.append((torch.softmax(s, dim=-1).unsqueeze(2) @ v[:, :, j0:j0 + c]).squeeze(2))
    return torch.stack(ms, -1), torch.stack(ls, -1), torch.stack(os_, -2)


EXERCISE = Exercise(
    id="ex13",
    notebook="ex13_flash_attention.ipynb",
    title="FlashAttention and Flash-Decoding",
    questions=(
        Question(
            "q1", "combine_chunks", "combine_chunks(m, l, o) -> tensor [B, H, d_h]", _combine_cases, _combine,
            tensor(atol=1e-5, rtol=1e-5),
            N_("each chunk's l and o are relative to that chunk's own largest score: bring every chunk to one common "
               "reference (the largest m over the chunks, or log space) before weighting its o by its share of the "
               "total sum of exponentials. Never exponentiate a raw m: with scores in the hundreds it is inf in fp32."),
            edges=COMBINE_EDGES,
        ),
        Question(
            "q2", "tiled_flops", "tiled_flops(T, S, d_h, block_q, block_k, causal) -> int", _flops_cases, _flops,
            exact_int,
            N_("walk the query tiles (the last one may be shorter). With causal, a tile stops after the key tile "
               "holding the last key its last row may see, and computes that whole key tile, masked scores included "
               "(but no key beyond the S + T that exist); without causal it sees every key. Count rows × keys per "
               "tile; each score costs 4·d_h FLOPs."),
            edges=FLOPS_EDGES,
        ),
        Question(
            "q3", "online_softmax_attention", "online_softmax_attention(q, k, v, block_k) -> (o, lse)", _online_cases,
            _online, pair(tensor(atol=1e-4, rtol=1e-4), tensor(atol=1e-4, rtol=1e-5), ("o", "lse")),
            N_("per query row keep three running values: the largest score so far, the sum of exp(score − that "
               "largest) and the same weights times the values. When a tile raises the largest score, both sums were "
               "weighted for the old one: scale them by exp(old − new) before adding the tile. Divide at the end; "
               "lse is the largest score plus the log of the sum."),
            edges=ONLINE_EDGES,
        ),
        Question(
            "q4", "split_kv_partials", "split_kv_partials(q, k, v, splits) -> (m, l, o)", _partial_cases, _partials,
            triple(("m", "l", "o"), (tensor(atol=1e-4, rtol=1e-5), tensor(atol=1e-5, rtol=1e-4),
                                     tensor(atol=1e-4, rtol=1e-4))),
            N_("each chunk is a softmax of its own: its m is the largest score in that chunk only, its l sums "
               "exp(score − m) over that chunk, and its o is normalised by that l. Chunks hold ⌈S / splits⌉ keys "
               "each (the last may hold fewer); query head h reads K/V head h // g."),
            edges=PARTIAL_EDGES,
        ),
    ),
)
