"""Chapter 6's timing sweep: time per step and in total vs S, with and without the KV cache.

    python scripts/sweep_cost_curve.py                       # -> chapters/data/cost_curve_cpu.json
    python scripts/sweep_cost_curve.py --device cuda --out chapters/data/cost_curve_cuda.json

Three measurements, all on seeded random weights (time does not depend on the weights' values):

* ``step``: median seconds of one generation step that sees S earlier tokens, for MiniGPT and a
  scaled config, with the cache (`decode_step` against a cache rewound to S) and without
  (`model(tokens, last_only=True)` over S + 1 tokens, as `generate(use_cache=False)` does).
* ``totals``: one real generation of D tokens (`minigpt.generate.stream`) per mode, the time of
  every step recorded, so the cumulative sum is the total time for every D up to the maximum.
* ``width``: one decode step at S = 64 for models of growing width d (L = 4), to find where the
  time per step stops being per-call overhead and starts tracking FLOPs.

The machine, dtype, torch version and thread count are recorded with the results. It runs on one
CPU thread by default (on a shared machine, more threads contend and time gets slower and noisier);
on 2 busy CPU cores the whole sweep takes about two minutes. Chapter 6 loads the JSON and fits it.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from functools import partial
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minigpt import costs  # noqa: E402
from minigpt.config import ModelConfig  # noqa: E402
from minigpt.generate import decode_step, stream  # noqa: E402
from minigpt.measure import count_flops, probe_bandwidth, probe_peak_flops, sync, time_fn  # noqa: E402
from minigpt.model import MiniGPT  # noqa: E402

SEED = 0
CONFIGS = {
    "minigpt": ModelConfig(),
    "scaled": ModelConfig(L=8, H=8, H_kv=8, d_h=64, d_ffn=2048, V=600, S_max=512),
}
# (S values, repeats) per config and mode: enough points to fit, short enough for 2 busy cores.
STEP_PLAN = {
    ("minigpt", True): (list(range(0, 128, 8)) + [127], 15),
    ("minigpt", False): (list(range(0, 128, 8)) + [127], 9),
    ("scaled", True): (list(range(0, 512, 32)) + [511], 7),
    ("scaled", False): (list(range(0, 385, 32)), 2),
}
TOTALS_PLAN = {"minigpt": (8, 120, 3), "scaled": (8, 96, 1)}  # P, D, runs
WIDTHS = [64, 128, 256, 384, 512, 768, 1024, 1536, 2048]
WIDTH_S = 64


def width_config(d: int) -> ModelConfig:
    """L = 4, d_ffn = 4d, H = max(4, d/64): d = 64 is MiniGPT itself."""
    H = max(4, d // 64)
    return ModelConfig(L=4, H=H, H_kv=H, d_h=d // H, d_ffn=4 * d, V=600, S_max=128)


def build(config: ModelConfig, device: torch.device, dtype: torch.dtype) -> MiniGPT:
    torch.manual_seed(SEED)
    return MiniGPT(config).to(device=device, dtype=dtype).eval()


@torch.no_grad()
def time_step(model: MiniGPT, S: int, cached: bool, repeats: int) -> dict[str, float]:
    """Median and min seconds of the step that sees S earlier tokens."""
    device = model.device
    g = torch.Generator().manual_seed(SEED + S)
    tokens = torch.randint(model.config.V, (1, S + 1), generator=g).to(device)
    if cached:
        cache = model.new_cache(1)
        if S > 0:
            model(tokens[:, :S], cache)
        token = tokens[:, S]

        def step() -> None:
            cache.truncate(S)
            decode_step(model, token, cache)
    else:
        def step() -> None:
            model(tokens, last_only=True)
    t = time_fn(step, warmup=2, repeats=repeats, device=device)
    return {"S": S, "median_s": t.median_s, "min_s": t.min_s}


@torch.no_grad()
def time_generation(model: MiniGPT, P: int, D: int, cached: bool) -> list[float]:
    """Seconds of each of the D steps of one greedy generation (step 0 is the prefill)."""
    g = torch.Generator().manual_seed(SEED)
    prompt = torch.randint(model.config.V, (P,), generator=g).tolist()
    times = []
    tokens = stream(model, prompt, D, use_cache=cached)
    start = time.perf_counter()
    for _ in tokens:
        sync(model.device)
        now = time.perf_counter()
        times.append(now - start)
        start = now
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default 1: on a shared machine more threads contend and slow down)")
    parser.add_argument("--out", type=Path, default=ROOT / "chapters" / "data" / "cost_curve_cpu.json")
    args = parser.parse_args()
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    torch.set_num_threads(args.threads)
    torch.manual_seed(SEED)
    began = time.perf_counter()

    result: dict = {
        "script": "scripts/sweep_cost_curve.py",
        "meta": {
            "device": str(device),
            "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
            or platform.machine(),
            "dtype": args.dtype,
            "torch_version": torch.__version__,
            "python_version": platform.python_version(),
            "cpu_threads": torch.get_num_threads(),
            "seed": SEED,
        },
        "configs": {name: cfg.to_dict() for name, cfg in CONFIGS.items()},
        "step": {},
        "totals": {},
        "width": [],
    }
    result["meta"]["probe_bandwidth_B_s"] = probe_bandwidth(device=device)
    result["meta"]["probe_peak_flops"] = probe_peak_flops(device=device)

    for name, cfg in CONFIGS.items():
        model = build(cfg, device, dtype)
        for cached in (True, False):
            Ss, repeats = STEP_PLAN[(name, cached)]
            rows = [time_step(model, S, cached, repeats) for S in Ss]
            result["step"][f"{name}/{'cache' if cached else 'no_cache'}"] = rows
            print(f"step {name} cached={cached}: {len(rows)} points, {time.perf_counter() - began:.0f} s", flush=True)
        P, D, runs = TOTALS_PLAN[name]
        for cached in (True, False):
            per_run = [time_generation(model, P, D, cached) for _ in range(runs)]
            result["totals"][f"{name}/{'cache' if cached else 'no_cache'}"] = {"P": P, "D": D, "step_s": per_run}
            print(f"totals {name} cached={cached}: {time.perf_counter() - began:.0f} s", flush=True)
        del model

    for d in WIDTHS:
        cfg = width_config(d)
        model = build(cfg, device, dtype)
        row = time_step(model, WIDTH_S, True, 9)
        sym = cfg.symbols()
        flops = costs.decode_step_flops(
            L=cfg.L, S=WIDTH_S, d=cfg.d, H_kv=cfg.H_kv, d_h=cfg.d_h, d_ffn=cfg.d_ffn, V=cfg.V)
        cache = model.new_cache(1)
        model(torch.zeros((1, WIDTH_S), dtype=torch.long, device=device), cache)
        counted = count_flops(partial(decode_step, model, torch.zeros(1, dtype=torch.long, device=device), cache))
        assert counted == flops, (d, counted, flops)
        n_params = sum(p.numel() for p in model.parameters())
        result["width"].append({
            "config": sym, "S": WIDTH_S, "flops": flops, "params": n_params,
            "weight_bytes": n_params * model.tok_emb.weight.element_size(), **row,
        })
        print(f"width d={d}: {row['median_s'] * 1e3:.2f} ms, {time.perf_counter() - began:.0f} s", flush=True)

    result["meta"]["sweep_seconds"] = round(time.perf_counter() - began, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out} in {result['meta']['sweep_seconds']} s")


if __name__ == "__main__":
    main()
