"""PagedAttention (Kwon et al. 2023) on the CPU: one sequence's queries against its keys and values read
block by block through its block table, with an online softmax across the blocks.

A GPU kernel (vLLM's `paged_attention_v1`/`v2`) gives each (sequence, head) a thread block that walks the
sequence's block table, loads one block of keys at a time from wherever it lives in the pool, and keeps a
running maximum and sum: no copy of the sequence's K/V is ever made. Here torch reads the blocks with
one indexed load (`k_cache[block_table]`, `[n, H_kv, b, d_h]`: exactly the n = ⌈(S+T)/b⌉ blocks a sequence
owns). For the step's decodes (`paged_decode_attention`) every block's partial softmax is computed at once
and each sequence's blocks are merged by log-sum-exp (the merge of Flash-Decoding and of PagedAttention
V2's partitions, `combine_chunks`, here over segments of different lengths). A prompt chunk
(`paged_attention`) lays its sequence's blocks end to end and attends with the offset causal mask. Either
way the work and the bytes follow each sequence's own length S + T (rounded up to a block), never the
longest sequence of the batch.
"""

from __future__ import annotations

import math

import torch

from minigpt.runtime.model import attention, causal_visible


def paged_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, S: int) -> torch.Tensor:
    """softmax(q·kᵀ/√d_h, offset causal)·v of Eq. (1.1) for one sequence's chunk of T queries over its blocks.

    q `[T, H, d_h]`: the sequence's T new queries, at positions S..S+T−1. k_blocks, v_blocks `[n, H_kv, b, d_h]`:
    its blocks in block-table order (key j is row j % b of block j // b), holding at least its S + T keys. The
    blocks are laid end to end once (a copy of exactly the sequence's ⌈(S+T)/b⌉·b rows; a view when n = 1, a
    slot) and the chunk attends to the first S + T keys, query i to keys 0..S+i. A chunk's T queries reuse
    each key T times, so one copy per chunk is cheap next to its T·(S+T) scores. Returns `[T, H, d_h]`.
    """
    T, H, d_h = q.shape
    n, H_kv, b, _ = k_blocks.shape
    K = S + T
    if n * b < K:
        raise ValueError(f"the blocks hold {n}·{b} = {n * b} keys but the sequence needs S + T = {K}")
    k = k_blocks.transpose(0, 1).reshape(H_kv, n * b, d_h)[None, :, :K]  # [1, H_kv, K, d_h]
    v = v_blocks.transpose(0, 1).reshape(H_kv, n * b, d_h)[None, :, :K]
    out = attention(q.transpose(0, 1)[None], k, v, causal_visible(S, T, q.device))  # [1, H, T, d_h]
    return out[0].transpose(0, 1)


def paged_decode_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, owner: torch.Tensor,
                           key_start: torch.Tensor, seq_lens: torch.Tensor) -> torch.Tensor:
    """`paged_attention` for B decoding sequences at once (T = 1 each), with no padding to the longest.

    q `[B, H, d_h]`: sequence b's one query, at position seq_lens[b] − 1. k_blocks, v_blocks `[I, H_kv, b, d_h]`:
    the I = Σ_b ⌈seq_lens[b]/b⌉ blocks of all the sequences, read through their block tables; block i belongs
    to sequence `owner[i]` and holds keys key_start[i]..key_start[i]+b−1. Each block's partial softmax is
    computed at once (PagedAttention V2 with one block per partition), then each sequence's blocks are merged
    by log-sum-exp, as `combine_chunks` does, over segments of different lengths. Returns `[B, H, d_h]`.
    """
    B, H, d_h = q.shape
    I, H_kv, b, _ = k_blocks.shape
    g = H // H_kv
    rows = q.view(B, H_kv, g, d_h).index_select(0, owner)  # [I, H_kv, g, d_h]: each block meets its query
    s = (rows @ k_blocks.transpose(-2, -1)).float() / math.sqrt(d_h)  # [I, H_kv, g, b]
    valid = key_start.view(I, 1) + torch.arange(b, device=q.device) < seq_lens.index_select(0, owner).view(I, 1)
    s = s.masked_fill(~valid.view(I, 1, 1, b), float("-inf"))
    m = s.amax(dim=-1)  # [I, H_kv, g]: finite, every block holds a key of its sequence
    p = torch.exp(s - m[..., None])
    l = p.sum(dim=-1)  # noqa: E741
    o = (p.to(v_blocks.dtype) @ v_blocks).float() / l[..., None]  # [I, H_kv, g, d_h]
    lse = m + torch.log(l)  # log Σ exp(score) over the block
    top = torch.full((B, H_kv, g), float("-inf"), dtype=lse.dtype, device=q.device).scatter_reduce(
        0, owner.view(I, 1, 1).expand_as(lse), lse, "amax")  # [B, H_kv, g]: each sequence's largest lse
    w = torch.exp(lse - top.index_select(0, owner))  # [I, H_kv, g]
    den = torch.zeros(B, H_kv, g, dtype=w.dtype, device=q.device).index_add(0, owner, w)
    out = torch.zeros(B, H_kv, g, d_h, dtype=o.dtype, device=q.device).index_add(0, owner, w[..., None] * o)
    out = out / den[..., None]
    return out.to(q.dtype).view(B, H, d_h)
