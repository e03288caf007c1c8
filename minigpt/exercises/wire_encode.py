"""The wire format's outputs: a returned value -> plain data (`encode`), nothing of the value's own class trusted.
"""

from __future__ import annotations

from typing import Any

import torch

from minigpt.exercises.wire_messages import COMPLEX, OBJECTS, RAGGED, RETURNED, TOO_DEEP, TOO_LARGE, TOO_LONG, TOO_MANY


class UnsupportedOutput(TypeError):
    """The student's function returned something that is not a number, bool, list or tensor."""


MAX_ELEMENTS = 1_000_000  # numbers in one returned value
MAX_INT_BITS = 64  # an int beyond ±2**64 is not an answer to any question
MAX_TEXT = 200  # characters of a returned string (a name: some answers are str | None)


def _shape_of(data: Any) -> list[int]:
    """The shape of a rectangular nested list of numbers (UnsupportedOutput when ragged)."""
    shape, level = [], data
    while isinstance(level, list):
        shape.append(len(level))
        level = level[0] if level else None
    def walk(x: Any, depth: int) -> None:
        if depth == len(shape):
            if isinstance(x, list):
                raise UnsupportedOutput(RAGGED)
            return
        if not isinstance(x, list) or len(x) != shape[depth]:
            raise UnsupportedOutput(RAGGED)
        for item in x:
            walk(item, depth + 1)
    walk(data, 0)
    return shape


def _encode_tensor(value: torch.Tensor) -> dict[str, Any]:
    t = torch.Tensor.as_subclass(value, torch.Tensor)
    numel = torch.Tensor.numel(t)
    if numel > MAX_ELEMENTS:
        raise UnsupportedOutput(TOO_MANY.format(n=numel))
    t = torch.Tensor.cpu(torch.Tensor.detach(t))
    if torch.Tensor.is_complex(t):
        raise UnsupportedOutput(COMPLEX)
    if torch.Tensor.is_floating_point(t):
        t = torch.Tensor.double(t)
    elif t.dtype != torch.bool:
        t = torch.Tensor.long(t)
    data = torch.Tensor.tolist(t)
    return {"$tensor": data, "shape": _shape_of(data)}


def encode(value: Any, depth: int = 0) -> Any:
    """Plain data (exact bool, int, float, list; a tensor as ``{"$tensor": nested list, "shape": its shape}``) for a
    returned value.

    Nothing of the value's own class is trusted: subclasses of int/float/tensor are read through the base class
    (a tensor subclass that reports another ``.shape`` or overrides ``tolist`` is converted by
    ``torch.Tensor``'s own methods, and the shape is measured on the converted data).
    """
    if depth > 8:
        raise UnsupportedOutput(TOO_DEEP)
    if value is None or isinstance(value, str):
        return None if value is None else str.__str__(value)[:MAX_TEXT]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        if int.bit_length(value) > MAX_INT_BITS:
            raise UnsupportedOutput(TOO_LARGE)
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunction():  # a subclass's __torch_function__ is not consulted
            return _encode_tensor(value)
    if type(value).__module__ == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise UnsupportedOutput(OBJECTS)
            return encode(torch.from_numpy(np.array(value, copy=True)), depth + 1)
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return encode(int(value), depth + 1)
        if isinstance(value, np.floating):
            return float(value)
    if isinstance(value, (list, tuple)):
        items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        n = list.__len__(value) if isinstance(value, list) else tuple.__len__(value)
        if n > 100_000:
            raise UnsupportedOutput(TOO_LONG)
        return [encode(v, depth + 1) for v in items]
    raise UnsupportedOutput(RETURNED.format(type=type(value).__name__))
