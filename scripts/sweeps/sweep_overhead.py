"""Chapter 18's sweep: the overhead floor and the compiled decode step for Chapter 8's family of sizes.

For each model of minigpt.costs.presets.FAMILY (randomly initialised; timing does not depend on the
weights' values): the operators of one eager decode step (a dispatch-mode count), the time of one
trivial operator, the floor n_ops · t_op, and the B = 1 decode step at S cached tokens eager, with the
static cache uncompiled, and compiled (`torch.compile`; CUDA graphs on cuda), with its compile time;
the bandwidth probe gives Eq. (3.4)'s step. Writes minigpt/measure/data/overhead_<device>.json.

With --breakdown (CPU, one thread, thread clock): for each model, `overhead.step_breakdown`, the
eager step cut into parts timed in situ and interleaved with the compiled step (min/median/max over
rounds); writes
minigpt/measure/data/overhead_breakdown_<device>.json, which Chapter 18's step model (Eq. 18.4) reads.

    python scripts/sweeps/sweep_overhead.py --threads 1     # what the book's CPU data used
    python scripts/sweeps/sweep_overhead.py --device cuda   # cuda, bf16
"""

from __future__ import annotations

import argparse
import os

from minigpt import measure
from minigpt.costs.presets import FAMILY
from minigpt.measure import overhead, sweeps


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--S", type=int, default=32, help="cached tokens of the timed decode step")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--breakdown", action="store_true", help="time the eager step's parts instead")
    args = parser.parse_args()
    if args.breakdown:
        breakdown(args)
        return
    device, dtype, out = sweeps.sweep_setup(args, "overhead")
    bandwidth = measure.probe_bandwidth(device=device, clock=args.clock)
    print(f"{measure.environment(device, dtype)}\nbandwidth probe: {bandwidth / 1e9:.1f} GB/s")
    models = []
    for name, config in FAMILY.items():
        model = sweeps.random_model(config, device=device, dtype=dtype)
        r = overhead.measure_overhead(model, S=args.S, repeats=args.repeats, clock=args.clock, bandwidth=bandwidth)
        r.update(name=name, config=config.to_dict(), N_params=sweeps.n_params(model))
        print(f"{name:<10} ops {r['n_ops']:>4}  floor {r['floor_s'] * 1e3:7.3f} ms  "
              f"eager {r['eager_s'] * 1e3:8.3f} ms  "
              f"static {r['static_eager_s'] * 1e3:8.3f} ms  compiled {r['compiled_s'] * 1e3:8.3f} ms  "
              f"(compile {r['compile_s']:.0f} s)  bytes/bandwidth {r['bandwidth_step_s'] * 1e3:8.3f} ms", flush=True)
        models.append(r)
    sweeps.write_json(out, {
        "script": "scripts/sweeps/sweep_overhead.py",
        "environment": measure.environment(device, dtype),
        "clock": args.clock,
        "bandwidth": bandwidth,
        "S": args.S,
        "models": models,
    })
    print(f"wrote {out}")


def breakdown(args: argparse.Namespace) -> None:
    """The eager step's parts for each model of the family (Chapter 18, Step 2b)."""
    args.threads = 1
    device, dtype, out = sweeps.sweep_setup(args, "overhead_breakdown")
    models = []
    for name, config in FAMILY.items():
        model = sweeps.random_model(config, device=device, dtype=dtype)
        small = config.d <= 256
        b = overhead.step_breakdown(model, S=args.S, rounds=15 if small else 7, inner=5 if small else 1,
                                    compiled=True)
        r = {**b.to_record(), "name": name, "config": config.to_dict(), "N_params": sweeps.n_params(model)}
        print(f"{name:<10} step {b.median('step') * 1e3:8.3f} ms (min {b.times['step'][0] * 1e3:.3f}, "
              f"max {b.times['step'][2] * 1e3:.3f})  matmuls {b.median('replay_matmuls') * 1e3:8.3f} ms  "
              f"compiled {b.median('compiled') * 1e3:8.3f} ms  modules {b.n_modules}", flush=True)
        models.append(r)
    sweeps.write_json(out, {"script": "scripts/sweeps/sweep_overhead.py --breakdown", "clock": "thread",
                            "environment": measure.environment(device, dtype), "S": args.S,
                            "load": f"{os.getloadavg()[0]:.1f} (1-minute load average at the end)",
                            "models": models})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
