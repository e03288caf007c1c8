"""The parts of a browser explorer, as data: sliders, outputs that name a `minigpt.costs` formula and its
arguments, plot series, and their evaluation in Python (the twin of `minigpt/web/explorer.js`).

`minigpt.book.explorers` renders them into HTML; this module checks them and computes their values.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.costs.params import config_param_count

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
LOG_STEPS = 1000  # positions of a log slider; must equal LOG_STEPS in explorer.js
JS_ENV = "MINIGPT_EXPLORER_JS"  # "site": do not inline the cost scripts/explorer.js (the book's outputs)
_MISSING = object()

Fmt = str | tuple[str, Mapping[str, Any]]


def _fmt_spec(fmt: Fmt | None, owner: str) -> dict[str, Any] | None:
    """A formatter as the spec holds it, {"fn": name, "args": {...}}, checked against `costs`."""
    if fmt is None:
        return None
    name, options = (fmt, {}) if isinstance(fmt, str) else fmt
    if not isinstance(name, str) or not name.startswith("fmt_") or name not in costs.FORMULAS:
        allowed = [n for n in costs.FORMULAS if n.startswith("fmt_")]
        raise ValueError(f"{owner}: fmt {fmt!r} must name a formatter of minigpt.costs, one of {allowed}")
    params = list(inspect.signature(getattr(costs, name)).parameters)[1:]
    unknown = sorted(set(options) - set(params))
    if unknown:
        raise ValueError(f"{owner}: {name}() takes no option {unknown}; it takes {params}")
    return {"fn": name, "args": dict(options)}


def _format(spec: dict[str, Any] | None, value: Any, owner: str) -> str:
    """The text a value shows: its formatter's, or a string, or "yes"/"no" for a boolean."""
    if spec is not None:
        return getattr(costs, spec["fn"])(value, **spec["args"])
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    raise ValueError(f"{owner}: the value {value!r} is not a string or a boolean: give fmt (a costs.fmt_* name)")


def _check_refs(args: Mapping[str, Any], owner: str) -> None:
    for k, v in args.items():
        if isinstance(v, str) and not _REF.match(v):
            raise ValueError(f"{owner}: argument {k}={v!r} must name a value (name or name.field)")
        if not isinstance(v, str | int | float | bool | type(None)):
            raise ValueError(f"{owner}: argument {k}={v!r} must be a name (str) or a number/boolean literal")


@dataclass(frozen=True)
class _Call:
    """What Output and Series share: one function of `costs` with its arguments, or one named value."""

    fn: str | None = None
    args: Mapping[str, Any] | None = None
    model: str | None = None
    key: str | None = None
    value: str | None = None

    def _check_call(self, owner: str) -> None:
        if (self.fn is None) == (self.value is None):
            raise ValueError(f"{owner}: give fn (a function of minigpt.costs) or value (a name), exactly one")
        if self.value is not None:
            if not isinstance(self.value, str) or not _REF.match(self.value):
                raise ValueError(f"{owner}: value {self.value!r} must name a value (name or name.field)")
            if self.args or self.model or self.key:
                raise ValueError(f"{owner}: value= takes no args, model or key")
            return
        if self.fn not in costs.FORMULAS or self.fn.startswith("fmt_"):
            raise ValueError(f"{owner}: fn {self.fn!r} is not a formula of minigpt.costs (costs.FORMULAS)")
        _check_refs(dict(self.args or {}), owner)
        params = inspect.signature(getattr(costs, self.fn)).parameters
        unknown = sorted(set(self.args or {}) - set(params))
        if unknown:
            raise ValueError(f"{owner}: {self.fn}() takes no argument {unknown}; it takes {list(params)}")
        if self.model is not None and not _REF.match(self.model):
            raise ValueError(f"{owner}: model {self.model!r} must name a value holding model symbols")
        given = set(self.call()["args"])
        missing = [p for p, v in params.items() if v.default is inspect.Parameter.empty and p not in given]
        if missing:
            raise ValueError(f"{owner}: {self.fn}() needs {missing}: give them in args (or model=)")

    def call(self) -> dict[str, Any]:
        """The call as the spec holds it: model symbols expanded into args ("m.L"), explicit args last."""
        if self.value is not None:
            return {"value": self.value}
        params = inspect.signature(getattr(costs, self.fn)).parameters
        args: dict[str, Any] = {}
        if self.model is not None:
            args = {p: f"{self.model}.{p}" for p in costs.MODEL_SYMBOLS if p in params}
        args.update(self.args or {})
        return {"fn": self.fn, "args": args, "key": self.key}

    def refs(self) -> list[str]:
        """The names this call reads (the part of each reference before its first dot)."""
        c = self.call()
        values = [c["value"]] if "value" in c else [v for v in c["args"].values() if isinstance(v, str)]
        return [v.split(".")[0] for v in values]


@dataclass(frozen=True)
class Slider:
    """One input. `options` (a list of (label, value) pairs, value any JSON) makes it a select.

    `sets` (select only) maps other sliders to a field of the chosen option's value: choosing an option
    moves them (a chip sets the bandwidth and peak sliders); moving one of them by hand selects the
    option whose value is None, if there is one ("custom").
    """

    name: str
    label: str
    min: float = 0
    max: float = 1
    value: Any = None
    step: float = 1
    log: bool = False
    options: list[tuple[str, Any]] | None = None
    fmt: Fmt | None = None  # formatter of the value shown beside the slider
    sets: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"slider name {self.name!r} must be a JavaScript identifier")
        _fmt_spec(self.fmt, f"slider {self.name!r}")
        if self.sets and self.options is None:
            raise ValueError(f"slider {self.name!r}: sets= needs options (a select)")
        if self.options is not None:
            if not self.options:
                raise ValueError(f"slider {self.name!r}: options must not be empty")
            values = [v for _, v in self.options]
            if self.value is not None and self.value not in values:
                raise ValueError(f"slider {self.name!r}: value {self.value!r} is not one of the options")
            return
        if not self.min < self.max:
            raise ValueError(f"slider {self.name!r}: min {self.min} must be below max {self.max}")
        if not 0 <= self.step <= self.max - self.min:
            raise ValueError(f"slider {self.name!r}: step {self.step} must lie in [0, max - min = "
                             f"{self.max - self.min}] (0: no rounding); a wider step pins every position "
                             f"to the minimum")
        if self.log and self.min <= 0:
            raise ValueError(f"slider {self.name!r}: a log slider needs min > 0, got {self.min}")
        if self.value is None or not self.min <= self.value <= self.max:
            raise ValueError(f"slider {self.name!r}: value {self.value} must lie in [{self.min}, {self.max}]")

    def initial(self) -> Any:
        """The value the explorer starts from (the first option's when a select has no value)."""
        return self.options[0][1] if self.options is not None and self.value is None else self.value

    def position(self) -> float:
        """Initial position of the HTML input: the value, its log position, or the option index."""
        if self.options is not None:
            values = [v for _, v in self.options]
            return values.index(self.value) if self.value is not None else 0
        if self.log:
            return round(LOG_STEPS * math.log(self.value / self.min) / math.log(self.max / self.min))
        return self.value

    def shown(self) -> str:
        """The text beside a range slider (explorer.js writes the same)."""
        if self.options is not None:
            return ""
        if self.fmt is not None:
            return _format(_fmt_spec(self.fmt, self.name), self.value, self.name)
        return f"{int(self.value):,}" if float(self.value).is_integer() else str(self.value)


@dataclass(frozen=True)
class Output(_Call):
    """One computed value: ``Output(name, label, fn=..., args=..., model=..., key=..., fmt=...)`` or
    ``Output(name, label, value="m.S_max", fmt=...)`` (see the module docstring)."""

    name: str = ""
    label: str = ""
    fmt: Fmt | None = None

    def __init__(self, name: str, label: str, *, fn: str | None = None, args: Mapping[str, Any] | None = None,
                 model: str | None = None, key: str | None = None, value: str | None = None,
                 fmt: Fmt | None = None) -> None:
        for k, v in dict(name=name, label=label, fn=fn, args=dict(args or {}), model=model, key=key, value=value,
                         fmt=fmt).items():
            object.__setattr__(self, k, v)
        if not _NAME.match(self.name):
            raise ValueError(f"output name {self.name!r} must be an identifier")
        self._check_call(f"output {name!r}")
        _fmt_spec(fmt, f"output {name!r}")


@dataclass(frozen=True)
class Series(_Call):
    """One curve of a plot: y = the call, evaluated with the plot's x swept (outputs recomputed at each x).
    `until` names a value: the curve stops at x > that value (a workload's point on a roofline)."""

    label: str = ""
    until: str | None = None

    def __init__(self, label: str, *, fn: str | None = None, args: Mapping[str, Any] | None = None,
                 model: str | None = None, key: str | None = None, value: str | None = None,
                 until: str | None = None) -> None:
        for k, v in dict(label=label, fn=fn, args=dict(args or {}), model=model, key=key, value=value,
                         until=until).items():
            object.__setattr__(self, k, v)
        self._check_call(f"series {label!r}")
        if until is not None and not _REF.match(until):
            raise ValueError(f"series {label!r}: until {until!r} must name a value")


@dataclass(frozen=True)
class Plot:
    """A line chart of `series` over x in [x_min, x_max]; `x` names the slider (or constant) swept."""

    x: str
    x_min: float
    x_max: float
    series: list[Series]
    x_label: str = ""
    y_label: str = ""
    log_x: bool = False
    log_y: bool = False
    y_min: float | None = None
    y_max: float | None = None
    y_fmt: Fmt | None = None  # formatter of the y-axis tick labels
    points: int = 64

    def __post_init__(self) -> None:
        if not self.series:
            raise ValueError("a plot needs at least one series")
        if not self.x_min < self.x_max or (self.log_x and self.x_min <= 0):
            raise ValueError(f"bad x range [{self.x_min}, {self.x_max}] (log_x={self.log_x})")
        _fmt_spec(self.y_fmt, "plot")


def preset_value(model: Any) -> dict[str, Any]:
    """A model (preset or config) as an explorer value: its `costs` symbols plus H, N_params and S_max."""
    value = dict(model.symbols())
    for extra in ("H", "N_params", "S_max"):
        if hasattr(model, extra):
            value[extra] = getattr(model, extra)
    if "N_params" not in value and isinstance(model, ModelConfig):
        value["N_params"] = config_param_count(model)
    return value


def chip_value(chip: Any) -> dict[str, Any]:
    """A hardware preset as an explorer value: memory_bytes, bandwidth and peak_flops."""
    return {"memory_bytes": chip.memory_bytes, "bandwidth": chip.bandwidth, "peak_flops": chip.peak_flops}


def _plain(value: Any) -> Any:
    """A result as the browser sees it: dataclasses become dicts (so "wc.ttft_s" reads a field)."""
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value


def _lookup(ref: str, env: Mapping[str, Any]) -> Any:
    root, *fields = ref.split(".")
    value = env[root]
    for f in fields:
        value = value.get(f, _MISSING) if isinstance(value, Mapping) else _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _evaluate(call: dict[str, Any], env: Mapping[str, Any]) -> Any:
    """One call of the spec, in Python (explorer.js `evaluate` is its twin)."""
    if "value" in call:
        return _lookup(call["value"], env)
    args = {}
    for k, v in call["args"].items():
        v = _lookup(v, env) if isinstance(v, str) else v
        if v is not _MISSING:
            args[k] = v
    result = _plain(getattr(costs, call["fn"])(**args))
    return result[call["key"]] if call["key"] is not None else result
