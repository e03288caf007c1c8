"""What the two sequence pools share (`PagedKVCache`, `SlotKVCache`): the K/V pool tensors, one length S_b per
live sequence, sequence ids, the ragged batch over them, and the fused step's writes by slot.

Both pools store a layer's keys as pages `[pages, H_kv, page_size, d_h]`: a paged cache's pages are its
blocks (`page_size` = block_size, a sequence's pages its block table), a slot cache's pages are its slots
(`page_size` = S_max, one page per sequence). Token p of a sequence lives at *slot* `pages[p // page_size]
· page_size + p % page_size`, so the fused forward (`minigpt.runtime.varlen`) writes new K/V by a slot
mapping, as vLLM's `reshape_and_cache` does, whatever the pool. The pools differ in where a token's key and
value live (`add_sequence`, `free_sequence`, `reserve`, `pages`) and in how attention reads them back
(`read_kv` for the fused step, `write_and_gather` for `MiniGPT.forward`'s padded ragged batch).
"""

from __future__ import annotations

import torch

from minigpt.config import ModelConfig
from minigpt.runtime.ragged import RaggedBatch


class SequencePoolBase:
    """The K/V pool tensors and the lengths of its live sequences; `batch(seqs)` is one forward's view."""

    def __init__(self, config: ModelConfig, shape: tuple[int, ...], dtype: torch.dtype,
                 device: torch.device | str) -> None:
        self.config = config
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self._lengths: dict[int, int] = {}  # S_b of every live sequence
        self._next_id = 0

    def _new_id(self, S: int = 0) -> int:
        seq = self._next_id
        self._next_id += 1
        self._lengths[seq] = S
        return seq

    @property
    def dtype(self) -> torch.dtype:
        return self.k.dtype

    @property
    def device(self) -> torch.device:
        return self.k.device

    @property
    def nbytes(self) -> int:
        """Bytes of the whole pool (allocated once, up front)."""
        return self.k.nbytes + self.v.nbytes

    @property
    def sequences(self) -> list[int]:
        return list(self._lengths)

    def length(self, seq: int) -> int:
        """S_b: tokens held for sequence `seq`."""
        self._check_seq(seq)
        return self._lengths[seq]

    def _check_seq(self, seq: int) -> None:
        if seq not in self._lengths:
            raise KeyError(f"no sequence {seq!r} in this cache; live sequences: {sorted(self._lengths)}")

    def batch(self, seqs: list[int]) -> RaggedBatch:
        """The cache as the model sees it for one forward over the sequences `seqs` (in this order)."""
        for seq in seqs:
            self._check_seq(seq)
        return RaggedBatch(self, seqs)

    def advance(self, seqs: list[int], T: int) -> None:
        """Mark T more tokens as written for each of `seqs` (after a forward wrote them)."""
        for seq in seqs:
            self._lengths[seq] += T

    # -- the fused step: writes by slot, reads by page ---------------------------------------------

    page_size: int  # tokens per page: block_size (paged), S_max (slots)

    def pages(self, seq: int) -> list[int]:
        """The pages that hold `seq`'s tokens, in order (its block table, or its one slot)."""
        raise NotImplementedError

    def slot_mapping(self, seq: int, start: int, T: int) -> list[int]:
        """The slots of tokens start..start+T−1 of `seq` (room reserved): page·page_size + row."""
        pages, b = self.pages(seq), self.page_size
        return [pages[p // b] * b + p % b for p in range(start, start + T)]

    def reshape_and_cache(self, layer: int, slot_mapping: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Write the new keys and values `[ΣT, H_kv, d_h]` of one layer at their slots `[ΣT]` (vLLM's name)."""
        b = self.page_size
        pages, rows = slot_mapping // b, slot_mapping % b
        self.k[layer][pages, :, rows] = k
        self.v[layer][pages, :, rows] = v

    def read_kv(self, layer: int, pages: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A sequence's first K keys and values of `layer`, as pages `[n, H_kv, b, d_h]` (rows past K unseen)."""
        raise NotImplementedError

    def reserve_each(self, seqs: list[int], Ts: list[int]) -> None:
        """Make room for T_b more tokens in each sequence b (a fused step's ragged chunks), all or nothing."""
        raise NotImplementedError
