"""Which attention kernel a MiniGPT's layers call: `use_attention(model, "flash")`; the default is the plain one."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F

from minigpt.runtime.attention.flash import _check_blocks, flash_attention
from minigpt.runtime.attention.flash_decoding import flash_decode
from minigpt.runtime.model import MiniGPT, attention, causal_visible

Kernel = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, "torch.Tensor | None"], torch.Tensor]


def _offset_causal(q: torch.Tensor, k: torch.Tensor, visible: torch.Tensor | None) -> bool:
    """True when `visible` is the offset causal mask (or None, T = 1): the mask the tiled kernels assume."""
    T, n_keys = q.shape[2], k.shape[2]
    return visible is None or (
        visible.shape[0] == 1 and torch.equal(visible, causal_visible(n_keys - T, T, q.device))
    )


def flash_kernel(q, k, v, visible, *, block_q: int = 16, block_k: int = 16) -> torch.Tensor:
    """The model's kernel signature over `flash_attention`; a ragged cache's own mask goes to the plain path."""
    if not _offset_causal(q, k, visible):
        return attention(q, k, v, visible)
    return flash_attention(q, k, v, causal=True, block_q=block_q, block_k=block_k)


def flash_decoding_kernel(q, k, v, visible, *, splits: int = 4, block_q: int = 16, block_k: int = 16) -> torch.Tensor:
    """Decode steps (T = 1) by `flash_decode` over `splits` chunks; prefill and chunks by `flash_kernel`."""
    if q.shape[2] == 1 and visible is None:
        return flash_decode(q, k, v, splits=splits)
    return flash_kernel(q, k, v, visible, block_q=block_q, block_k=block_k)


def sdpa_kernel(q, k, v, visible) -> torch.Tensor:
    """torch's fused `scaled_dot_product_attention` (no score matrix kept in memory by its fused backends)."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    if visible is not None:
        visible = visible[:, None]  # [B or 1, 1, T, K]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=visible)


KERNELS: dict[str, Callable[..., torch.Tensor]] = {
    "plain": attention, "flash": flash_kernel, "flash_decoding": flash_decoding_kernel, "sdpa": sdpa_kernel,
}


def use_attention(model: MiniGPT, kernel: str = "plain", **options: int) -> MiniGPT:
    """Make every layer of `model` call `kernel` (a name of `KERNELS`, with its block sizes or splits); returns it."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {kernel!r}")
    allowed = {"plain": set(), "sdpa": set(), "flash": {"block_q", "block_k"},
               "flash_decoding": {"block_q", "block_k", "splits"}}[kernel]
    if set(options) - allowed:
        raise ValueError(f"kernel {kernel!r} takes options {sorted(allowed)}, got {sorted(options)}")
    _check_blocks(options.get("block_q", 16), options.get("block_k", 16))
    splits = options.get("splits", 1)
    if isinstance(splits, bool) or not isinstance(splits, int) or splits < 1:
        raise ValueError(f"splits must be an integer >= 1 (chunks of the cache), got {splits!r}")
    fn = KERNELS[kernel]
    chosen: Kernel = partial(fn, **options) if options else fn
    for block in model.blocks:
        block.attn.kernel = chosen  # an instance attribute: the class default stays the plain `attention`
    return model
