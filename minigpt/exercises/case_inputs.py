"""A question's inputs: drawn as plain JSON (``{"$randn": [2, 3], "seed": 7}``, ``{"$preset": "Llama-3-8B"}``),
built into the objects passed to the student's function (`build`, presets by name), `resolve`d to their fields for
the sandboxed child, and described in messages (`describe_call`).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises import wire

Case = dict[str, Any]


def randn(shape: list[int], rng: random.Random, scale: float = 1.0) -> dict[str, Any]:
    """A JSON description of a standard-normal tensor (float32), reproducible from its seed."""
    return {"$randn": list(shape), "seed": rng.getrandbits(48), "scale": scale}


def uniform(shape: list[int], rng: random.Random, low: float, high: float) -> dict[str, Any]:
    """A JSON description of a float32 tensor uniform in [low, high), reproducible from its seed."""
    return {"$uniform": list(shape), "seed": rng.getrandbits(48), "low": low, "high": high}


def float64(values: list[float]) -> dict[str, Any]:
    """A JSON description of a float64 vector given by its values (JSON keeps every float64 exactly)."""
    return {"$float64": [float(v) for v in values]}


def model_spec(rng: random.Random) -> dict[str, Any]:
    """A JSON description of a small random MiniGPT (weights ~ N(0, 0.3²), so logits are well apart)."""
    H = rng.choice([2, 4])
    H_kv = rng.choice([h for h in (1, 2, 4) if H % h == 0 and h <= H])
    d_h = rng.choice([4, 8])
    config = dict(L=rng.randint(1, 2), H=H, H_kv=H_kv, d_h=d_h, d_ffn=4 * H * d_h, V=rng.randint(20, 48), S_max=32)
    return {"$model": config, "seed": rng.getrandbits(48)}


def weights_spec(config: dict[str, int], rng: random.Random, scale: float = 0.3) -> dict[str, Any]:
    """A JSON description of the weights alone (a state dict, name -> tensor ~ N(0, scale²)) of the MiniGPT
    `config` (ModelConfig's fields; a `d` in it, derived, is left out) describes: at scale 0.3, what `model_spec`'s
    model of the same seed holds; no model built."""
    return {"$weights": {k: v for k, v in config.items() if k != "d"}, "seed": rng.getrandbits(48), "scale": scale}


def _named_preset(value: dict[str, Any]) -> Any:
    return MODELS[value["$preset"]] if "$preset" in value else HARDWARE[value["$hardware"]]


def build(value: Any) -> Any:
    """Turn a JSON input description into the object passed to the student's function (presets by name)."""
    return wire.build(value, _named_preset)


def build_case(case: Case) -> dict[str, Any]:
    """Keyword arguments for the student's function (fresh objects on every call)."""
    return wire.build_case(case, _named_preset)


def uses_model(value: Any) -> bool:
    """Whether a question's cases hand the student's function a MiniGPT (``{"$model": ...}``) anywhere."""
    if isinstance(value, dict):
        return "$model" in value or any(uses_model(v) for v in value.values())
    if isinstance(value, list):
        return any(uses_model(v) for v in value)
    return False


def preset_fields(preset: Any) -> dict[str, Any]:
    """A preset's dataclass fields (plus its width d, if it has one): what the grading sandbox receives."""
    fields = {f.name: getattr(preset, f.name) for f in dataclasses.fields(preset)}
    if isinstance(getattr(type(preset), "d", None), property):
        fields["d"] = preset.d
    return fields


def resolve(value: Any) -> Any:
    """`value` with named presets replaced by their fields (``{"$record": kind, "fields": ...}``), for the child."""
    if isinstance(value, list):
        return [resolve(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$preset" in value or "$hardware" in value:
        preset = _named_preset(value)
        return {"$record": type(preset).__name__, "fields": preset_fields(preset)}
    if any(k.startswith("$") for k in value):
        return value
    return {k: resolve(v) for k, v in value.items()}


def describe(value: Any) -> str:
    """A short human description of one JSON input, for check messages."""
    if isinstance(value, dict):
        if "$randn" in value:
            return f"tensor{value['$randn']}"
        if "$uniform" in value:
            return f"tensor{value['$uniform']} in [{value['low']:g}, {value['high']:g})"
        if "$long" in value:
            return f"long tensor {value['$long']}"
        if "$float64" in value:
            return f"float64 tensor[{len(value['$float64'])}]"
        if "$preset" in value:
            return f"MODELS[{value['$preset']!r}]"
        if "$hardware" in value:
            return f"HARDWARE[{value['$hardware']!r}]"
        if "$config" in value:
            return "ModelConfig(" + ", ".join(f"{k}={v}" for k, v in value["$config"].items()) + ")"
        if "$model" in value:
            return "MiniGPT(" + ", ".join(f"{k}={v}" for k, v in value["$model"].items()) + ")"
        if "$weights" in value:
            return "MiniGPT(" + ", ".join(f"{k}={v}" for k, v in value["$weights"].items()) + ").state_dict()"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list) and len(value) > 8:
        text = "[" + ", ".join(describe(v) for v in value[:8]) + ", ...]"
    else:
        text = repr(value)
    if len(text) > LONG and isinstance(value, (list, dict)):  # a structure too long to read: its outline
        return f"[{len(value)} items, the first {_outline(value[0])}]" if isinstance(value, list) and value \
            else _outline(value)
    return text


LONG = 160  # characters of one input's description before it is shown as an outline


def _outline(value: Any) -> str:
    """`value` one level deep: a list as its length (up to four numbers or words, a shape or a layer, in full), a
    dict as its keys with their values outlined."""
    if isinstance(value, list) and len(value) <= 4 and all(isinstance(v, (int, str)) for v in value):
        return repr(value)
    if isinstance(value, list):
        return f"[{len(value)} items]"
    if isinstance(value, dict):
        items = list(value.items())
        return "{" + ", ".join(f"{k!r}: {_outline(v)}" for k, v in items[:6]) + (", ...}" if len(items) > 6 else "}")
    return describe(value)


def describe_call(function: str, case: Case) -> str:
    return f"{function}(" + ", ".join(f"{k}={describe(v)}" for k, v in case.items()) + ")"
