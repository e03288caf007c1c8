"""Exercise 18 (Chapters 21-22, the cache's memory in 2026): a decode step of latent attention through the
absorbed weights, the prompt's keys SnapKV keeps (`ex18_snapkv`), an H2O cache decoded step by step with the
keys each step reads (`ex18_h2o`), and the keys each query of a chunk attends through a sliding window with
attention sinks (`ex18_window`).

The oracles are the package: q1 runs `minigpt.runtime.mla.LatentAttention`'s *naive* path (decompress K
and V from the cached latents, multi-head attention) on the student's weights and latents, so an absorbed
answer passes only if the absorption is exact; q2 is `SnapKVCache` prefilled with the student's queries and
keys; q3 is `H2OCache` driven step by step as `MiniGPT` drives it; q4 is `WindowKVCache` driven as
`MiniGPT` drives it through earlier forwards and then a chunk, whose attention mask is the answer (`ex18_window`).
"""

from __future__ import annotations

import random

import torch

from minigpt.config import ModelConfig
from minigpt.exercises.ex18_h2o import H2O_EDGES, _h2o_cases, _h2o_reads
from minigpt.exercises.ex18_snapkv import SNAP_EDGES, _snap_cases, _snapkv_keep
from minigpt.exercises.ex18_window import WINDOW_EDGES, _window_cases, _window_chunk_keys
from minigpt.exercises.spec import N_, Exercise, Question, int_list, randn, tensor
from minigpt.runtime.mla import LatentAttention, LatentCache

ABSORBED_EDGES = ("d_c ≠ d_h (every case): the scores scaled by 1/√d_c instead of 1/√d_h",
                  "the first case, measured: the naive path, keys and values decompressed from the latents")


def _absorbed_cases(rng: random.Random) -> list[dict]:
    """d_c never equals d_h, so a score divided by the wrong width (√d_c) shows. The first case is sized for the
    method check (`_decompressed`): d_c < d_h and S ≫ H·d_h."""
    cases = []
    for i in range(6):
        H, d_h = rng.choice([1, 2, 4]), rng.choice([2, 4, 8])
        d_c = rng.choice([c for c in (3, 5, 6, 8, 12) if c != d_h])
        d, S = H * d_h, rng.randint(2, 12)
        if i == 0:
            H, d_h, d_c, d, S = 2, 16, 4, 32, rng.randint(200, 300)
        cases.append(dict(x=randn([d], rng), c=randn([S, d_c], rng), w_q=randn([d, d], rng, 0.5),
                          w_uk=randn([H, d_h, d_c], rng, 0.5), w_uv=randn([H, d_h, d_c], rng, 0.5),
                          w_o=randn([d, d], rng, 0.5)))
    return cases


def _decompressed(case: dict, work: dict[str, int]) -> str | None:
    """The method of ex18 Q1 (`minigpt.exercises.work`): rebuilding the keys, K = c·W_UKᵀ, makes an [S, H·d_h]
    tensor with 2·S·d_c·H·d_h FLOPs (and V as much again). Where that product outweighs everything the absorbed
    step makes or multiplies (d_c < d_h, S > d and S·H·d_h above d², S·d_c and H·S·d_c, and its FLOPs above
    twice the absorbed step's, 4·d² + 4·H·S·d_c + 8·d·H·d_c with the absorbed matrices built in the call), an
    answer that makes such a tensor or spends those FLOPs decompressed the latents; elsewhere the sizes say
    nothing and only the values count."""
    S, d_c = case["c"]["$randn"]
    H, d_h, _ = case["w_uk"]["$randn"]
    d = H * d_h
    rebuilt, flops = S * H * d_h, 2 * S * d_c * H * d_h
    absorbed = 4 * d * d + 4 * H * S * d_c + 8 * d * H * d_c
    if not (d_c < d_h and rebuilt > max(d * d, S * d_c, H * S * d_c) and flops > 2 * absorbed):
        return None
    if work["largest"] >= rebuilt or work["flops"] >= flops:
        return N_("the keys or values were rebuilt from the latents (a tensor of S·H·d_h elements, or the FLOPs "
                  "of that product, was measured): the question asks for the absorbed path, which attends over "
                  "the latents themselves")
    return None


@torch.no_grad()
def _naive(x: torch.Tensor, c: torch.Tensor, w_q: torch.Tensor, w_uk: torch.Tensor, w_uv: torch.Tensor,
           w_o: torch.Tensor) -> torch.Tensor:
    """The package's naive decode step: the last latent c[-1] is the query token's own (its down-projection
    is the rank-one map x ↦ c[-1], so the layer writes exactly c[-1] into the cache), the S - 1 before it
    are already cached."""
    H, d_h, d_c = w_uk.shape
    S = c.shape[0]
    config = ModelConfig(L=1, H=H, H_kv=H, d_h=d_h, d_ffn=1, V=1, S_max=S)
    attn = LatentAttention(config, 0, d_c)
    attn.q.weight.copy_(w_q)
    attn.q.bias.zero_()
    attn.up.weight.copy_(torch.cat([w_uk.reshape(H * d_h, d_c), w_uv.reshape(H * d_h, d_c)]))
    attn.out.weight.copy_(w_o)
    attn.out.bias.zero_()
    attn.down.weight.copy_(torch.outer(c[-1], x) / (x @ x))
    cache = LatentCache(config, d_c, 1, S_max=S)
    cache.c[0, 0, : S - 1] = c[:-1]
    cache.advance(S - 1)
    attn.path = "naive"
    return attn(x.view(1, 1, -1), cache, S=S - 1)[0, 0]


EXERCISE = Exercise(
    id="ex18",
    notebook="ex18_cache_frontier.ipynb",
    title="The cache's memory, 2026",
    questions=(
        Question(
            "q1", "absorbed_decode", "absorbed_decode(x, c, w_q, w_uk, w_uv, w_o) -> tensor", _absorbed_cases,
            _naive, tensor(atol=1e-4, rtol=1e-4),
            N_("never rebuild the keys or values of the cached tokens. For each head, carry its query into the "
               "latent space with the transpose of that head's key up-projection, score it against every latent, "
               "scale by one over the square root of d_h (the head width, as the naive path does, not d_c), take "
               "the softmax, and average the latents with those weights; that head's value up-projection then "
               "takes the average back to d_h, and the head's columns of the output projection to d. Sum the "
               "heads. The checker compares with the naive path, which decompresses keys and values first."),
            edges=ABSORBED_EDGES, method=_decompressed,
        ),
        Question(
            "q2", "snapkv_keep", "snapkv_keep(q, k, window, kernel, budget) -> list[int]", _snap_cases,
            _snapkv_keep, int_list,
            N_("if the prompt holds at most budget keys, all stay. Otherwise the last window queries vote: each "
               "one's softmax(q·k/√d_h) over the keys it can see (its own and the earlier ones), summed over the "
               "window. The votes of the keys before the window are max-pooled, each replaced by the largest "
               "vote within kernel // 2 positions of it among those keys; the window is kept whole and the "
               "budget - window keys of highest pooled vote before it join it. Return the kept positions in "
               "increasing order."),
            edges=SNAP_EDGES,
        ),
        Question(
            "q3", "h2o_decode_reads", "h2o_decode_reads(q, k, budget, recent) -> list[list[int]]", _h2o_cases,
            _h2o_reads, int_list,
            N_("step t appends key t with score 0; the query q[t] attends over every key held, its own included, "
               "with the weights softmax(q·k/√d_h); each of those keys' score grows by its weight; then, if more "
               "than budget keys are held, the recent newest stay and the budget - recent highest scores among "
               "the older ones. A step reads every key it holds before that eviction."),
            edges=H2O_EDGES,
        ),
        Question(
            "q4", "window_chunk_keys", "window_chunk_keys(fed, T, window, sinks) -> list[list[int]]",
            _window_cases, _window_chunk_keys, int_list,
            N_("first rebuild the ring as the earlier forwards left it: each stores the sinks among its tokens "
               "and its last window tokens, every one in its own slot, a decode step included. The chunk's "
               "attention then gets one list of keys, the slots that hold a token in slot order followed by the "
               "chunk's own tokens, all before the chunk is stored. The query at position S + i sees a key whose "
               "position is at most S + i and is a sink or lies after S + i - window. Return, query by query, "
               "the indices of those keys in that list, not their positions."),
            edges=WINDOW_EDGES,
        ),
    ),
)
