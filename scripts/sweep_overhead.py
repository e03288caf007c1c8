"""Chapter 18's sweep: the overhead floor and the compiled decode step for Chapter 8's family of sizes.

For each model of minigpt.costs.presets.FAMILY (randomly initialised; timing does not depend on the
weights' values): the operators of one eager decode step (a dispatch-mode count), the time of one
trivial operator, the floor n_ops · t_op, and the B = 1 decode step at S cached tokens eager, with the
static cache uncompiled, and compiled (`torch.compile`; CUDA graphs on cuda), with its compile time;
the bandwidth probe gives Eq. (3.4)'s step. Writes chapters/data/overhead_<device>.json.

    python scripts/sweep_overhead.py --threads 1     # what the book's CPU data used
    python scripts/sweep_overhead.py --device cuda   # cuda, bf16
"""

from __future__ import annotations

from minigpt import measure
from minigpt.costs.presets import FAMILY
from minigpt.measure import overhead, sweeps


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--S", type=int, default=32, help="cached tokens of the timed decode step")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
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
        "script": "scripts/sweep_overhead.py",
        "environment": measure.environment(device, dtype),
        "clock": args.clock,
        "bandwidth": bandwidth,
        "S": args.S,
        "models": models,
    })
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
