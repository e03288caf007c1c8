"""Swap: a host-side block pool beside a `PagedKVCache`, and the copies of a sequence's blocks out and back.

When a serving engine runs out of KV blocks it can preempt a sequence by *swap* instead of recompute:
the blocks holding its S computed tokens are copied to host memory, its device blocks are freed, and
later it is copied back into whatever device blocks are free then (vLLM V0's `swap_space` CPU blocks
and its `blocks_to_swap_out` / `blocks_to_swap_in` maps). Only the block table changes: the copy keeps
the logical order (host block i holds logical block i), so after `swap_in` the sequence's K/V are
bit-identical to what it held before `swap_out`, on new physical blocks.

The host pool has the device pool's layout `[L, N_host, H_kv, block_size, d_h]` (pinned memory when the
device is a GPU, so copies can run asynchronously). MiniGPT copies synchronously; a GPU engine would
issue them on a copy stream so that they overlap the step's compute (`costs.step_time_with_swap`).
A shared device block (a prefix-cache or forked block) is copied like any other and comes back private.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from minigpt.runtime.paged_cache import BlockAllocator, OutOfBlocks, PagedKVCache


@dataclass
class SwappedSequence:
    """A sequence living on the host: its S tokens' blocks, in logical order (host block ids)."""

    blocks: list[int]
    S: int


class HostSwapPool:
    """`num_blocks` host blocks for the sequences of `pool` that are swapped out."""

    def __init__(self, pool: PagedKVCache, num_blocks: int) -> None:
        self.pool = pool
        self.allocator = BlockAllocator(num_blocks)
        L, _, H_kv, b, d_h = pool.k.shape  # [L, N, H_kv, b, d_h]
        pin = pool.device.type == "cuda"
        self.k = torch.zeros((L, num_blocks, H_kv, b, d_h), dtype=pool.dtype, pin_memory=pin)
        self.v = torch.zeros((L, num_blocks, H_kv, b, d_h), dtype=pool.dtype, pin_memory=pin)
        self.bytes_out = 0  # device -> host, over the pool's life
        self.bytes_in = 0  # host -> device

    def blocks_of(self, seq: int) -> int:
        """Blocks that hold `seq`'s written tokens: ⌈S/b⌉ (blocks reserved ahead of S are not copied)."""
        return -(-self.pool.length(seq) // self.pool.block_size)

    def can_swap_out(self, seq: int) -> bool:
        return self.blocks_of(seq) <= self.allocator.num_free

    def swap_out(self, seq: int) -> SwappedSequence:
        """Copy `seq`'s written blocks to the host, in logical order, and free the sequence on the device."""
        n, S = self.blocks_of(seq), self.pool.length(seq)
        if n > self.allocator.num_free:
            raise OutOfBlocks(f"swap space is full: sequence {seq} needs {n} host blocks, "
                              f"{self.allocator.num_free} of {self.allocator.num_blocks} are free")
        device_blocks = torch.tensor(self.pool.block_table(seq)[:n], dtype=torch.long, device=self.pool.device)
        host = [self.allocator.allocate() for _ in range(n)]
        host_blocks = torch.tensor(host, dtype=torch.long)
        self.k[:, host_blocks] = self.pool.k[:, device_blocks].to("cpu")
        self.v[:, host_blocks] = self.pool.v[:, device_blocks].to("cpu")
        self.pool.free_sequence(seq)
        self.bytes_out += n * self.pool.bytes_per_block
        return SwappedSequence(host, S)

    def swap_in(self, swapped: SwappedSequence) -> int:
        """A new device sequence holding `swapped`'s S tokens (fresh blocks, same logical order); frees the host
        blocks. `OutOfBlocks` (and nothing changed) when the device pool has too few free blocks."""
        n = len(swapped.blocks)
        if n > self.pool.allocator.num_free:
            raise OutOfBlocks(f"swap-in needs {n} free KV blocks, {self.pool.allocator.num_free} are free")
        seq = self.pool.add_sequence()
        self.pool.reserve([seq], swapped.S)
        device_blocks = torch.tensor(self.pool.block_table(seq), dtype=torch.long, device=self.pool.device)
        host_blocks = torch.tensor(swapped.blocks, dtype=torch.long)
        self.pool.k[:, device_blocks] = self.k[:, host_blocks].to(self.pool.device)
        self.pool.v[:, device_blocks] = self.v[:, host_blocks].to(self.pool.device)
        self.pool.advance([seq], swapped.S)
        self.discard(swapped)
        self.bytes_in += n * self.pool.bytes_per_block
        return seq

    def discard(self, swapped: SwappedSequence) -> None:
        """Free `swapped`'s host blocks (a swapped request that was cancelled, or one just swapped in)."""
        for block in swapped.blocks:
            self.allocator.release(block)
        swapped.blocks = []
