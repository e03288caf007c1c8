"""PagedAttention (Kwon et al. 2023) on the CPU: one sequence's queries against its keys and values read
block by block through its block table, with an online softmax across the blocks.

A GPU kernel (vLLM's `paged_attention_v1`/`v2`) gives each (sequence, head) a thread block that walks the
sequence's block table, loads one block of keys at a time from wherever it lives in the pool, and keeps a
running maximum and sum: no copy of the sequence's K/V is ever made. Here torch reads the sequence's
blocks with one indexed load (`k_cache[block_table]`, `[n, H_kv, b, d_h]`, exactly the n = ⌈(S+T)/b⌉ blocks it
owns), computes each block's partial softmax, and merges the blocks by log-sum-exp (`combine_chunks`, the
merge of Flash-Decoding and of PagedAttention V2's partitions). The work and the bytes follow the
sequence's own length S + T (rounded up to a block), never the longest sequence of the batch.
"""

from __future__ import annotations

import math

import torch

from minigpt.runtime.attention.flash_decoding import combine_chunks


def paged_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, S: int) -> torch.Tensor:
    """softmax(q·kᵀ/√d_h, offset causal)·v of Eq. (1.1) for one sequence, block by block, merged by log-sum-exp.

    q `[T, H, d_h]`: the sequence's T new queries, at positions S..S+T−1. k_blocks, v_blocks `[n, H_kv, b, d_h]`:
    its blocks in block-table order (key j is row j % b of block j // b), holding at least its S + T keys;
    rows past them are never visible. Query i sees keys 0..S+i. Returns `[T, H, d_h]`.
    """
    T, H, d_h = q.shape
    n, H_kv, b, _ = k_blocks.shape
    if n * b < S + T:
        raise ValueError(f"the blocks hold {n}·{b} = {n * b} keys but the sequence needs S + T = {S + T}")
    g = H // H_kv
    rows = q.view(T, H_kv, g, d_h).permute(1, 2, 0, 3).reshape(H_kv, g * T, d_h)  # the g heads of a K/V head
    scores = torch.einsum("hrd,nhkd->hrnk", rows, k_blocks).float() / math.sqrt(d_h)  # [H_kv, g·T, n, b]
    key = torch.arange(n * b, device=q.device).view(1, n, b)
    visible = key <= S + torch.arange(T, device=q.device).view(T, 1, 1)  # [T, n, b]: the offset causal mask
    scores = scores.view(H_kv, g, T, n, b).masked_fill(~visible, float("-inf")).view(H_kv, g * T, n, b)
    m = scores.amax(dim=-1)  # [H_kv, g·T, n]: each block's largest visible score (−inf: none visible)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    p = torch.exp(scores - m[..., None])
    l = p.sum(dim=-1)  # noqa: E741  [H_kv, g·T, n]
    o = torch.einsum("hrnk,nhkd->hrnd", p.to(v_blocks.dtype), v_blocks).float()  # [H_kv, g·T, n, d_h]
    o = o / l.clamp_min(torch.finfo(l.dtype).tiny)[..., None]
    out = combine_chunks(m, l, o)  # [H_kv, g·T, d_h]: an empty block (ℓ = 0) drops out
    return out.to(q.dtype).view(H_kv, g, T, d_h).permute(2, 0, 1, 3).reshape(T, H, d_h)
