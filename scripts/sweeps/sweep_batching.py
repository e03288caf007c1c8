"""Chapter 7's sweep: decode-step time and tokens/s against the batch size B, on one device.

One randomly initialised scaled model (minigpt.costs.presets.SCALED: L=8, d=512, about 26 M parameters;
timing does not depend on the weights' values) decodes one step for B sequences at two cache
lengths S. Writes minigpt/measure/data/batching_<device>.json, which Chapter 7 loads.

    python scripts/sweeps/sweep_batching.py                   # cpu, fp32, wall clock
    python scripts/sweeps/sweep_batching.py --threads 1 --clock thread   # what the book's CPU data used
    python scripts/sweeps/sweep_batching.py --device cuda     # cuda, bf16
"""

from __future__ import annotations

from minigpt import measure
from minigpt.costs.presets import SCALED
from minigpt.measure import sweeps
from minigpt.measure.probes import largest_cache_bytes, probe_buffer_bytes


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    device, dtype, out = sweeps.sweep_setup(args, "batching")
    max_B = 1024 if device.type == "cuda" else 256
    short = [2**k for k in range(max_B.bit_length())]  # 1, 2, 4, ..., max_B
    long = [B for B in short if B <= max_B // 4]

    model = sweeps.random_model(SCALED, device=device, dtype=dtype)
    roofline = measure.probe(device=device, dtype=dtype, clock=args.clock)
    print(f"{measure.environment(device, dtype)}\nprobes: {roofline}")
    runs = {}
    for S, Bs in ((32, short), (256, long)):
        points = sweeps.batching_sweep(model, Bs=Bs, S=S, repeats=args.repeats, clock=args.clock)
        for p in points:
            print(f"S={S:>4} B={p.B:>5}: step {1e3 * p.step_s:8.2f} ms, {p.tok_s:10.1f} tok/s")
        runs[str(S)] = [sweeps.to_record(p) for p in points]
    sweeps.write_json(out, {
        "script": "scripts/sweeps/sweep_batching.py",
        "environment": measure.environment(device, dtype),
        "clock": args.clock,
        "config": SCALED.to_dict(),
        "N_params": sweeps.n_params(model),
        "weight_bytes": measure.module_bytes(model),
        "repeats": args.repeats,
        "roofline": roofline,
        "probe_bytes": probe_buffer_bytes(device),
        "largest_cache_bytes": largest_cache_bytes(),
        "runs": runs,
    })
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
