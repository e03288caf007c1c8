"""The operator counter of the overhead floor: exact counts on known calls and on MiniGPT's decode step."""

from __future__ import annotations

import pytest
import torch

from minigpt import ModelConfig
from minigpt.measure import sweeps
from minigpt.measure.overhead import HOST_SYNC_OP, count_ops, decode_step_ops, overhead_floor, per_op_seconds


def test_count_ops_counts_each_aten_call() -> None:
    a, b = torch.ones(3), torch.ones(3)
    ops = count_ops(lambda: ((a + b) * 2).sum().item())
    assert ops == {"aten.add": 1, "aten.mul": 1, "aten.sum": 1, HOST_SYNC_OP: 1}
    assert count_ops(lambda: None) == {}


@pytest.mark.parametrize("cfg", [ModelConfig(), ModelConfig(L=3, H=4, H_kv=2, d_h=8, d_ffn=48, V=30, S_max=40)])
def test_decode_step_ops_follow_the_architecture(cfg: ModelConfig) -> None:
    model = sweeps.random_model(cfg)
    ops = decode_step_ops(model, S=9, B=2)
    L = cfg.L
    assert ops["aten.addmm"] == 4 * L  # qkv, out, up, down: one weight matrix each with its bias
    assert ops["aten.mm"] == 1  # the tied LM head
    assert ops["aten.bmm"] == 2 * L  # q·kᵀ and weights·v
    assert ops["aten.native_layer_norm"] == 2 * L + 1
    assert ops["aten.gelu"] == ops["aten._softmax"] == L
    assert ops["aten.embedding"] == 2  # token and position
    assert ops[HOST_SYNC_OP] == 2  # int(tokens.min()), int(tokens.max()): the id check
    fast = decode_step_ops(model, S=9, B=2, check_inputs=False)
    assert HOST_SYNC_OP not in fast and "aten.min" not in fast and "aten.max" not in fast
    assert sum(ops.values()) - sum(fast.values()) == 4


def test_per_op_seconds_and_the_floor() -> None:
    t = per_op_seconds(calls=200, repeats=3)
    assert 0 < t < 1e-3
    with pytest.raises(ValueError, match="calls must be an integer >= 1"):
        per_op_seconds(calls=0)
    model = sweeps.random_model(ModelConfig(L=1, H=2, H_kv=2, d_h=8, d_ffn=32, V=20, S_max=16))
    floor = overhead_floor(model, S=4, repeats=3)
    assert floor.n_ops == sum(floor.ops.values()) and floor.host_syncs == 2
    assert floor.floor_s == pytest.approx(floor.n_ops * floor.per_op_s)
    assert floor.explained == pytest.approx(floor.floor_s / floor.measured_s)
    assert set(floor.to_record()) >= {"n_ops", "per_op_s", "floor_s", "measured_s", "explained"}


def test_time_static_step_sees_the_same_S_each_call() -> None:
    from minigpt.measure.overhead import time_static_step
    from minigpt.runtime.compiled import StaticDecoder

    model = sweeps.random_model(ModelConfig(L=1, H=2, H_kv=2, d_h=8, d_ffn=32, V=20, S_max=16))
    decoder = StaticDecoder(model, 2, S_max=6, compile=False)
    timing = time_static_step(decoder, S=5, warmup=2, repeats=4)  # 6 steps at S=5 fit a cache of 6 rows
    assert timing.repeats == 4 and timing.min_s > 0 and decoder.S == 5
