"""Chapter 8's sweep: probe the device, then time prefill and decode for a family of model sizes.

For each model of minigpt.costs.presets.FAMILY (MiniGPT up to about 200 M parameters; on cuda also a
1.2 B one), randomly initialised (timing does not depend on the weights' values): one prefill of
P tokens and one B = 1 decode step at S cached tokens, best of a few repeats. The notebook sets
them against the roofline predictions. Writes minigpt/measure/data/hardware_<device>.json.

    python scripts/sweeps/sweep_hardware.py                   # cpu, fp32, wall clock
    python scripts/sweeps/sweep_hardware.py --threads 1 --clock thread   # what the book's CPU data used
    python scripts/sweeps/sweep_hardware.py --device cuda     # cuda, bf16
"""

from __future__ import annotations

from minigpt import measure
from minigpt.costs.presets import FAMILY, GPU_EXTRA
from minigpt.measure import sweeps
from minigpt.measure.probes import largest_cache_bytes, probe_buffer_bytes


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--P", type=int, default=128, help="prompt tokens of the timed prefill")
    parser.add_argument("--S", type=int, default=32, help="cached tokens of the timed decode step")
    args = parser.parse_args()
    device, dtype, out = sweeps.sweep_setup(args, "hardware")
    family = dict(FAMILY)
    if device.type == "cuda":
        family.update(GPU_EXTRA)

    roofline = measure.probe(device=device, dtype=dtype, clock=args.clock)
    print(f"{measure.environment(device, dtype)}\nprobes: {roofline}")
    points = []
    for name, config in family.items():
        p = sweeps.measure_size(name, config, device=device, dtype=dtype, P=args.P, S=args.S, clock=args.clock)
        print(f"{name:<10} N={p.N_params:>12,}  prefill {p.prefill_tok_s:10.0f} tok/s  "
              f"decode {p.decode_tok_s:8.1f} tok/s  achieved {p.achieved_bandwidth / 1e9:6.2f} GB/s")
        points.append(sweeps.to_record(p))
    sweeps.write_json(out, {
        "script": "scripts/sweeps/sweep_hardware.py",
        "environment": measure.environment(device, dtype),
        "clock": args.clock,
        "roofline": roofline,
        "probe_bytes": probe_buffer_bytes(device),
        "largest_cache_bytes": largest_cache_bytes(),
        "P": args.P,
        "S": args.S,
        "models": points,
    })
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
