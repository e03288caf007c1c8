"""Operators counted and sorted: how many aten operators a call dispatches, and what each one costs the device.

Not every aten operator launches device work: a view (`view`, `transpose`, `t`, `expand`, `select`,
`slice`, ...) only writes a new shape and strides into a tensor header. `op_kind` sorts each operator
into "kernel" (it launches work on the device), "view" (metadata only: a header, no kernel, no bytes)
or "sync" (`aten._local_scalar_dense`: a device-to-host copy the host waits for). On a GPU the kernel
and sync operators are the launches; the views cost the host its dispatch and nothing on the device.
`count_ops` counts the operators of a real call with a dispatch mode: n_ops of the overhead floor.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from minigpt.runtime.generate import decode_step
from minigpt.runtime.model import MiniGPT

#: The aten operator behind `int(t)`, `t.item()` and `t.tolist()`: the device hands a value to the host (a sync).
HOST_SYNC_OP = "aten._local_scalar_dense"


#: Operators that return an alias of their input but whose schema does not say so (`is_view` is
#: False): `_unsafe_view` is `reshape`'s view of a contiguous tensor, `lift_fresh` returns its input.
ALIAS_OPS = frozenset({"aten._unsafe_view", "aten.lift_fresh", "aten.alias"})
#: Operators that allocate an output and launch nothing (the allocator hands out memory).
ALLOC_OPS = frozenset({"aten.empty", "aten.empty_strided", "aten.empty_like", "aten.new_empty"})
#: The kinds of `op_kind`, in the order tables print them.
OP_KINDS = ("kernel", "view", "sync")


def op_kind(func: Any) -> str:
    """"kernel", "view" or "sync" for an aten operator (an OpOverload, or its name such as "aten.t").

    "view": the schema says it returns an alias of an input (`is_view`, or every return annotated
    as a non-writing alias, as `split_with_sizes`), or it is in ALIAS_OPS / ALLOC_OPS: no device
    work. "sync": HOST_SYNC_OP. Everything else, in-place writes (`copy_`) included, is a "kernel".
    """
    if isinstance(func, str):
        func = _overload(func)
    name = str(func.overloadpacket)
    if name == HOST_SYNC_OP:
        return "sync"
    if name in ALIAS_OPS or name in ALLOC_OPS or func.is_view:
        return "view"
    returns = func._schema.returns
    if returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns):
        return "view"
    return "kernel"


def _overload(name: str) -> Any:
    """The OpOverload behind an operator name ("aten.t", "aten.add.Tensor"): `default` or the first."""
    parts = name.split(".")
    if len(parts) not in (2, 3) or parts[0] != "aten":
        raise ValueError(f"name must be an aten operator such as 'aten.t', got {name!r}")
    try:
        packet = getattr(torch.ops.aten, parts[1])
        overloads = packet.overloads()
        overload = parts[2] if len(parts) == 3 else ("default" if "default" in overloads else overloads[0])
        return getattr(packet, overload)
    except (AttributeError, RuntimeError, IndexError) as e:
        raise ValueError(f"name must be an aten operator such as 'aten.t', got {name!r}") from e


def kind_counts(ops: Counter[str] | dict[str, int]) -> dict[str, int]:
    """Operator counts by name, summed by `op_kind`: {"kernel": n, "view": n, "sync": n}."""
    totals = dict.fromkeys(OP_KINDS, 0)
    for name, n in ops.items():
        totals[op_kind(name)] += n
    return totals


class OpCounter(TorchDispatchMode):
    """A dispatch mode that counts every aten operator run under it, by name (e.g. "aten.addmm")."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        self.counts[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


class OpRecorder(TorchDispatchMode):
    """A dispatch mode that records every aten call in order: (operator, args, kwargs, kind, bytes).

    `bytes` of a kernel call is what its tensors hold, every tensor argument plus every tensor
    result (a view moves none: 0). The arguments are kept, so the calls can be replayed one by one.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, tuple, dict, str, int]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        kind = op_kind(func)
        moved = _tensor_bytes((args, kwargs, out)) if kind == "kernel" else 0
        self.calls.append((func, args, kwargs, kind, moved))
        return out


def _tensor_bytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_tensor_bytes(v) for v in value.values())
    return 0


def count_ops(fn: Callable[[], Any]) -> Counter[str]:
    """The aten operators one call of `fn` dispatches, by name: n_ops of the overhead floor is their total."""
    with OpCounter() as counter:
        fn()
    return counter.counts


def decode_step_ops(model: MiniGPT, *, S: int = 16, B: int = 1, check_inputs: bool = True) -> Counter[str]:
    """The operators of one eager decode step (Eq. 1.3) of B sequences against S cached tokens."""
    from minigpt.measure.sweeps import filled_cache  # sweeps imports this layer's timers; keep the import local

    cache = filled_cache(model, B=B, S=S)
    token = torch.zeros(B, 1, dtype=torch.long, device=model.device)
    if check_inputs:
        return count_ops(lambda: decode_step(model, token, cache))
    fast = torch.no_grad()(lambda: model(token.view(-1, 1), cache, last_only=True, check_inputs=False)[:, -1])
    return count_ops(fast)  # decode_step's own operators, less the id check
