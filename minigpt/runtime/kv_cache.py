"""The KV cache: a preallocated object the caller owns, one slab per layer for keys and values."""

from __future__ import annotations

import torch

from minigpt.config import ModelConfig


def check_cache_args(config: ModelConfig, B: int, S_max: int | None, dtype: torch.dtype) -> int:
    """Validate a cache's B, S_max (None: the model's) and dtype; return S_max."""
    if not isinstance(B, int) or isinstance(B, bool) or B <= 0:
        raise ValueError(f"B must be a positive integer (sequences in the batch), got {B!r}")
    S_max = config.S_max if S_max is None else S_max
    if not isinstance(S_max, int) or isinstance(S_max, bool) or not 0 < S_max <= config.S_max:
        raise ValueError(
            f"S_max must be an integer in 1..{config.S_max} (the model's position table), got {S_max!r}"
        )
    if not torch.is_floating_point(torch.empty((), dtype=dtype)):
        raise ValueError(f"dtype must be a floating-point dtype, got {dtype}")
    return S_max


class TokenCount:
    """The host-side count S of the tokens a cache holds, out of `S_max`: room checks, advance, rewind, reset.

    Shared by `KVCache` and `minigpt.runtime.static_cache.StaticKVCache`; `_kind` names the cache in errors.
    """

    _S: int
    S_max: int
    _kind = "KV cache"

    def _start(self, config: ModelConfig, B: int, S_max: int | None, dtype: torch.dtype) -> int:
        """Validate and record the shape (config, B, S_max; None: the model's), holding no token; return S_max."""
        S_max = check_cache_args(config, B, S_max, dtype)
        self.config, self.B, self.S_max, self._S = config, B, S_max, 0
        return S_max

    @property
    def S(self) -> int:
        """Tokens held (a host-side count, the same for every layer between forwards: the device is never asked)."""
        return self._S

    def check_room(self, T: int) -> None:
        """Raise a clear error if T more tokens would not fit."""
        if self._S + T > self.S_max:
            raise ValueError(
                f"{self._kind} overflow: it holds S={self._S} tokens and {T} more were written, "
                f"but S_max is {self.S_max}; allocate a larger cache or generate fewer tokens"
            )

    def advance(self, T: int) -> None:
        """Mark T more tokens as written (called by the model after its last layer)."""
        self.check_room(T)
        self._S += T

    def truncate(self, S: int) -> None:
        """Keep only the first S tokens (rewind: later rows are overwritten, or masked, until the next write)."""
        if not isinstance(S, int) or isinstance(S, bool) or not 0 <= S <= self._S:
            raise ValueError(f"S must be an integer in 0..{self._S} (the tokens held), got {S!r}")
        self._S = S

    def reset(self) -> None:
        """Forget every token (the memory stays allocated)."""
        self._S = 0


class KVCache(TokenCount):
    """Keys and values of every token seen so far, preallocated as `[L, B, H_kv, S_max, d_h]`.

    The cache is the state that connects prefill and decode (Chapter 1, Chapter 6). A forward pass
    over T new tokens writes rows `[S, S+T)` of every layer and then advances `S`; attention reads
    only the valid prefix `[0, S+T)`, so its cost follows the real S, not `S_max`.
    `nbytes` equals Eq. (2.2): 2·L·B·H_kv·S_max·d_h·s for the allocation (`bytes_used` for S tokens).
    """

    def __init__(
        self,
        config: ModelConfig,
        B: int = 1,
        *,
        S_max: int | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        S_max = self._start(config, B, S_max, dtype)
        self._dtype = dtype
        self._allocate((config.L, B, config.H_kv, S_max, config.d_h), dtype, torch.device(device))

    def _allocate(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> None:
        """The storage: keys and values as two `[L, B, H_kv, S_max, d_h]` tensors of `dtype`."""
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the keys and values attention reads (the model's dtype)."""
        return self._dtype

    @property
    def device(self) -> torch.device:
        return self.k.device

    @property
    def s(self) -> int:
        """Bytes per stored value."""
        return self.k.element_size()

    @property
    def nbytes(self) -> int:
        """Bytes allocated for keys and values, Eq. (2.2) with S = S_max."""
        return self.k.nbytes + self.v.nbytes

    @property
    def bytes_used(self) -> int:
        """Bytes holding real tokens, Eq. (2.2) with the current S."""
        return 2 * self.config.L * self.B * self.config.H_kv * self._S * self.config.d_h * self.s

    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write `k_new`, `v_new` ([B, H_kv, T, d_h]) at rows [S, S+T) of `layer`; return the valid prefix.

        The returned views are `[B, H_kv, S+T, d_h]`. `S` itself advances only in `advance()`, once
        every layer has written, so all layers of one forward pass see the same S. The caller checks
        the room first (`check_room(T)`; `MiniGPT.forward` does, once per forward, before any write).
        """
        T = k_new.shape[2]
        self.k[layer, :, :, self._S : self._S + T] = k_new
        self.v[layer, :, :, self._S : self._S + T] = v_new
        return self.k[layer, :, :, : self._S + T], self.v[layer, :, :, : self._S + T]

    def visible(self, T: int) -> torch.Tensor | None:
        """Which keys each of the next T queries may see, `[B, T, S+T]`; None: all sequences hold S tokens,
        so the plain causal mask applies (ragged caches such as the paged one return a mask)."""
        return None

    def __repr__(self) -> str:
        c = self.config
        return (
            f"KVCache(L={c.L}, B={self.B}, H_kv={c.H_kv}, S={self._S}/{self.S_max}, d_h={c.d_h}, "
            f"dtype={self.dtype}, nbytes={self.nbytes})"
        )
