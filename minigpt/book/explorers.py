"""Analytic explorers: sliders whose outputs recompute in the browser, with no kernel.

This module renders an explorer; its parts (`Slider`, `Output`, `Series`, `Plot`) and their evaluation in
Python live in `minigpt.book.explorer_spec`.

Every output names a function of `minigpt.costs` and its arguments; nothing is computed in a string of
JavaScript. `minigpt/web/costs/` holds the twin of each function (same name, one object of named
arguments; one script per module of `costs`), so the page computes what Python computes, and
``tests/test_costs_js.py`` checks it::

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
spec. On the static site the cost scripts and `explorer.js` (with `explorer_plot.js`, the plots, loaded before
it) are files of the site (``_config.yml``:
``html_static_path`` adds ``minigpt/web``), and a page with explorers loads `explorer.js` and exactly the
cost scripts its explorers call (`minigpt.book.sphinx_scripts`, from `cost_scripts.scripts_for`);
`i18n.js` (the edition's strings) is on every page (``html_js_files``); `explorer.js` wires every
explorer when the page has loaded. A kernel needs no
`i18n.js`: it has no edition's table, and `explorer.js` without it prints English. A live kernel (Jupyter, Colab, whose
output frames are sandboxed and see no site) needs them inline: ``inline=None`` decides by environment,
inlining unless ``MINIGPT_EXPLORER_JS=site``, which `scripts/book/execute_notebooks.py` (``make notebooks``)
sets, so the committed outputs hold no JavaScript. nbval re-executes in a plain kernel, which inlines;
``tests/nbval_sanitize.cfg`` removes the inlined ``<script class="mgx-inline">`` blocks from both sides
before comparing. A change to a cost script or `explorer.js` therefore needs no notebook re-executed: the
site picks it up at the next ``make book``, a kernel at the next run of the cell.
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from minigpt.book import cost_scripts
from minigpt.book.explorer_spec import (  # noqa: F401  (re-exported: the explorer's parts)
    _ID,
    _NAME,
    JS_ENV,
    LOG_STEPS,
    Fmt,
    Output,
    Plot,
    Series,
    Slider,
    _evaluate,
    _fmt_spec,
    _format,
    chip_value,
    preset_value,
)

__all__ = [
    "JS_ENV", "Output", "Plot", "Series", "Slider", "chip_value", "evaluate_spec", "explorer", "explorer_html",
    "initial_values", "preset_value",
]


@cache
def _asset(name: str) -> str:
    return resources.files("minigpt").joinpath("web", name).read_text(encoding="utf-8")


def _script(source: str) -> str:
    # Inline <script>: a literal "</script" inside would end it early.
    return '<script class="mgx-inline">' + source.replace("</script", "<\\/script") + "</script>"


def inline_default() -> bool:
    """Whether an explorer inlines the cost scripts and explorer.js: yes in a live kernel, not for the site."""
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
        scripts = (_script(cost_scripts.bundle())
                   + _script(_asset("explorer_plot.js") + _asset("explorer.js"))
                   + _script("globalThis.MiniGPTExplorer.initAll();"))
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


def explorer(*args: Any, **kwargs: Any) -> Any:
    """An analytic explorer as an `IPython.display.HTML` object (display it as a cell's result); the arguments
    are `explorer_html`'s."""
    from IPython.display import HTML

    return HTML(explorer_html(*args, **kwargs))

