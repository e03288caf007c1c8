"""Question specs of the graded exercises: random inputs, the package as the oracle, and comparison.

A question is one function the student writes. Its inputs are generated as plain JSON (numbers,
lists and a few tagged objects such as ``{"$randn": [2, 3], "seed": 7}`` or ``{"$preset": "Llama-3-8B"}``)
so the grader's trusted process can send them to the sandboxed child that runs the student's code;
`build` turns them into Python objects (tensors, presets, models); the child gets presets already
`resolve`d to their fields and builds the rest with `minigpt.exercises.wire`, which holds no answers. The expected
output is computed by the package (``minigpt.costs``, ``minigpt.runtime.model``, ...) and never leaves the
trusted process; outputs are compared in their JSON form (`encode`), tensors as nested lists.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises import wire
from minigpt.exercises.wire import UnsupportedOutput, build_model, encode  # noqa: F401 - re-exported here
from minigpt.i18n import N_, _, fmt_num, language  # noqa: F401 - N_ re-exported for the exercises' hints

Case = dict[str, Any]
Compare = Callable[[Any, Any], "str | None"]


# ---------------------------------------------------------------------------------------------
# Inputs: JSON descriptions -> objects


def randn(shape: list[int], rng: random.Random, scale: float = 1.0) -> dict[str, Any]:
    """A JSON description of a standard-normal tensor (float32), reproducible from its seed."""
    return {"$randn": list(shape), "seed": rng.getrandbits(48), "scale": scale}


def uniform(shape: list[int], rng: random.Random, low: float, high: float) -> dict[str, Any]:
    """A JSON description of a float32 tensor uniform in [low, high), reproducible from its seed."""
    return {"$uniform": list(shape), "seed": rng.getrandbits(48), "low": low, "high": high}


def model_spec(rng: random.Random) -> dict[str, Any]:
    """A JSON description of a small random MiniGPT (weights ~ N(0, 0.3²), so logits are well apart)."""
    H = rng.choice([2, 4])
    H_kv = rng.choice([h for h in (1, 2, 4) if H % h == 0 and h <= H])
    d_h = rng.choice([4, 8])
    config = dict(L=rng.randint(1, 2), H=H, H_kv=H_kv, d_h=d_h, d_ffn=4 * H * d_h, V=rng.randint(20, 48), S_max=32)
    return {"$model": config, "seed": rng.getrandbits(48)}


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
        if "$preset" in value:
            return f"MODELS[{value['$preset']!r}]"
        if "$hardware" in value:
            return f"HARDWARE[{value['$hardware']!r}]"
        if "$config" in value:
            return "ModelConfig(" + ", ".join(f"{k}={v}" for k, v in value["$config"].items()) + ")"
        if "$model" in value:
            return "MiniGPT(" + ", ".join(f"{k}={v}" for k, v in value["$model"].items()) + ")"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list) and len(value) > 8:
        return "[" + ", ".join(describe(v) for v in value[:8]) + ", ...]"
    return repr(value)


def describe_call(function: str, case: Case) -> str:
    return f"{function}(" + ", ".join(f"{k}={describe(v)}" for k, v in case.items()) + ")"


# ---------------------------------------------------------------------------------------------
# Outputs: objects -> JSON, and comparison


def _show(value: Any, literal: bool = False) -> str:
    """A returned value in a message: numbers as the language writes them (`fmt_num`), or as Python literals when
    `literal` (the items of a list outside English, where a decimal comma would read as a separator)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return str(value) if literal else fmt_num(value)
    if isinstance(value, float):
        return format(value, ".8g") if literal else fmt_num(value, ".8g")
    if isinstance(value, dict) and "$tensor" in value:
        flat = torch.tensor(value["$tensor"], dtype=torch.float64).flatten()[:6].tolist()
        return _("tensor of shape {shape}, first values {values}").format(shape=value["shape"],
                                                                          values=[round(x, 5) for x in flat])
    if isinstance(value, list):
        literal = literal or language() != "en"
        text = "[" + ", ".join(_show(v, literal) for v in value[:8]) + (", ...]" if len(value) > 8 else "]")
        return text
    return repr(value)[:200]


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def exact_int(expected: Any, actual: Any) -> str | None:
    """The same integer (an integer-valued float is accepted only if it is exactly equal)."""
    if not _is_number(actual):
        return _("expected the integer {expected}, got {actual}").format(expected=_show(expected), actual=_show(actual))
    if isinstance(actual, float) and (not math.isfinite(actual) or not actual.is_integer()):
        return _("expected {expected}, got {actual} (not an integer)").format(expected=_show(expected),
                                                                             actual=_show(actual))
    if int(actual) != expected:
        return _("expected {expected}, got {actual}").format(expected=_show(expected), actual=_show(int(actual)))
    return None


def close(rel: float = 1e-9, abs_: float = 0.0) -> Compare:
    """A number within `rel` relative (or `abs_` absolute) tolerance."""

    def compare(expected: Any, actual: Any) -> str | None:
        if not _is_number(actual):
            return _("expected a number close to {expected}, got {actual}").format(expected=_show(expected),
                                                                                  actual=_show(actual))
        if not (isinstance(actual, int) or math.isfinite(actual)):
            return _("expected {expected}, got {actual}").format(expected=_show(expected), actual=_show(actual))
        if not math.isclose(float(actual), float(expected), rel_tol=rel, abs_tol=abs_):
            return _("expected {expected}, got {actual} (tolerance: relative {rel})").format(
                expected=_show(expected), actual=_show(actual), rel=fmt_num(rel, "g"))
        return None

    return compare


def boolean(expected: Any, actual: Any) -> str | None:
    """The same truth value, as a bool."""
    if not isinstance(actual, bool):
        return _("expected a bool ({expected}), got {actual}").format(expected=expected, actual=_show(actual))
    return None if actual == expected else _("expected {expected}, got {actual}").format(expected=expected,
                                                                                        actual=actual)


def int_list(expected: Any, actual: Any) -> str | None:
    """The same list of integers."""
    if not isinstance(actual, list) and not (isinstance(actual, dict) and "$tensor" in actual):
        return _("expected a list of ints {expected}, got {actual}").format(expected=_show(expected),
                                                                           actual=_show(actual))
    values = actual["$tensor"] if isinstance(actual, dict) else actual
    if values != expected:
        return _("expected {expected}, got {actual}").format(expected=_show(expected), actual=_show(values))
    return None


def tensor(atol: float = 1e-5, rtol: float = 1e-5) -> Compare:
    """A tensor (or nested list) of the expected shape whose values are allclose."""

    def compare(expected: Any, actual: Any) -> str | None:
        if isinstance(actual, list):
            try:
                actual = {"$tensor": actual, "shape": list(torch.tensor(actual).shape)}
            except (ValueError, TypeError):
                return _("expected a tensor, got a ragged list")
        if not isinstance(actual, dict) or "$tensor" not in actual:
            return _("expected a tensor of shape {shape}, got {actual}").format(shape=expected["shape"],
                                                                               actual=_show(actual))
        if actual["shape"] != expected["shape"]:
            return _("expected a tensor of shape {shape}, got shape {got}").format(shape=expected["shape"],
                                                                                  got=actual["shape"])
        e = torch.tensor(expected["$tensor"], dtype=torch.float64)
        a = torch.tensor(actual["$tensor"], dtype=torch.float64)
        if not torch.allclose(a, e, atol=atol, rtol=rtol):
            diff = (a - e).abs()
            diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
            i = int(diff.flatten().argmax())
            index = tuple(int(x) for x in torch.unravel_index(torch.tensor(i), e.shape)) if e.dim() else ()
            message = _("values differ: at index {index} expected {expected}, got {actual} (tolerance {tolerance})")
            return message.format(
                index=list(index), expected=fmt_num(e.flatten()[i].item(), ".6g"),
                actual=fmt_num(a.flatten()[i].item(), ".6g"), tolerance=f"atol={atol:g}, rtol={rtol:g}")
        return None

    return compare


def pair(first: Compare, second: Compare, names: tuple[str, str]) -> Compare:
    """A 2-tuple whose items compare with `first` and `second`."""

    def compare(expected: Any, actual: Any) -> str | None:
        if not isinstance(actual, list) or len(actual) != 2:
            return _("expected a tuple ({first}, {second}), got {actual}").format(first=names[0], second=names[1],
                                                                                 actual=_show(actual))
        for name, cmp, e, a in zip(names, (first, second), expected, actual, strict=True):
            message = cmp(e, a)
            if message:
                return f"{name}: {message}"
        return None

    return compare


def argmax_of(tol: float = 1e-4) -> Compare:
    """An integer index whose value in the expected list is the maximum (within `tol`, for near ties)."""

    def compare(expected: Any, actual: Any) -> str | None:
        values = expected["$tensor"]
        best = max(range(len(values)), key=values.__getitem__)
        if isinstance(actual, bool) or not isinstance(actual, int):
            return _("expected the token id {best} (an int), got {actual}").format(best=best, actual=_show(actual))
        if not 0 <= actual < len(values):
            return _("expected the token id {best}, got {actual} (out of range {first}..{last})").format(
                best=best, actual=actual, first=0, last=len(values) - 1)
        if values[actual] < values[best] - tol:
            return _("expected the token id {best} (logit {best_logit}), got {actual} (logit {logit})").format(
                best=best, best_logit=fmt_num(values[best], ".5f"), actual=actual,
                logit=fmt_num(values[actual], ".5f"))
        return None

    return compare


# ---------------------------------------------------------------------------------------------
# Questions and exercises


@dataclass(frozen=True)
class Question:
    """One graded function: its name and signature, how to draw inputs, the oracle and the comparison."""

    id: str
    function: str
    signature: str
    cases: Callable[[random.Random], list[Case]]
    oracle: Callable[..., Any]
    compare: Compare
    hint: str
    points: float = 1.0
    formulas: tuple[str, ...] = ()  # `minigpt.costs` functions its instructions tell the student to use
    runtime: tuple[str, ...] = ()  # runtime modules its instructions use ("runtime/generate.py"), real in its sandbox


    def expected(self, case: Case) -> Any:
        """The package's answer for one case, in JSON form."""
        return encode(self.oracle(**build_case(case)))


@dataclass(frozen=True)
class Exercise:
    """The questions of one chapter's exercise notebook."""

    id: str
    notebook: str
    title: str
    questions: tuple[Question, ...] = field(default_factory=tuple)

    def question(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(f"{self.id} has no question {qid!r}; it has {[q.id for q in self.questions]}")

    @property
    def max_score(self) -> float:
        return sum(q.points for q in self.questions)
