"""Worker functions for `launch.run` (Chapter 20, its tests and `scripts/sweeps/sweep_tp.py`): each runs on
one rank of a W-rank group, `fn(rank, W, ...)`, and returns plain data: arrays come back as numpy
arrays, because a torch tensor crosses `launch`'s queue as a shared-memory handle that dies with the
worker that made it.

They live in a module, not in a notebook, because `launch` starts workers as fresh processes (forked
from its forkserver) that import the function by name.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from minigpt.distributed.collectives import Collectives
from minigpt.distributed.tensor_parallel import TensorParallelMiniGPT


def device_of(rank: int) -> torch.device:
    """Where this rank computes: its own GPU under NCCL (rank r on cuda:r), the CPU under gloo."""
    if dist.is_initialized() and dist.get_backend() == "nccl":
        torch.cuda.set_device(rank % torch.cuda.device_count())
        return torch.device("cuda", rank % torch.cuda.device_count())
    return torch.device("cpu")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":  # a GPU runs asynchronously: wait before reading the clock
        torch.cuda.synchronize(device)


def _sharded(rank: int, W: int, name: str) -> TensorParallelMiniGPT:
    from minigpt.runtime.checkpoint import load_pretrained

    # every rank loads the checkpoint, keeps its shard
    model = load_pretrained(name=name).model.to(device_of(rank))
    return TensorParallelMiniGPT(model, Collectives(rank, W))


def decode_logits(rank: int, W: int, name: str, prompt: torch.Tensor, steps: int) -> dict:
    """Prefill `prompt` [B, P], then `steps` greedy decode steps on the sharded model.

    Returns (rank 0's logits only, to keep the pickles small) the logits of every forward, the
    tokens chosen, the collectives recorded per forward, and this rank's cache bytes."""
    tp = _sharded(rank, W, name)
    cache = tp.new_cache(prompt.shape[0], S_max=prompt.shape[1] + steps)
    logits, tokens, records = [], [], []
    x = prompt.to(device_of(rank))
    for _ in range(steps + 1):
        tp.comm.reset()
        out = tp(x, cache)  # [B, T, V], the same on every rank
        records.append(list(tp.comm.record))
        x = out[:, -1].argmax(dim=-1, keepdim=True)
        logits.append(out.cpu().numpy() if rank == 0 else None)
        tokens.append(x.cpu().numpy())
    # the same choice from (max, index) pairs alone: the last step's local slice
    v = tp.local.V
    shard = out[:, -1, rank * v:(rank + 1) * v]
    tp.comm.reset()
    pair_token = tp.greedy_token(shard)
    return dict(logits=logits, tokens=tokens, records=records, cache_bytes=cache.nbytes,
                pair_token=pair_token.cpu().numpy(), pair_record=list(tp.comm.record))


def time_all_reduce(rank: int, W: int, sizes: list[int], repeats: int, inner: int) -> dict:
    """Seconds per all-reduce of `n` fp32 values for each n in `sizes`: `repeats` blocks of `inner`
    calls between barriers, sizes interleaved (every size once per repeat, in turn)."""
    times: dict[int, list[float]] = {n: [] for n in sizes}
    device = device_of(rank)
    bufs = {n: torch.ones(n, dtype=torch.float32, device=device) for n in sizes}
    for n in sizes:  # warm-up: the first collective of a size sets up buffers
        dist.all_reduce(bufs[n])
    for _ in range(repeats):
        for n in sizes:
            dist.barrier()
            start = time.perf_counter()
            for _ in range(inner):
                dist.all_reduce(bufs[n])
            _sync(device)
            times[n].append((time.perf_counter() - start) / inner)
    return times


def time_decode(rank: int, W: int, name: str, B: int, P: int, steps: int, repeats: int) -> dict:
    """Seconds per decode step of the sharded model (W=1: the same code, no collective), after a
    prefill of P tokens; `repeats` blocks of `steps` steps, the cache rewound between blocks."""
    torch.manual_seed(0)
    tp = _sharded(rank, W, name)
    device = device_of(rank)
    prompt = torch.randint(0, tp.config.V, (B, P)).to(device)
    cache = tp.new_cache(B, S_max=P + steps)
    tp(prompt, cache)
    token = torch.zeros(B, 1, dtype=torch.long, device=device)
    times = []
    for _ in range(repeats + 1):  # the first block warms up
        cache.truncate(P)
        if W > 1:
            dist.barrier()
        start = time.perf_counter()
        for _ in range(steps):
            tp(token, cache)
        _sync(device)
        times.append((time.perf_counter() - start) / steps)
    tp.comm.reset()
    cache.truncate(P)
    tp(token, cache)
    return dict(times=times[1:], record=list(tp.comm.record))


def measure_round(rank: int, W: int, name: str, B: int, P: int, steps: int, repeats: int,
                  sizes: list[int], inner: int) -> dict:
    """One round of `scripts/sweeps/sweep_tp.py` in one launch: decode steps timed (`time_decode`), then,
    for W > 1, all-reduces of each size (`time_all_reduce`) and small ones after a compute gap."""
    out = time_decode(rank, W, name, B, P, steps, repeats)
    if W > 1:
        out["all_reduce"] = time_all_reduce(rank, W, sizes, repeats, inner)
        out["gaps"] = time_all_reduce_with_gaps(rank, W, 64, list(GAPS_S), 4 * inner)
    return out


#: Compute (spin) before each all-reduce in `time_all_reduce_with_gaps`: none, and about what a
#: MiniGPT decode step computes between two of its collectives on this book's CPU.
GAPS_S = (0.0, 2e-4)


def load_config(name: str):
    """The config of a shipped checkpoint (the parent process's view, without sharding)."""
    from minigpt.runtime.checkpoint import load_pretrained

    return load_pretrained(name=name).config


def time_all_reduce_with_gaps(rank: int, W: int, n: int, gaps_s: list[float], calls: int) -> dict:
    """Seconds per all-reduce of `n` fp32 values when each rank first computes (spins) for `gap` seconds
    before every call, as a decode step computes between its collectives; the gap itself subtracted."""
    device = device_of(rank)
    buf = torch.ones(n, dtype=torch.float32, device=device)
    dist.all_reduce(buf)
    out: dict[float, list[float]] = {g: [] for g in gaps_s}
    for _ in range(3):  # rounds, the gaps interleaved
        for gap in gaps_s:
            dist.barrier()
            start = time.perf_counter()
            for _ in range(calls):
                until = time.perf_counter() + gap
                while time.perf_counter() < until:
                    pass
                dist.all_reduce(buf)
            _sync(device)
            out[gap].append((time.perf_counter() - start) / calls - gap)
    return out
