"""A quantized KV cache: keys and values stored as int8 (one scale per vector) or int4 (one scale per
group of values), dequantized when attention reads them. Same interface as `KVCache`.

Symmetric absmax quantization: a vector (or group) x is stored as q = round(x / scale)
with scale = max|x| / q_max (q_max = 127 for int8, 7 for int4) and read back as q·scale; the error
per value is at most scale / 2. Scales are fp16 (2 bytes each). int4 packs two values per byte.
Bytes of the allocation, scales included, are `costs.quantized_kv_bytes`.
"""

from __future__ import annotations

import torch

from minigpt.config import ModelConfig
from minigpt.costs.kv_storage import quantized_kv_bytes
from minigpt.runtime.kv_cache import KVCache

SCALE_DTYPE = torch.float16


def quantize(x: torch.Tensor, *, bits: int, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Absmax quantization: x `[..., d_h]` → (codes, scales). int8: codes int8 `[..., d_h]`; int4: two codes per
    uint8 byte `[..., d_h/2]`. Scales fp16 `[..., d_h/group_size]`, one per group of `group_size` values
    (a group whose scale falls below fp16's smallest normal number, 2^-14, loses relative precision)."""
    q_max = 2 ** (bits - 1) - 1
    groups = x.float().unflatten(-1, (-1, group_size))  # [..., d_h/g, g]
    scales = (groups.abs().amax(dim=-1) / q_max).to(SCALE_DTYPE)  # [..., d_h/g]
    safe = scales.float().clamp_min(torch.finfo(SCALE_DTYPE).tiny).unsqueeze(-1)
    codes = torch.round(groups / safe).clamp_(-q_max, q_max).flatten(-2)  # [..., d_h]
    if bits == 8:
        return codes.to(torch.int8), scales
    nibbles = (codes.to(torch.int16) + 8).to(torch.uint8)  # 1..15: offset binary
    return nibbles[..., 0::2] | (nibbles[..., 1::2] << 4), scales


def dequantize(codes: torch.Tensor, scales: torch.Tensor, *, bits: int, group_size: int,
               dtype: torch.dtype) -> torch.Tensor:
    """Inverse of `quantize`: codes·scale per group, in `dtype`, shape `[..., d_h]`."""
    if bits == 8:
        values = codes.float()
    else:
        low = (codes & 0x0F).to(torch.int16) - 8
        high = (codes >> 4).to(torch.int16) - 8
        values = torch.stack([low, high], dim=-1).flatten(-2).float()
    groups = values.unflatten(-1, (-1, group_size)) * scales.float().unsqueeze(-1)
    return groups.flatten(-2).to(dtype)


class QuantizedKVCache(KVCache):
    """`KVCache` whose rows are stored as int8 or int4 codes plus fp16 scales, `[L, B, H_kv, S_max, ·]`.

    `update` quantizes the new rows and returns the valid prefix dequantized to `dtype` (the model's
    dtype), so the model runs unchanged. `nbytes` is the storage really allocated (codes + scales),
    `costs.quantized_kv_bytes` with S = S_max. int8 uses one scale per stored vector (per token, per head:
    group_size = d_h); int4 groups of `group_size` values (default 32, or d_h if smaller).
    """

    def __init__(
        self,
        config: ModelConfig,
        B: int = 1,
        *,
        bits: int = 8,
        group_size: int | None = None,
        S_max: int | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        if group_size is None:
            group_size = config.d_h if bits == 8 else min(32, config.d_h)
        # The formula checks bits and group_size (and names them in its errors) before anything is allocated.
        quantized_kv_bytes(L=config.L, H_kv=config.H_kv, d_h=config.d_h, S=1, bits=bits, group_size=group_size)
        self.bits = bits
        self.group_size = group_size
        super().__init__(config, B, S_max=S_max, dtype=dtype, device=device)

    def _allocate(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> None:
        *lead, d_h = shape  # [L, B, H_kv, S_max]
        code_shape = (*lead, d_h if self.bits == 8 else d_h // 2)
        code_dtype = torch.int8 if self.bits == 8 else torch.uint8
        scale_shape = (*lead, d_h // self.group_size)
        self.k = torch.zeros(code_shape, dtype=code_dtype, device=device)
        self.v = torch.zeros(code_shape, dtype=code_dtype, device=device)
        self.k_scale = torch.zeros(scale_shape, dtype=SCALE_DTYPE, device=device)
        self.v_scale = torch.zeros(scale_shape, dtype=SCALE_DTYPE, device=device)

    @property
    def s(self) -> float:
        """Bytes per stored value, scales included: (codes + scales) / values."""
        return self.nbytes / (2 * self.k_scale.numel() * self.group_size)

    @property
    def nbytes(self) -> int:
        """Bytes allocated: codes and fp16 scales of keys and values, `costs.quantized_kv_bytes` at S = S_max."""
        return self.k.nbytes + self.v.nbytes + self.k_scale.nbytes + self.v_scale.nbytes

    @property
    def bytes_used(self) -> int:
        """Bytes holding real tokens, `costs.quantized_kv_bytes` at the current S."""
        return self.nbytes * self._S // self.S_max

    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Quantize `k_new`, `v_new` ([B, H_kv, T, d_h]) into rows [S, S+T); return the dequantized prefix."""
        T, S = k_new.shape[2], self._S
        opts = {"bits": self.bits, "group_size": self.group_size}
        for codes, scales, new in ((self.k, self.k_scale, k_new), (self.v, self.v_scale, v_new)):
            q, sc = quantize(new, **opts)
            codes[layer, :, :, S : S + T] = q
            scales[layer, :, :, S : S + T] = sc
        k = dequantize(self.k[layer, :, :, : S + T], self.k_scale[layer, :, :, : S + T], dtype=self.dtype, **opts)
        v = dequantize(self.v[layer, :, :, : S + T], self.v_scale[layer, :, :, : S + T], dtype=self.dtype, **opts)
        return k, v  # [B, H_kv, S+T, d_h]

    def __repr__(self) -> str:
        c = self.config
        return (
            f"QuantizedKVCache(int{self.bits}, group_size={self.group_size}, L={c.L}, B={self.B}, H_kv={c.H_kv}, "
            f"S={self._S}/{self.S_max}, d_h={c.d_h}, dtype={self.dtype}, nbytes={self.nbytes})"
        )
