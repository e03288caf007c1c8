"""The book's GPU run, in one go: the sweeps, the unit tests and strict nbval over every notebook, on one device.

On the GPU machine (Python 3.12 with a CUDA torch; the notebook stack as wheels from
scripts/maintenance/gpu_wheels.sh in .whl), from the repository root:

    python3 scripts/maintenance/gpu_run.py --out "$OUT"                      # MINIGPT_DEVICE=cuda, in --budget 480 s
    python3 scripts/maintenance/gpu_run.py --out "$OUT" --stages unit nbval  # a rerun of two stages only

The rehearsal on a CPU (the same script end to end, the sweeps on cpu):

    MINIGPT_DEVICE=cpu .venv/bin/python scripts/maintenance/gpu_run.py --out /tmp/gpu-rehearsal --budget 2400 \
        --sweep-time-scale 10 --test-reserve 900

And back here, the results into the book's data (chapters/data/*_cuda.json, chapters/data/gpu_run_cuda.json):

    .venv/bin/python scripts/maintenance/gpu_run.py --unpack /path/to/the/returned/files

Stages, in this order, each a subprocess under its own time limit, all within --budget seconds:
  env     the device (name, SMs, memory), torch and CUDA versions, the dtype the sweeps use, the date and the
          packages -> env.json
  sweeps  scripts/sweeps/sweep_*.py --device DEVICE, one at a time (timings run alone): hardware (Chapter 8),
          batching (7), cost_curve (6), overhead (18: eager against CUDA graphs), flash (15-16: attention peak
          memory, Flash-Decoding occupancy), then gqa, kv_quant, speculative if time is left. Each writes
          its JSON to the staging folder, never into chapters/data (the notebooks are checked against the
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
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "chapters" / "data"
WHEELS = ROOT / ".whl"
SITE = Path("/tmp/site")  # where the wheels go on the GPU machine (pip --target)
STAGES = ("env", "sweeps", "distributed", "unit", "nbval")
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
NOTEBOOK_GLOBS = ("chapters/*.ipynb", "exercises/*.ipynb", "decoder_ring/*.ipynb")  # the Makefile's NOTEBOOKS


class Run:
    """The run's clock, its staging folder and the record of every stage."""

    def __init__(self, out: Path, budget_s: float, device: str) -> None:
        self.out, self.device, self.start = out, device, time.monotonic()
        self.deadline = self.start + budget_s
        self.stage_dir = Path(tempfile.mkdtemp(prefix="gpu-run-"))
        (self.stage_dir / "data").mkdir()
        (self.stage_dir / "logs").mkdir()
        self.record: dict[str, object] = {"device": device, "budget_s": budget_s, "stages": {}}
        self.env = dict(os.environ, MINIGPT_DEVICE=device, PYTHONHASHSEED="0", PYTHONUNBUFFERED="1")

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def log(self, name: str) -> Path:
        return self.stage_dir / "logs" / f"{name}.log"

    def stage(self, name: str, result: dict[str, object]) -> None:
        self.record["stages"][name] = result  # type: ignore[index]
        print(f"[{time.monotonic() - self.start:6.0f} s] {name}: {json.dumps(result)[:300]}", flush=True)


SANDBOX_WORKS = "bubblewrap works"


def sandbox_problem() -> str:
    """Why the grader's tests cannot run here (bubblewrap missing or refused), or SANDBOX_WORKS."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from minigpt.grading.sandbox import unavailable  # stdlib only: no torch in this process

    return unavailable() or SANDBOX_WORKS


def install_wheels(run: Run, folder: Path) -> None:
    """The wheels of scripts/maintenance/gpu_wheels.sh into /tmp/site, on PYTHONPATH for every child (kernels too)."""
    paths = [str(ROOT)]
    wheels = sorted(glob.glob(str(folder / "*.whl")))
    if wheels:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                               "--no-cache-dir", "--upgrade", "--target", str(SITE), *wheels],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"installing {len(wheels)} wheels from {folder} failed:\n{done.stderr[-2000:]}")
        paths.insert(0, str(SITE))
        sys.path[:0] = [str(SITE)]
    run.env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [os.environ.get("PYTHONPATH")] if p])
    run.record["wheels"] = [Path(w).name for w in wheels]


def child(run: Run, name: str, cmd: list[str], limit_s: float) -> dict[str, object]:
    """Run one command under min(limit_s, what is left of the budget), its output in logs/<name>.log."""
    limit = max(1.0, min(limit_s, run.left()))
    t0 = time.monotonic()
    with open(run.log(name), "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=run.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=limit)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            rc, timed_out = proc.wait(), True
    return {"command": " ".join(cmd), "rc": rc, "seconds": round(time.monotonic() - t0, 1), "timed_out": timed_out,
            "limit_s": round(limit, 1), "tail": run.log(name).read_text(errors="replace")[-1500:]}


def stage_env(run: Run) -> None:
    code = r"""
import datetime, importlib.metadata as md, json, platform, shutil, subprocess, sys
import torch
from minigpt.measure import environment
from minigpt.runtime.device import default_device
device = default_device()
dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
info = {"date": datetime.date.today().isoformat(), "python": platform.python_version(),
        "torch": torch.__version__, "cuda": torch.version.cuda, "device": str(device),
        "sweep_dtype": str(dtype).removeprefix("torch."), "environment": environment(device, dtype),
        "node": shutil.which("node")}
if device.type == "cuda":
    p = torch.cuda.get_device_properties(device)
    info.update(device_name=p.name, sm_count=p.multi_processor_count, memory_bytes=p.total_memory,
                capability=f"{p.major}.{p.minor}")
    smi = shutil.which("nvidia-smi")
    if smi:
        info["nvidia_smi"] = subprocess.run([smi], capture_output=True, text=True).stdout[-3000:]
names = ["torch", "numpy", "matplotlib", "pytest", "pytest-xdist", "hypothesis", "safetensors", "transformers",
         "tokenizers", "nbval", "nbclient", "ipykernel", "ipywidgets", "tiktoken", "psutil"]
versions = {}
for n in names:
    try:
        versions[n] = md.version(n)
    except md.PackageNotFoundError:
        versions[n] = None
info["packages"] = versions
print(json.dumps(info))
"""
    result = child(run, "env", [sys.executable, "-c", code], 120)
    result["command"] = f"{sys.executable} -c <the environment record of scripts/maintenance/gpu_run.py>"
    try:
        info = json.loads(run.log("env").read_text().splitlines()[-1])
    except (ValueError, IndexError):
        info = {}
    (run.stage_dir / "env.json").write_text(json.dumps(info, indent=2))
    run.record["env"] = {k: v for k, v in info.items() if k != "nvidia_smi"}
    if result["rc"] == 0:
        result.pop("tail")
    run.stage("env", result)


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


def gpu_count() -> int:
    """GPUs this process can see (0 without CUDA)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def stage_distributed(run: Run, reserve_s: float, gpus: int) -> None:
    """Tensor parallelism on NCCL, one rank per GPU, when there are at least two GPUs; else say so."""
    if gpus < 2:
        run.stage("distributed", {"rc": 0, "gpus": gpus,
                                  "skipped": f"{gpus} GPU(s): NCCL needs 2 or more; Chapter 20 keeps its gloo data"})
        return
    worlds = ["1", "2"] + (["4"] if gpus >= 4 else [])
    out = run.stage_dir / "data" / "tp_cuda.json"
    cmd = [sys.executable, str(ROOT / "scripts" / "sweeps" / "sweep_tp.py"), "--backend", "nccl", "--worlds", *worlds,
           "--out", str(out)]
    r = child(run, "sweep_tp_nccl", cmd, max(30.0, min(240.0, run.left() - reserve_s)))
    r.update(gpus=gpus, wrote=out.name if out.is_file() else None)
    run.stage("distributed", r)


def _xdist(workers: int, dist: str | None = None) -> list[str]:
    """pytest-xdist's options where it is installed (the GPU machine has it; this project's venv does not)."""
    try:
        import xdist  # noqa: F401
    except ImportError:
        return []
    return ["-n", str(workers)] + (["--dist", dist] if dist else [])


def junit_counts(path: Path) -> dict[str, object]:
    """Tests, failures, errors, skips and the first failing test ids, from a JUnit XML file."""
    if not path.is_file():
        return {"junit": "missing"}
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    failed = [f"{c.get('classname')}::{c.get('name')}" for s in suites for c in s.iter("testcase")
              if c.find("failure") is not None or c.find("error") is not None]
    counts["failed"] = failed[:40]
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    return counts


def stage_tests(run: Run, stages: list[str], workers: int) -> None:
    """unit and nbval side by side, each with `workers` pytest-xdist workers."""
    problem = run.record["sandbox"]
    sandbox_env = {"MINIGPT_SKIP_SANDBOX": "1"} if problem != SANDBOX_WORKS and "unit" in stages else {}
    import importlib.util  # llama.cpp's tests need its CPU wheel (README, "llama.cpp"); no torch in this process

    if importlib.util.find_spec("llama_cpp") is None:
        sandbox_env["MINIGPT_SKIP_LLAMACPP"] = "1"  # the run's summary says so
    notebooks = sorted(p for g in NOTEBOOK_GLOBS for p in glob.glob(str(ROOT / g)))
    jobs = {}
    if "unit" in stages:
        xml = run.stage_dir / "logs" / "unit.xml"
        jobs["unit"] = ([sys.executable, "-m", "pytest", "tests", "-m", "not site", "-p", "no:cacheprovider", "-q",
                         "-rfE", f"--junitxml={xml}", *_xdist(workers)], xml)
    if "nbval" in stages:
        xml = run.stage_dir / "logs" / "nbval.xml"
        jobs["nbval"] = ([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
                          "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "--nbval-cell-timeout=300", "-q", "-rfE",
                          f"--junitxml={xml}", *_xdist(workers, "loadfile"), *notebooks], xml)
    env = dict(run.env, **sandbox_env)
    procs = {}
    t0 = time.monotonic()
    for name, (cmd, _) in jobs.items():
        log = open(run.log(name), "w")  # noqa: SIM115 - closed below
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        procs[name] = (subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True), log)
    for name, (proc, log) in procs.items():
        try:
            rc, timed_out = proc.wait(timeout=max(1.0, run.left())), False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            rc, timed_out = proc.wait(), True
        log.close()
        result = {"command": " ".join(jobs[name][0][:8]) + " ...", "rc": rc, "timed_out": timed_out,
                  "seconds": round(time.monotonic() - t0, 1), **junit_counts(jobs[name][1])}
        if rc != 0:
            result["tail"] = run.log(name).read_text(errors="replace")[-2500:]
        run.stage(name, result)


def pack(run: Run) -> int:
    run.out.mkdir(parents=True, exist_ok=True)
    run.record["seconds"] = round(time.monotonic() - run.start, 1)
    run.record["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    stages = run.record["stages"]
    rc = 0 if all(s.get("rc", 0) == 0 for s in stages.values()) else 1  # type: ignore[union-attr]
    run.record["ok"] = rc == 0
    (run.out / "summary.json").write_text(json.dumps(run.record, indent=2))
    if (run.stage_dir / "env.json").is_file():
        shutil.copy(run.stage_dir / "env.json", run.out / "env.json")
    for part in ("data", "logs"):
        with tarfile.open(run.out / f"{part}.tar.gz", "w:gz") as tar:
            tar.add(run.stage_dir / part, arcname=part)
    shutil.rmtree(run.stage_dir, ignore_errors=True)
    print(f"summary: {'all green' if rc == 0 else 'FAILURES'} in {run.record['seconds']} s -> {run.out}")
    return rc


def unpack(folder: Path) -> None:
    """The returned files into the book: the sweeps' JSON into chapters/data, the summary as gpu_run_<device>.json."""
    summary = json.loads((folder / "summary.json").read_text())
    device = summary["device"]
    if device != "cuda":  # a CPU rehearsal's sweeps ran beside the tests: never the book's CPU data
        raise SystemExit(f"--unpack takes a GPU run's files (device cuda); {folder} holds a {device!r} run")
    with tarfile.open(folder / "data.tar.gz") as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if member.isfile() and name.endswith(f"_{device}.json"):
                (DATA / name).write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
                print(f"wrote chapters/data/{name}")
    env = json.loads((folder / "env.json").read_text()) if (folder / "env.json").is_file() else {}
    summary["env"] = {k: v for k, v in env.items() if k != "nvidia_smi"} or summary.get("env")
    for stage in summary["stages"].values():
        stage.pop("tail", None)
    (DATA / f"gpu_run_{device}.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    print(f"wrote chapters/data/gpu_run_{device}.json")


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
    parser.add_argument("--unpack", type=Path, help="a folder of returned files: write them into chapters/data")
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
