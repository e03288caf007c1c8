"""The grader's wire format: JSON input descriptions -> objects, and returned values -> JSON.

Shared by both sides of the grader and by the student-side `check`: the trusted parent describes a
question's inputs as plain JSON (``{"$randn": [2, 3], "seed": 7}``, ``{"$uniform": [4], "seed": 7, "low": 1,
"high": 9}``, ``{"$long": [[1, 2]]}``, ``{"$config": {...}}``, ``{"$model": {...}, "seed": 5}``,
``{"$record": "ModelPreset", "fields": {...}}``)
and the sandboxed child turns them into tensors, configs, small MiniGPTs and read-only records. The
child's copy of `minigpt` holds this module and the runtime (model, cache), never the answer
functions: a preset reaches it as a `Record` of its fields, not as an object with formula methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from minigpt.config import ModelConfig

Lookup = Callable[[dict[str, Any]], Any]


class Record:
    """A read-only bag of named fields (a preset as the grader sends it: its fields, no methods)."""

    __slots__ = ("_kind", "_fields")

    def __init__(self, kind: str, fields: dict[str, Any]) -> None:
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_fields", dict(fields))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"{self._kind} has no field {name!r}; its fields are {sorted(self._fields)}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self._kind} is read-only")

    def __repr__(self) -> str:
        return f"{self._kind}(" + ", ".join(f"{k}={v!r}" for k, v in self._fields.items()) + ")"


def records(kind: str, table: dict[str, dict[str, Any]]) -> dict[str, Record]:
    """A name -> Record table (the presets the grading sandbox offers as `MODELS` / `HARDWARE`)."""
    return {name: Record(kind, fields) for name, fields in table.items()}


def build_model(spec: dict[str, Any]) -> torch.nn.Module:
    """The small random MiniGPT a `{"$model": config, "seed": n}` describes (its own generator, not the global RNG)."""
    from minigpt import MiniGPT

    with torch.random.fork_rng(devices=[]):
        model = MiniGPT(ModelConfig(**spec["$model"]))
    g = torch.Generator().manual_seed(spec["seed"])
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return model.eval()


def build(value: Any, lookup: Lookup | None = None) -> Any:
    """Turn a JSON input description into the object passed to the student's function.

    `lookup` resolves the named presets (``{"$preset": name}``, ``{"$hardware": name}``) on the trusted
    side; the sandbox receives them already resolved, as ``{"$record": ...}``.
    """
    if isinstance(value, list):
        return [build(v, lookup) for v in value]
    if not isinstance(value, dict):
        return value
    if "$randn" in value:
        g = torch.Generator().manual_seed(value["seed"])
        return torch.randn(value["$randn"], generator=g) * value.get("scale", 1.0)
    if "$uniform" in value:
        g = torch.Generator().manual_seed(value["seed"])
        return value["low"] + (value["high"] - value["low"]) * torch.rand(value["$uniform"], generator=g)
    if "$long" in value:
        return torch.tensor(value["$long"], dtype=torch.long)
    if "$record" in value:
        return Record(str(value["$record"]), value["fields"])
    if lookup is not None and ("$preset" in value or "$hardware" in value):
        return lookup(value)
    if "$config" in value:
        return ModelConfig(**value["$config"])
    if "$model" in value:
        return build_model(value)
    return {k: build(v, lookup) for k, v in value.items()}


def build_case(case: dict[str, Any], lookup: Lookup | None = None) -> dict[str, Any]:
    """Keyword arguments for the student's function (fresh objects on every call)."""
    return {name: build(value, lookup) for name, value in case.items()}


class UnsupportedOutput(TypeError):
    """The student's function returned something that is not a number, bool, list or tensor."""


def encode(value: Any, depth: int = 0) -> Any:
    """A JSON-able form of a returned value: numbers stay numbers, tensors become nested lists."""
    if depth > 8:
        raise UnsupportedOutput("the returned value is nested too deeply")
    if value is None or isinstance(value, (bool, int, str, float)):
        return value  # serialised in the child; the parent compares what it parses, whatever the type claimed
    if isinstance(value, torch.Tensor):
        if value.numel() > 1_000_000:
            raise UnsupportedOutput(f"the returned tensor has {value.numel()} elements (too many)")
        t = value.detach().cpu()
        if t.is_floating_point():
            t = t.double()
        return {"$tensor": t.tolist(), "shape": list(t.shape)}
    if type(value).__module__ == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            return encode(torch.from_numpy(np.ascontiguousarray(value)), depth + 1)
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.floating):
            return float(value)
    if isinstance(value, (list, tuple)):
        if len(value) > 100_000:
            raise UnsupportedOutput("the returned sequence is too long")
        return [encode(v, depth + 1) for v in value]
    raise UnsupportedOutput(f"returned a {type(value).__name__}, expected a number, bool, list or tensor")

