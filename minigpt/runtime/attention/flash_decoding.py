"""Flash-Decoding (Dao, Haziza, Massa, Sizov 2023): one decode query against S keys, the keys split into
`splits` chunks that are attended independently (in parallel on a GPU), then combined by log-sum-exp."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def flash_decode(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, splits: int) -> torch.Tensor:
    """softmax(q·kᵀ/√d_h)·v for one new token, as `splits` partial softmaxes merged by log-sum-exp; the
    occupancy model is `costs.flash_decoding_speedup`.

    q `[B, H, 1, d_h]`; k, v `[B, H_kv, S, d_h]` (every key visible). Chunk c holds keys
    [c·⌈S/splits⌉, (c+1)·⌈S/splits⌉); the last chunks are padded (and empty ones drop out) when splits ∤ S.
    """
    if isinstance(splits, bool) or not isinstance(splits, int) or splits < 1:
        raise ValueError(f"splits must be an integer >= 1 (chunks of the cache), got {splits!r}")
    B, H, T, d_h = q.shape
    H_kv, S = k.shape[1], k.shape[2]
    if T != 1:
        raise ValueError(f"flash_decode takes one query token per sequence (a decode step), got T={T}")
    g = H // H_kv
    c = -(-S // splits)  # keys per chunk
    pad = splits * c - S
    if pad:  # splits ∤ S: pad the last chunk (a copy; none when splits divides S)
        k, v = F.pad(k, (0, 0, 0, pad)), F.pad(v, (0, 0, 0, pad))
    k = k.reshape(B, H_kv, splits, c, d_h)  # [B, H_kv, splits, c, d_h]: a view of the cache
    v = v.reshape(B, H_kv, splits, c, d_h)
    q = q.reshape(B, H_kv, 1, g, d_h)  # the g query heads of a K/V head as rows, the same for every chunk
    s = (q @ k.transpose(-2, -1)) / math.sqrt(d_h)  # [B, H_kv, splits, g, c]
    if pad:
        s = s.masked_fill((torch.arange(splits * c, device=q.device) >= S).view(splits, 1, c), float("-inf"))
    # each chunk: its own maximum, sum and normalised partial output (an empty chunk: lse = -inf, o = 0)
    m = s.amax(dim=-1, keepdim=True)  # [B, H_kv, splits, g, 1]
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    p = torch.exp(s - m)
    l = p.sum(dim=-1, keepdim=True)  # noqa: E741
    o = (p @ v) / l.clamp_min(torch.finfo(l.dtype).tiny)  # [B, H_kv, splits, g, d_h]
    # the chunks as the last axis of m and l, the next-to-last of o: [B, H_kv, g, splits(, d_h)]
    out = combine_chunks(m.squeeze(-1).movedim(2, -1), l.squeeze(-1).movedim(2, -1), o.movedim(2, -2))
    return out.reshape(B, H, 1, d_h)


def combine_chunks(m: torch.Tensor, l: torch.Tensor, o: torch.Tensor) -> torch.Tensor:  # noqa: E741
    """Flash-Decoding's merge of K partial softmaxes: Σ_c exp(lse_c − lse)·o_c, lse_c = m_c + log ℓ_c and
    lse = log Σ_c exp(lse_c), with no exp of a raw score (so no overflow at any scale).

    m, l `[..., K]`: each chunk's largest score and Σ exp(score − m) over its keys (0 for an empty chunk, which
    drops out); o `[..., K, d_h]`: each chunk's normalised output Σ exp(score − m)·v / ℓ. Returns `[..., d_h]`.
    """
    if m.shape != l.shape or o.shape[:-1] != m.shape:
        raise ValueError(f"m and l must be [..., K] and o [..., K, d_h]; got m {list(m.shape)}, "
                         f"l {list(l.shape)}, o {list(o.shape)}")
    lse = m + torch.log(l)  # log Σ exp(score) over the chunk
    w = torch.exp(lse - torch.logsumexp(lse, dim=-1, keepdim=True))  # [..., K]: the chunks' shares, summing to 1
    return (w[..., None] * o).sum(dim=-2)
