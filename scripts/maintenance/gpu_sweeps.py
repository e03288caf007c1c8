"""The GPU run's sweeps, one at a time within the budget, and Part IV on NCCL: the tensor-parallel sweep and a
disaggregated run checked against the colocated engine."""

from __future__ import annotations

import sys

from gpu_budget import ROOT, Run, child

# (sweep, extra arguments, seconds it may take on an H200); the first five are what the book shows.
SWEEPS: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("hardware", (), 120),
    ("batching", (), 60),
    ("cost_curve", (), 60),
    ("overhead", (), 150),
    ("flash", (), 90),
    ("gqa", (), 45),
    ("kv_quant", (), 45),
    ("speculative", (), 60),
)


def stage_sweeps(run: Run, reserve_s: float, scale: float) -> None:
    """Each sweep alone; skipped (said so) when what is left of the budget must stay for the tests."""
    results: dict[str, object] = {}
    for name, extra, h200_limit in SWEEPS:
        limit = h200_limit * scale
        if run.left() - reserve_s < min(limit, 30):
            results[name] = {"skipped": f"{run.left():.0f} s left, {reserve_s:.0f} s kept for the tests"}
            continue
        out = run.stage_dir / "data" / f"{name}_{run.device}.json"
        cmd = [sys.executable, str(ROOT / "scripts" / "sweeps" / f"sweep_{name}.py"), "--device", run.device,
               "--out", str(out), *extra]
        r = child(run, f"sweep_{name}", cmd, min(limit, run.left() - reserve_s))
        r["wrote"] = out.name if out.is_file() else None
        if r["rc"] == 0:
            r.pop("tail")
        results[name] = r
    ok = all(r.get("rc", 0) == 0 for r in results.values())
    run.stage("sweeps", {"rc": 0 if ok else 1, "sweeps": results})


def stage_distributed(run: Run, reserve_s: float, gpus: int) -> None:
    """Tensor parallelism on NCCL, one rank per GPU, when there are at least two GPUs; else say so."""
    if gpus < 2:
        run.stage("distributed", {"rc": 0, "gpus": gpus,
                                  "skipped": f"{gpus} GPU(s): NCCL needs 2 or more; Chapter 20 keeps its gloo data, "
                                             "Chapter 19's NCCL path (serve --backend nccl) did not run"})
        return
    worlds = ["1", "2"] + (["4"] if gpus >= 4 else [])
    out = run.stage_dir / "data" / "tp_cuda.json"
    cmd = [sys.executable, str(ROOT / "scripts" / "sweeps" / "sweep_tp.py"), "--backend", "nccl", "--worlds", *worlds,
           "--out", str(out)]
    r = child(run, "sweep_tp_nccl", cmd, max(30.0, min(240.0, run.left() - reserve_s)))
    r.update(gpus=gpus, wrote=out.name if out.is_file() else None)
    # Chapter 19 on NCCL: one prefill and one decode worker, each on its own GPU, the K/V over NCCL and the
    # control messages over gloo; every finished request's tokens checked against a colocated engine's
    cmd = [sys.executable, "-m", "minigpt.distributed.serve", "--backend", "nccl", "--device", "cuda",
           "--requests", "16", "--rate", "20", "--check-colocated", "--timeout", "120"]
    r["disagg_nccl"] = child(run, "disagg_nccl", cmd, max(30.0, min(180.0, run.left() - reserve_s)))
    r["rc"] = max(r["rc"], r["disagg_nccl"]["rc"])
    run.stage("distributed", r)
