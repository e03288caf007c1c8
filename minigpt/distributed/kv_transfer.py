"""A request's KV cache out of one paged pool, over `torch.distributed` point-to-point, into another.

This is the KV connector of disaggregated serving (Chapter 19), reduced to its two halves:

- `export_kv(pool, seq, P)`: the first P tokens' keys and values of sequence `seq`, gathered from its
  blocks through the block table into one contiguous tensor `[2, L, H_kv, P, d_h]` (K then V). It holds
  exactly P·(Eq. 2.1's bytes per token): no padding of the last block travels.
- `import_kv(pool, kv)`: a new sequence in another pool, given ⌈P/b⌉ fresh blocks (any free ones: the
  block ids of the two pools have nothing in common), its K/V written through its block table
  (`scatter_kv`) and its length advanced to P.
- `send_kv` / `recv_kv`: a small int64 header (request, attempt, P, D, first token, element count) and
  the prompt's token ids, CPU tensors with `dist.send` / `dist.recv` on their own tags over gloo, then
  the K/V tensor, on the device, over the pair's own group (`group`: gloo on a CPU, NCCL on GPUs).
  A prefill worker calls `send_kv` from one sender thread per decode worker, a decode worker `recv_kv`
  from one receiver thread per prefill worker, so the transfer overlaps both engines' steps. The pair's
  group is used by exactly one thread on each side, in one order (header, ids, K/V on the control
  group, K/V alone on the pair's): NCCL ignores tags and one communicator must not be driven from two
  threads at once, and this needs neither. (A gloo `irecv` cannot be polled: `is_completed()` stays
  False until `wait()`, and a `wait` with a timeout closes the connection; a blocking receive in a
  thread is what works.)

vLLM's P2P NCCL connector sends a request's K/V layer by layer while the prefill runs; its NIXL
connector lets the decode instance read the prefill's blocks (RDMA) once they are done; SGLang and
Mooncake move whole pages with a transfer engine. MiniGPT sends once, after the prefill, from a
gathered copy: simpler, and the copy costs one extra pass over P tokens' K/V on each side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from minigpt.runtime.paged_cache import PagedKVCache

TAG_KV_HEADER, TAG_KV_PROMPT, TAG_KV = 20, 21, 22
HEADER = 6  # request index, attempt, P, max_new_tokens, first token, K/V elements


def export_kv(pool: PagedKVCache, seq: int, P: int) -> torch.Tensor:
    """Keys and values of the first P tokens of `seq`, contiguous: `[2, L, H_kv, P, d_h]`."""
    if isinstance(P, bool) or not isinstance(P, int) or not 1 <= P <= pool.length(seq):
        raise ValueError(f"P must be an integer in 1..{pool.length(seq)} (tokens held by sequence {seq}), got {P!r}")
    b = pool.block_size
    n = -(-P // b)
    table = torch.tensor(pool.block_table(seq)[:n], dtype=torch.long, device=pool.device)
    out = []
    for cache in (pool.k, pool.v):  # [L, N, H_kv, b, d_h]
        blocks = cache.index_select(1, table)  # [L, n, H_kv, b, d_h]
        L, _, H_kv, _, d_h = blocks.shape
        out.append(blocks.permute(0, 2, 1, 3, 4).reshape(L, H_kv, n * b, d_h)[:, :, :P])
    return torch.stack(out).contiguous()


def scatter_kv(k: torch.Tensor, v: torch.Tensor, table: Sequence[int], kv: torch.Tensor) -> None:
    """Write the P tokens of `kv` `[2, L, H_kv, P, d_h]` into the caches `k`, `v` `[L, N, H_kv, b, d_h]`, in
    place: token t of every layer and K/V head goes to row t % b of block `table[t // b]` (the first ⌈P/b⌉
    entries of `table`, in its order). The rows of the last block past P are not written: they hold whatever
    they held, and no query reads them."""
    if kv.dim() != 5 or kv.shape[0] != 2 or (kv.shape[1], kv.shape[2], kv.shape[4]) != (k.shape[0], k.shape[2],
                                                                                       k.shape[4]):
        raise ValueError(f"kv must be [2, L, H_kv, P, d_h] with the caches' L, H_kv and d_h "
                         f"{k.shape[0], k.shape[2], k.shape[4]}, got {tuple(kv.shape)}")
    P, b = kv.shape[3], k.shape[3]
    n = -(-P // b)
    if len(table) < n:
        raise ValueError(f"table has {len(table)} blocks; P={P} tokens of blocks of {b} need {n}")
    t = torch.arange(P, device=k.device)
    blocks = torch.as_tensor(list(table[:n]), dtype=torch.long, device=k.device)[t // b]  # [P]: token t's block
    for cache, part in zip((k, v), kv.to(device=k.device, dtype=k.dtype), strict=True):  # part [L, H_kv, P, d_h]
        cache[:, blocks, :, t % b] = part.permute(2, 0, 1, 3)  # the indexed dims come first: [P, L, H_kv, d_h]


def import_kv(pool: PagedKVCache, kv: torch.Tensor) -> int:
    """A new sequence of `pool` holding the P tokens of `kv` `[2, L, H_kv, P, d_h]`; returns its id.
    Raises `OutOfBlocks` (and changes nothing) when ⌈P/b⌉ blocks are not free."""
    c = pool.config
    if kv.dim() != 5 or kv.shape[0] != 2 or tuple(kv.shape[1:3]) != (c.L, c.H_kv) or kv.shape[4] != c.d_h:
        raise ValueError(f"kv must be [2, L={c.L}, H_kv={c.H_kv}, P, d_h={c.d_h}], got {tuple(kv.shape)}")
    P = kv.shape[3]
    seq = pool.add_sequence()
    try:
        pool.reserve([seq], P)
    except Exception:
        pool.free_sequence(seq)
        raise
    scatter_kv(pool.k, pool.v, pool.block_table(seq), kv)
    pool.advance([seq], P)
    return seq


@dataclass(frozen=True)
class Transfer:
    """One request's K/V as the decode side receives it."""

    index: int
    attempt: int
    prompt: list[int]
    max_new_tokens: int
    first: int
    kv: torch.Tensor  # [2, L, H_kv, P, d_h]

    @property
    def kv_bytes(self) -> int:
        return self.kv.numel() * self.kv.element_size()


def send_kv(dst: int, index: int, attempt: int, prompt: list[int], max_new_tokens: int, first: int,
            kv: torch.Tensor, group: Any = None, between: Callable[[], None] | None = None) -> tuple[int, int]:
    """Send a request's header and prompt ids (CPU, tagged) and its K/V (on `kv`'s device, over `group`) to
    rank `dst`; blocking: a prefill worker calls it from its sender thread for `dst`. `between` runs after
    the header, before the K/V (the tests' fault injection). Returns (K/V bytes, metadata bytes); raises if
    `dst` is gone."""
    header = torch.tensor([index, attempt, len(prompt), max_new_tokens, first, kv.numel()], dtype=torch.long)
    ids = torch.tensor(prompt, dtype=torch.long)
    dist.send(header, dst, tag=TAG_KV_HEADER)
    dist.send(ids, dst, tag=TAG_KV_PROMPT)
    if between is not None:
        between()
    dist.send(kv.contiguous(), dst, group=group, tag=0 if group is not None else TAG_KV)
    if kv.device.type == "cuda":  # the send is queued on a stream: done means done
        torch.cuda.current_stream(kv.device).synchronize()
    return kv.numel() * kv.element_size(), (header.numel() + ids.numel()) * 8


def send_bye(dst: int) -> None:
    """Tell `dst`'s receiver for this rank that no more K/V will come (a header with index −1)."""
    dist.send(torch.tensor([-1, 0, 0, 0, 0, 0], dtype=torch.long), dst, tag=TAG_KV_HEADER)


def recv_kv(src: int, shape: tuple[int, int, int, int], dtype: torch.dtype, device: torch.device | str = "cpu",
            group: Any = None, on_header: Callable[[], None] | None = None) -> Transfer | None:
    """Receive one request's K/V `[2, L, H_kv, P, d_h]` from rank `src` (blocking: a decode worker's
    receiver thread for `src` calls it); None when `src` says bye. `on_header` runs once the header is in,
    before the K/V (the tests' fault injection)."""
    header = torch.empty(HEADER, dtype=torch.long)
    dist.recv(header, src, tag=TAG_KV_HEADER)
    index, attempt, P, max_new, first, numel = (int(x) for x in header.tolist())
    if index < 0:
        return None
    two, L, H_kv, d_h = shape
    if numel != two * L * H_kv * P * d_h:
        raise ValueError(f"header from rank {src} announces {numel} K/V elements, expected 2·L·H_kv·P·d_h = "
                         f"{two * L * H_kv * P * d_h}")
    ids = torch.empty(P, dtype=torch.long)
    dist.recv(ids, src, tag=TAG_KV_PROMPT)
    if on_header is not None:
        on_header()
    kv = torch.empty((two, L, H_kv, P, d_h), dtype=dtype, device=device)
    dist.recv(kv, src, group=group, tag=0 if group is not None else TAG_KV)
    if kv.device.type == "cuda":
        torch.cuda.current_stream(kv.device).synchronize()
    return Transfer(index, attempt, ids.tolist(), max_new, first, kv)
