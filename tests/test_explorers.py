"""minigpt.book.explorers: the HTML an explorer writes (deterministic, complete, initial values computed
in Python, scripts inlined only for a live kernel), its checks, and explorer.js under node on every
committed explorer. (the cost scripts against costs.py are tests/test_costs_js.py; the pages are tests/test_site.py.)"""

from __future__ import annotations

import html as htmllib
import json
import math
import re
from pathlib import Path

import nbformat
import pytest
from node import NODE, load_costs, run_node, slider_values_of

from minigpt import costs
from minigpt.book.explorers import (
    JS_ENV,
    LOG_STEPS,
    Output,
    Plot,
    Series,
    Slider,
    explorer,
    explorer_html,
    initial_values,
)
from minigpt.config import ModelConfig

ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "minigpt" / "web"
SHAPE = ModelConfig().symbols()


def _demo(**kw) -> str:
    args = dict(
        id="prefill",
        title="Prefill FLOPs",
        sliders=[Slider("P", "prompt tokens <i>P</i>", 1, 4096, value=128, log=True),
                 Slider("m", "model", options=[("MiniGPT", SHAPE), ("wide", dict(SHAPE, d=128, d_h=32))])],
        outputs=[Output("flops", "prefill FLOPs", fn="prefill_flops", model="m", args={"P": "P"}, fmt="fmt_flops"),
                 Output("share", "attention share", fn="prefill_attention_share", args={"P": "P", "d": "m.d"},
                        fmt=("fmt_percent", {"decimals": 2}))],
        plot=Plot("P", 1, 4096, [Series("prefill", fn="prefill_flops", model="m", args={"P": "P"})],
                  log_x=True, log_y=True, y_fmt="fmt_flops"),
        inline=False,
    )
    args.update(kw)
    return explorer_html(**args)


def _spec(html: str) -> dict:
    m = re.search(r'<script type="application/json" class="mgx-spec">(.*?)</script>', html, re.S)
    assert m, "no spec"
    return json.loads(m.group(1).replace("<\\/", "</"))


def _shown(html: str) -> dict[str, tuple[str, str]]:
    """Output name -> (data-value, text) as the HTML holds them."""
    found = re.findall(r'data-output="([^"]+)" data-value="([^"]*)">([^<]*)</span>', html)
    return {name: (htmllib.unescape(value), htmllib.unescape(text)) for name, value, text in found}


def test_html_is_deterministic_and_shows_python_values() -> None:
    page = _demo()
    assert page == _demo(), "two renders differ: nbval compares this output"
    assert 'data-explorer="prefill"' in page and 'data-slider="P"' in page and "<select" in page
    assert 'class="mgx-plot"' in page
    assert "<script>" not in page and "mgx-inline" not in page and "MiniGPTCosts" not in page, "inline=False inlines"
    assert re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) is None, "loads something from outside"
    assert re.search(r"[0-9a-f]{32}", page) is None, "looks like a random id"
    flops = costs.of(SHAPE).prefill_flops(P=128)
    share = costs.prefill_attention_share(P=128, d=64)
    assert _shown(page) == {"flops": (str(flops), costs.fmt_flops(flops)),
                            "share": (json.dumps(share), costs.fmt_percent(share, decimals=2))}


def test_model_shortcut_expands_into_named_arguments() -> None:
    call = Output("f", "f", fn="prefill_flops", model="m", args={"P": "P", "V": 0}).call()
    assert call == {"fn": "prefill_flops", "key": None, "args": {
        "L": "m.L", "H_kv": "m.H_kv", "d_h": "m.d_h", "d": "m.d", "d_ffn": "m.d_ffn", "ffn_matrices": "m.ffn_matrices",
        "V": 0, "P": "P"}}
    spec = _spec(_demo())
    assert spec["outputs"][0]["args"]["ffn_matrices"] == "m.ffn_matrices"
    assert spec["outputs"][1]["fmt"] == {"fn": "fmt_percent", "args": {"decimals": 2}}


def test_outputs_read_earlier_outputs_fields_and_literals() -> None:
    sliders = [Slider("B", "B", 1, 64, value=4)]
    outputs = [
        Output("w", "weights", fn="weight_bytes", args={"N_params": 1000, "s": 0.5}, fmt="fmt_bytes"),
        Output("fit", "fit", fn="memory_fit", args={"memory_bytes": 10_000, "weight_bytes": "w",
                                                    "kv_bytes_per_token": 10, "S": 100, "B": "B"},
               fmt="fmt_memory_fit"),
        Output("ctx", "longest context", value="fit.max_context", fmt="fmt_int"),
    ]
    env = initial_values({}, sliders, outputs)
    assert env["w"] == 500 and env["fit"]["max_batch"] == 9 and env["ctx"] == 237
    assert _shown(explorer_html("t", "t", sliders, outputs, inline=False))["fit"][1] == (
        "fits; longest context 237, largest batch 9")


def test_scripts_are_inlined_only_for_a_kernel(monkeypatch) -> None:
    monkeypatch.delenv(JS_ENV, raising=False)
    live = _demo(inline=None)
    assert live.count('<script class="mgx-inline">') == 3 and "MiniGPTCosts" in live and "MiniGPTExplorer" in live
    monkeypatch.setenv(JS_ENV, "site")
    assert _demo(inline=None) == _demo(inline=False)
    monkeypatch.setenv(JS_ENV, "cdn")
    with pytest.raises(ValueError, match=JS_ENV):
        _demo(inline=None)
    # nbval's sanitizer turns the live output into the committed one
    cfg = (ROOT / "tests" / "nbval_sanitize.cfg").read_text()
    regex = re.search(r"\[explorer_inline_js\]\nregex: (.*)\n", cfg).group(1)
    assert re.sub(regex, "", live) == _demo(inline=False)


def test_committed_outputs_carry_no_javascript() -> None:
    explorers = 0
    for path in [*sorted((ROOT / "chapters").glob("*.ipynb")), ROOT / "decoder_ring" / "index.ipynb"]:
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                page = out.get("data", {}).get("text/html", "")
                if "mgx-explorer" in page:
                    explorers += 1
                    assert "<script>" not in page and "mgx-inline" not in page, f"{path.name} inlines the JS"
                    assert "hide-input" in cell.metadata.get("tags", []), f"{path.name}: explorer cell not hidden"
    assert explorers >= 5


def test_log_slider_position() -> None:
    s = Slider("P", "P", 1, 4096, value=128, log=True)
    assert s.position() == round(LOG_STEPS * math.log(128) / math.log(4096))
    assert f'max="{LOG_STEPS}"' in _demo()


def test_script_end_tag_is_escaped() -> None:
    page = _demo(plot=Plot("P", 1, 4096, [Series("</script><b>", fn="prefill_flops", model="m", args={"P": "P"})]))
    spec_text = page.split('class="mgx-spec">', 1)[1].split("</script>", 1)[0]
    assert "</script><b>" not in spec_text and _spec(page)["plot"]["series"][0]["label"] == "</script><b>"


def test_explorer_returns_ipython_html() -> None:
    obj = explorer("e1", "t", [Slider("x", "x", 0, 1, value=0.5, step=0.1)],
                   [Output("y", "y", fn="ridge_point", args={"peak_flops": "x", "bandwidth": 2}, fmt="fmt_fixed")],
                   inline=False)
    assert 'data-explorer="e1"' in obj._repr_html_() and ">0.3</span>" in obj._repr_html_()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Slider("1x", "x", 0, 1, value=0), "identifier"),
        (lambda: Slider("x", "x", 1, 0, value=0), "below"),
        (lambda: Slider("x", "x", 0, 10, value=11), "must lie"),
        (lambda: Slider("x", "x", 0, 10, value=1, log=True), "min > 0"),
        # Chapter 20's α: a log slider over [1e-6, 1e-3] left with the default step 1 snapped to 1e-6.
        (lambda: Slider("a", "a", 1e-6, 1e-3, value=1e-5, log=True), r"step 1 must lie in \[0, max - min"),
        (lambda: Slider("x", "x", options=[("a", 1)], value=2), "not one of"),
        (lambda: Slider("x", "x", 0, 10, value=1, fmt="x.toFixed(1)"), "formatter"),
        (lambda: Slider("x", "x", 0, 10, value=1, sets={"y": "bandwidth"}), "needs options"),
        (lambda: Plot("x", 1, 0, [Series("s", value="x")]), "x range"),
        (lambda: Output("o", "o", fn="C.prefill_flops({L, P, d})"), "not a formula"),
        (lambda: Output("o", "o", fn="prefill_flops", args={"L": 1, "P": 2, "Q": 3}), "no argument"),
        (lambda: Output("o", "o", fn="prefill_flops", args={"L": 1}), r"needs \['P', 'd'\]"),
        (lambda: Output("o", "o", fn="prefill_flops", model="m", args={"P": "2 * P"}), "must name a value"),
        (lambda: Output("o", "o", fn="prefill_flops", model="m", args={"P": [1]}), "literal"),
        (lambda: Output("o", "o"), "exactly one"),
        (lambda: Output("o", "o", fn="fmt_bytes", args={"n": 1}), "not a formula"),
        (lambda: Output("o", "o", value="x", fmt=("fmt_bytes", {"decimals": 1})), "no option"),
        (lambda: _demo(id="Bad Id"), "explorer id"),
        (lambda: _demo(constants={"P": 1}), "distinct"),
        (lambda: _demo(outputs=[Output("o", "o", value="later"), Output("later", "l", value="P", fmt="fmt_int")]),
         "earlier output"),
        (lambda: _demo(outputs=[Output("o", "o", value="P")]), "give fmt"),
        (lambda: _demo(outputs=[Output("o", "o", fn="prefill_flops", model="m", args={"P": 0}, fmt="fmt_flops")]),
         "fails at the initial values: P must be"),
        (lambda: _demo(plot=Plot("Q", 1, 2, [Series("s", value="P")])), "plot.x"),
        (lambda: _demo(sliders=[Slider("hw", "hw", options=[("a", {"bandwidth": 2.0})], sets={"bw": "bandwidth"}),
                                Slider("bw", "bw", 1, 10, value=3), Slider("P", "P", 1, 9, value=2),
                                Slider("m", "m", options=[("x", SHAPE)])]), "starts at 3"),
    ],
)
def test_errors_say_what_is_allowed(make, message) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def _committed_explorers() -> list[tuple[str, str]]:
    found = []
    for path in [*sorted((ROOT / "chapters").glob("*.ipynb")), ROOT / "decoder_ring" / "index.ipynb"]:
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                page = out.get("data", {}).get("text/html", "")
                for box in re.findall(r'<div class="mgx-explorer".*?</script></div>', page, re.S):
                    found.append((path.stem, box))
    return found


@pytest.mark.skipif(NODE is None, reason="needs node")
def test_explorer_js_reproduces_every_committed_explorer() -> None:
    """explorer.js + the cost scripts, at each committed explorer's initial values, compute and print what
    Python did."""
    cases = []
    for page_name, box in _committed_explorers():
        values = slider_values_of(box)
        cases.append({"page": page_name, "spec": _spec(box), "values": values, "shown": _shown(box)})
    assert len(cases) >= 5
    script = f"""
      const C = {load_costs()};
      require({json.dumps(str(WEB / "explorer.js"))});
      const E = globalThis.MiniGPTExplorer;
      const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
      const out = cases.map(({{spec, values}}) => {{
        const {{env, errors}} = E.evaluateAll(spec, values, C);
        const shown = {{}};
        for (const o of spec.outputs) {{
          const v = env[o.name];
          shown[o.name] = [v === undefined ? null : v, E.format(o.fmt, v, C)];
        }}
        return {{errors, shown}};
      }});
      process.stdout.write(JSON.stringify(out));
    """
    for case, got in zip(cases, run_node(script, json.dumps(cases)), strict=True):
        assert got["errors"] == {}, f"{case['page']} {case['spec']['id']}: {got['errors']}"
        assert set(got["shown"]) == set(case["shown"])
        for name, (value, text) in case["shown"].items():
            js_value, js_text = got["shown"][name]
            python_value = value if isinstance(js_value, str) else json.loads(value)
            if isinstance(python_value, float | int) and not isinstance(python_value, bool):
                assert math.isclose(python_value, js_value, rel_tol=1e-12), (case["page"], name, value, js_value)
            else:
                assert python_value == js_value, (case["page"], name, value, js_value)
            assert js_text == text, f"{case['page']} {name}: shown {text!r} by Python, {js_text!r} by JS"


@pytest.mark.skipif(NODE is None, reason="needs node")
def test_js_helpers_under_node() -> None:
    script = f"""
      {load_costs()};
      require({json.dumps(str(WEB / "explorer.js"))});
      const E = globalThis.MiniGPTExplorer;
      const s = {{min: 1, max: 4096, step: 1, log: true}};
      console.log(JSON.stringify({{
        ends: [E.valueAt(s, 0), E.valueAt(s, {LOG_STEPS})],
        mid: E.valueAt(s, {Slider("P", "P", 1, 4096, value=128, log=True).position()}),
        pos: E.positionOf(s, 128),
        lin: E.valueAt({{min: 0, max: 1, step: 0.1}}, 0.34),
        compact: [E.compact(999), E.compact(12345), E.compact(2.5e9)],
      }}));
    """
    got = run_node(script)
    assert got == {"ends": [1, 4096], "mid": 128, "pos": Slider("P", "P", 1, 4096, value=128, log=True).position(),
                   "lin": 0.3, "compact": ["999", "12.3k", "2.5G"]}


def _committed_cases() -> list[dict]:
    cases = []
    for page_name, box in _committed_explorers():
        values = slider_values_of(box)
        cases.append({"page": page_name, "spec": _spec(box), "values": values})
    return cases


@pytest.mark.skipif(NODE is None, reason="needs node")
def test_tick_labels_tell_the_ticks_apart() -> None:
    """A speedup axis formatted with no decimals read "0×, 0×, 1×, 1×" (Chapter 16 at large K): the labels get
    the decimals their step needs; a log axis within one decade still gets two ticks or more."""
    script = f"""
      const C = {load_costs()};
      require({json.dumps(str(WEB / "explorer.js"))});
      const E = globalThis.MiniGPTExplorer;
      const times = {{fn: "fmt_fixed", args: {{decimals: 0, suffix: "×"}}}};
      const spec = {{sliders: [{{name: "a", min: 1, max: 2, step: 1}}], outputs: [], constants: {{}},
        plot: {{x: "a", x_min: 1, x_max: 8, points: 8, log_x: false, log_y: true, y_min: null, y_max: null,
                y_fmt: null, series: [{{label: "y", fn: "fmt_int", value: "a", until: null}}]}}}};
      console.log(JSON.stringify({{
        times: E.tickLabels([0, 0.5, 1, 1.5], times, C),
        percent: E.tickLabels([0.001, 0.002, 0.003], {{fn: "fmt_percent", args: {{decimals: 0}}}}, C),
        kept: E.tickLabels([0, 5, 10], times, C),
        bytes: E.tickLabels([1024, 2048], {{fn: "fmt_bytes", args: {{}}}}, C),
        log: E.plotModel(spec, {{a: 1}}, C).yTicks,
      }}));
    """
    got = run_node(script)
    assert got["times"] == ["0.0×", "0.5×", "1.0×", "1.5×"]
    assert got["percent"] == ["0.1%", "0.2%", "0.3%"]
    assert got["kept"] == ["0×", "5×", "10×"]  # readable as they are: the formatter's own decimals
    assert got["bytes"] == ["1.0 KiB", "2.0 KiB"]
    assert len(got["log"]) >= 2 and all(1 <= t <= 8 for t in got["log"])


@pytest.mark.skipif(NODE is None, reason="needs node")
def test_every_committed_explorer_reads_at_its_sliders_extremes() -> None:
    """Each slider of each committed explorer at five positions from min to max (a select at each option), and
    all range sliders at their min and at their max at once:
    every output computes and prints a plain number (no NaN, Infinity, exponent), every slider's shown value
    too, and the plot's y axis has two or more ticks, all labelled differently."""
    script = f"""
      const C = {load_costs()};
      require({json.dumps(str(WEB / "explorer.js"))});
      const E = globalThis.MiniGPTExplorer;
      const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
      const bad = [], seen = [];
      const odd = (t) => /NaN|Infinity|undefined|\\de[+-]\\d/.test(t);
      for (const {{page, spec, values}} of cases) {{
        const at = (s, f) => E.valueAt(s, s.log ? f * {LOG_STEPS} : s.min + f * (s.max - s.min));
        const ends = (s) => s.options ? s.options.map((o) => o[1]) : [0, 0.25, 0.5, 0.75, 1].map((f) => at(s, f));
        const settings = [["initial", values]];
        for (const s of spec.sliders) {{
          for (const v of ends(s)) settings.push([s.name + "=" + JSON.stringify(v).slice(0, 30),
                                                 Object.assign({{}}, values, {{[s.name]: v}})]);
        }}
        for (const [k, end] of [["min", 0], ["max", 1]]) {{
          const all = Object.assign({{}}, values);
          for (const s of spec.sliders) if (!s.options) all[s.name] = ends(s)[4 * end];
          settings.push(["all at " + k, all]);
        }}
        for (const [what, v] of settings) {{
          const where = page + " " + spec.id + " " + what;
          const {{env, errors}} = E.evaluateAll(spec, v, C);
          for (const s of spec.sliders) {{
            if (s.fmt && odd(E.format(s.fmt, v[s.name], C))) bad.push(where + ": slider " + s.name);
          }}
          for (const o of spec.outputs) {{
            if (errors[o.name]) {{ bad.push(where + ": " + o.name + " fails: " + errors[o.name]); continue; }}
            const text = E.format(o.fmt, env[o.name], C);
            if (odd(text)) bad.push(where + ": " + o.name + " shows " + text);
          }}
          if (!spec.plot) continue;
          const m = E.plotModel(spec, v, C);
          seen.push(spec.id);
          if (m.empty) {{ bad.push(where + ": the plot has no point"); continue; }}
          const L = m.yLabels;
          if (L.length < 2 || new Set(L).size !== L.length) bad.push(where + ": y axis " + L.join(", "));
          if (new Set(m.xLabels).size !== m.xLabels.length) bad.push(where + ": x axis " + m.xLabels.join(", "));
        }}
      }}
      process.stdout.write(JSON.stringify({{bad, seen: [...new Set(seen)]}}));
    """
    cases = _committed_cases()
    assert {c["spec"]["id"] for c in cases} >= {"ch9-gqa", "ch10-quant", "ch16-split", "ch17-speculative"}
    got = run_node(script, json.dumps(cases))
    assert got["bad"] == []
    assert {"ch16-split", "ch17-speculative", "ch15-flash", "ch3-roofline"} <= set(got["seen"])
