"""Counting what a real call does: FLOPs (`FlopCounterMode`, 2 per multiply-add, matmuls only: no
softmax, LayerNorm, GELU or bias adds, the convention of `minigpt.costs`) and bytes held by tensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch.utils.flop_counter import FlopCounterMode

R = TypeVar("R")


def counted(fn: Callable[[], R]) -> tuple[int, R]:
    """FLOPs of one call of `fn` (FlopCounterMode, 2 per multiply-add) and the call's result."""
    with FlopCounterMode(display=False) as counter:
        result = fn()
    return int(counter.get_total_flops()), result


def count_flops(fn: Callable[[], Any]) -> int:
    """FLOPs of one call of `fn` as FlopCounterMode counts them (2 per multiply-add), for Eqs. (1.1)–(1.6)."""
    return counted(fn)[0]


def count_flops_by_op(fn: Callable[[], Any]) -> dict[str, int]:
    """FLOPs of one call of `fn` per aten operator (e.g. {"aten.addmm": ..., "aten.bmm": ...})."""
    with FlopCounterMode(display=False) as counter:
        fn()
    totals: dict[str, int] = {}
    for op, flops in counter.get_flop_counts().get("Global", {}).items():
        name = str(op.overloadpacket) if hasattr(op, "overloadpacket") else str(op)
        totals[name] = totals.get(name, 0) + int(flops)
    return totals


def tensor_bytes(*tensors: torch.Tensor) -> int:
    """Bytes held by the given tensors (numel · element size), the measured side of Eqs. (2.2) and (2.3)."""
    return sum(t.numel() * t.element_size() for t in tensors)


def module_bytes(module: torch.nn.Module) -> int:
    """Bytes of a module's parameters and buffers, measured side of Eq. (2.3); tied weights count once."""
    return tensor_bytes(*module.parameters(), *module.buffers())
