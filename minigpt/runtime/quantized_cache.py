"""Quantized KV caches: keys and values stored as int8 (one scale per vector) or int4 (one scale per
group of values), dequantized when attention reads them. Same interface as `KVCache`.

Three layouts (Chapter 10):

- per token (`key_axis="token"`, the default): each stored d_h-vector (or group of it) has its own
  scale, for keys and values alike;
- keys per channel (`key_axis="channel"`, KIVI, Liu et al. 2024): a key scale per channel over each
  block of `token_group` tokens, values still per token. Keys have outlier *channels* (a few of the
  d_h coordinates are large in every token), so a per-token scale is set by the outlier and crushes
  the other channels; a per-channel scale isolates it. A block is quantized once it is full; until
  then its tokens stay in the model's dtype (KIVI's full-precision residual);
- `FP8KVCache`: FP8 E4M3 (`torch.float8_e4m3fn`) with one scale per layer for keys and one for
  values, set from the first write as vLLM's `--kv-cache-dtype fp8` does (max|k|/200, max|v|/100).

Symmetric absmax quantization: a vector (or group) x is stored as q = round(x / scale)
with scale = max|x| / q_max (q_max = 127 for int8, 7 for int4) and read back as q·scale; the error
per value is at most scale / 2. Scales are fp16 (2 bytes each). int4 packs two values per byte.
Bytes of the allocation, scales included, are `costs.quantized_kv_bytes`.
"""

from __future__ import annotations

import torch

from minigpt.config import ModelConfig
from minigpt.costs.kv_storage import kivi_kv_bytes, quantized_kv_bytes
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
    return _pack(codes, bits), scales


def _unpack(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """The integer codes as floats `[..., d_h]` (int4: two per byte, offset binary)."""
    if bits == 8:
        return codes.float()
    low = (codes & 0x0F).to(torch.int16) - 8
    high = (codes >> 4).to(torch.int16) - 8
    return torch.stack([low, high], dim=-1).flatten(-2).float()


def _pack(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Rounded codes in [-q_max, q_max] `[..., d_h]` as stored: int8, or two offset-binary nibbles per uint8."""
    if bits == 8:
        return codes.to(torch.int8)
    nibbles = (codes.to(torch.int16) + 8).to(torch.uint8)  # 1..15: offset binary
    return nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)


def dequantize(codes: torch.Tensor, scales: torch.Tensor, *, bits: int, group_size: int,
               dtype: torch.dtype) -> torch.Tensor:
    """Inverse of `quantize`: codes·scale per group, in `dtype`, shape `[..., d_h]`."""
    groups = _unpack(codes, bits).unflatten(-1, (-1, group_size)) * scales.float().unsqueeze(-1)
    return groups.flatten(-2).to(dtype)


def quantize_per_channel(x: torch.Tensor, *, bits: int, token_group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """KIVI's key layout: x `[..., T, d_h]` with T a multiple of `token_group` → (codes, scales), one absmax scale
    per channel and block of `token_group` tokens: scales fp16 `[..., T/token_group, d_h]`, codes as `quantize`
    stores them (int8 `[..., T, d_h]`, int4 two per byte `[..., T, d_h/2]`)."""
    q_max = 2 ** (bits - 1) - 1
    T = x.shape[-2]
    if T % token_group:
        raise ValueError(f"the tokens T={T} must fill whole blocks of token_group={token_group}")
    blocks = x.float().unflatten(-2, (-1, token_group))  # [..., T/G, G, d_h]
    scales = (blocks.abs().amax(dim=-2) / q_max).to(SCALE_DTYPE)  # [..., T/G, d_h]: per channel, per block
    safe = scales.float().clamp_min(torch.finfo(SCALE_DTYPE).tiny).unsqueeze(-2)
    codes = torch.round(blocks / safe).clamp_(-q_max, q_max).flatten(-3, -2)  # [..., T, d_h]
    return _pack(codes, bits), scales


def dequantize_per_channel(codes: torch.Tensor, scales: torch.Tensor, *, bits: int, token_group: int,
                           dtype: torch.dtype) -> torch.Tensor:
    """Inverse of `quantize_per_channel`: `[..., T, d_h]` in `dtype`."""
    blocks = _unpack(codes, bits).unflatten(-2, (-1, token_group)) * scales.float().unsqueeze(-2)
    return blocks.flatten(-3, -2).to(dtype)


KEY_AXES = ("token", "channel")
FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = 448.0  # the largest finite E4M3 value
FP8_RANGE = {"k": 200.0, "v": 100.0}  # vLLM's K_SCALE_CONSTANT and V_SCALE_CONSTANT: scale = max|x| / range


class QuantizedKVCache(KVCache):
    """`KVCache` whose rows are stored as int8 or int4 codes plus fp16 scales, `[L, B, H_kv, S_max, ·]`.

    `update` quantizes the new rows and returns the valid prefix dequantized to `dtype` (the model's
    dtype), so the model runs unchanged. `nbytes` is the storage really allocated (codes + scales),
    `costs.quantized_kv_bytes` with S = S_max. int8 uses one scale per stored vector (per token, per head:
    group_size = d_h); int4 groups of `group_size` values (default 32, or d_h if smaller).

    `key_axis="channel"` stores keys as KIVI does: one scale per channel over each block of `token_group`
    tokens (`quantize_per_channel`), the block's tokens kept in `dtype` until it is full (`k_residual`,
    `[L, B, H_kv, token_group, d_h]`); values stay per token. Its bytes are `costs.kivi_kv_bytes`.
    """

    def __init__(
        self,
        config: ModelConfig,
        B: int = 1,
        *,
        bits: int = 8,
        group_size: int | None = None,
        key_axis: str = "token",
        token_group: int = 16,
        S_max: int | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        if group_size is None:
            group_size = config.d_h if bits == 8 else min(32, config.d_h)
        if key_axis not in KEY_AXES:
            raise ValueError(f"key_axis must be one of {KEY_AXES}, got {key_axis!r}")
        # The formulas check bits, group_size and token_group (and name them in their errors) before anything
        # is allocated.
        quantized_kv_bytes(L=config.L, H_kv=config.H_kv, d_h=config.d_h, S=1, bits=bits, group_size=group_size)
        kivi_kv_bytes(L=config.L, H_kv=config.H_kv, d_h=config.d_h, S=1, bits=bits, group_size=group_size,
                      token_group=token_group)
        self.bits = bits
        self.group_size = group_size
        self.key_axis = key_axis
        self.token_group = token_group
        super().__init__(config, B, S_max=S_max, dtype=dtype, device=device)

    def _allocate(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> None:
        *lead, d_h = shape  # [L, B, H_kv, S_max]
        code_shape = (*lead, d_h if self.bits == 8 else d_h // 2)
        code_dtype = torch.int8 if self.bits == 8 else torch.uint8
        scale_shape = (*lead, d_h // self.group_size)
        self.v = torch.zeros(code_shape, dtype=code_dtype, device=device)
        self.v_scale = torch.zeros(scale_shape, dtype=SCALE_DTYPE, device=device)
        if self.key_axis == "token":
            self.k = torch.zeros(code_shape, dtype=code_dtype, device=device)
            self.k_scale = torch.zeros(scale_shape, dtype=SCALE_DTYPE, device=device)
            return
        *outer, S_max = lead
        G = self.token_group
        blocks = S_max // G  # whole blocks; the tokens past the last one stay in the residual
        self.k = torch.zeros((*outer, blocks * G, code_shape[-1]), dtype=code_dtype, device=device)
        self.k_scale = torch.zeros((*outer, blocks, d_h), dtype=SCALE_DTYPE, device=device)
        self.k_residual = torch.zeros((*outer, G, d_h), dtype=dtype, device=device)

    @property
    def s(self) -> float:
        """Bytes per stored value, scales (and KIVI's residual) included: allocated bytes / values."""
        c = self.config
        return self.nbytes / (2 * c.L * self.B * c.H_kv * self.S_max * c.d_h)

    @property
    def nbytes(self) -> int:
        """Bytes allocated: codes and fp16 scales of keys and values (`costs.quantized_kv_bytes` at S = S_max),
        and KIVI's residual block of keys."""
        residual = self.k_residual.nbytes if self.key_axis == "channel" else 0
        return self.k.nbytes + self.v.nbytes + self.k_scale.nbytes + self.v_scale.nbytes + residual

    @property
    def bytes_used(self) -> int:
        """Bytes holding the S real tokens, counted on the tensors: `costs.quantized_kv_bytes` at the current S
        (`costs.kivi_kv_bytes` with keys per channel)."""
        S = self._S
        used = self.v[:, :, :, :S].nbytes + self.v_scale[:, :, :, :S].nbytes
        if self.key_axis == "token":
            return used + self.k[:, :, :, :S].nbytes + self.k_scale[:, :, :, :S].nbytes
        G = self.token_group
        base = S // G * G
        return (used + self.k[:, :, :, :base].nbytes + self.k_scale[:, :, :, : base // G].nbytes
                + self.k_residual[:, :, :, : S - base].nbytes)

    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Quantize `k_new`, `v_new` ([B, H_kv, T, d_h]) into rows [S, S+T); return the dequantized prefix."""
        T, S = k_new.shape[2], self._S
        opts = {"bits": self.bits, "group_size": self.group_size}
        stores = [(self.v, self.v_scale, v_new)] + ([(self.k, self.k_scale, k_new)] if self.key_axis == "token"
                                                     else [])
        for codes, scales, new in stores:
            q, sc = quantize(new, **opts)
            codes[layer, :, :, S : S + T] = q
            scales[layer, :, :, S : S + T] = sc
        v = dequantize(self.v[layer, :, :, : S + T], self.v_scale[layer, :, :, : S + T], dtype=self.dtype, **opts)
        if self.key_axis == "channel":
            return self._update_keys_per_channel(layer, k_new), v
        k = dequantize(self.k[layer, :, :, : S + T], self.k_scale[layer, :, :, : S + T], dtype=self.dtype, **opts)
        return k, v  # [B, H_kv, S+T, d_h]

    def _update_keys_per_channel(self, layer: int, k_new: torch.Tensor) -> torch.Tensor:
        """Append keys to the residual block; quantize every block that fills (per channel); return all keys."""
        G, S = self.token_group, self._S
        base = S // G * G  # tokens already quantized; rows [base, S) are in the residual
        keys = torch.cat([self.k_residual[layer, :, :, : S - base], k_new.to(self.dtype)], dim=2)
        full = keys.shape[2] // G * G
        if full:
            codes, scales = quantize_per_channel(keys[:, :, :full], bits=self.bits, token_group=G)
            self.k[layer, :, :, base : base + full] = codes
            self.k_scale[layer, :, :, base // G : (base + full) // G] = scales
        rest = keys[:, :, full:]
        self.k_residual[layer, :, :, : rest.shape[2]] = rest
        end = base + full
        stored = dequantize_per_channel(self.k[layer, :, :, :end], self.k_scale[layer, :, :, : end // G],
                                        bits=self.bits, token_group=G, dtype=self.dtype)
        return torch.cat([stored, rest], dim=2)

    def truncate(self, S: int) -> None:
        """Keep the first S tokens; with per-channel keys, a cut inside a quantized block moves its kept tokens
        (dequantized: what was stored) back into the residual, to be re-quantized when the block fills again."""
        G, old = self.token_group, self._S
        super().truncate(S)
        if self.key_axis == "channel" and S < old // G * G and S % G:
            start = S // G * G
            self.k_residual[:, :, :, : S - start] = dequantize_per_channel(
                self.k[:, :, :, start : start + G], self.k_scale[:, :, :, start // G : start // G + 1],
                bits=self.bits, token_group=G, dtype=self.dtype)[:, :, :, : S - start]

    def __repr__(self) -> str:
        c = self.config
        keys = "" if self.key_axis == "token" else f", keys per channel in blocks of {self.token_group}"
        return (
            f"QuantizedKVCache(int{self.bits}, group_size={self.group_size}{keys}, L={c.L}, B={self.B}, "
            f"H_kv={c.H_kv}, S={self._S}/{self.S_max}, d_h={c.d_h}, dtype={self.dtype}, nbytes={self.nbytes})"
        )


class FP8KVCache(KVCache):
    """`KVCache` stored as FP8 E4M3 (`torch.float8_e4m3fn`, 1 byte a value) with one fp32 scale per layer for the
    keys and one for the values, as vLLM's `--kv-cache-dtype fp8`: the scales are set from the layer's first write
    (max|k|/200, max|v|/100, vLLM's `calc_kv_scales`) and kept; x is stored as clamp(x/scale, ±448) in E4M3 (3
    mantissa bits: a relative error of at most 2^-4 for normal values) and read back as fp8·scale. Bytes:
    `costs.fp8_kv_bytes`."""

    def _allocate(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> None:
        self.k = torch.zeros(shape, dtype=FP8_DTYPE, device=device)
        self.v = torch.zeros(shape, dtype=FP8_DTYPE, device=device)
        self.k_scale = torch.zeros(shape[0], dtype=torch.float32, device=device)  # [L]; 0: not set yet
        self.v_scale = torch.zeros(shape[0], dtype=torch.float32, device=device)

    @property
    def nbytes(self) -> int:
        """Bytes allocated: 1 per value and the 2·L fp32 scales, `costs.fp8_kv_bytes` at S = S_max."""
        return self.k.nbytes + self.v.nbytes + self.k_scale.nbytes + self.v_scale.nbytes

    @property
    def bytes_used(self) -> int:
        """Bytes holding the S real tokens and the scales, counted on the tensors: `costs.fp8_kv_bytes`."""
        S = self._S
        return self.k[:, :, :, :S].nbytes + self.v[:, :, :, :S].nbytes + self.k_scale.nbytes + self.v_scale.nbytes

    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        T, S = k_new.shape[2], self._S
        out = []
        for name, store, scale, new in (("k", self.k, self.k_scale, k_new), ("v", self.v, self.v_scale, v_new)):
            if scale[layer] == 0:  # the first write of this layer sets its scale (vLLM: calculate_kv_scales)
                amax = new.detach().abs().max().float() / FP8_RANGE[name]
                scale[layer] = amax.clamp_min(torch.finfo(torch.float32).tiny)
            store[layer, :, :, S : S + T] = (new.float() / scale[layer]).clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE)
            out.append((store[layer, :, :, : S + T].float() * scale[layer]).to(self.dtype))
        return out[0], out[1]

    def __repr__(self) -> str:
        c = self.config
        return (f"FP8KVCache(e4m3, L={c.L}, B={self.B}, H_kv={c.H_kv}, S={self._S}/{self.S_max}, d_h={c.d_h}, "
                f"dtype={self.dtype}, nbytes={self.nbytes})")
