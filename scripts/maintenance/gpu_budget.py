"""The GPU run's clock, staging folder and record (`Run`), and each stage's child process under its time limit."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
