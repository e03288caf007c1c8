"""The GPU run's results as the chapters read them.

`scripts/maintenance/gpu_run.py` records each sweep on a CUDA device as the package's
`minigpt/measure/data/<sweep>_cuda.json` (`minigpt.measure.sweep_files`). A chapter
calls `gpu_results("flash")`: the recorded run, or None, and then prints `no_gpu_results("flash")`, so a
page without GPU data says how to record it and never shows a number it does not have.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minigpt.costs.preset_types import HardwarePreset
from minigpt.costs.presets import HARDWARE
from minigpt.measure.sweep_files import DATA_DIR, read_json


def gpu_results(sweep: str, folder: str | Path | None = None) -> dict[str, Any] | None:
    """`<folder>/<sweep>_cuda.json` (by default the package's sweep data), or None when none is recorded."""
    if not sweep.isidentifier():
        raise ValueError(f"sweep must be a sweep's name such as 'hardware' or 'flash', got {sweep!r}")
    path = Path(DATA_DIR if folder is None else folder) / f"{sweep}_cuda.json"
    return read_json(path) if path.is_file() else None


def no_gpu_results(sweep: str) -> str:
    """The line a page prints where a GPU result would be."""
    return (f"No GPU run recorded yet: scripts/maintenance/gpu_run.py on a CUDA machine writes "
            f"data/{sweep}_cuda.json (or python scripts/sweeps/sweep_{sweep}.py --device cuda).")


def recorded_on(run: dict[str, Any]) -> str:
    """Where and when a sweep ran: date, device name, dtype, torch."""
    env = run["environment"]
    return f"recorded {env['date']} on {env['device_name']}, {env['dtype']}, torch {env['torch']}"


def datasheet(device_name: str) -> HardwarePreset | None:
    """The preset (datasheet figures) of the GPU named `device_name` by torch ("NVIDIA H200", ...), if any.

    Matched on the preset's model number ("H200", "A100", "RTX 4090"); among several (A100 40GB and 80GB)
    the one named with the memory in the device name, else the first.
    """
    name = device_name.upper().replace("-", " ")
    found = [p for p in HARDWARE.values() if p.name.split()[0].upper() in name.split()
             or p.name.upper().startswith("RTX") and p.name.upper() in name]
    for preset in found:
        if any(word in name for word in preset.name.upper().split()[1:]):
            return preset
    return found[0] if found else None
