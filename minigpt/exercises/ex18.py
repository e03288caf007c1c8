"""Exercise 18 (Chapters 21-22, the cache's memory in 2026): a decode step of DeepSeek's latent attention, its
decoupled RoPE key included, through the absorbed weights (`ex18_latent`), the prompt's keys SnapKV keeps
(`ex18_snapkv`), an H2O cache decoded step by step with the keys each step reads (`ex18_h2o`), and the keys each
query of a chunk attends through a sliding window with attention sinks (`ex18_window`).

The oracles: q1 is the naive path (keys and values decompressed from the cached latents, the RoPE key beside
them, multi-head attention; checked against Hugging Face's `DeepseekV3Attention` and, without RoPE, the package's
`LatentAttention`), so an absorbed answer passes only if the absorption is exact; q2 is `SnapKVCache` prefilled
with the student's queries and keys; q3 is `H2OCache` driven step by step as `MiniGPT` drives it; q4 is
`WindowKVCache` driven as `MiniGPT` drives it through earlier forwards and then a chunk, whose attention mask is
the answer (`ex18_window`).
"""

from __future__ import annotations

from minigpt.exercises.ex18_h2o import H2O_EDGES, _h2o_cases, _h2o_reads
from minigpt.exercises.ex18_latent import LATENT_EDGES, TOL, _decompressed, _latent_cases, _mla_decode
from minigpt.exercises.ex18_snapkv import SNAP_EDGES, _snap_cases, _snapkv_keep
from minigpt.exercises.ex18_window import WINDOW_EDGES, _window_cases, _window_chunk_keys
from minigpt.exercises.spec import N_, Exercise, Question, int_list, tensor

EXERCISE = Exercise(
    id="ex18",
    notebook="ex18_cache_frontier.ipynb",
    title="The cache's memory, 2026",
    questions=(
        Question(
            "q1", "absorbed_decode",
            "absorbed_decode(x, c, k_rope, w_q, w_qr, w_uk, w_uv, w_o, theta) -> tensor [d]", _latent_cases,
            _mla_decode, tensor(atol=TOL, rtol=TOL),
            N_("never rebuild the keys or values of the cached tokens. For each head, carry the part of its query "
               "that has no position into the latent space with the transpose of that head's key up-projection "
               "and score it against every latent. Rotate the head's RoPE part of the query to the new token's "
               "position, S − 1 (its own latent and RoPE key are the last rows), pairing entries 2i and 2i + 1 "
               "and turning pair i by (S − 1)·theta^(−2i/d_rope), not pairing i with i + d_rope/2; add its dot "
               "product with each cached RoPE key, which is already rotated and shared by the heads. Divide each "
               "score by the square root of d_h + d_rope, take one softmax, average the latents with those "
               "weights; that head's value up-projection takes the average back to d_h, and the head's columns "
               "of the output projection to d. Sum the heads."),
            edges=LATENT_EDGES, method=_decompressed,
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
