"""What the two sequence pools share (`PagedKVCache`, `SlotKVCache`): the K/V pool tensors, one length S_b per
live sequence, sequence ids, and the ragged batch over them. The pools differ in where a token's key and
value live: their own `add_sequence`, `free_sequence`, `reserve` and `write_and_gather`.
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
