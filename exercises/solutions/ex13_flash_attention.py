"""Reference solutions for exercises/ex13_flash_attention.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import math

import torch


# %% solution:q1
def combine_chunks(m, l, o):  # noqa: E741
    """Each chunk's log Σ exp(score), then the chunks' softmax over the last axis weights their outputs."""
    lse = m + torch.log(l)  # [B, H, K]
    w = torch.exp(lse - torch.logsumexp(lse, dim=-1, keepdim=True))  # no exp of a raw score: no overflow
    return (w.unsqueeze(-1) * o).sum(dim=-2)  # [B, H, d_h]


# %% solution:q2
def tiled_flops(T, S, d_h, block_q, block_k, causal):
    """Walk the query tiles; each visits whole key tiles up to the diagonal (or all keys), 4·d_h FLOPs per score."""
    keys, total = S + T, 0
    for i0 in range(0, T, block_q):
        i1 = min(i0 + block_q, T)
        seen = min(math.ceil((S + i1) / block_k) * block_k, keys) if causal else keys
        total += (i1 - i0) * seen
    return 4 * d_h * total


# %% solution:q3
def hbm_bytes(P, d_h, s, sram_bytes):
    """Dao et al. 2022: Algorithm 0 writes and reads the P×P scores; Algorithm 1 makes T_c passes over Q and O."""
    standard = (4 * P * d_h + 4 * P * P) * s
    M = sram_bytes // s
    B_c = math.ceil(M / (4 * d_h))
    T_c = math.ceil(P / B_c)
    flash = ((P * d_h + 2 * P) + 2 * P * d_h + T_c * (3 * P * d_h + 4 * P)) * s
    return standard, flash


# %% solution:q4
def best_splits(B, H_kv, S, n_sm, max_splits):
    """Fewest key-steps ⌈B·H_kv·K/n_sm⌉·⌈S/K⌉ over K; the speedup is one wave over all S keys against them."""
    items = B * H_kv
    one = math.ceil(items / n_sm) * S
    steps = {K: math.ceil(items * K / n_sm) * math.ceil(S / K) for K in range(1, min(max_splits, S) + 1)}
    best = min(steps, key=lambda K: (steps[K], K))
    return best, one / steps[best]
