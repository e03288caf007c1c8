"""Chapter 9's sweep: decode-step time against S and B for each number of K/V heads H_kv.

GQA variants of the scaled model (minigpt.costs.presets.SCALED: L=8, H=8, d_h=64, d=512; H_kv = 8 is
multi-head attention, 4 and 2 grouped, 1 multi-query), randomly initialised (timing does not depend on
the weights). The cache is filled with random rows (no prefill). Writes minigpt/measure/data/gqa_<device>.json,
which Chapter 9 loads; each point holds the measured step time and the bytes Eq. (3.5) predicts.

    python scripts/sweeps/sweep_gqa.py --threads 1 --clock thread     # what the book's CPU data used
    python scripts/sweeps/sweep_gqa.py --device cuda                  # cuda, bf16
"""

from __future__ import annotations

from dataclasses import replace

from minigpt import measure
from minigpt.costs.presets import SCALED
from minigpt.measure import sweeps
from minigpt.measure.cache_timing import sweep_record, time_cache_step

H_KVS = (8, 4, 2, 1)


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    device, dtype, out = sweeps.sweep_setup(args, "gqa")
    Bs = (1, 4, 16, 64) if device.type == "cpu" else (1, 16, 64, 256)
    Ss = (64, 256, 511)
    roofline = measure.probe(device=device, dtype=dtype, clock=args.clock)
    print(f"{measure.environment(device, dtype)}\nprobes: {roofline}")
    points, weights = [], {}
    for H_kv in H_KVS:
        config = replace(SCALED, H_kv=H_kv)
        model = sweeps.random_model(config, device=device, dtype=dtype)
        weights[str(H_kv)] = measure.module_bytes(model)
        for B in Bs:
            for S in Ss:
                p = time_cache_step(model, lambda B, S_max, m=model: m.new_cache(B, S_max=S_max), kind="fp32",
                                    B=B, S=S, repeats=args.repeats, clock=args.clock)
                print(f"H_kv={H_kv} B={B:>3} S={S:>4}: {1e3 * p.step_s:8.2f} ms, {p.step_bytes / 1e6:8.1f} MB")
                points.append(p)
        del model
    sweeps.write_json(out, sweep_record(
        "scripts/sweeps/sweep_gqa.py", device=device, dtype=dtype, clock=args.clock, config=SCALED,
        repeats=args.repeats, roofline=roofline, points=points, H_kv=list(H_KVS), weight_bytes=weights,
    ))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
