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
    rows = q.view(B, H_kv, g, d_h)[owner]  # [I, H_kv, g, d_h]: each block meets its sequence's query
    s = (rows @ k_blocks.transpose(-2, -1)).float() / math.sqrt(d_h)  # [I, H_kv, g, b]
    valid = key_start.view(I, 1) + torch.arange(b, device=q.device) < seq_lens[owner].view(I, 1)  # [I, b]
    s = s.masked_fill(~valid.view(I, 1, 1, b), float("-inf"))
    m = s.amax(dim=-1)  # [I, H_kv, g]: finite, every block holds a key of its sequence
    p = torch.exp(s - m[..., None])
    l = p.sum(dim=-1)  # noqa: E741
    o = (p.to(v_blocks.dtype) @ v_blocks).float() / l[..., None]  # [I, H_kv, g, d_h]
    lse = m + torch.log(l)  # log Σ exp(score) over the block
    top = torch.full((B, H_kv, g), float("-inf"), device=q.device).scatter_reduce(
        0, owner.view(I, 1, 1).expand_as(lse), lse, "amax")  # [B, H_kv, g]: each sequence's largest lse
    w = torch.exp(lse - top[owner])  # [I, H_kv, g]
    den = torch.zeros(B, H_kv, g, device=q.device).index_add(0, owner, w)
    out = torch.zeros(B, H_kv, g, d_h, device=q.device).index_add(0, owner, w[..., None] * o) / den[..., None]
    return out.to(q.dtype).view(B, H, d_h)
