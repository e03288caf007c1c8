"""Chapter 20's sweep: the sharded MiniGPT's decode step for W = 1, 2, 4 ranks (gloo, CPU) and the
time of one all-reduce against its size, fitted to Eq. (20.4)'s α and β.

Rounds are interleaved: each round launches W = 1, then 2, then 4 (one launch per W, since starting
processes costs seconds), and each launch times `repeats` blocks of decode steps and, for W > 1,
all-reduces of every size in turn, then 256-byte all-reduces each after a spin of 0 or 200 µs (a
decode step computes between its collectives, and a rank that waits may lose its core). Medians and
the spread (min, max) are over every block of every round. Each rank runs one thread; with more
ranks than cores (W = 4 on a 2-core machine) ranks share cores, which the data shows and the chapter
discusses. Writes minigpt/measure/data/tp_cpu.json.

    python scripts/sweeps/sweep_tp.py            # about four minutes on 2 shared cores
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path

from minigpt import costs, measure
from minigpt.distributed import launch, tp_workers
from minigpt.distributed.collectives import fit_alpha_beta
from minigpt.measure.sweep_files import sweep_output

OUT = sweep_output("tp")


def spread(xs: list[float]) -> dict:
    return dict(median=statistics.median(xs), min=min(xs), max=max(xs), n=len(xs))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3, help="timed blocks per launch")
    p.add_argument("--steps", type=int, default=10, help="decode steps per block")
    p.add_argument("--inner", type=int, default=5, help="all-reduces per block")
    p.add_argument("--B", type=int, default=1)
    p.add_argument("--P", type=int, default=16)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo",
                   help="gloo: ranks on this CPU; nccl: rank r on GPU r (needs as many GPUs as the largest W)")
    p.add_argument("--worlds", type=int, nargs="+", default=[1, 2, 4], help="group sizes W to time")
    a = p.parse_args()
    import torch

    worlds = tuple(a.worlds)
    sizes = [2**k for k in range(4, 19, 2)]  # fp32 values: 64 B .. 1 MiB
    steps, allreduce = {W: [] for W in worlds}, {W: {n: [] for n in sizes} for W in worlds if W > 1}
    gaps = {W: {g: [] for g in tp_workers.GAPS_S} for W in worlds if W > 1}
    records, load_start = {}, os.getloadavg()
    for r in range(a.rounds):
        for W in worlds:
            out = launch.run(tp_workers.measure_round, W, "minigpt", a.B, a.P, a.steps, a.repeats, sizes,
                             a.inner, backend=a.backend, timeout_s=300)
            steps[W] += [max(t) for t in zip(*(o["times"] for o in out), strict=True)]  # the slowest rank
            records[W] = out[0]["record"]
            if W > 1:
                for n in sizes:
                    allreduce[W][n] += [max(t) for t in zip(*(o["all_reduce"][n] for o in out), strict=True)]
                for g in tp_workers.GAPS_S:
                    gaps[W][g] += [max(t) for t in zip(*(o["gaps"][g] for o in out), strict=True)]
            print(f"round {r}  W={W}  step {statistics.median(steps[W]) * 1e3:.3f} ms", flush=True)
    config = tp_workers.load_config("minigpt")
    fits, predicted = {}, {}
    t1 = statistics.median(steps[1])
    for W in worlds:
        n_coll = costs.tp_collectives_per_step(L=config.L, W=W)
        nbytes = costs.tp_collective_bytes(L=config.L, B=a.B, d=config.d, V=config.V, s=4, W=W)
        assert len(records[W]) == n_coll and sum(n for _, n in records[W]) == nbytes, records[W]
        if W == 1:
            predicted[W] = dict(n_coll=0, coll_bytes=0, step_s=t1)
            continue
        alpha, beta = fit_alpha_beta([4 * n for n in sizes], [statistics.median(allreduce[W][n]) for n in sizes])
        fits[W] = dict(alpha_s=alpha, beta_bytes_per_s=beta)
        step = costs.tp_alpha_beta_step_time(weight_bytes=0, W=W, bandwidth=1.0, n_coll=n_coll,
                                             coll_bytes=nbytes / n_coll, coll_latency=alpha,
                                             coll_bandwidth=beta, t_fixed=t1)
        predicted[W] = dict(n_coll=n_coll, coll_bytes=nbytes / n_coll, step_s=step)
    data = {
        "script": "scripts/sweeps/sweep_tp.py",
        "environment": measure.environment("cuda" if a.backend == "nccl" else "cpu", torch.float32),
        "cores": os.cpu_count(),
        "load_average_1min": [load_start[0], os.getloadavg()[0]],  # start, end: a shared machine
        "threads_per_rank": 1,
        "backend": a.backend,
        "model": "minigpt",
        "B": a.B, "P": a.P, "steps_per_block": a.steps, "rounds": a.rounds, "repeats": a.repeats,
        "inner": a.inner,
        "decode_step_s": {str(W): dict(spread(steps[W]), samples=steps[W]) for W in worlds},
        "records": {str(W): records[W] for W in worlds},
        "all_reduce_s": {str(W): {str(4 * n): spread(allreduce[W][n]) for n in sizes} for W in allreduce},
        "fit": {str(W): fits[W] for W in fits},
        "all_reduce_256B_after_gap_s": {str(W): {str(g): spread(gaps[W][g]) for g in gaps[W]} for W in gaps},
        "predicted": {str(W): predicted[W] for W in worlds},
    }
    a.out.write_text(json.dumps(data, indent=1) + "\n")
    for W in worlds:
        f = fits.get(W, {})
        print(f"W={W}: measured {statistics.median(steps[W]) * 1e3:.3f} ms, predicted "
              f"{predicted[W]['step_s'] * 1e3:.3f} ms" + (f", α {f['alpha_s'] * 1e6:.1f} µs, β "
                                                          f"{f['beta_bytes_per_s'] / 1e9:.2f} GB/s" if f else ""))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
