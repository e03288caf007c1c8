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
def online_softmax_attention(q, k, v, block_k):
    """softmax(q·kᵀ/√d_h)·v one key tile at a time: running max, running sum, rescaled accumulator."""
    scale = 1 / math.sqrt(q.shape[-1])
    m = torch.full(q.shape[:-1], float("-inf"))  # [H, T] largest score so far
    l = torch.zeros(q.shape[:-1])  # Σ exp(score − m)  # noqa: E741
    acc = torch.zeros(q.shape)  # Σ exp(score − m)·v
    for j0 in range(0, k.shape[-2], block_k):
        s = (q @ k[..., j0:j0 + block_k, :].transpose(-2, -1)) * scale  # [H, T, b_k]
        m_new = torch.maximum(m, s.amax(dim=-1))
        p = torch.exp(s - m_new.unsqueeze(-1))
        rescale = torch.exp(m - m_new)  # 0 on the first tile: m = -inf
        l = rescale * l + p.sum(dim=-1)  # noqa: E741
        acc = rescale.unsqueeze(-1) * acc + p @ v[..., j0:j0 + block_k, :]
        m = m_new
    return acc / l.unsqueeze(-1), m + torch.log(l)


# %% solution:q4
def split_kv_partials(q, k, v, splits):
    """Flash-Decoding's first pass: each chunk of ⌈S/splits⌉ keys is its own softmax (m, l, o)."""
    B, H, d_h = q.shape
    H_kv, S = k.shape[1], k.shape[2]
    g = H // H_kv
    c = math.ceil(S / splits)
    m = torch.empty(B, H, splits)
    l = torch.empty(B, H, splits)  # noqa: E741
    o = torch.empty(B, H, splits, d_h)
    for h in range(H):
        kh, vh = k[:, h // g], v[:, h // g]  # [B, S, d_h]: query head h reads K/V head h // g
        for j in range(splits):
            s = (kh[:, j * c:(j + 1) * c] @ q[:, h].unsqueeze(-1)).squeeze(-1) / math.sqrt(d_h)  # [B, keys]
            m[:, h, j] = s.amax(dim=-1)
            p = torch.exp(s - m[:, h, j].unsqueeze(-1))
            l[:, h, j] = p.sum(dim=-1)
            o[:, h, j] = (p.unsqueeze(1) @ vh[:, j * c:(j + 1) * c]).squeeze(1) / l[:, h, j].unsqueeze(-1)
    return m, l, o
