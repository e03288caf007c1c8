"""The operator counter of the overhead floor: exact counts on known calls and on MiniGPT's decode step."""

from __future__ import annotations

import pytest
import torch

from minigpt import ModelConfig
from minigpt.measure import sweeps
from minigpt.measure.op_count import HOST_SYNC_OP, count_ops, decode_step_ops
from minigpt.measure.overhead_floor import overhead_floor, per_op_seconds


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
    from minigpt.measure.overhead_floor import time_static_step
    from minigpt.runtime.compiled import StaticDecoder

    model = sweeps.random_model(ModelConfig(L=1, H=2, H_kv=2, d_h=8, d_ffn=32, V=20, S_max=16))
    decoder = StaticDecoder(model, 2, S_max=6, compile=False)
    timing = time_static_step(decoder, S=5, warmup=2, repeats=4)  # 6 steps at S=5 fit a cache of 6 rows
    assert timing.repeats == 4 and timing.min_s > 0 and decoder.S == 5


def test_op_kind_separates_kernels_from_views() -> None:
    from minigpt.measure.op_count import kind_counts, op_kind

    # A mutant that treats `_unsafe_view` or `split_with_sizes` as a kernel, or `copy_` as a view, fails here.
    for name in ("aten.view", "aten.t", "aten.transpose", "aten.expand", "aten.select", "aten.slice",
                 "aten._unsafe_view", "aten.split_with_sizes", "aten.permute", "aten.detach", "aten.as_strided"):
        assert op_kind(name) == "view", name
    for name in ("aten.addmm", "aten.bmm", "aten.copy_", "aten.add", "aten.native_layer_norm", "aten.arange",
                 "aten.embedding", "aten._softmax", "aten.clone"):
        assert op_kind(name) == "kernel", name
    assert op_kind(HOST_SYNC_OP) == "sync"
    with pytest.raises(ValueError, match="aten operator"):
        op_kind("aten.no_such_op")
    ops = decode_step_ops(sweeps.random_model(ModelConfig()), S=9)
    kinds = kind_counts(ops)
    assert sum(kinds.values()) == sum(ops.values()) and kinds["sync"] == 2
    L = ModelConfig().L
    # per layer: 2 LN, 4 addmm, 2 bmm, 2 cache copies, 2 residual adds, 1 div, 1 softmax, 1 gelu
    # (17 L), plus the final LN, the LM head, 2 embeddings, their add, arange, min and max: 68 at L = 4
    assert kinds["kernel"] == 17 * L
    fast = kind_counts(decode_step_ops(sweeps.random_model(ModelConfig()), S=9, check_inputs=False))
    assert fast["kernel"] == kinds["kernel"] - 2 and fast["view"] == kinds["view"] and fast["sync"] == 0


def test_step_breakdown_parts_add_up() -> None:
    from minigpt.measure.step_breakdown import step_breakdown

    torch.set_num_threads(1)
    model = sweeps.random_model(ModelConfig(L=1, H=2, H_kv=2, d_h=8, d_ffn=32, V=20, S_max=16))
    b = step_breakdown(model, S=4, rounds=3, inner=2)
    assert b.n_modules >= 1 + 2 * 1  # the model, its blocks' modules
    assert b.n_view > 0 and b.n_kernel > 0 and b.n_sync == 0 and b.kernel_bytes > 0
    for lo, med, hi in b.times.values():
        assert 0 <= lo <= med <= hi
    assert sum(b.parts().values()) == pytest.approx(b.median("step"))
    with pytest.raises(ValueError, match="clock must be"):
        step_breakdown(model, S=4, clock="cpu")  # type: ignore[arg-type]


def test_op_timeline_orders_top_level_operators_by_kind() -> None:
    from minigpt.measure.op_timeline import op_timeline

    a = torch.ones(4, 4)
    spans = op_timeline(lambda: (a.t() + 1).sum().item(), tries=2)
    # t (view), add and sum (kernels), item (sync, with _local_scalar_dense inside): top level only
    assert [s.name for s in spans] == ["aten.t", "aten.add", "aten.sum", "aten.item"]
    assert [s.kind for s in spans] == ["view", "kernel", "kernel", "sync"]
    assert spans[0].start_s == 0.0
    assert all(s.start_s <= s.end_s for s in spans)
    assert all(x.start_s <= y.start_s for x, y in zip(spans, spans[1:], strict=False))
    with pytest.raises(ValueError, match="tries must be an integer >= 1"):
        op_timeline(lambda: None, tries=0)
