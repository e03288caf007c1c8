"""FlashAttention in torch (Dao et al. 2022, Algorithm 1 reordered query-tile-outer as in FlashAttention-2):
the scores are computed one `block_q × block_k` tile at a time and folded into a running softmax, so the
`T × (S+T)` score matrix never exists; with `causal=True` the tiles above the diagonal are never computed."""

from __future__ import annotations

import math

import torch


def _check_blocks(block_q: int, block_k: int) -> None:
    for name, value in (("block_q", block_q), ("block_k", block_k)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1 (rows or columns of one score tile), got {value!r}")


def flash_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = True, block_q: int = 16, block_k: int = 16
) -> torch.Tensor:
    """softmax(q·kᵀ/√d_h)·v of Eq. (1.1), tile by tile with an online softmax; `costs.tiled_attention_flops`.

    Query tiles outside, key/value tiles inside: FlashAttention-2/3's loop order, whose HBM bytes are
    Eq. (15.1)'s Q outer (`costs.tiled_attention_hbm_bytes`).

    q `[B, H, T, d_h]`; k, v `[B, H_kv, S+T, d_h]` (the T new tokens come last, after S cached ones, so query i
    sits at position S+i and, when `causal`, sees keys 0..S+i: the offset mask of `causal_visible`).
    """
    _check_blocks(block_q, block_k)
    B, H, T, d_h = q.shape
    H_kv, n_keys = k.shape[1], k.shape[2]
    if H % H_kv or n_keys < T:
        raise ValueError(f"need H_kv | H and at least T keys; got H={H}, H_kv={H_kv}, T={T}, keys={n_keys}")
    S = n_keys - T  # tokens cached before this chunk
    g = H // H_kv  # query heads per K/V head
    q = q.reshape(B, H_kv, g, T, d_h)
    k, v = k[:, :, None], v[:, :, None]  # [B, H_kv, 1, S+T, d_h]: broadcast over the g query heads
    out = torch.empty_like(q)
    for i0 in range(0, T, block_q):  # one query tile: rows i0..i1-1
        i1 = min(i0 + block_q, T)
        q_i = q[..., i0:i1, :]  # [B, H_kv, g, b_q, d_h]
        m = q_i.new_full(q_i.shape[:-1], float("-inf"))  # running row maximum
        l = q_i.new_zeros(q_i.shape[:-1])  # running row sum of exp(score - m)  # noqa: E741
        acc = torch.zeros_like(q_i)  # running Σ exp(score - m)·v
        last = S + i1 if causal else n_keys  # keys this tile's last row sees: later key tiles are skipped
        for j0 in range(0, last, block_k):
            j1 = min(j0 + block_k, n_keys)
            s = (q_i @ k[..., j0:j1, :].transpose(-2, -1)) / math.sqrt(d_h)  # [B, H_kv, g, b_q, b_k]
            if causal and j1 - 1 > S + i0:  # the tile crosses the diagonal: mask key j > S + i
                i = torch.arange(i0, i1, device=q.device).view(-1, 1)
                j = torch.arange(j0, j1, device=q.device).view(1, -1)
                s = s.masked_fill(j > S + i, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1))  # finite: every row sees key 0, in the first tile
            p = torch.exp(s - m_new[..., None])
            rescale = torch.exp(m - m_new)  # 0 on the first tile (m = -inf)
            l = rescale * l + p.sum(dim=-1)  # noqa: E741
            acc = rescale[..., None] * acc + p @ v[..., j0:j1, :]
            m = m_new
        out[..., i0:i1, :] = acc / l[..., None]
    return out.view(B, H, T, d_h)
