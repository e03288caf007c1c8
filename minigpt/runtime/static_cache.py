"""The static KV cache: every shape fixed at S_max, positions as tensors, a mask instead of a slice.

`KVCache.update` returns the valid prefix `[:S+T]`, a Python-sized slice: its shape changes every
step, so a compiler must either recompile or guard on S. Here the position is a tensor `input_pos`,
the write is an `index_copy_` at those rows, and attention reads all S_max rows with a mask that
hides the rows not written yet (gpt-fast's layout). One step costs the same shapes at every S; the
price is that attention reads S_max rows, not S (Eq. (2.2) with S = S_max, the allocation).
"""

from __future__ import annotations

import torch
from torch import nn

from minigpt.config import ModelConfig
from minigpt.runtime.kv_cache import TokenCount


class StaticKVCache(TokenCount, nn.Module):
    """Keys and values as buffers `k<layer>`, `v<layer>` of shape `[B, H_kv, S_max, d_h]` (an nn.Module, so a
    compiled step and CUDA graphs see fixed addresses); `S` is tracked on the host, never read from the device."""

    _kind = "static KV cache"

    def __init__(
        self,
        config: ModelConfig,
        B: int = 1,
        *,
        S_max: int | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__()
        S_max = self._start(config, B, S_max, dtype)
        shape = (B, config.H_kv, S_max, config.d_h)
        for layer in range(config.L):
            self.register_buffer(f"k{layer}", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
            self.register_buffer(f"v{layer}", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("rows", torch.arange(S_max, device=device), persistent=False)  # [S_max]

    @property
    def dtype(self) -> torch.dtype:
        return self.k0.dtype

    @property
    def device(self) -> torch.device:
        return self.k0.device

    @property
    def nbytes(self) -> int:
        """Bytes allocated for keys and values, Eq. (2.2) with S = S_max (what each static step reads)."""
        return sum(b.nbytes for name, b in self.named_buffers() if name[0] in "kv")

    def layer(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The full `[B, H_kv, S_max, d_h]` key and value buffers of one layer."""
        return getattr(self, f"k{layer}"), getattr(self, f"v{layer}")

    def update(
        self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor, input_pos: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write `k_new`, `v_new` (`[B, H_kv, T, d_h]`) at rows `input_pos` (`[T]`); return all S_max rows."""
        k, v = self.layer(layer)
        k.index_copy_(2, input_pos, k_new)
        v.index_copy_(2, input_pos, v_new)
        return k, v

    def visible(self, input_pos: torch.Tensor) -> torch.Tensor:
        """`[1, T, S_max]`: the query at position p sees rows 0..p (causal; rows not written yet are hidden)."""
        return (self.rows.view(1, 1, -1) <= input_pos.view(1, -1, 1))

    def extra_repr(self) -> str:
        c = self.config
        return f"L={c.L}, B={self.B}, H_kv={c.H_kv}, S={self._S}/{self.S_max}, d_h={c.d_h}, dtype={self.dtype}"
