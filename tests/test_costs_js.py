"""minigpt/web/costs.js (the browser sliders) computes what minigpt/costs.py computes."""

from __future__ import annotations

import itertools
import json
import math
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path

import pytest

from minigpt import costs
from minigpt.presets import HARDWARE, MODELS

NODE = shutil.which("node")
COSTS_JS = Path(__file__).resolve().parents[1] / "minigpt" / "web" / "costs.js"
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed; costs.js is checked with node")

DRIVER = """
const C = require(process.argv[1]);
const calls = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = calls.map(([name, kwargs, args]) => {
  try {
    return {value: args ? C[name](...args) : C[name](kwargs)};
  } catch (e) {
    return {error: String(e.message)};
  }
});
process.stdout.write(JSON.stringify({out, MODELS: C.MODELS, HARDWARE: C.HARDWARE}));
"""

SHAPES = [
    dict(d=64),
    dict(d=64, V=600),
    dict(d=64, H_kv=2, d_h=16, d_ffn=100, V=600, B=3),
    dict(d=4096, H_kv=8, d_h=128, d_ffn=14336, V=128256, B=7),
    dict(d=4096, H_kv=8, d_h=128, d_ffn=14336, V=128256, ffn_matrices=3),
    dict(d=12288, V=50257, B=64),
]
SIZES = [dict(L=1, P=1, D=1), dict(L=4, P=2, D=3), dict(L=32, P=4096, D=1000), dict(L=96, P=2048, D=10**6)]


def _calls() -> list[tuple[str, dict, list | None]]:
    calls: list[tuple[str, dict, list | None]] = []
    for shape, size in itertools.product(SHAPES, SIZES):
        L, P, D, d = size["L"], size["P"], size["D"], shape["d"]
        model = dict(shape, L=L)
        calls += [
            ("prefill_flops", dict(model, P=P), None),
            ("decode_step_flops", dict(model, S=P + D), None),
            ("decode_flops", dict(model, P=P, D=D), None),
            ("generation_flops", dict(model, P=P, D=D), None),
            ("no_cache_flops", dict(model, P=P, D=D), None),
            ("cache_saving_factor", dict(model, P=P, D=D), None),
            ("layer_flops", {k: v for k, v in dict(shape, T=P, S=D).items() if k != "V"}, None),
            ("lm_head_flops", dict(d=d, V=shape.get("V", 0), T=P, B=shape.get("B", 1)), None),
            ("prefill_macs", dict(L=L, P=P, d=d), None),
            ("decode_step_macs", dict(L=L, S=P, d=d), None),
            ("decode_macs_seed", dict(L=L, P=P, D=D, d=d), None),
            ("no_cache_macs_seed", dict(L=L, P=P, D=D, d=d), None),
            ("prefill_attention_share", dict(P=P, d=d), None),
            ("prefill_crossover_P", dict(d=d), None),
        ]
    for L, H_kv, d_h, s, S, B in [
        (4, 4, 16, 4, 5, 1),
        (32, 8, 128, 2, 8192, 16),
        (96, 96, 128, 2, 10**6, 512),
    ]:
        kv = dict(L=L, H_kv=H_kv, d_h=d_h)
        calls += [
            ("kv_bytes_per_token", dict(kv, s=s), None),
            ("kv_cache_bytes", dict(kv, s=s, S=S, B=B), None),
            ("int8_kv_bytes", dict(kv, S=S, B=B), None),
            ("int8_kv_bytes", dict(kv, S=S, s_scale=4), None),
            ("weight_bytes", dict(N_params=L * 10**9 + 7, s=s), None),
            (
                "decode_step_bytes",
                dict(weight_bytes=L * 10**9, kv_bytes_per_token=2 * L * H_kv * d_h * s, S=S, B=B),
                None,
            ),
        ]
    for hw, model in itertools.product(HARDWARE.values(), MODELS.values()):
        w = costs.weight_bytes(N_params=model.N_params, s=2)
        kv = costs.kv_bytes_per_token(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=2)
        budget = dict(memory_bytes=hw.memory_bytes, weight_bytes=w, kv_bytes_per_token=kv)
        calls += [
            ("ridge_point", dict(peak_flops=hw.peak_flops, bandwidth=hw.bandwidth), None),
            ("attainable_flops", dict(intensity=1.5, peak_flops=hw.peak_flops, bandwidth=hw.bandwidth), None),
            ("attainable_flops", dict(intensity=1e4, peak_flops=hw.peak_flops, bandwidth=hw.bandwidth), None),
            ("decode_tok_s_ceiling", dict(bandwidth=hw.bandwidth, bytes_per_step=w + 1000 * kv, B=8), None),
            ("arithmetic_intensity", dict(flops=2 * model.N_params, bytes=w), None),
            ("max_context", dict(budget, B=4), None),
            ("max_context", dict(budget, reserve=0.1), None),
            ("max_batch", dict(budget, S=4096), None),
            ("max_batch", dict(budget, S=4096, reserve=0.25), None),
            ("fits_in_memory", dict(budget, S=4096, B=2), None),
            ("fits_in_memory", dict(budget, S=100_000, B=64, reserve=0.1), None),
        ]
    calls += [
        ("wall_clock", dict(P=P, D=D, prefill_tok_s=p, decode_tok_s=t), None)
        for P, D, p, t in [(1000, 300, 2000, 40), (12_000, 500, 1500, 40), (0, 0, 1, 1), (7, 3, 1e3, 33.3)]
    ]
    sizes = [
        0,
        1,
        999,
        1000,
        1023,
        1024,
        2304,
        1536,
        512 * 1024,
        4.5 * 1024**2,
        2 * 1024**3,
        17_179_869_184,
        393_216,
        5.73e12,
        1e21,
        123.456,
        2**53 + 1,
    ]
    for n in sizes:
        calls += [("fmt_bytes", {}, [n]), ("fmt_bytes", {}, [n, False]), ("fmt_flops", {}, [n])]
    return calls


@pytest.fixture(scope="module")
def node_results():
    calls = _calls()
    proc = subprocess.run(
        [NODE, "-e", DRIVER, str(COSTS_JS)],
        input=json.dumps(calls),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return calls, json.loads(proc.stdout)


def _python(name, kwargs, args):
    result = getattr(costs, name)(*args) if args else getattr(costs, name)(**kwargs)
    return asdict(result) if name == "wall_clock" else result


def _same(py, js) -> bool:
    if isinstance(py, bool) or isinstance(py, str):
        return py == js
    if isinstance(py, int):
        return float(py) == float(js)  # BigInt in JS: exact, then one correct rounding, like float()
    if isinstance(py, dict):
        return py.keys() == js.keys() and all(_same(py[k], js[k]) for k in py)
    return math.isclose(py, js, rel_tol=1e-12)


def test_every_mirrored_function_agrees(node_results):
    calls, results = node_results
    names = {name for name, _, _ in calls}
    assert len(names) >= 26
    for (name, kwargs, args), got in zip(calls, results["out"], strict=True):
        assert "error" not in got, f"{name}({kwargs or args}) raised in JS: {got.get('error')}"
        expected = _python(name, kwargs, args)
        assert _same(expected, got["value"]), (
            f"{name}({kwargs or args}): python {expected!r} != js {got['value']!r}"
        )


def test_presets_are_the_same(node_results):
    _, results = node_results
    assert results["MODELS"] == {name: asdict(m) for name, m in MODELS.items()}
    assert results["HARDWARE"] == {name: asdict(h) for name, h in HARDWARE.items()}


def test_js_rejects_bad_inputs_like_python():
    calls = [
        ("prefill_flops", dict(L=0, P=2, d=64), None),
        ("prefill_flops", dict(L=4, P=2, d=64, H_kv=2), None),
        ("decode_flops", dict(L=4, P=2, D=0, d=64), None),
        ("kv_bytes_per_token", dict(L=4, H_kv=4, d_h=16, s=1.5), None),
        ("ridge_point", dict(peak_flops=0, bandwidth=1), None),
    ]
    proc = subprocess.run(
        [NODE, "-e", DRIVER, str(COSTS_JS)],
        input=json.dumps(calls),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    for (name, kwargs, _), got in zip(calls, json.loads(proc.stdout)["out"], strict=True):
        with pytest.raises(ValueError):
            getattr(costs, name)(**kwargs)
        assert "error" in got, f"{name}({kwargs}) should throw in JS, returned {got}"
