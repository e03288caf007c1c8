"""Attention kernels beside the plain one of `minigpt.runtime.model`: tiled (FlashAttention) and split-S decode
(Flash-Decoding), and `use_attention` to make a MiniGPT call one of them."""

from minigpt.runtime.attention.flash import flash_attention
from minigpt.runtime.attention.flash_decoding import combine_chunks, flash_decode
from minigpt.runtime.attention.select import KERNELS, use_attention

__all__ = ["KERNELS", "combine_chunks", "flash_attention", "flash_decode", "use_attention"]
