"""Ragged batches: B sequences of different lengths S_b in one forward, each with its own mask.

A sequence pool (`PagedKVCache`, `SlotKVCache`) stores many sequences; `pool.batch(seqs)` is a
`RaggedBatch`, the object the model reads and writes during one forward, with the interface of
`KVCache` plus `lengths` (S_b, `[B]`) and `visible(T)`. Query i of sequence b sits at position
S_b + i and sees keys 0..S_b + i of its own sequence: the offset causal mask, per sequence.
The pools differ only in where a token's key and value live (`write_and_gather`).
"""

from __future__ import annotations

from typing import Protocol

import torch

from minigpt.config import ModelConfig


class SequencePool(Protocol):
    """What a `RaggedBatch` needs from the cache that stores its sequences."""

    config: ModelConfig

    @property
    def dtype(self) -> torch.dtype: ...

    @property
    def device(self) -> torch.device: ...

    def length(self, seq: int) -> int: ...

    def reserve(self, seqs: list[int], T: int) -> None: ...

    def advance(self, seqs: list[int], T: int) -> None: ...

    def write_and_gather(
        self, layer: int, seqs: list[int], lengths: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]: ...


def visible_mask(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """`[B, T, max S_b + T]`: query i of sequence b sees key j iff j ≤ S_b + i (its own, earlier tokens)."""
    K = int(lengths.max()) + T
    i = torch.arange(T, device=lengths.device).view(1, T, 1)
    j = torch.arange(K, device=lengths.device).view(1, 1, K)
    return j <= lengths.view(-1, 1, 1) + i


class RaggedBatch:
    """B sequences of a pool for one forward: the `KVCache` interface with per-sequence lengths S_b."""

    def __init__(self, pool: SequencePool, seqs: list[int]) -> None:
        if not seqs:
            raise ValueError("a batch needs at least one sequence")
        if len(set(seqs)) != len(seqs):
            raise ValueError(f"a sequence may appear once per batch, got {seqs}")
        self.pool = pool
        self.seqs = list(seqs)
        self.config = pool.config
        self.B = len(seqs)
        self.lengths = torch.tensor([pool.length(s) for s in seqs], dtype=torch.long, device=pool.device)
        self._visible: tuple[int, torch.Tensor] | None = None

    @property
    def dtype(self) -> torch.dtype:
        return self.pool.dtype

    @property
    def device(self) -> torch.device:
        return self.pool.device

    @property
    def S(self) -> int:
        """The longest sequence's length, max S_b (what the position table must hold)."""
        return int(self.lengths.max())

    def check_room(self, T: int) -> None:
        """Reserve room for T more tokens per sequence, all or nothing (the pool says why not)."""
        self.pool.reserve(self.seqs, T)

    def visible(self, T: int) -> torch.Tensor:
        """`visible_mask` for the next T tokens of every sequence, `[B, T, max S_b + T]`."""
        if self._visible is None or self._visible[0] != T:
            self._visible = (T, visible_mask(self.lengths, T))
        return self._visible[1]

    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write `k_new`, `v_new` ([B, H_kv, T, d_h]) at rows S_b..S_b+T−1 of each sequence; return each
        sequence's keys and values, `[B, H_kv, max S_b + T, d_h]` (slots past S_b + T are masked)."""
        return self.pool.write_and_gather(layer, self.seqs, self.lengths, k_new, v_new)

    def advance(self, T: int) -> None:
        """Mark T more tokens as written for every sequence of the batch."""
        self.pool.advance(self.seqs, T)
        self.lengths = self.lengths + T
        self._visible = None
