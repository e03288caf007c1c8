"""The package's layers: the pure formulas import no torch, and one model shape feeds every formula."""

from __future__ import annotations

import subprocess
import sys

import pytest

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.costs import presets


def test_pure_formula_layer_imports_no_torch():
    code = (
        "import sys, minigpt, minigpt.config, minigpt.costs, minigpt.costs.presets, minigpt.costs.roofline, "
        "minigpt.costs.text_rates, minigpt.corpus.grammar\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'matplotlib', 'ipywidgets'))\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the pure layer imported {out.stdout.strip()}"


def test_import_minigpt_is_light_until_a_model_is_used():
    code = "import sys, minigpt; a = 'torch' in sys.modules; minigpt.MiniGPT; print(a, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("model", [ModelConfig(), ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=48, V=50),
                                   *presets.MODELS.values()], ids=lambda m: getattr(m, "name", repr(m)))
def test_symbols_are_exactly_what_the_formulas_take(model):
    symbols = model.symbols()
    assert tuple(symbols) == costs.MODEL_SYMBOLS
    bound = costs.of(model)
    by_hand = costs.prefill_flops(L=model.L, P=17, d=model.d, H_kv=model.H_kv, d_h=model.d_h, d_ffn=model.d_ffn,
                                  V=model.V, B=3, ffn_matrices=model.ffn_matrices)
    assert bound.prefill_flops(P=17, B=3) == by_hand == costs.evaluate(costs.prefill_flops, model, P=17, B=3)
    assert bound.kv_bytes_per_token(s=2) == costs.kv_bytes_per_token(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=2)


def test_bound_costs_reject_unknown_arguments_and_names():
    bound = costs.of(ModelConfig())
    with pytest.raises(ValueError, match=r"prefill_flops\(\) takes no argument \['Q'\]"):
        bound.prefill_flops(P=4, Q=1)
    with pytest.raises(AttributeError, match="no formula 'nope'"):
        bound.nope  # noqa: B018
    with pytest.raises(ValueError, match="no formula takes"):
        costs.of({"L": 1, "H": 2})


def test_every_formula_is_exported_and_callable():
    for name in costs.FORMULAS:
        assert callable(getattr(costs, name)), name
    assert set(costs.FORMULAS) <= set(costs.__all__)
