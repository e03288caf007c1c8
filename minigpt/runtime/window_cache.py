"""A cache that stops growing: a sliding window of W tokens in a ring buffer (Mistral 7B) with k attention
sinks kept forever (StreamingLLM, Xiao et al. 2023). Same interface as `KVCache`.

Storage `[L, B, H_kv, k + W, d_h]`: slots 0..k-1 hold the first k tokens (the sinks), slots k..k+W-1 a ring
where the token at position t ≥ k goes to slot k + (t - k) mod W, overwriting the token at t - W. A query at
t sees the sinks and the window (t - W, t] (itself included): at most k + W keys, so a decode step reads
min(t + 1, k + W) tokens' K and V, Eq. (3.5) with S → min(S, k + W) (`costs.bounded_decode_step_bytes`).

A decode step (T = 1) writes its K/V into its slot first and attends over the filled slots (Mistral's rolling
buffer: attention does not care about the slots' order). A chunk (T > 1) attends over the held slots and the
T new tokens with a mask built from each slot's position (a sink, or inside the query's window), then
stores the tokens it keeps.

Positions. MiniGPT's positions are learned and added to the input, so a token's position is baked into its
cached K and V in every layer; they cannot be re-indexed later, as StreamingLLM re-rotates RoPE keys by
their slot in the cache. Two policies:

- `positions="absolute"`: token t gets position t, as in the full model; generation must stay within
  S_max, and the window reproduces the full model with a sliding-window mask exactly (tests/test_window_cache.py);
- `positions="cache"` (StreamingLLM's rule, re-index within the cache): a new token gets the position of
  its place in the cache, min(t, k + W - 1), so positions never pass k + W - 1 and generation runs past
  S_max. The keys already cached keep the positions they were written with. A chunk (T > 1) must start
  from an empty cache and fit in k + W tokens (prompts longer than that go in as decode steps).
"""

from __future__ import annotations

import torch

from minigpt.config import ModelConfig
from minigpt.runtime.kv_cache import check_cache_args

POSITIONS = ("absolute", "cache")


class WindowKVCache:
    """`window` recent tokens in a ring buffer plus the first `sinks` tokens, `[L, B, H_kv, sinks + window, d_h]`.

    `S` is the number of earlier tokens a new query sees in the cache with `positions="cache"`
    (min(t, k + W - 1)) and the absolute count t with `positions="absolute"`; `t` is always the absolute count.
    `bytes_read` is the K/V bytes the last forward's attention read, summed over layers (measured on the
    tensors `update` returned), `bytes_used` the bytes of the tokens held.
    """

    _kind = "window cache"

    def __init__(self, config: ModelConfig, B: int = 1, *, window: int, sinks: int = 0,
                 positions: str = "absolute", dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu") -> None:
        check_cache_args(config, B, None, dtype)
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive integer (tokens in the ring), got {window!r}")
        if isinstance(sinks, bool) or not isinstance(sinks, int) or sinks < 0:
            raise ValueError(f"sinks must be an integer >= 0 (first tokens kept forever), got {sinks!r}")
        if positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}, got {positions!r}")
        if positions == "cache" and sinks + window > config.S_max:
            raise ValueError(f"sinks + window must be at most S_max={config.S_max} with positions='cache' "
                             f"(the positions a cache of sinks + window tokens gives), got {sinks + window}")
        self.config, self.B, self.window, self.sinks, self.positions = config, B, window, sinks, positions
        self.capacity = sinks + window
        self.S_max = config.S_max if positions == "absolute" else None  # None: no limit on the stream
        shape = (config.L, B, config.H_kv, self.capacity, config.d_h)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.slot_pos = torch.full((self.capacity,), -1, dtype=torch.long, device=device)  # -1: empty
        self.t = 0
        self.bytes_read = 0

    @property
    def dtype(self) -> torch.dtype:
        return self.k.dtype

    @property
    def device(self) -> torch.device:
        return self.k.device

    @property
    def S(self) -> int:
        """Tokens before the next one: the absolute count t, or (positions="cache") those it sees, min(t, k + W - 1)."""
        return self.t if self.positions == "absolute" else min(self.t, self.capacity - 1)

    @property
    def held(self) -> int:
        """Tokens in the cache: min(t, k + W)."""
        return min(self.t, self.capacity)

    @property
    def lengths(self) -> torch.Tensor:
        """The first new token's position, per sequence (read by `MiniGPT.forward` when `visible` is a mask)."""
        return torch.full((self.B,), self.S, dtype=torch.long, device=self.device)

    @property
    def nbytes(self) -> int:
        """Bytes allocated: 2·L·B·H_kv·(k + W)·d_h·s, whatever the stream's length."""
        return self.k.nbytes + self.v.nbytes

    @property
    def bytes_used(self) -> int:
        """Bytes of the tokens held, `costs.streaming_kv_cache_bytes` at S = t."""
        return self.k[:, :, :, : self.held].nbytes + self.v[:, :, :, : self.held].nbytes

    def slot_of(self, t: int) -> int:
        """Where the token at absolute position t lives: t for a sink, k + (t - k) mod W otherwise."""
        return t if t < self.sinks else self.sinks + (t - self.sinks) % self.window

    def check_room(self, T: int) -> None:
        """A ring always has room; a chunk with positions="cache" must start empty and fit k + W tokens."""
        if self.positions == "cache" and T > 1 and (self.t > 0 or T > self.capacity):
            raise ValueError(f"with positions='cache' a chunk of T={T} > 1 tokens must start from an empty "
                             f"cache and fit sinks + window = {self.capacity} tokens (it holds t={self.t}); feed "
                             "the rest one token at a time")

    def _visible_keys(self, T: int) -> torch.Tensor:
        """`[T, held + T]`: held slot j (position slot_pos[j]) or new token m, for query i at t + i."""
        t_q = self.t + torch.arange(T, device=self.device).view(T, 1)
        pos = torch.cat([self.slot_pos[: self.held], self.t + torch.arange(T, device=self.device)]).view(1, -1)
        causal = pos <= t_q
        in_window = (pos > t_q - self.window) | (pos < self.sinks)
        return causal & in_window & (pos >= 0)

    def visible(self, T: int) -> torch.Tensor | None:
        """`[1, T, keys]` for a chunk; for a decode step, None with positions="cache" (every filled slot is in the
        window) and an all-True mask with positions="absolute" (so the model places the token at t)."""
        if T > 1:
            return self._visible_keys(T).unsqueeze(0)
        if self.positions == "cache":
            return None
        return torch.ones((1, 1, min(self.t + 1, self.capacity)), dtype=torch.bool, device=self.device)

    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Decode: write into the token's slot, return the filled slots. Chunk: return held slots + new tokens,
        then store the new tokens that stay (the sinks among them and the last W)."""
        T = k_new.shape[2]
        if T == 1:
            slot = self.slot_of(self.t)
            self.k[layer, :, :, slot] = k_new[:, :, 0]
            self.v[layer, :, :, slot] = v_new[:, :, 0]
            n = min(self.t + 1, self.capacity)
            k, v = self.k[layer, :, :, :n], self.v[layer, :, :, :n]
        else:
            k = torch.cat([self.k[layer, :, :, : self.held], k_new], dim=2)
            v = torch.cat([self.v[layer, :, :, : self.held], v_new], dim=2)
            keep, slots = self._kept(T)
            self.k[layer, :, :, slots] = k_new[:, :, keep]
            self.v[layer, :, :, slots] = v_new[:, :, keep]
        self.bytes_read += k.nbytes + v.nbytes
        return k, v

    def _kept(self, T: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Indices (within a chunk of T at t) of the tokens that stay after it, and their slots."""
        end = self.t + T
        keep = [i for i in range(T) if self.t + i < self.sinks or self.t + i >= end - self.window]
        slots = [self.slot_of(self.t + i) for i in keep]
        return (torch.tensor(keep, dtype=torch.long, device=self.device),
                torch.tensor(slots, dtype=torch.long, device=self.device))

    def advance(self, T: int) -> None:
        """Record the T tokens' positions in their slots and move t on (after the last layer)."""
        if T == 1:
            self.slot_pos[self.slot_of(self.t)] = self.t
        else:
            keep, slots = self._kept(T)
            self.slot_pos[slots] = self.t + keep
        self.t += T

    def reset(self) -> None:
        self.t, self.bytes_read = 0, 0
        self.slot_pos.fill_(-1)

    def __repr__(self) -> str:
        c = self.config
        return (f"WindowKVCache(window={self.window}, sinks={self.sinks}, positions={self.positions!r}, L={c.L}, "
                f"B={self.B}, H_kv={c.H_kv}, t={self.t}, held={self.held}/{self.capacity}, d_h={c.d_h}, "
                f"dtype={self.dtype})")
