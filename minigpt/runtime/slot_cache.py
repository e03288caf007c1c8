"""A contiguous sequence pool: each sequence gets one slot of S_max rows, reserved when it starts.

This is the preallocated layout of `KVCache` (`[L, slots, H_kv, S_max, d_h]`) with a length per
sequence, so a batch can be ragged: the reference that `PagedKVCache` must equal exactly, and the
"reserve the maximum length" policy whose waste the paged cache removes.
"""

from __future__ import annotations

import torch

from minigpt.config import ModelConfig
from minigpt.runtime.paged_cache import OutOfBlocks
from minigpt.runtime.sequence_pool import SequencePoolBase


class SlotKVCache(SequencePoolBase):
    """`slots` sequences of up to `S_max` tokens each, stored contiguously; ragged batches over them."""

    def __init__(
        self,
        config: ModelConfig,
        *,
        slots: int,
        S_max: int | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ValueError(f"slots must be a positive integer, got {slots!r}")
        S_max = config.S_max if S_max is None else S_max
        if isinstance(S_max, bool) or not isinstance(S_max, int) or not 0 < S_max <= config.S_max:
            raise ValueError(f"S_max must be an integer in 1..{config.S_max}, got {S_max!r}")
        self.S_max = self.page_size = S_max  # a slot is one page of S_max rows
        shape = (config.L, slots, config.H_kv, S_max, config.d_h)  # [L, slots, H_kv, S_max, d_h]
        super().__init__(config, shape, dtype, device)
        self._free = list(range(slots - 1, -1, -1))
        self._slot: dict[int, int] = {}

    @property
    def bytes_reserved(self) -> int:
        """Bytes of the slots in use: S_max tokens each, however many they hold."""
        return self.nbytes * len(self._slot) // self.k.shape[1]

    @property
    def tokens_held(self) -> int:
        return sum(self._lengths.values())

    def add_sequence(self) -> int:
        """A new, empty sequence in a free slot; `OutOfBlocks` when every slot is taken."""
        if not self._free:
            raise OutOfBlocks(f"all {self.k.shape[1]} slots of S_max={self.S_max} tokens are in use")
        seq = self._new_id()
        self._slot[seq] = self._free.pop()
        return seq

    def free_sequence(self, seq: int) -> None:
        self._check_seq(seq)
        self._free.append(self._slot.pop(seq))
        del self._lengths[seq]

    def pages(self, seq: int) -> list[int]:
        """The one slot of `seq` (its only page)."""
        return [self._slot[seq]]

    def read_kv(self, layer: int, pages: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The first K rows of the slot `pages[0]` of `layer`: a view `[1, H_kv, K, d_h]`, no copy."""
        slot = int(pages[0])
        return self.k[layer, slot, :, :K].unsqueeze(0), self.v[layer, slot, :, :K].unsqueeze(0)

    def reserve_each(self, seqs: list[int], Ts: list[int]) -> None:
        """Check that T_b more tokens fit each sequence's slot (nothing to allocate)."""
        for seq, T in zip(seqs, Ts, strict=True):
            self.reserve([seq], T)

    def reserve(self, seqs: list[int], T: int) -> None:
        """Check that T more tokens fit every slot (the room was reserved when the sequence started)."""
        for seq in seqs:
            if self.length(seq) + T > self.S_max:
                raise ValueError(
                    f"KV cache overflow: sequence {seq} holds {self._lengths[seq]} tokens and {T} more were "
                    f"written, but its slot holds S_max={self.S_max}"
                )

    def write_and_gather(
        self, layer: int, seqs: list[int], lengths: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new rows into each sequence's slot; return the slots' first max S_b + T rows."""
        B, H_kv, T, d_h = k_new.shape
        K = int(lengths.max()) + T
        slots = torch.tensor([self._slot[s] for s in seqs], dtype=torch.long, device=self.device)
        p = lengths.view(B, 1) + torch.arange(T, device=self.device)  # [B, T]
        rows = slots.view(B, 1).expand(B, T)
        self.k[layer][rows, :, p] = k_new.transpose(1, 2)  # [B, T, H_kv, d_h]
        self.v[layer][rows, :, p] = v_new.transpose(1, 2)
        # Contiguous, so that attention's matmuls see the same memory layout whatever the pool.
        return self.k[layer, slots, :, :K].contiguous(), self.v[layer, slots, :, :K].contiguous()  # [B, H_kv, K, d_h]
