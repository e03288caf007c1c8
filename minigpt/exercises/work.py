"""How a function computed its answer, for the questions about a method (`Question.method`): the floating-point
operations of its matrix products (torch's `FlopCounterMode`: matmul, einsum, bmm, linear, and the
matrix-vector and dot products it leaves at 0, `VECTOR_PRODUCTS`) and the number of
elements of the largest tensor any torch operation made (`largest`, views included).

The grader's sandboxed child measures each case of such a question with `measured` and sends the two integers
with the outputs; the trusted parent, which knows the case's sizes, decides (ex18 Q1: an absorbed decode never
decompresses the latents into per-head keys, so it neither makes an [S, H, d_h] tensor nor spends the
2·S·d_c·H·d_h FLOPs of that product). `check()` measures the same way. What it cannot see: work done outside torch
(a NumPy copy of the tensors), or a loop of elementwise products over positions; those are left to the review.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

WORK_KEYS = ("flops", "largest")


class _Largest(TorchDispatchMode):
    """Records the element count of every tensor an operation returns."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for leaf in tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                self.largest = max(self.largest, leaf.numel())
        return out


def _mv_flops(matrix: Any, vector: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """A matrix [m, n] times an n-vector (`aten.mv`, which torch's counter leaves at 0): 2·m·n."""
    return 2 * matrix[0] * matrix[1]


def _dot_flops(a: Any, b: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """Two n-vectors' dot product (`aten.dot`, left at 0 too): 2·n."""
    return 2 * a[0]


#: Matrix products torch's `FlopCounterMode` does not count (it counts mm, addmm, bmm, baddbmm, convolutions and
#: attention): without them a decompression written one token at a time with `w @ c[j]` measured 0 FLOPs.
VECTOR_PRODUCTS = {torch.ops.aten.mv: _mv_flops, torch.ops.aten.dot: _dot_flops}


def measured(fn: Callable[..., Any], kwargs: dict[str, Any]) -> tuple[Any, dict[str, int]]:
    """`fn(**kwargs)` and its work: {"flops": FLOPs of its matrix products, matrix-vector and dot products
    included, "largest": elements of its largest tensor}."""
    largest = _Largest()
    with FlopCounterMode(display=False, custom_mapping=VECTOR_PRODUCTS) as flops, largest:
        value = fn(**kwargs)
    return value, {"flops": int(flops.get_total_flops()), "largest": int(largest.largest)}


def valid_work(work: Any) -> bool:
    """Whether `work` (from the sandbox: untrusted) is one case's measurement: two non-negative integers."""
    return (type(work) is dict and sorted(work) == sorted(WORK_KEYS)
            and all(type(work[k]) is int and 0 <= work[k] < 2**62 for k in WORK_KEYS))
