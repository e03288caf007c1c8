"""Where the model runs: the one device choice (``MINIGPT_DEVICE``) and the one device sync."""

from __future__ import annotations

import os

import torch

DEVICE_ENV = "MINIGPT_DEVICE"


def default_device() -> torch.device:
    """The device the book's code runs on: ``$MINIGPT_DEVICE`` (cpu, cuda or cuda:N) if set, else cuda when present."""
    requested = os.environ.get(DEVICE_ENV, "").strip().lower()
    if requested:
        if requested != "cpu" and requested.split(":")[0] != "cuda":
            raise ValueError(f"{DEVICE_ENV} must be 'cpu', 'cuda' or 'cuda:N', got {requested!r}")
        device = torch.device(requested)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"{DEVICE_ENV}={requested!r} but torch.cuda.is_available() is False")
        return device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def sync(device: torch.device | str | None) -> None:
    """Wait for queued kernels on `device` (a no-op on CPU), so a timer measures finished work."""
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
