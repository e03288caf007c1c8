"""Grouped-query attention from a multi-head checkpoint: mean-pool each group's key and value heads
(and the reverse check: repeat a GQA model's heads into an equivalent MHA model).

Ainslie et al. (2023) turn an MHA model into a GQA one by averaging the key and value projection
heads of each group of g = H / H_kv query heads, then training briefly ("uptraining"). Query heads
h = j·g … j·g + g − 1 share key/value head j, the grouping `CausalSelfAttention` uses.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from minigpt.runtime.model import MiniGPT


@torch.no_grad()
def mean_pool_kv_heads(model: MiniGPT, H_kv: int) -> MiniGPT:
    """A new MiniGPT with H_kv key/value heads whose K and V projections are the group means of `model`'s."""
    c = model.config
    if isinstance(H_kv, bool) or not isinstance(H_kv, int) or H_kv < 1 or c.H_kv % H_kv:
        raise ValueError(f"H_kv must be a positive integer dividing the model's H_kv={c.H_kv}, got {H_kv!r}")
    g = c.H_kv // H_kv  # old K/V heads per new one
    target = MiniGPT(replace(c, H_kv=H_kv)).to(dtype=model.dtype, device=model.device)
    state = model.state_dict()
    for layer in range(c.L):
        for part in ("weight", "bias"):
            key = f"blocks.{layer}.attn.qkv.{part}"
            q, k, v = state[key].split([c.H * c.d_h, c.H_kv * c.d_h, c.H_kv * c.d_h], dim=0)
            # [H_kv·d_h, ...] → [H_kv', g, d_h, ...] → mean over the g heads of each group
            k = k.unflatten(0, (H_kv, g, c.d_h)).mean(dim=1).flatten(0, 1)
            v = v.unflatten(0, (H_kv, g, c.d_h)).mean(dim=1).flatten(0, 1)
            state[key] = torch.cat([q, k, v], dim=0)
    target.load_state_dict(state)
    return target.train(model.training)


@torch.no_grad()
def repeat_kv_heads(model: MiniGPT) -> MiniGPT:
    """The MHA model (H_kv = H) whose K/V head h is `model`'s head h // g: the same function, H/H_kv× the cache."""
    c = model.config
    mha = MiniGPT(replace(c, H_kv=c.H)).to(dtype=model.dtype, device=model.device)
    state = model.state_dict()
    for layer in range(c.L):
        for part in ("weight", "bias"):
            key = f"blocks.{layer}.attn.qkv.{part}"
            q, k, v = state[key].split([c.H * c.d_h, c.H_kv * c.d_h, c.H_kv * c.d_h], dim=0)
            k = k.unflatten(0, (c.H_kv, c.d_h)).repeat_interleave(c.group_size, dim=0).flatten(0, 1)
            v = v.unflatten(0, (c.H_kv, c.d_h)).repeat_interleave(c.group_size, dim=0).flatten(0, 1)
            state[key] = torch.cat([q, k, v], dim=0)
    mha.load_state_dict(state)
    return mha.train(model.training)
