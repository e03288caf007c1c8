"""The two numbers of the roofline, Eq. (3.2), measured on the reader's device: memory bandwidth
(bytes/s, a large copy) and peak matmul rate (FLOP/s)."""

from __future__ import annotations

from pathlib import Path

import torch

from minigpt.measure.timing import Clock, default_device, time_fn

MiB = 1024**2


def largest_cache_bytes() -> int:
    """Size of this machine's largest CPU cache (bytes, from Linux sysfs), 0 where it cannot be read."""
    sizes = []
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=0)


def probe_buffer_bytes(device: torch.device) -> int:
    """Bytes the bandwidth probe copies: 256 MiB on cuda; on cpu 64 MiB or 8× the largest cache, whichever is more.

    The copy must miss the caches, or it measures cache bandwidth: a CPU with a 96 MiB L3 needs more
    than the 64 MiB that suffice for most.
    """
    if device.type == "cuda":
        return 256 * MiB
    return max(64 * MiB, 8 * largest_cache_bytes())


def probe_bandwidth(
    *, device: torch.device | str | None = None, nbytes: int | None = None, repeats: int = 5, clock: Clock = "wall",
) -> float:
    """Measured memory bandwidth (bytes/s) for Eq. (3.2): copy an `nbytes` tensor, counting read + write.

    One copy moves 2·nbytes (each byte read once and written once); the best of `repeats` copies is
    kept (other processes can only slow a probe down). Default size: `probe_buffer_bytes`.
    """
    device = torch.device(device) if device is not None else default_device()
    if nbytes is None:
        nbytes = probe_buffer_bytes(device)
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 4:
        raise ValueError(f"nbytes must be an integer >= 4, got {nbytes!r}")
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    timing = time_fn(lambda: dst.copy_(src), warmup=2, repeats=repeats, device=device, clock=clock)
    return 2 * src.nbytes / timing.min_s


def probe_peak_flops(
    *, device: torch.device | str | None = None, dtype: torch.dtype | None = None, n: int | None = None,
    repeats: int = 5, clock: Clock = "wall",
) -> float:
    """Measured matmul rate (FLOP/s) for Eq. (3.2): n×n @ n×n matmuls, 2·n³ FLOPs each, best of `repeats`.

    Defaults: bf16 and n = 4096 on cuda (tensor cores); fp32 and n = 512 on cpu.
    """
    device = torch.device(device) if device is not None else default_device()
    if dtype is None:
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if n is None:
        n = 4096 if device.type == "cuda" else 512
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    timing = time_fn(lambda: a @ b, warmup=2, repeats=repeats, device=device, clock=clock)
    return 2 * n**3 / timing.min_s


def probe(
    *, device: torch.device | str | None = None, dtype: torch.dtype | None = None, rounds: int = 3,
    clock: Clock = "wall",
) -> dict[str, float]:
    """Both numbers of the roofline, Eq. (3.2), best of `rounds`·5 calls each, rounded to 4 digits."""
    bandwidth = probe_bandwidth(device=device, repeats=5 * rounds, clock=clock)
    peak = probe_peak_flops(device=device, dtype=dtype, repeats=5 * rounds, clock=clock)
    return {"bandwidth": float(f"{bandwidth:.4g}"), "peak_flops": float(f"{peak:.4g}")}
