"""The book's GPU run, in one go: the sweeps, the unit tests and strict nbval over every notebook, on one device.

On the GPU machine (Python 3.12 with a CUDA torch; the notebook stack as wheels from
scripts/maintenance/gpu_wheels.sh in .whl), from the repository root:

    python3 scripts/maintenance/gpu_run.py --out "$OUT"                      # MINIGPT_DEVICE=cuda, in --budget 480 s
    python3 scripts/maintenance/gpu_run.py --out "$OUT" --stages unit nbval  # a rerun of two stages only

The rehearsal on a CPU (the same script end to end, the sweeps on cpu):

    MINIGPT_DEVICE=cpu .venv/bin/python scripts/maintenance/gpu_run.py --out /tmp/gpu-rehearsal --budget 2400 \
        --sweep-time-scale 10 --test-reserve 900

And back here, the results into the book's data (minigpt/measure/data/*_cuda.json and gpu_run_cuda.json):

    .venv/bin/python scripts/maintenance/gpu_run.py --unpack /path/to/the/returned/files

Stages, in this order, each a subprocess under its own time limit, all within --budget seconds:
  env     the device (name, SMs, memory), torch and CUDA versions, the dtype the sweeps use, the date and the
          packages -> env.json
  sweeps  scripts/sweeps/sweep_*.py --device DEVICE, one at a time (timings run alone): hardware (Chapter 8),
          batching (7), cost_curve (6), overhead (18: eager against CUDA graphs), flash (15-16: attention peak
          memory, Flash-Decoding occupancy), then gqa, kv_quant, speculative if time is left. Each writes
          its JSON to the staging folder, never into minigpt/measure/data (the notebooks are checked against the
          committed data).
  distributed  Part IV on NCCL when the machine has 2 or more GPUs: scripts/sweeps/sweep_tp.py --backend nccl
          (rank r on GPU r, W = 1, 2 and 4 where there are 4 GPUs) -> tp_cuda.json; with fewer GPUs it records
          how many there were and that NCCL did not run (gloo on CPU is what CI runs)
  unit    pytest tests -m "not site" with MINIGPT_DEVICE (the grader's tests are skipped where bubblewrap
          cannot build a sandbox, and the summary says so)
  nbval   strict nbval over every chapter, exercise and decoder-ring notebook with MINIGPT_DEVICE, the same
          sanitize file as `make nbval`
  unit and nbval run side by side (pytest-xdist where installed), after the sweeps.

Writes under --out: summary.json (each stage's command, exit code, seconds, counts and failures), env.json,
data.tar.gz (the sweeps' JSON) and logs.tar.gz (every log and JUnit file): four files, as the GPU machine's
tool brings back. The exit code is 0 only when every stage run passed.

This file is the command line; each part is a module beside it, one job each: gpu_budget.py (the run's clock
and its children), gpu_env.py (wheels, sandbox, environment, GPUs), gpu_sweeps.py (the sweeps and the NCCL
sweep), gpu_test_stages.py (unit and nbval, JUnit counts) and gpu_pack.py (packing and --unpack).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its modules, one job each, next to it

# What the tests use from here. `child` and `DATA` are read where they are used: patch gpu_sweeps.child, gpu_pack.DATA.
from gpu_budget import ROOT, Run  # noqa: E402
from gpu_env import SANDBOX_WORKS, SITE, WHEELS, gpu_count, install_wheels, sandbox_problem, stage_env  # noqa: E402
from gpu_pack import pack, unpack  # noqa: E402
from gpu_sweeps import SWEEPS, stage_distributed, stage_sweeps  # noqa: E402
from gpu_test_stages import NOTEBOOK_GLOBS, junit_counts, stage_tests  # noqa: E402

__all__ = ["ROOT", "Run", "SANDBOX_WORKS", "SITE", "WHEELS", "gpu_count", "install_wheels", "sandbox_problem",
           "stage_env", "pack", "unpack", "SWEEPS", "stage_distributed", "stage_sweeps", "NOTEBOOK_GLOBS",
           "junit_counts", "stage_tests", "STAGES", "main"]

STAGES = ("env", "sweeps", "distributed", "unit", "nbval")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="folder for summary.json, env.json, data.tar.gz, logs.tar.gz")
    parser.add_argument("--budget", type=float, default=480.0, help="seconds for the whole run (default 480)")
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument("--test-reserve", type=float, default=240.0,
                        help="seconds of the budget the sweeps leave for unit and nbval (default 240)")
    parser.add_argument("--sweep-time-scale", type=float, default=1.0,
                        help="multiply each sweep's time limit (set for an H200) by this: e.g. 10 on a 2-core CPU")
    parser.add_argument("--wheels", type=Path, default=WHEELS, help="folder of wheels to install first (default .whl)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                        help="pytest-xdist workers for unit and for nbval each (default: half the cores)")
    parser.add_argument("--unpack", type=Path, help="a folder of returned files: write them into minigpt/measure/data")
    args = parser.parse_args()
    if args.unpack:
        unpack(args.unpack)
        return 0
    if args.out is None:
        parser.error("--out is required (a folder for the results), unless --unpack is given")
    if args.budget <= 0 or args.sweep_time_scale <= 0 or args.test_reserve < 0 or args.workers < 1:
        parser.error(f"--budget and --sweep-time-scale must be positive, --test-reserve at least 0 and --workers at "
                     f"least 1, got {args.budget}, {args.sweep_time_scale}, {args.test_reserve} and {args.workers}")
    device = os.environ.get("MINIGPT_DEVICE", "cuda")
    if device not in ("cpu", "cuda"):
        parser.error(f"MINIGPT_DEVICE must be cpu or cuda, got {device!r}")
    run = Run(args.out, args.budget, device)
    install_wheels(run, args.wheels)
    run.record["sandbox"] = sandbox_problem()  # the grader's tests are skipped, and said so, unless it works
    if "env" in args.stages:
        stage_env(run)
    tests = [s for s in args.stages if s in ("unit", "nbval")]
    if "sweeps" in args.stages:
        stage_sweeps(run, args.test_reserve if tests else 0.0, args.sweep_time_scale)
    if "distributed" in args.stages:
        stage_distributed(run, args.test_reserve if tests else 0.0, gpu_count())
    if tests:
        stage_tests(run, tests, args.workers)
    return pack(run)


if __name__ == "__main__":
    sys.exit(main())
