"""The FlashAttention and Flash-Decoding sweeps: what the tiled kernels save, measured on one device.

1. Peak memory of one causal attention over a prompt of P tokens, against P, for three paths: the plain
   attention of `minigpt.runtime.model` (the [B, H, P, P] scores materialised), torch's fused
   `scaled_dot_product_attention(is_causal=True)` and the package's torch tiles (`flash_attention`). On CPU
   the figure is process memory: the rise of the peak resident set (VmHWM, reset through
   /proc/self/clear_refs) over the resident set before the call, each point in a fresh process with glibc's
   mmap threshold fixed so freed buffers go back to the system. On cuda: torch.cuda.max_memory_allocated
   over the allocation before the call.
2. One decode step's attention (B = 1) against S: plain against Flash-Decoding with `splits` chunks, timed
   at each thread count of --decode-threads (default 1 on cpu: on a shared machine a second thread measures
   the machine's load), with the quartiles of the repeats; the occupancy model's prediction
   (`costs.flash_decoding_speedup`) with the threads (cpu) or the SMs (cuda) as the parallel units.

Writes minigpt/measure/data/flash_<device>.json.

    python scripts/sweeps/sweep_flash.py --threads 1 --clock thread   # the book's CPU data
    python scripts/sweeps/sweep_flash.py --device cuda           # an H100/H200: max_memory_allocated, SM count
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from minigpt import costs, measure
from minigpt.measure import sweeps
from minigpt.runtime.attention import flash_attention, flash_decode
from minigpt.runtime.model import attention, causal_visible

PATHS = ("plain", "sdpa", "tiles")
H, d_h = 4, 64  # one layer's attention, B = 1


def _rss_kib(field: str) -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", status, re.M).group(1))


def run_path(path: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block: int) -> torch.Tensor:
    """One causal attention over the prompt by `path`."""
    if path == "plain":
        return attention(q, k, v, causal_visible(0, q.shape[2], q.device))
    if path == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return flash_attention(q, k, v, causal=True, block_q=block, block_k=block)


def child(path: str, P: int, device: str, dtype: str, block: int) -> dict:
    """Measure one point in this (fresh) process: peak bytes above what was allocated before, and the time."""
    dev, dt = torch.device(device), sweeps.DTYPES[dtype]
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, H, P, d_h, generator=g).to(dev, dt) for _ in range(3))
    run_path(path, q[:, :, :8], k[:, :, :8], v[:, :, :8], block)  # load the kernels before measuring
    if dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = run_path(path, q, k, v, block)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - before
    else:
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident set to the current one
        before = _rss_kib("VmRSS")
        out = run_path(path, q, k, v, block)
        peak = (_rss_kib("VmHWM") - before) * 1024
    timing = measure.time_fn(lambda: run_path(path, q, k, v, block), warmup=1, repeats=3, device=dev)
    return {"path": path, "P": P, "peak_bytes": int(peak), "out_bytes": out.nbytes, "seconds": timing.median_s}


def memory_sweep(Ps: list[int], device: str, dtype: str, block: int) -> list[dict]:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0")
    points = []
    for P in Ps:
        for path in PATHS:
            done = subprocess.run(
                [sys.executable, __file__, "--child", path, str(P), device, dtype, str(block)],
                env=env, capture_output=True, text=True, check=True,
            )
            point = json.loads(done.stdout.strip().splitlines()[-1])
            point["scores_bytes"] = H * P * P * sweeps.DTYPES[dtype].itemsize  # one [B, H, P, P] score matrix
            points.append(point)
            print(f"P={P:>5} {path:>6}: peak {point['peak_bytes'] / 2**20:9.1f} MiB "
                  f"(scores {point['scores_bytes'] / 2**20:8.1f} MiB), {1e3 * point['seconds']:8.2f} ms")
    return points


def decode_sweep(Ss: list[int], splits: list[int], threads: list[int], device: torch.device, dtype: torch.dtype,
                 H_kv: int, repeats: int, clock: str) -> list[dict]:
    """Per thread count: medians of `repeats` (the per-thread clock at one thread if asked, else the wall)."""
    points = []
    g = torch.Generator().manual_seed(0)
    for n in threads:
        if device.type == "cpu":
            torch.set_num_threads(n)
        how = clock if n == 1 and device.type == "cpu" else "wall"
        units = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else n
        for S in Ss:
            q = torch.randn(1, H, 1, d_h, generator=g).to(device, dtype)
            k, v = (torch.randn(1, H_kv, S, d_h, generator=g).to(device, dtype) for _ in range(2))
            plain_t = measure.time_fn(lambda q=q, k=k, v=v: attention(q, k, v, None), repeats=repeats,
                                      device=device, clock=how)
            plain, plain_q = plain_t.median_s, _quartiles(plain_t.times)
            for K in splits:
                timing = measure.time_fn(lambda K=K, q=q, k=k, v=v: flash_decode(q, k, v, splits=K),
                                         repeats=repeats, device=device, clock=how)
                t, split_q = timing.median_s, _quartiles(timing.times)
                predicted = costs.flash_decoding_speedup(B=1, H_kv=H_kv, S=S, splits=K, n_sm=units)
                points.append({"threads": n, "clock": how, "units": units, "S": S, "splits": K, "plain_s": plain,
                               "split_s": t, "plain_q1_s": plain_q[0], "plain_q3_s": plain_q[1],
                               "split_q1_s": split_q[0], "split_q3_s": split_q[1],
                               "measured_speedup": plain / t,
                               "speedup_iqr": [plain_q[0] / split_q[1], plain_q[1] / split_q[0]],
                               "predicted_speedup": predicted})
                print(f"threads={n} S={S:>6} splits={K:>3}: plain {1e6 * plain:8.1f} us, split {1e6 * t:8.1f} us,"
                      f" speedup {plain / t:5.2f} (occupancy model {predicted:5.2f})")
    return points


def _quartiles(times: list[float]) -> tuple[float, float]:
    """The first and third quartiles of the repeats (statistics.quantiles, exclusive method)."""
    q = statistics.quantiles(times, n=4)
    return q[0], q[2]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        path, P, device, dtype, block = sys.argv[2:7]
        print(json.dumps(child(path, int(P), device, dtype, int(block))))
        return
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--block", type=int, default=128, help="tile size of the torch tiles (block_q = block_k)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--decode-threads", default="1",
                        help="comma-separated CPU thread counts for the decode timing (default 1)")
    args = parser.parse_args()
    device, dtype, out = sweeps.sweep_setup(args, "flash")
    dtype_name = next(name for name, dt in sweeps.DTYPES.items() if dt == dtype)
    cuda = device.type == "cuda"
    Ps = [256, 512, 1024, 2048, 4096] + ([8192, 16384] if cuda else [])
    print(measure.environment(device, dtype))
    memory = memory_sweep(Ps, args.device, dtype_name, args.block)
    threads = [1] if cuda else sorted({int(n) for n in args.decode_threads.split(",")})
    H_kv = 1  # B·H_kv = 1 work item: the case splitting is for
    decode = decode_sweep([1024, 8192, 65536], [1, 2, 4, 16, 64], threads, device, dtype, H_kv, args.repeats,
                          args.clock)
    sweeps.write_json(out, {
        "script": "scripts/sweeps/sweep_flash.py",
        "environment": measure.environment(device, dtype),
        "memory_measure": "torch.cuda.max_memory_allocated above the allocation before the call" if cuda else
        "process memory: peak resident set (VmHWM after resetting it) above the resident set before the call",
        "attention_shape": {"B": 1, "H": H, "d_h": d_h, "block": args.block},
        "memory": memory,
        "decode_shape": {"B": 1, "H": H, "H_kv": H_kv, "d_h": d_h},
        "decode": decode,
        "log2_scores_slope": _slope(memory),
    })
    print(f"wrote {out}")


def _slope(memory: list[dict]) -> dict[str, float]:
    """log2(peak) per doubling of P between the two longest prompts, per path (2 for P², 1 for P)."""
    slopes = {}
    for path in PATHS:
        pts = [p for p in memory if p["path"] == path and p["peak_bytes"] > 0][-2:]
        if len(pts) == 2:
            slopes[path] = math.log2(pts[1]["peak_bytes"] / pts[0]["peak_bytes"]) / math.log2(pts[1]["P"] / pts[0]["P"])
    return slopes


if __name__ == "__main__":
    main()
