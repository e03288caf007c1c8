"""Chapter 10's sweep: decode-step time at long S with each KV cache of `fidelity.CACHE_KINDS`.

The scaled model (minigpt.costs.presets.SCALED: L=8, H=H_kv=8, d_h=64) with a position table of 4096,
randomly initialised; the caches are filled with random rows (quantized by the cache itself). Each
point holds the measured step time, the bytes Eq. (3.5) predicts (the stored codes and scales) and the
bytes this package's dequantize-on-read moves, Eq. (10.5), and the time of the cache's read path alone
(`read_s`: every layer's prefix dequantized, no model). Writes minigpt/measure/data/kv_quant_<device>.json.

    python scripts/sweeps/sweep_kv_quant.py --threads 1 --clock thread   # what the book's CPU data used
    python scripts/sweeps/sweep_kv_quant.py --device cuda                # cuda, bf16
"""

from __future__ import annotations

from dataclasses import replace

from minigpt import measure
from minigpt.corpus import fidelity
from minigpt.costs.presets import SCALED
from minigpt.measure import sweeps
from minigpt.measure.cache_timing import sweep_record, time_cache_step

KINDS = fidelity.CACHE_KINDS  # fp32, int8, int4 per token; int8, int4 with keys per channel (KIVI); fp8
CONFIG = replace(SCALED, S_max=4096)


def main() -> None:
    parser = sweeps.sweep_arguments(__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    device, dtype, out = sweeps.sweep_setup(args, "kv_quant")
    Bs = (1, 4) if device.type == "cpu" else (1, 8, 32)
    Ss = (256, 1024, 4095)
    roofline = measure.probe(device=device, dtype=dtype, clock=args.clock)
    print(f"{measure.environment(device, dtype)}\nprobes: {roofline}")
    model = sweeps.random_model(CONFIG, device=device, dtype=dtype)
    points = []
    for kind in KINDS:
        factory = fidelity.cache_factory(CONFIG, kind, dtype=dtype, device=device)
        for B in Bs:
            for S in Ss:
                p = time_cache_step(model, factory, kind=kind, B=B, S=S, repeats=args.repeats, clock=args.clock)
                print(f"{kind} B={B} S={S:>5}: {1e3 * p.step_s:8.2f} ms (read path {1e3 * p.read_s:7.2f} ms), "
                      f"{p.step_bytes / 1e6:8.1f} MB stored, {p.unfused_step_bytes / 1e6:8.1f} MB moved")
                points.append(p)
    sweeps.write_json(out, sweep_record(
        "scripts/sweeps/sweep_kv_quant.py", device=device, dtype=dtype, clock=args.clock, config=CONFIG,
        repeats=args.repeats, roofline=roofline, points=points, weight_bytes=measure.module_bytes(model),
    ))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
