"""Measuring instead of predicting: FLOP counts, byte counts, timers and the machine's own roofline.

`count_flops` uses `torch.utils.flop_counter.FlopCounterMode`, which counts a multiply-add as 2 FLOPs
and counts matmuls only (no softmax, LayerNorm, GELU or bias adds): the convention of
`minigpt.costs`. The probes measure the two numbers of the roofline, Eq. (3.2), on the reader's
device: bandwidth (bytes/s) and peak matmul rate (FLOP/s).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

MiB = 1024**2


def default_device() -> torch.device:
    """The device the book's code runs on: cuda when present, else cpu; env var MINIGPT_DEVICE overrides."""
    requested = os.environ.get("MINIGPT_DEVICE", "").strip().lower()
    if requested:
        if requested not in ("cpu", "cuda"):
            raise ValueError(f"MINIGPT_DEVICE must be 'cpu' or 'cuda', got {requested!r}")
        if requested == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("MINIGPT_DEVICE=cuda but torch.cuda.is_available() is False")
        return torch.device(requested)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def sync(device: torch.device | str | None) -> None:
    """Wait for queued kernels on `device` (a no-op on CPU), so a timer measures finished work."""
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def count_flops(fn: Callable[[], Any]) -> int:
    """FLOPs of one call of `fn` as FlopCounterMode counts them (2 per multiply-add), for Eqs. (1.1)–(1.6)."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def count_flops_by_op(fn: Callable[[], Any]) -> dict[str, int]:
    """FLOPs of one call of `fn` per aten operator (e.g. {"aten.addmm": ..., "aten.bmm": ...})."""
    with FlopCounterMode(display=False) as counter:
        fn()
    totals: dict[str, int] = {}
    for op, flops in counter.get_flop_counts().get("Global", {}).items():
        name = str(op.overloadpacket) if hasattr(op, "overloadpacket") else str(op)
        totals[name] = totals.get(name, 0) + int(flops)
    return totals


@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds of repeated calls: the median (what the book reports), the minimum, all of them."""

    median_s: float
    min_s: float
    times: list[float]
    repeats: int


def time_fn(
    fn: Callable[[], Any], *, warmup: int = 3, repeats: int = 10, device: torch.device | str | None = None,
) -> Timing:
    """Time `fn` for Eq. (4.1)'s rates: `warmup` untimed calls, then `repeats` timed ones, synced on cuda."""
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    return Timing(median_s=statistics.median(times), min_s=min(times), times=times, repeats=repeats)


def probe_bandwidth(
    *, device: torch.device | str | None = None, nbytes: int | None = None, repeats: int = 5,
) -> float:
    """Measured memory bandwidth (bytes/s) for Eq. (3.2): copy an `nbytes` tensor, counting read + write.

    One copy moves 2·nbytes (each byte read once and written once); the median of `repeats` copies
    is used. Default size: 256 MiB on cuda (far above any L2), 64 MiB on cpu (keeps the probe
    short while staying well above typical CPU caches).
    """
    device = torch.device(device) if device is not None else default_device()
    if nbytes is None:
        nbytes = 256 * MiB if device.type == "cuda" else 64 * MiB
    if not isinstance(nbytes, int) or nbytes < 4:
        raise ValueError(f"nbytes must be an integer >= 4, got {nbytes!r}")
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    timing = time_fn(lambda: dst.copy_(src), warmup=2, repeats=repeats, device=device)
    return 2 * src.nbytes / timing.median_s


def probe_peak_flops(
    *, device: torch.device | str | None = None, dtype: torch.dtype | None = None, n: int | None = None,
    repeats: int = 5,
) -> float:
    """Measured matmul rate (FLOP/s) for Eq. (3.2): n×n @ n×n matmuls, 2·n³ FLOPs each, median of `repeats`.

    Defaults: bf16 and n = 4096 on cuda (tensor cores); fp32 and n = 512 on cpu.
    """
    device = torch.device(device) if device is not None else default_device()
    if dtype is None:
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if n is None:
        n = 4096 if device.type == "cuda" else 512
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    timing = time_fn(lambda: a @ b, warmup=2, repeats=repeats, device=device)
    return 2 * n**3 / timing.median_s


def tensor_bytes(*tensors: torch.Tensor) -> int:
    """Bytes held by the given tensors (numel · element size), the measured side of Eqs. (2.2) and (2.3)."""
    return sum(t.numel() * t.element_size() for t in tensors)


def module_bytes(module: torch.nn.Module) -> int:
    """Bytes of a module's parameters and buffers, measured side of Eq. (2.3); tied weights count once."""
    return tensor_bytes(*module.parameters(), *module.buffers())
