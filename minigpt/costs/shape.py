"""One model shape for every formula: hand `costs` exactly the symbols a function takes.

A model (a `minigpt.config.ModelConfig`, a `minigpt.costs.presets.ModelPreset`, or a plain mapping)
describes itself by its symbols, ``L, H_kv, d_h, d, d_ffn, V, ffn_matrices`` (`MODEL_SYMBOLS`).
`evaluate(fn, model, **given)` calls a formula with the symbols its signature names plus the ones
given (the workload: P, D, S, B, s, ...); `of(model)` binds a model once, so that
``costs.of(config).prefill_flops(P=16)`` reads like the equation. The browser needs neither: an
explorer's ``model=`` is expanded into named arguments in Python (`minigpt.book.explorers`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Protocol

MODEL_SYMBOLS = ("L", "H_kv", "d_h", "d", "d_ffn", "V", "ffn_matrices")


class ModelShape(Protocol):
    """Anything with the model symbols of the notation table (`ModelConfig`, `ModelPreset`)."""

    def symbols(self) -> dict[str, int]: ...


def model_symbols(model: ModelShape | Mapping[str, int]) -> dict[str, int]:
    """The model's symbols (`MODEL_SYMBOLS`), from its `symbols()` or a mapping holding exactly those keys."""
    symbols = dict(model) if isinstance(model, Mapping) else model.symbols()
    extra = set(symbols) - set(MODEL_SYMBOLS)
    if extra:
        raise ValueError(f"model has symbols {sorted(extra)} that no formula takes; allowed: {list(MODEL_SYMBOLS)}")
    return symbols


def model_args(fn: Callable[..., Any], model: ModelShape | Mapping[str, int], **given: Any) -> dict[str, Any]:
    """The keyword arguments of `fn`: the model symbols its signature names, then `given` (which win)."""
    params = inspect.signature(fn).parameters
    unknown = sorted(set(given) - set(params))
    if unknown:
        raise ValueError(f"{fn.__name__}() takes no argument {unknown}; it takes {list(params)}")
    args = {k: v for k, v in model_symbols(model).items() if k in params}
    args.update(given)
    return args


def evaluate(fn: Callable[..., Any], model: ModelShape | Mapping[str, int], **given: Any) -> Any:
    """`fn(**model_args(fn, model, **given))`: a formula evaluated for a model and a workload."""
    return fn(**model_args(fn, model, **given))


class BoundCosts:
    """The formulas of `minigpt.costs` with one model's symbols filled in (see `of`)."""

    def __init__(self, model: ModelShape | Mapping[str, int]) -> None:
        self.symbols = model_symbols(model)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        from minigpt import costs

        if name not in costs.FORMULAS:
            raise AttributeError(f"minigpt.costs has no formula {name!r}")
        return partial(evaluate, getattr(costs, name), self.symbols)

    def __repr__(self) -> str:
        return f"costs.of({self.symbols})"


def of(model: ModelShape | Mapping[str, int]) -> BoundCosts:
    """The formulas bound to `model`: ``costs.of(config).decode_step_flops(S=128, B=8)``."""
    return BoundCosts(model)
