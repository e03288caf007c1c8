"""Chapter 7's sweep: decode-step time and tokens/s against the batch size B, on one device.

One randomly initialised scaled model (minigpt.sweeps.SCALED: L=8, d=512, about 26 M parameters;
timing does not depend on the weights' values) decodes one step for B sequences at two cache
lengths S. Writes chapters/data/batching_<device>.json, which Chapter 7 loads.

    python scripts/sweep_batching.py                   # cpu, fp32, wall clock
    python scripts/sweep_batching.py --threads 1 --clock thread   # what the book's CPU data used
    python scripts/sweep_batching.py --device cuda     # cuda, bf16
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
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = sweeps.DTYPES[args.dtype or ("bf16" if device.type == "cuda" else "fp32")]
    out = args.out or ROOT / "chapters" / "data" / f"batching_{device.type}.json"
    max_B = 1024 if device.type == "cuda" else 256
    short = [2**k for k in range(max_B.bit_length())]  # 1, 2, 4, ..., max_B
    long = [B for B in short if B <= max_B // 4]

    model = sweeps.random_model(sweeps.SCALED, device=device, dtype=dtype)
    roofline = sweeps.probe(device=device, dtype=dtype, clock=args.clock)
    print(f"{sweeps.environment(device, dtype)}\nprobes: {roofline}")
    runs = {}
    for S, Bs in ((32, short), (256, long)):
        points = sweeps.batching_sweep(model, Bs=Bs, S=S, repeats=args.repeats, clock=args.clock)
        for p in points:
            print(f"S={S:>4} B={p.B:>5}: step {1e3 * p.step_s:8.2f} ms, {p.tok_s:10.1f} tok/s")
        runs[str(S)] = [sweeps.to_record(p) for p in points]
    sweeps.write_json(out, {
        "script": "scripts/sweep_batching.py",
        "environment": sweeps.environment(device, dtype),
        "clock": args.clock,
        "config": sweeps.SCALED.to_dict(),
        "N_params": sweeps.n_params(model),
        "weight_bytes": sweeps.module_bytes(model),
        "repeats": args.repeats,
        "roofline": roofline,
        "runs": runs,
    })
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
