"""The GPU run's files: packed under --out at the end of the run, and unpacked back here into the package's
sweep data (minigpt/measure/data)."""

from __future__ import annotations

import datetime
import json
import shutil
import tarfile
import time
from pathlib import Path

from gpu_budget import ROOT, Run

DATA = ROOT / "minigpt" / "measure" / "data"  # minigpt.measure.sweep_files.DATA_DIR


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
    """The returned files into the book: the sweeps' JSON into minigpt/measure/data, the summary as
    gpu_run_<device>.json."""
    summary = json.loads((folder / "summary.json").read_text())
    device = summary["device"]
    if device != "cuda":  # a CPU rehearsal's sweeps ran beside the tests: never the book's CPU data
        raise SystemExit(f"--unpack takes a GPU run's files (device cuda); {folder} holds a {device!r} run")
    with tarfile.open(folder / "data.tar.gz") as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if member.isfile() and name.endswith(f"_{device}.json"):
                (DATA / name).write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
                print(f"wrote minigpt/measure/data/{name}")
    env = json.loads((folder / "env.json").read_text()) if (folder / "env.json").is_file() else {}
    summary["env"] = {k: v for k, v in env.items() if k != "nvidia_smi"} or summary.get("env")
    for stage in summary["stages"].values():
        stage.pop("tail", None)
    (DATA / f"gpu_run_{device}.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    print(f"wrote minigpt/measure/data/gpu_run_{device}.json")
