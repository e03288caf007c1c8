"""Measurement loops of Part II (Chapters 7 and 8): decode-step and prefill timings, batched and by size.

Chapter 7 times one decode step of B sequences (Eq. (3.5): one weight read serves B tokens);
Chapter 8 times prefill and decode for a family of model sizes and sets them against the roofline
predictions, Eq. (3.4) for decode (bytes / bandwidth) and Eq. (1.2) over the peak rate for prefill.
`scripts/sweeps/sweep_batching.py` and `scripts/sweeps/sweep_hardware.py` run these loops and write JSON that the
notebooks load (`sweep_files`: the package's minigpt/measure/data/, read back with `read_json("data/<name>.json")`);
the notebooks also call them directly for a quick live measurement.

Models are randomly initialised (seeded): timing does not depend on what the weights say.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.measure.counting import module_bytes
from minigpt.measure.sweep_files import DATA_DIR, read_json, sweep_file, sweep_output, write_json  # noqa: F401
from minigpt.measure.timing import Clock, Timing, time_fn
from minigpt.runtime.generate import decode_step, prefill
from minigpt.runtime.kv_cache import KVCache
from minigpt.runtime.model import MiniGPT

DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

def random_model(
    config: ModelConfig, *, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32, seed: int = 0,
) -> MiniGPT:
    """A seeded, randomly initialised MiniGPT of shape `config` in eval mode, built directly on `device`."""
    torch.manual_seed(seed)
    with torch.device(device):
        model = MiniGPT(config)
    return model.to(dtype=dtype).eval()


def n_params(model: MiniGPT) -> int:
    """Parameters N of the model (the tied LM head counted once), the N of Eq. (2.3)."""
    return sum(p.numel() for p in model.parameters())


def _tokens(model: MiniGPT, B: int, T: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.config.V, (B, T), generator=generator).to(model.device)


def filled_cache(model: MiniGPT, *, B: int, S: int, room: int = 1, seed: int = 0) -> KVCache:
    """A cache of B sequences holding S random-prompt tokens (prefilled), with `room` rows to spare."""
    if S < 1:
        raise ValueError(f"S must be >= 1 (a prefilled prompt), got {S}")
    cache = model.new_cache(B, S_max=S + room)
    prefill(model, _tokens(model, B, S, seed), cache)
    return cache


def time_decode_step(
    model: MiniGPT, *, B: int, S: int, warmup: int = 2, repeats: int = 5, seed: int = 0, clock: Clock = "wall",
) -> Timing:
    """Wall time of one decode step, Eq. (1.3), for B sequences against S cached tokens each.

    Every timed call writes row S of the cache and is rewound with `truncate(S)`, so each call
    sees the same S.
    """
    cache = filled_cache(model, B=B, S=S, seed=seed)
    token = _tokens(model, B, 1, seed + 1).view(B)

    def step() -> None:
        decode_step(model, token, cache)
        cache.truncate(S)

    return time_fn(step, warmup=warmup, repeats=repeats, device=model.device, clock=clock)


def time_prefill(
    model: MiniGPT, *, B: int = 1, P: int, warmup: int = 1, repeats: int = 3, seed: int = 0, clock: Clock = "wall",
) -> Timing:
    """Wall time of one prefill, Eq. (1.2), of B prompts of P tokens into an empty cache."""
    prompt = _tokens(model, B, P, seed)
    cache = model.new_cache(B, S_max=P)

    def run() -> None:
        cache.reset()
        prefill(model, prompt, cache)

    return time_fn(run, warmup=warmup, repeats=repeats, device=model.device, clock=clock)


def model_decode_bytes(model: MiniGPT, *, B: int, S: int) -> int:
    """Bytes one decode step of this model reads, Eq. (3.5): its weights' bytes once plus B·S·(KV bytes per token)."""
    kv = costs.of(model.config).kv_bytes_per_token(s=model.dtype.itemsize)
    return costs.decode_step_bytes(weight_bytes=module_bytes(model), kv_bytes_per_token=kv, S=S, B=B)


@dataclass(frozen=True)
class BatchPoint:
    """One decode step of B sequences at S cached tokens: time, tokens/s, bytes and FLOPs moved.

    `step_s` is the best (minimum) of the repeats, `step_median_s` their median: on a shared machine
    the minimum is the better estimate of what the step costs, the median shows the noise.
    """

    B: int
    S: int
    step_s: float
    step_median_s: float
    tok_s: float
    bytes_per_step: int
    flops_per_step: int


def batching_sweep(
    model: MiniGPT, *, Bs: Sequence[int], S: int, warmup: int = 2, repeats: int = 5, clock: Clock = "wall",
) -> list[BatchPoint]:
    """Decode-step time and throughput B / step time for each B (best of `repeats`), Eq. (3.4) measured."""
    points = []
    for B in Bs:
        timing = time_decode_step(model, B=B, S=S, warmup=warmup, repeats=repeats, clock=clock)
        points.append(BatchPoint(
            B=B, S=S, step_s=timing.min_s, step_median_s=timing.median_s, tok_s=B / timing.min_s,
            bytes_per_step=model_decode_bytes(model, B=B, S=S),
            flops_per_step=costs.of(model.config).decode_step_flops(S=S, B=B),
        ))
    return points


@dataclass(frozen=True)
class SizePoint:
    """One model size of Chapter 8: its shape, bytes and FLOPs, and measured prefill and decode times.

    Times are the best (minimum) of the repeats; the `*_median_s` fields keep the medians.
    """

    name: str
    config: dict[str, int]
    N_params: int
    weight_bytes: int
    P: int
    prefill_flops: int
    prefill_s: float
    prefill_median_s: float
    S: int
    decode_bytes: int
    decode_flops: int
    decode_step_s: float
    decode_step_median_s: float

    @property
    def prefill_tok_s(self) -> float:
        """Measured prefill rate: P / prefill time."""
        return self.P / self.prefill_s

    @property
    def decode_tok_s(self) -> float:
        """Measured decode rate (B = 1): 1 / step time."""
        return 1 / self.decode_step_s

    @property
    def achieved_bandwidth(self) -> float:
        """Bytes per decode step × steps per second: the bandwidth the decode step achieved (bytes/s)."""
        return self.decode_bytes / self.decode_step_s

    @property
    def achieved_flops(self) -> float:
        """Prefill FLOPs / prefill time: the arithmetic rate prefill achieved (FLOP/s)."""
        return self.prefill_flops / self.prefill_s


def measure_size(
    name: str, config: ModelConfig, *, device: torch.device | str, dtype: torch.dtype, P: int, S: int,
    decode_repeats: int = 7, prefill_repeats: int = 3, clock: Clock = "wall",
) -> SizePoint:
    """Build a random model of shape `config`, time a prefill of P tokens and a B = 1 decode step at S."""
    model = random_model(config, device=device, dtype=dtype)
    prefill_timing = time_prefill(model, P=P, repeats=prefill_repeats, clock=clock)
    decode_timing = time_decode_step(model, B=1, S=S, repeats=decode_repeats, clock=clock)
    point = SizePoint(
        name=name, config=config.to_dict(), N_params=n_params(model), weight_bytes=module_bytes(model),
        P=P, prefill_flops=costs.of(config).prefill_flops(P=P), prefill_s=prefill_timing.min_s,
        prefill_median_s=prefill_timing.median_s,
        S=S, decode_bytes=model_decode_bytes(model, B=1, S=S), decode_flops=costs.of(config).decode_step_flops(S=S),
        decode_step_s=decode_timing.min_s, decode_step_median_s=decode_timing.median_s,
    )
    del model
    return point


def predicted_prefill_tok_s(point: SizePoint, peak_flops: float) -> float:
    """Compute-bound prefill rate: P / (Eq. (1.2) FLOPs / peak FLOP/s)."""
    return point.P * peak_flops / point.prefill_flops


def predicted_decode_tok_s(point: SizePoint, bandwidth: float) -> float:
    """Memory-bound decode rate, Eq. (3.4) with B = 1: bandwidth / (Eq. (3.5) bytes per step)."""
    return costs.decode_tok_s_ceiling(bandwidth=bandwidth, bytes_per_step=point.decode_bytes)


def size_point_from_dict(record: dict[str, Any]) -> SizePoint:
    """Inverse of `dataclasses.asdict` for a `SizePoint` read back from JSON."""
    return SizePoint(**record)


def batch_point_from_dict(record: dict[str, Any]) -> BatchPoint:
    """Inverse of `dataclasses.asdict` for a `BatchPoint` read back from JSON."""
    return BatchPoint(**record)


def to_record(point: BatchPoint | SizePoint) -> dict[str, Any]:
    """A JSON-ready dict of a measured point (floats rounded to 4 significant digits)."""
    record = asdict(point)
    return {k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in record.items()}


def sweep_arguments(doc: str) -> argparse.ArgumentParser:
    """The command line every sweep script shares: --device, --dtype, --threads, --clock, --out."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default=None, help="default: fp32 on cpu, bf16 on cuda")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--clock", choices=["wall", "thread"], default="wall",
                        help="'thread': per-thread CPU time, for --threads 1 on a shared CPU")
    parser.add_argument("--out", type=Path, default=None)
    return parser


def sweep_setup(args: argparse.Namespace, name: str) -> tuple[torch.device, torch.dtype, Path]:
    """Apply --threads; return the device, the dtype and the output path (`sweep_output`: the package's
    minigpt/measure/data/<name>_<device>.json)."""
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = DTYPES[args.dtype or ("bf16" if device.type == "cuda" else "fp32")]
    out = args.out or sweep_output(name, device.type)
    return device, dtype, out


def fit_step_overhead(decode_bytes: Sequence[float], step_s: Sequence[float]) -> tuple[float, float]:
    """Eq. (8.2), t_step ≈ t0 + bytes / BW_eff, fitted to measured decode steps: returns (t0 seconds, BW_eff bytes/s).

    A straight line through (bytes, seconds) weighted by 1/t, so that each point's relative error counts
    the same and the small models weigh as much as the large ones.
    """
    import numpy as np

    x, y = np.asarray(decode_bytes, dtype=float), np.asarray(step_s, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or len(x) < 2:
        raise ValueError(f"need two equal-length sequences of at least 2 points, got {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(y)) and np.all(y > 0) and np.all(np.isfinite(x))):
        raise ValueError("step_s must be finite and > 0, decode_bytes finite")
    slope, t0 = np.polyfit(x, y, 1, w=1 / y)
    if slope <= 0:
        raise ValueError("the fitted per-byte cost is not positive: the step times do not grow with the bytes")
    return float(t0), float(1 / slope)
