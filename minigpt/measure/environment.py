"""One record of where and how a measurement ran, stored beside every sweep's and bench's results."""

from __future__ import annotations

import datetime
import os
import platform
from typing import Any

import torch


def environment(device: torch.device | str, dtype: torch.dtype) -> dict[str, Any]:
    """Device and its name, dtype, torch and Python versions, CPU threads and cores, date (UTC)."""
    device = torch.device(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or platform.machine())
    return {
        "device": device.type,
        "device_name": name,
        "dtype": str(dtype).removeprefix("torch."),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu_threads": torch.get_num_threads(),
        "cpu_cores": os.cpu_count(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
    }
