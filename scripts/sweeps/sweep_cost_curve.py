"""Chapter 6's timing sweep: time per step and in total vs S, with and without the KV cache.

    python scripts/sweeps/sweep_cost_curve.py                       # -> minigpt/measure/data/cost_curve_cpu.json
    python scripts/sweeps/sweep_cost_curve.py --device cuda         # -> minigpt/measure/data/cost_curve_cuda.json

Three measurements, all on seeded random weights (time does not depend on the weights' values):

* ``step``: median seconds of one generation step that sees S earlier tokens, for MiniGPT and a
  scaled config, with the cache (`decode_step` against a cache rewound to S) and without
  (`model(tokens, last_only=True)` over S + 1 tokens, as `generate(use_cache=False)` does).
* ``totals``: one real generation of D tokens (`minigpt.runtime.generate.stream`) per mode, the time of
  every step recorded, so the cumulative sum is the total time for every D up to the maximum.
* ``width``: one decode step at S = 64 for models of growing width d (L = 4), to find where the
  time per step stops being per-call overhead and starts tracking FLOPs.

The machine, dtype, torch version, thread count and clock are recorded with the results, and so is
the sweep's own duration (``sweep_seconds``: under a minute on one thread of a busy 2-core CPU). It
runs on one CPU thread by default (on a shared machine, more threads contend and time gets slower and
noisier); ``--clock thread`` times the calling thread's CPU time instead of the wall clock. Chapter 6
loads the JSON and fits it.
"""

from __future__ import annotations

import time
from functools import partial

import torch

from minigpt import costs, measure
from minigpt.config import ModelConfig
from minigpt.costs.presets import SCALED
from minigpt.measure import sweeps
from minigpt.runtime.generate import decode_step, stream
from minigpt.runtime.model import MiniGPT

SEED = 0
CONFIGS = {"minigpt": ModelConfig(), "scaled": SCALED}
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
def time_step(model: MiniGPT, S: int, cached: bool, repeats: int, clock: measure.Clock) -> dict[str, float]:
    """Median and min seconds of the step that sees S earlier tokens (`measure.time_fn` on `clock`)."""
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
    t = measure.time_fn(step, warmup=2, repeats=repeats, device=device, clock=clock)
    return {"S": S, "median_s": t.median_s, "min_s": t.min_s}


@torch.no_grad()
def time_generation(model: MiniGPT, P: int, D: int, cached: bool, clock: measure.Clock) -> list[float]:
    """Seconds of each of the D steps of one greedy generation (step 0 is the prefill), on `clock`."""
    g = torch.Generator().manual_seed(SEED)
    prompt = torch.randint(model.config.V, (P,), generator=g).tolist()
    now_s = time.thread_time if clock == "thread" else time.perf_counter  # as measure.time_fn reads them
    times = []
    tokens = stream(model, prompt, D, use_cache=cached)
    start = now_s()
    for _ in tokens:
        measure.sync(model.device)
        now = now_s()
        times.append(now - start)
        start = now
    return times


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.set_defaults(threads=1)  # on a shared machine more threads contend and slow down
    args = parser.parse_args()
    device, dtype, out = sweeps.sweep_setup(args, "cost_curve")
    torch.manual_seed(SEED)
    began = time.perf_counter()

    result: dict = {
        "script": "scripts/sweeps/sweep_cost_curve.py",
        "environment": measure.environment(device, dtype),
        "seed": SEED,
        "clock": args.clock,
        "roofline": measure.probe(device=device, dtype=dtype),
        "configs": {name: cfg.to_dict() for name, cfg in CONFIGS.items()},
        "step": {},
        "totals": {},
        "width": [],
    }

    for name, cfg in CONFIGS.items():
        model = build(cfg, device, dtype)
        for cached in (True, False):
            Ss, repeats = STEP_PLAN[(name, cached)]
            rows = [time_step(model, S, cached, repeats, args.clock) for S in Ss]
            result["step"][f"{name}/{'cache' if cached else 'no_cache'}"] = rows
            print(f"step {name} cached={cached}: {len(rows)} points, {time.perf_counter() - began:.0f} s", flush=True)
        P, D, runs = TOTALS_PLAN[name]
        for cached in (True, False):
            per_run = [time_generation(model, P, D, cached, args.clock) for _ in range(runs)]
            result["totals"][f"{name}/{'cache' if cached else 'no_cache'}"] = {"P": P, "D": D, "step_s": per_run}
            print(f"totals {name} cached={cached}: {time.perf_counter() - began:.0f} s", flush=True)
        del model

    for d in WIDTHS:
        cfg = width_config(d)
        model = build(cfg, device, dtype)
        row = time_step(model, WIDTH_S, True, 9, args.clock)
        flops = costs.of(cfg).decode_step_flops(S=WIDTH_S)
        cache = model.new_cache(1)
        model(torch.zeros((1, WIDTH_S), dtype=torch.long, device=device), cache)
        token = torch.zeros(1, dtype=torch.long, device=device)
        counted = measure.count_flops(partial(decode_step, model, token, cache))
        assert counted == flops, (d, counted, flops)
        n_params = sum(p.numel() for p in model.parameters())
        result["width"].append({
            "config": cfg.to_dict(), "S": WIDTH_S, "flops": flops, "params": n_params,
            "weight_bytes": n_params * model.tok_emb.weight.element_size(), **row,
        })
        print(f"width d={d}: {row['median_s'] * 1e3:.2f} ms, {time.perf_counter() - began:.0f} s", flush=True)

    result["sweep_seconds"] = round(time.perf_counter() - began, 1)
    sweeps.write_json(out, result)
    print(f"wrote {out} in {result['sweep_seconds']} s")


if __name__ == "__main__":
    main()
