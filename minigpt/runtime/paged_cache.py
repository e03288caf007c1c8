"""A paged KV cache (PagedAttention): a pool of fixed-size blocks, a block table per sequence, and
ragged batches in which each sequence has its own length S_b.

The pool holds keys and values as `[L, num_blocks, H_kv, block_size, d_h]`. A sequence owns the
blocks listed in its block table, in order: token p of the sequence lives in block
`table[p // block_size]` at row `p % block_size`. Memory is reserved one block at a time, so a
sequence of S tokens wastes at most block_size − 1 slots (`costs.paged_slack_tokens`) instead of
the S_max − S of a preallocated cache. Blocks are reference-counted: `fork` gives a new sequence
the same blocks (n samples of one prompt share the prompt), and the first write into a shared
block copies it (copy-on-write).

The model sees a `RaggedBatch` (from `cache.batch(seq_ids)`), which has the interface of `KVCache`
plus `lengths` and `visible`: attention gathers each sequence's keys and values through its block
table and masks the slots a sequence does not own.
"""

from __future__ import annotations

import torch

from minigpt.config import ModelConfig
from minigpt.runtime.sequence_pool import SequencePoolBase


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


class OutOfBlocks(ValueError):
    """The pool has too few free blocks for a request; nothing was allocated."""


class BlockAllocator:
    """A pool of `num_blocks` block ids with reference counts: allocate, share (incref), release."""

    def __init__(self, num_blocks: int) -> None:
        self.num_blocks = _positive_int("num_blocks", num_blocks)
        self._free = list(range(num_blocks - 1, -1, -1))  # a stack: the lowest id comes out first
        self._refs = [0] * num_blocks

    @property
    def num_free(self) -> int:
        return len(self._free)

    @property
    def num_used(self) -> int:
        return self.num_blocks - len(self._free)

    def refcount(self, block: int) -> int:
        return self._refs[block]

    def allocate(self) -> int:
        """A free block with reference count 1, or `OutOfBlocks`."""
        if not self._free:
            raise OutOfBlocks(f"the KV pool is full: all {self.num_blocks} blocks are in use")
        block = self._free.pop()
        self._refs[block] = 1
        return block

    def incref(self, block: int) -> None:
        if self._refs[block] < 1:
            raise ValueError(f"block {block} is free; only a used block can be shared")
        self._refs[block] += 1

    def release(self, block: int) -> None:
        """Drop one reference; the block returns to the pool when none is left."""
        if self._refs[block] < 1:
            raise ValueError(f"block {block} is already free")
        self._refs[block] -= 1
        if self._refs[block] == 0:
            self._free.append(block)


class PagedKVCache(SequencePoolBase):
    """A block pool shared by many sequences, each with its own block table and length."""

    def __init__(
        self,
        config: ModelConfig,
        *,
        num_blocks: int,
        block_size: int = 16,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        self.block_size = self.page_size = _positive_int("block_size", block_size)
        self.allocator = BlockAllocator(num_blocks)
        shape = (config.L, num_blocks, config.H_kv, block_size, config.d_h)  # [L, N, H_kv, b, d_h]
        super().__init__(config, shape, dtype, device)
        self._tables: dict[int, list[int]] = {}

    # -- sequences -------------------------------------------------------------------------------

    def add_sequence(self) -> int:
        """A new, empty sequence; returns its id (no block is reserved until it holds a token)."""
        seq = self._new_id()
        self._tables[seq] = []
        return seq

    def fork(self, seq: int) -> int:
        """A new sequence that shares every block of `seq` (copy-on-write on the first divergent write)."""
        self._check_seq(seq)
        child = self.add_sequence()
        for block in self._tables[seq]:
            self.allocator.incref(block)
        self._tables[child] = list(self._tables[seq])
        self._lengths[child] = self._lengths[seq]
        return child

    def add_sequence_from(self, blocks: list[int], S: int) -> int:
        """A new sequence whose first S tokens are the used `blocks`, shared (a prefix-cache hit)."""
        b = self.block_size
        if isinstance(S, bool) or not isinstance(S, int) or S < 0:
            raise ValueError(f"S must be a non-negative integer, got {S!r}")
        if len(blocks) != -(-S // b):
            raise ValueError(
                f"{S} tokens fill {-(-S // b)} blocks of {b}, but {len(blocks)} blocks were given"
            )
        for block in blocks:
            if not isinstance(block, int) or not 0 <= block < self.allocator.num_blocks:
                raise ValueError(f"block ids must be integers in 0..{self.allocator.num_blocks - 1}, got {block!r}")
            if self.allocator.refcount(block) < 1:
                raise ValueError(f"block {block} is free; a sequence can only start from used blocks")
        seq = self.add_sequence()
        for block in blocks:
            self.allocator.incref(block)
        self._tables[seq], self._lengths[seq] = list(blocks), S
        return seq

    def free_sequence(self, seq: int) -> None:
        """Forget `seq` and release its blocks (shared ones stay with their other owners)."""
        self._check_seq(seq)
        for block in self._tables.pop(seq):
            self.allocator.release(block)
        del self._lengths[seq]

    def block_table(self, seq: int) -> list[int]:
        self._check_seq(seq)
        return list(self._tables[seq])

    def pages(self, seq: int) -> list[int]:
        """The block table of `seq` (its pages, for the slot mapping)."""
        return self._tables[seq]

    def read_kv(self, layer: int, pages: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The blocks `pages` (a block table's first ⌈K/b⌉ entries) of `layer`, read through the table:
        `[n, H_kv, b, d_h]`, n·b keys for K (at most b − 1 of them past K, never visible)."""
        return self.k[layer].index_select(0, pages), self.v[layer].index_select(0, pages)  # a row gather

    # -- memory ----------------------------------------------------------------------------------

    @property
    def bytes_per_block(self) -> int:
        """Keys and values of block_size tokens across all layers: b·(Eq. 2.1's bytes per token)."""
        return 2 * self.config.L * self.config.H_kv * self.block_size * self.config.d_h * self.k.element_size()

    @property
    def bytes_reserved(self) -> int:
        """Bytes of the blocks in use (a shared block counts once)."""
        return self.allocator.num_used * self.bytes_per_block

    @property
    def tokens_held(self) -> int:
        """Token slots holding real tokens: each block's filled rows, a shared block counted once."""
        filled: dict[int, int] = {}
        for seq, table in self._tables.items():
            S = self._lengths[seq]
            for i, block in enumerate(table):
                filled[block] = max(filled.get(block, 0), min(self.block_size, S - i * self.block_size))
        return sum(filled.values())

    def blocks_needed(self, seq: int, T: int) -> int:
        """Blocks that T more tokens of `seq` need: new blocks, plus a copy if the last one is shared."""
        S, table, b = self._lengths[seq], self._tables[seq], self.block_size
        new = -(-(S + T) // b) - len(table)
        copy = 1 if S % b and self.allocator.refcount(table[-1]) > 1 else 0
        return new + copy

    def _copies_spared(self, seqs: list[int]) -> int:
        """Copies `blocks_needed` counts that `reserve` will not make: when every owner of a shared, partly
        filled last block writes in this batch, the last of them finds it unshared and writes in place."""
        b, writers = self.block_size, {}
        for seq in seqs:
            S, table = self._lengths[seq], self._tables[seq]
            if S % b and self.allocator.refcount(table[-1]) > 1:
                writers[table[-1]] = writers.get(table[-1], 0) + 1
        return sum(1 for block, k in writers.items() if k == self.allocator.refcount(block))

    def reserve(self, seqs: list[int], T: int) -> None:
        """Make room for T more tokens in each of `seqs`, all or nothing: new blocks, copy-on-write."""
        for seq in seqs:
            self._check_seq(seq)
        needed = sum(self.blocks_needed(seq, T) for seq in seqs) - self._copies_spared(seqs)
        if needed > self.allocator.num_free:
            raise OutOfBlocks(
                f"{T} more tokens for {len(seqs)} sequences need {needed} free KV blocks but only "
                f"{self.allocator.num_free} of {self.allocator.num_blocks} are free"
            )
        b = self.block_size
        for seq in seqs:
            S, table = self._lengths[seq], self._tables[seq]
            if S % b and self.allocator.refcount(table[-1]) > 1:  # copy-on-write of the shared last block
                old, new = table[-1], self.allocator.allocate()
                self.k[:, new] = self.k[:, old]
                self.v[:, new] = self.v[:, old]
                self.allocator.release(old)
                table[-1] = new
            while len(table) * b < S + T:
                table.append(self.allocator.allocate())

    def reserve_each(self, seqs: list[int], Ts: list[int]) -> None:
        """Room for T_b more tokens in each sequence b, all or nothing: the blocks needed are counted first (a
        copy-on-write counted for every co-owner, a bound), then each sequence reserves its own."""
        for seq in seqs:
            self._check_seq(seq)
        needed = sum(self.blocks_needed(seq, T) for seq, T in zip(seqs, Ts, strict=True))
        if needed > self.allocator.num_free:
            raise OutOfBlocks(
                f"{sum(Ts)} more tokens for {len(seqs)} sequences need {needed} free KV blocks but only "
                f"{self.allocator.num_free} of {self.allocator.num_blocks} are free"
            )
        for seq, T in zip(seqs, Ts, strict=True):
            self.reserve([seq], T)

    def _padded_tables(self, seqs: list[int], K: int) -> torch.Tensor:
        """Block tables padded to the blocks of K tokens, `[B, ⌈K/b⌉]` (padding: block 0, never visible)."""
        n = -(-K // self.block_size)
        rows = [(self._tables[s] + [0] * n)[:n] for s in seqs]
        return torch.tensor(rows, dtype=torch.long, device=self.device)

    def write_and_gather(
        self, layer: int, seqs: list[int], lengths: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new rows through the block tables; gather every sequence's keys and values, padded.

        Token p of a sequence is row p % b of block table[p // b]; the result is `[B, H_kv, max S_b + T, d_h]`, a
        fresh copy of B·(max S_b + T) positions whatever the S_b: the path of `MiniGPT.forward` on a ragged batch
        (equal T). The engine's fused step reads each sequence's own blocks instead (`read_kv`).
        """
        B, H_kv, T, d_h = k_new.shape
        K = int(lengths.max()) + T
        tables = self._padded_tables(seqs, K)  # [B, ⌈K/b⌉]
        p = lengths.view(B, 1) + torch.arange(T, device=self.device)  # [B, T] positions written
        blocks, rows = tables.gather(1, p // self.block_size), p % self.block_size
        pool_k, pool_v = self.k[layer], self.v[layer]  # [N, H_kv, b, d_h]
        pool_k[blocks, :, rows] = k_new.transpose(1, 2)  # [B, T, H_kv, d_h]
        pool_v[blocks, :, rows] = v_new.transpose(1, 2)
        n = tables.shape[1]
        k = pool_k.index_select(0, tables.flatten()).view(B, n, H_kv, self.block_size, d_h)  # [B, n, H_kv, b, d_h]
        v = pool_v.index_select(0, tables.flatten()).view(B, n, H_kv, self.block_size, d_h)
        k = k.permute(0, 2, 1, 3, 4).reshape(B, H_kv, -1, d_h)[:, :, :K]  # [B, H_kv, K, d_h]
        v = v.permute(0, 2, 1, 3, 4).reshape(B, H_kv, -1, d_h)[:, :, :K]
        # Contiguous, so that attention's matmuls see the same memory layout whatever the pool.
        return k.contiguous(), v.contiguous()

    def __repr__(self) -> str:
        c = self.config
        return (
            f"PagedKVCache(L={c.L}, H_kv={c.H_kv}, d_h={c.d_h}, block_size={self.block_size}, "
            f"blocks {self.allocator.num_used}/{self.allocator.num_blocks} used, {len(self._tables)} sequences)"
        )
