"""The wire format's inputs: JSON input descriptions -> the objects passed to the student's function (tensors,
configs, small MiniGPTs or their weights alone, and presets as read-only `Record`s of their fields).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from minigpt.config import ModelConfig
from minigpt.exercises.wire_messages import NO_FIELD, READ_ONLY

Lookup = Callable[[dict[str, Any]], Any]


SYMBOLS = ("L", "H_kv", "d_h", "d", "d_ffn", "V", "ffn_matrices")  # what ModelPreset.symbols() returns


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
            raise AttributeError(NO_FIELD.format(record=self._kind, name=repr(name),
                                                 fields=sorted(self._fields))) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(READ_ONLY.format(record=self._kind))

    def symbols(self) -> dict[str, Any]:
        """The model symbols `minigpt.costs.evaluate` reads (the fields of a ModelPreset's ``symbols()``)."""
        return {k: self._fields[k] for k in SYMBOLS if k in self._fields}

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
    model.load_state_dict(build_weights({"$weights": spec["$model"], "seed": spec["seed"]}))  # its own draws
    return model.eval()


def weight_shapes(config: dict[str, Any]) -> list[tuple[str, list[int]]]:
    """The parameters of the MiniGPT `config` describes (ModelConfig's fields), as `named_parameters` lists them:
    each name with its shape (the LM head is `tok_emb.weight`, tied)."""
    c = ModelConfig.from_dict(config)
    d = c.d
    shapes = [("tok_emb.weight", [c.V, d]), ("pos_emb.weight", [c.S_max, d])]
    for layer in range(c.L):
        p = f"blocks.{layer}."
        shapes += [(p + "ln1.weight", [d]), (p + "ln1.bias", [d]),
                   (p + "attn.qkv.weight", [(c.H + 2 * c.H_kv) * c.d_h, d]),
                   (p + "attn.qkv.bias", [(c.H + 2 * c.H_kv) * c.d_h]),
                   (p + "attn.out.weight", [d, d]), (p + "attn.out.bias", [d]),
                   (p + "ln2.weight", [d]), (p + "ln2.bias", [d]),
                   (p + "mlp.up.weight", [c.d_ffn, d]), (p + "mlp.up.bias", [c.d_ffn]),
                   (p + "mlp.down.weight", [d, c.d_ffn]), (p + "mlp.down.bias", [d])]
    return shapes + [("ln_f.weight", [d]), ("ln_f.bias", [d])]


def build_weights(spec: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The state dict (name -> tensor) of the model a `{"$weights": config, "seed": n, "scale": s}` describes, each
    tensor ~ N(0, s²) (s = 0.3 when left out: the weights `build_model` loads for the `{"$model": config, "seed": n}`
    of the same seed), drawn without building a MiniGPT (a question about the arithmetic of the forward gets no
    model in its sandbox)."""
    g, scale = torch.Generator().manual_seed(spec["seed"]), spec.get("scale", 0.3)
    return {name: torch.randn(shape, generator=g) * scale for name, shape in weight_shapes(spec["$weights"])}


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
    if "$float64" in value:
        return torch.tensor(value["$float64"], dtype=torch.float64)
    if "$record" in value:
        return Record(str(value["$record"]), value["fields"])
    if lookup is not None and ("$preset" in value or "$hardware" in value):
        return lookup(value)
    if "$config" in value:
        return ModelConfig(**value["$config"])
    if "$model" in value:
        return build_model(value)
    if "$weights" in value:
        return build_weights(value)
    return {k: build(v, lookup) for k, v in value.items()}


def build_case(case: dict[str, Any], lookup: Lookup | None = None) -> dict[str, Any]:
    """Keyword arguments for the student's function (fresh objects on every call)."""
    return {name: build(value, lookup) for name, value in case.items()}
