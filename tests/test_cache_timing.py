"""Decode timing on any cache: random filling through `update`, bytes per token = formula, Eq. (10.5)."""

from __future__ import annotations

import pytest
import torch

from minigpt import MiniGPT, ModelConfig, costs
from minigpt.corpus.fidelity import cache_factory
from minigpt.measure import module_bytes
from minigpt.measure.cache_timing import kv_bytes_per_token_of, randomly_filled, time_cache_step, unfused_step_bytes

CONFIG = ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=64, V=40, S_max=32)


@pytest.mark.parametrize("kind", ["fp32", "int8", "int4"])
def test_filled_cache_holds_S_rows_and_bytes_per_token_match_the_formulas(kind):
    cache = randomly_filled(cache_factory(CONFIG, kind)(3, 20), 11)
    assert cache.S == 11
    c = CONFIG
    if kind == "fp32":
        expected = costs.kv_bytes_per_token(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4)
        assert cache.k[:, :, :, :11].abs().sum() > 0 and cache.k[:, :, :, 11:].abs().sum() == 0
    else:
        expected = costs.quantized_kv_bytes(L=c.L, H_kv=c.H_kv, d_h=c.d_h, S=1, bits=int(kind[3:]),
                                            group_size=cache.group_size)
    assert kv_bytes_per_token_of(cache) == expected


def test_a_timed_point_carries_eq_3_5_and_eq_10_4():
    torch.manual_seed(0)
    model = MiniGPT(CONFIG).eval()
    point = time_cache_step(model, cache_factory(CONFIG, "int8"), kind="int8", B=2, S=9, warmup=0, repeats=2)
    assert point.step_s > 0 and (point.B, point.S, point.H_kv) == (2, 9, 2)
    w = module_bytes(model)
    assert point.step_bytes == w + 2 * 9 * point.kv_bytes_per_token
    fp = costs.kv_bytes_per_token(L=2, H_kv=2, d_h=8, s=4)
    assert point.unfused_step_bytes == point.step_bytes + 2 * 2 * 9 * fp
    assert unfused_step_bytes(weight_bytes=w, kv_bytes_per_token=fp, fp_bytes_per_token=fp, S=9, B=2,
                              quantized=False) == w + 2 * 9 * fp
