"""minigpt.book.explorers: the HTML an explorer writes (deterministic, complete, self-contained) and the
pure helpers of explorer.js under node. (costs.js against costs.py is tests/test_costs_js.py.)"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from minigpt.book.explorers import LOG_STEPS, Output, Plot, Series, Slider, explorer, explorer_html

WEB = Path(__file__).resolve().parent.parent / "minigpt" / "web"


def _demo(**kw) -> str:
    args = dict(
        id="prefill",
        title="Prefill FLOPs",
        sliders=[Slider("P", "prompt tokens <i>P</i>", 1, 4096, value=128, log=True),
                 Slider("model", "model", options=[("MiniGPT", {"L": 4}), ("big", {"L": 32})])],
        outputs=[Output("prefill_flops", "prefill FLOPs", "C.prefill_flops({L, P, d, V})", fmt="C.fmt_flops(x)")],
        plot=Plot("P", 1, 4096, [Series("prefill", "C.prefill_flops({L, P, d, V})")], log_x=True, log_y=True),
        constants={"L": 4, "d": 64, "V": 600},
    )
    args.update(kw)
    return explorer_html(**args)


def _spec(html: str) -> dict:
    m = re.search(r'<script type="application/json" class="mgx-spec">(.*?)</script>', html, re.S)
    assert m, "no spec"
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_html_is_deterministic_and_complete() -> None:
    html = _demo()
    assert html == _demo(), "two renders differ: nbval compares this output"
    assert 'data-explorer="prefill"' in html
    assert 'data-slider="P"' in html and 'name="P"' in html
    assert 'data-slider="model"' in html and "<select" in html
    assert 'data-output="prefill_flops"' in html
    assert 'class="mgx-plot"' in html
    assert "MiniGPTCosts" in html and "MiniGPTExplorer" in html, "costs.js and explorer.js are inlined"
    assert re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html) is None, "loads something from outside"
    assert re.search(r"[0-9a-f]{32}", html) is None, "looks like a random id"
    spec = _spec(html)
    assert spec["constants"] == {"L": 4, "d": 64, "V": 600}
    assert [s["name"] for s in spec["sliders"]] == ["P", "model"]


def test_log_slider_position() -> None:
    s = Slider("P", "P", 1, 4096, value=128, log=True)
    assert s.position() == round(LOG_STEPS * math.log(128) / math.log(4096))
    assert f'max="{LOG_STEPS}"' in _demo()


def test_script_end_tag_is_escaped() -> None:
    html = _demo(title="x", outputs=[Output("o", "o", "'</script>'")])
    body = html.split("<script", 1)[1]
    assert "'</script>'" not in body.split('class="mgx-spec">', 1)[1].split("</script>", 1)[0]


def test_explorer_returns_ipython_html() -> None:
    obj = explorer("e1", "t", [Slider("x", "x", 0, 1, value=0.5, step=0.1)], [Output("y", "y", "2 * x")])
    assert "data-explorer=\"e1\"" in obj._repr_html_()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Slider("1x", "x", 0, 1, value=0), "identifier"),
        (lambda: Slider("x", "x", 1, 0, value=0), "below"),
        (lambda: Slider("x", "x", 0, 10, value=11), "must lie"),
        (lambda: Slider("x", "x", 0, 10, value=1, log=True), "min > 0"),
        (lambda: Slider("x", "x", options=[("a", 1)], value=2), "not one of"),
        (lambda: Plot("x", 1, 0, [Series("s", "x")]), "x range"),
        (lambda: _demo(id="Bad Id"), "explorer id"),
        (lambda: _demo(constants={"P": 1}), "distinct"),
        (lambda: _demo(plot=Plot("Q", 1, 2, [Series("s", "Q")])), "plot.x"),
    ],
)
def test_errors_say_what_is_allowed(make, message) -> None:
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_js_helpers_under_node() -> None:
    script = f"""
      require({json.dumps(str(WEB / "costs.js"))});
      require({json.dumps(str(WEB / "explorer.js"))});
      const E = globalThis.MiniGPTExplorer;
      const s = {{min: 1, max: 4096, step: 1, log: true}};
      console.log(JSON.stringify({{
        ends: [E.valueAt(s, 0), E.valueAt(s, {LOG_STEPS})],
        mid: E.valueAt(s, {Slider("P", "P", 1, 4096, value=128, log=True).position()}),
        lin: E.valueAt({{min: 0, max: 1, step: 0.1}}, 0.34),
        compact: [E.compact(999), E.compact(12345), E.compact(2.5e9)],
      }}));
    """
    out = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    assert got == {"ends": [1, 4096], "mid": 128, "lin": 0.3, "compact": ["999", "12.3k", "2.5G"]}
