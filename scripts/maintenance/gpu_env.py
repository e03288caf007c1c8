"""What the GPU machine has: the wheels installed for the run, the grader's sandbox, the environment record, GPUs."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

from gpu_budget import ROOT, Run, child

WHEELS = ROOT / ".whl"
SITE = Path("/tmp/site")  # where the wheels go on the GPU machine (pip --target)

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


def gpu_count() -> int:
    """GPUs this process can see (0 without CUDA)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
