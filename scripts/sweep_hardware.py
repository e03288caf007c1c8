"""Chapter 8's sweep: probe the device, then time prefill and decode for a family of model sizes.

For each model of minigpt.sweeps.FAMILY (MiniGPT up to about 200 M parameters; on cuda also a
1.2 B one), randomly initialised (timing does not depend on the weights' values): one prefill of
P tokens and one B = 1 decode step at S cached tokens, best of a few repeats. The notebook sets
them against the roofline predictions. Writes chapters/data/hardware_<device>.json.

    python scripts/sweep_hardware.py                   # cpu, fp32, wall clock
    python scripts/sweep_hardware.py --threads 1 --clock thread   # what the book's CPU data used
    python scripts/sweep_hardware.py --device cuda     # cuda, bf16
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from minigpt import sweeps

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dtype", choices=sorted(sweeps.DTYPES), default=None,
                        help="default: fp32 on cpu, bf16 on cuda")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--clock", choices=["wall", "thread"], default="wall",
                        help="'thread': per-thread CPU time, for --threads 1 on a shared CPU (see minigpt.sweeps)")
    parser.add_argument("--P", type=int, default=128, help="prompt tokens of the timed prefill")
    parser.add_argument("--S", type=int, default=32, help="cached tokens of the timed decode step")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = sweeps.DTYPES[args.dtype or ("bf16" if device.type == "cuda" else "fp32")]
    out = args.out or ROOT / "chapters" / "data" / f"hardware_{device.type}.json"
    family = dict(sweeps.FAMILY)
    if device.type == "cuda":
        family.update(sweeps.GPU_EXTRA)

    roofline = sweeps.probe(device=device, dtype=dtype, clock=args.clock)
    print(f"{sweeps.environment(device, dtype)}\nprobes: {roofline}")
    points = []
    for name, config in family.items():
        p = sweeps.measure_size(name, config, device=device, dtype=dtype, P=args.P, S=args.S, clock=args.clock)
        print(f"{name:<10} N={p.N_params:>12,}  prefill {p.prefill_tok_s:10.0f} tok/s  "
              f"decode {p.decode_tok_s:8.1f} tok/s  achieved {p.achieved_bandwidth / 1e9:6.2f} GB/s")
        points.append(sweeps.to_record(p))
    sweeps.write_json(out, {
        "script": "scripts/sweep_hardware.py",
        "environment": sweeps.environment(device, dtype),
        "clock": args.clock,
        "roofline": roofline,
        "P": args.P,
        "S": args.S,
        "models": points,
    })
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
