"""Analytic explorers: sliders whose outputs recompute in the browser, with no kernel.

Every output names a function of `minigpt.costs` and its arguments; nothing is computed in a string of
JavaScript. `minigpt/web/costs.js` holds the twin of each function (same name, one object of named
arguments), so the page computes what Python computes, and ``tests/test_costs_js.py`` checks it::

    explorer("prefill", "Prefill FLOPs",
             sliders=[Slider("P", "prompt tokens P", 1, 4096, value=512, log=True)],
             outputs=[Output("flops", "prefill FLOPs", fn="prefill_flops", model="shape", args={"P": "P"},
                             fmt="fmt_flops")],
             constants={"shape": config.symbols()})

**Arguments.** In ``args``, a string names a value: a constant, a slider, or an earlier output,
optionally followed by fields (``"hw.bandwidth"`` reads the ``bandwidth`` of a slider whose value is a
dict); any other JSON value (a number, ``True``/``False``, ``None``) is a literal. String literals are not
needed by any explorer and so are not supported: a string is always a name. ``model="m"`` fills every
model symbol the function takes (`costs.MODEL_SYMBOLS`: L, H_kv, d_h, d, d_ffn, V, ffn_matrices) from
the dict ``m`` names, as `costs.evaluate` does (explicit ``args`` win; a symbol the dict lacks is left
to the function's default). ``key`` picks one field of a result (``wall_clock``'s ``ttft_s``);
``value="m.S_max"`` shows a value itself, with no function. ``fmt`` names a formatter of `costs`
(``"fmt_bytes"``) or a ``(name, {options})`` pair (``("fmt_fixed", {"decimals": 2, "suffix": " ms"})``);
numbers must have one, strings and booleans ("yes"/"no") show as they are.

**Initial values.** `explorer_html` evaluates every output in Python with the sliders' initial values
and writes the formatted text into the HTML, so the page shows numbers before (or without) JavaScript,
and nbval compares them with the committed output.

**Where the JavaScript comes from.** The explorer's HTML carries no script of its own except its JSON
spec. On the static site `costs.js` and `explorer.js` are served once, as files of the site
(``_config.yml``: ``html_static_path`` adds ``minigpt/web``, ``html_js_files`` loads both on every page;
`explorer.js` wires every explorer when the page has loaded). A live kernel (Jupyter, Colab, whose
output frames are sandboxed and see no site) needs them inline: ``inline=None`` decides by environment,
inlining unless ``MINIGPT_EXPLORER_JS=site``, which `scripts/execute_notebooks.py` (``make notebooks``)
sets, so the committed outputs hold no JavaScript. nbval re-executes in a plain kernel, which inlines;
``tests/nbval_sanitize.cfg`` removes the inlined ``<script class="mgx-inline">`` blocks from both sides
before comparing. A change to `costs.js` or `explorer.js` therefore needs no notebook re-executed: the
site picks it up at the next ``make book``, a kernel at the next run of the cell.
"""

from __future__ import annotations

import dataclasses
import html
import inspect
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from minigpt import costs

__all__ = [
    "JS_ENV", "Output", "Plot", "Series", "Slider", "chip_value", "evaluate_spec", "explorer", "explorer_html",
    "initial_values", "preset_value",
]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
LOG_STEPS = 1000  # positions of a log slider; must equal LOG_STEPS in explorer.js
JS_ENV = "MINIGPT_EXPLORER_JS"  # "site": do not inline costs.js/explorer.js (the book's outputs)
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
    if "N_params" not in value and hasattr(model, "param_count"):
        value["N_params"] = model.param_count
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


@cache
def _asset(name: str) -> str:
    return resources.files("minigpt").joinpath("web", name).read_text(encoding="utf-8")


def _script(source: str) -> str:
    # Inline <script>: a literal "</script" inside would end it early.
    return '<script class="mgx-inline">' + source.replace("</script", "<\\/script") + "</script>"


def inline_default() -> bool:
    """Whether an explorer inlines costs.js and explorer.js: yes in a live kernel, not for the site."""
    mode = os.environ.get(JS_ENV, "inline")
    if mode not in ("inline", "site"):
        raise ValueError(f"{JS_ENV} must be 'inline' or 'site', got {mode!r}")
    return mode == "inline"


_CSS = (
    ".mgx-explorer{border:1px solid #ccc;border-radius:6px;padding:0.6em 0.9em;margin:0.6em 0;"
    "font-family:inherit;max-width:560px}"
    ".mgx-explorer .mgx-title{font-weight:600;margin-bottom:0.4em}"
    ".mgx-explorer .mgx-row{display:flex;align-items:center;gap:0.6em;margin:0.2em 0}"
    ".mgx-explorer .mgx-row>label{flex:0 0 12em}"
    ".mgx-explorer input[type=range]{flex:1 1 auto;min-width:8em}"
    ".mgx-explorer .mgx-value{flex:0 0 7em;text-align:right;font-variant-numeric:tabular-nums}"
    ".mgx-explorer .mgx-out{font-weight:600;font-variant-numeric:tabular-nums}"
    ".mgx-explorer svg{width:100%;height:auto;max-width:520px;display:block;margin-top:0.4em}"
    ".mgx-explorer .mgx-static{color:#777;font-size:85%}"
)


def _fmt_num(x: float) -> str:
    return repr(int(x)) if float(x).is_integer() else repr(float(x))


def _data(value: Any) -> str:
    return html.escape(json.dumps(value) if not isinstance(value, str) else value)


def _check_names(id: str, constants: Mapping[str, Any], sliders: list[Slider], outputs: list[Output],
                 plot: Plot | None) -> None:
    names = list(constants) + [s.name for s in sliders]
    for name in constants:
        if not _NAME.match(name):
            raise ValueError(f"constant name {name!r} must be a JavaScript identifier")
    all_names = names + [o.name for o in outputs]
    if len(set(all_names)) != len(all_names):
        raise ValueError(f"explorer {id!r}: constant, slider and output names must be distinct, got {all_names}")
    known = set(names)
    for o in outputs:
        unknown = sorted(set(o.refs()) - known)
        if unknown:
            raise ValueError(f"explorer {id!r}: output {o.name!r} reads {unknown}, which name no constant, "
                             f"slider or earlier output (known: {sorted(known)})")
        known.add(o.name)
    by_name = {s.name: s for s in sliders}
    for s in sliders:
        for target, fld in (s.sets or {}).items():
            t = by_name.get(target)
            if t is None or t.options is not None:
                raise ValueError(f"explorer {id!r}: slider {s.name!r} sets {target!r}, which is not a range slider")
            chosen = s.initial()
            if isinstance(chosen, Mapping) and chosen.get(fld) != t.value:
                raise ValueError(f"explorer {id!r}: slider {target!r} starts at {t.value!r} but {s.name!r}'s "
                                 f"initial option sets it to {chosen.get(fld)!r}")
    if plot is not None:
        if plot.x not in names:
            raise ValueError(f"explorer {id!r}: plot.x {plot.x!r} is not a slider or constant ({names})")
        for series in plot.series:
            unknown = sorted(set(series.refs() + ([series.until.split(".")[0]] if series.until else [])) - known)
            if unknown:
                raise ValueError(f"explorer {id!r}: series {series.label!r} reads unknown names {unknown}")


def initial_values(constants: Mapping[str, Any], sliders: list[Slider], outputs: list[Output],
                   id: str = "explorer") -> dict[str, Any]:
    """Every constant, slider and output at the sliders' initial values, computed in Python."""
    env: dict[str, Any] = dict(constants)
    env.update({s.name: s.initial() for s in sliders})
    for o in outputs:
        try:
            env[o.name] = _evaluate(o.call(), env)
        except (ValueError, TypeError, KeyError) as err:
            raise ValueError(f"explorer {id!r}: output {o.name!r} fails at the initial values: {err}") from err
    return env


def evaluate_spec(spec: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Every output of an explorer's JSON spec at the given slider values, in Python (explorer.js's
    `evaluateAll`): what the browser test compares a page with."""
    env: dict[str, Any] = {**spec["constants"], **values}
    for o in spec["outputs"]:
        env[o["name"]] = _evaluate(o, env)
    return env


def explorer_html(
    id: str,
    title: str,
    sliders: list[Slider],
    outputs: list[Output],
    plot: Plot | None = None,
    constants: dict[str, Any] | None = None,
    note: str = "",
    inline: bool | None = None,
) -> str:
    """The explorer's HTML: markup with the initial values, the spec, and (if `inline`) the two scripts."""
    constants = dict(constants or {})
    if not _ID.match(id):
        raise ValueError(f"explorer id {id!r}: use lower-case letters, digits, '-' and '_'")
    _check_names(id, constants, sliders, outputs, plot)
    env = initial_values(constants, sliders, outputs, id)
    inline = inline_default() if inline is None else inline

    def slider_spec(s: Slider) -> dict[str, Any]:
        d = dataclasses.asdict(s)
        d["fmt"] = _fmt_spec(s.fmt, s.name)
        d["sets"] = dict(s.sets or {})
        return d

    def output_spec(o: Output) -> dict[str, Any]:
        return {"name": o.name, **o.call(), "fmt": _fmt_spec(o.fmt, o.name)}

    plot_spec = None
    if plot is not None:
        plot_spec = dataclasses.asdict(plot)
        plot_spec["series"] = [{"label": s.label, **s.call(), "until": s.until} for s in plot.series]
        plot_spec["y_fmt"] = _fmt_spec(plot.y_fmt, "plot")
    spec = {
        "id": id,
        "constants": constants,
        "sliders": [slider_spec(s) for s in sliders],
        "outputs": [output_spec(o) for o in outputs],
        "plot": plot_spec,
    }
    rows = []
    for s in sliders:
        label = f'<label for="mgx-{id}-{s.name}">{s.label}</label>'
        if s.options is not None:
            chosen = s.position()
            opts = "".join(
                f'<option value="{i}"{" selected" if i == chosen else ""}>{html.escape(str(lab))}</option>'
                for i, (lab, _) in enumerate(s.options)
            )
            control = f'<select id="mgx-{id}-{s.name}" name="{s.name}">{opts}</select>'
        else:
            lo, hi, step = (0, LOG_STEPS, 1) if s.log else (s.min, s.max, s.step)
            control = (
                f'<input type="range" id="mgx-{id}-{s.name}" name="{s.name}" min="{_fmt_num(lo)}" '
                f'max="{_fmt_num(hi)}" step="{_fmt_num(step)}" value="{_fmt_num(s.position())}">'
                f'<span class="mgx-value">{html.escape(s.shown())}</span>'
            )
        rows.append(f'<div class="mgx-row" data-slider="{s.name}" data-value="{_data(s.initial())}">'
                    f"{label}{control}</div>")
    for o in outputs:
        text = _format(_fmt_spec(o.fmt, o.name), env[o.name], f"output {o.name!r}")
        rows.append(
            f'<div class="mgx-row"><label>{o.label}</label>'
            f'<span class="mgx-out" data-output="{o.name}" data-value="{_data(env[o.name])}">'
            f"{html.escape(text)}</span></div>"
        )
    svg = '<svg class="mgx-plot" viewBox="0 0 520 280" role="img"></svg>' if plot is not None else ""
    note_html = f'<div class="mgx-note">{note}</div>' if note else ""
    spec_json = json.dumps(spec, sort_keys=True, ensure_ascii=False).replace("</", "<\\/")
    scripts = ""
    if inline:
        scripts = (_script("if (!globalThis.MiniGPTCosts) {\n" + _asset("costs.js") + "\n}")
                   + _script(_asset("explorer.js")) + _script("globalThis.MiniGPTExplorer.initAll();"))
    return (
        f"<style>{_CSS}</style>"
        f'<div class="mgx-explorer" id="mgx-{id}" data-explorer="{id}">'
        f'<div class="mgx-title">{title}</div>'
        + "".join(rows)
        + svg
        + note_html
        + '<div class="mgx-static">Values at the initial settings; the sliders need the book\'s site '
        "or a running kernel.</div>"
        f'<script type="application/json" class="mgx-spec">{spec_json}</script>'
        "</div>"
        + scripts
    )


def explorer(
    id: str,
    title: str,
    sliders: list[Slider],
    outputs: list[Output],
    plot: Plot | None = None,
    constants: dict[str, Any] | None = None,
    note: str = "",
    inline: bool | None = None,
) -> Any:
    """An analytic explorer as an `IPython.display.HTML` object (display it as a cell's result)."""
    from IPython.display import HTML

    return HTML(explorer_html(id, title, sliders, outputs, plot=plot, constants=constants, note=note,
                              inline=inline))

