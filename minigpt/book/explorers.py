"""Analytic explorers: sliders whose outputs recompute in the browser, with no kernel.

`explorer(...)` returns an `IPython.display.HTML` whose markup carries the sliders, the outputs,
an optional SVG plot and a JSON spec; `minigpt/web/costs.js` (the formulas, as the global
`MiniGPTCosts`, bound to `C` in expressions) and `minigpt/web/explorer.js` are inlined after it,
so the same output works on the static site, in Jupyter and in Colab's sandboxed output frames.
The markup is deterministic (no random ids), so nbval can compare it.

Example::

    explorer("prefill", "Prefill FLOPs",
             sliders=[Slider("P", "prompt tokens P", 1, 4096, value=512, log=True)],
             outputs=[Output("prefill_flops", "prefill FLOPs", "C.prefill_flops({L, P, d, V})",
                             fmt="C.fmt_flops(x)")],
             constants={"L": 4, "d": 64, "V": 600})
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["Output", "Plot", "Series", "Slider", "explorer", "explorer_html"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
LOG_STEPS = 1000  # positions of a log slider; must equal LOG_STEPS in explorer.js


@dataclass(frozen=True)
class Slider:
    """One input. `options` (a list of (label, value) pairs, value any JSON) makes it a select."""

    name: str
    label: str
    min: float = 0
    max: float = 1
    value: Any = None
    step: float = 1
    log: bool = False
    options: list[tuple[str, Any]] | None = None
    fmt: str | None = None  # JS expression of x for the value shown beside the slider

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"slider name {self.name!r} must be a JavaScript identifier")
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

    def position(self) -> float:
        """Initial position of the HTML input: the value, its log position, or the option index."""
        if self.options is not None:
            values = [v for _, v in self.options]
            return values.index(self.value) if self.value is not None else 0
        if self.log:
            return round(LOG_STEPS * math.log(self.value / self.min) / math.log(self.max / self.min))
        return self.value


@dataclass(frozen=True)
class Output:
    """One computed value: `expr` is a JS expression over `C`, the constants and the sliders."""

    name: str
    label: str
    expr: str
    fmt: str | None = None  # JS expression of x (the value of expr), e.g. "C.fmt_flops(x)"

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"output name {self.name!r} must be an identifier")


@dataclass(frozen=True)
class Series:
    """One curve of a plot: y = `expr`, evaluated with the plot's x variable swept."""

    label: str
    expr: str


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
    y_fmt: str | None = None  # JS expression of x for y-axis tick labels
    points: int = 64

    def __post_init__(self) -> None:
        if not self.series:
            raise ValueError("a plot needs at least one series")
        if not self.x_min < self.x_max or (self.log_x and self.x_min <= 0):
            raise ValueError(f"bad x range [{self.x_min}, {self.x_max}] (log_x={self.log_x})")


@cache
def _asset(name: str) -> str:
    return resources.files("minigpt").joinpath("web", name).read_text(encoding="utf-8")


def _script(source: str) -> str:
    # Inline <script>: a literal "</script" inside would end it early.
    return "<script>" + source.replace("</script", "<\\/script") + "</script>"


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
    ".mgx-explorer .mgx-noscript{color:#a00;font-size:90%}"
)


def _fmt_num(x: float) -> str:
    return repr(int(x)) if float(x).is_integer() else repr(float(x))


def explorer_html(
    id: str,
    title: str,
    sliders: list[Slider],
    outputs: list[Output],
    plot: Plot | None = None,
    constants: dict[str, Any] | None = None,
    note: str = "",
) -> str:
    """The explorer's HTML (markup + spec + inlined costs.js and explorer.js) as a string."""
    constants = dict(constants or {})
    if not _ID.match(id):
        raise ValueError(f"explorer id {id!r}: use lower-case letters, digits, '-' and '_'")
    names = list(constants) + [s.name for s in sliders]
    for name in constants:
        if not _NAME.match(name):
            raise ValueError(f"constant name {name!r} must be a JavaScript identifier")
    if len(set(names)) != len(names):
        raise ValueError(f"explorer {id!r}: slider and constant names must be distinct, got {names}")
    if len({o.name for o in outputs}) != len(outputs):
        raise ValueError(f"explorer {id!r}: output names must be distinct")
    if plot is not None and plot.x not in names:
        raise ValueError(f"explorer {id!r}: plot.x {plot.x!r} is not a slider or constant ({names})")

    spec = {
        "id": id,
        "constants": constants,
        "sliders": [asdict(s) for s in sliders],
        "outputs": [asdict(o) for o in outputs],
        "plot": asdict(plot) if plot is not None else None,
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
                f'<span class="mgx-value"></span>'
            )
        value = json.dumps(s.value) if isinstance(s.value, dict | list) else s.value
        rows.append(
            f'<div class="mgx-row" data-slider="{s.name}" data-value="{html.escape(str(value))}">'
            f"{label}{control}</div>"
        )
    for o in outputs:
        rows.append(
            f'<div class="mgx-row"><label>{o.label}</label>'
            f'<span class="mgx-out" data-output="{o.name}">…</span></div>'
        )
    svg = '<svg class="mgx-plot" viewBox="0 0 520 280" role="img"></svg>' if plot is not None else ""
    note_html = f'<div class="mgx-note">{note}</div>' if note else ""
    spec_json = json.dumps(spec, sort_keys=True, ensure_ascii=False).replace("</", "<\\/")
    return (
        f"<style>{_CSS}</style>"
        f'<div class="mgx-explorer" id="mgx-{id}" data-explorer="{id}">'
        f'<div class="mgx-title">{title}</div>'
        + "".join(rows)
        + svg
        + note_html
        + '<noscript><div class="mgx-noscript">This explorer needs JavaScript.</div></noscript>'
        f'<script type="application/json" class="mgx-spec">{spec_json}</script>'
        "</div>"
        + _script("if (!globalThis.MiniGPTCosts) {\n" + _asset("costs.js") + "\n}")
        + _script(_asset("explorer.js"))
        + _script("globalThis.MiniGPTExplorer.initAll();")
    )


def explorer(
    id: str,
    title: str,
    sliders: list[Slider],
    outputs: list[Output],
    plot: Plot | None = None,
    constants: dict[str, Any] | None = None,
    note: str = "",
) -> Any:
    """An analytic explorer as an `IPython.display.HTML` object (display it as a cell's result)."""
    from IPython.display import HTML

    return HTML(explorer_html(id, title, sliders, outputs, plot=plot, constants=constants, note=note))

