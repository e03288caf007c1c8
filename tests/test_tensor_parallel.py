"""Chapter 20: MiniGPT sharded over W ranks (gloo on CPU) gives the single-process logits, issues
exactly the collectives Eqs. (20.1)-(20.2) count, and holds the KV bytes Eq. (20.3) counts.

Each check names the bug it catches:
- logits within TOL through prefill and decode (B > 1, MHA, GQA and MQA checkpoints, W = 2, 4): a
  wrong slice of the QKV rows (a K/V replica of the wrong group when H_kv < W), a row-parallel bias
  added on every rank, an all-reduce forgotten, the embedding's out-of-shard rows not zeroed;
- the recorded collectives equal Eq. (20.1)/(20.2): an extra or a forgotten all-reduce; mutants of
  both run in the W = 2 launch and must fail the count (and the logits);
- the cache bytes equal Eq. (20.3): K/V replicas not counted, or heads not split.
"""

from __future__ import annotations

import random

import pytest
import torch
from limits import DISTRIBUTED, HANG_S
from mutation_pass import shared_scope

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.distributed import launch
from minigpt.distributed.collectives import Collectives
from minigpt.distributed.tensor_parallel import TensorParallelMiniGPT, check_shardable
from minigpt.exercises import ex17_placements, ex17_shards
from minigpt.runtime.checkpoint import load_pretrained
from tests.workers import tp as workers

pytestmark = DISTRIBUTED

TOL = 1e-4  # fp32, absolute, on logits of magnitude ~10: the sums run in another order
CHECKPOINTS = ("minigpt", "minigpt-gqa2", "minigpt-mqa")  # H_kv = 4, 2, 1 with H = 4


def _cases(W: int) -> list[tuple[str, int, int, int, int]]:
    """(checkpoint, B, P, decode steps, seed): random shapes fixed per W, then one-token requests: a
    one-token prompt answered by its prefill alone (no decode step), and one-token prompts decoded."""
    rng = random.Random(20 + W)  # several random shapes, fixed per W
    drawn = [(name, rng.randint(2, 4), rng.randint(1, 12), rng.randint(2, 4), rng.randrange(10**6))
             for name in CHECKPOINTS]
    return drawn + [("minigpt-mqa", 1, 1, 0, 7 + W), ("minigpt-gqa2", 3, 1, 3, 11 + W)]


def _expected_record(L: int, B: int, T: int, d: int, V: int, s: int = 4) -> list[tuple[str, int]]:
    """The collectives of one forward, in order: embedding, 2 per layer, the LM head's gather."""
    return [("all_reduce", B * T * d * s)] * (1 + 2 * L) + [("all_gather", B * T * V * s)]


def _layers(c) -> list[list]:
    """The sharded MiniGPT's forward as Exercise 17's placement walk sees it (`ex17_placements.chapter_layers`):
    the walk over it must place the collectives where the real run records them, so the exercise's oracle is
    the model's own rule, not a second transcription of Eq. (20.2)."""
    return ex17_placements.chapter_layers(L=c.L, d=c.d, qkv=(c.H + 2 * c.H_kv) * c.d_h, d_ffn=c.d_ffn, V=c.V)


@pytest.fixture(scope=shared_scope, params=[2, 4], ids=["W2", "W4"])
def runs(request) -> tuple[int, list, list[list[dict]]]:
    W = request.param
    cases = _cases(W)
    return W, cases, launch.run(workers.equivalence, W, cases, W == 2, timeout_s=HANG_S)


def test_sharded_logits_equal_the_single_process_model(runs) -> None:
    W, cases, out = runs
    for case, got in zip(cases, out[0][:len(cases)], strict=True):
        assert max(got["diffs"]) <= TOL, f"W={W} {case}: max |Δ logits| {max(got['diffs']):.2e} > {TOL}"
        assert got["agree"], f"W={W} {case}: a greedy token differs"


def test_every_rank_returns_the_same_logits(runs) -> None:
    W, cases, out = runs
    for i in range(len(cases)):
        assert len({tuple(rank[i]["diffs"]) for rank in out}) == 1


def test_collectives_match_eqs_20_1_and_20_2(runs) -> None:
    W, cases, out = runs
    for (name, B, P, _steps, _), got in zip(cases, out[0][:len(cases)], strict=True):
        c = load_pretrained(name=name).config
        for step, record in enumerate(got["records"]):
            T = P if step == 0 else 1
            assert record == _expected_record(c.L, B, T, c.d, c.V)
            assert [list(r) for r in record] == ex17_placements.collectives(_layers(c), B=B, T=T, s=4, W=W)
            assert len(record) == costs.tp_collectives_per_step(L=c.L, W=W)
            assert sum(n for _, n in record) == costs.tp_collective_bytes(L=c.L, B=B, T=T, d=c.d, V=c.V, s=4, W=W)
        assert got["pair_ok"], "the (max, index) all-gather chose another token than the full argmax"
        assert got["pair_record"] == [("all_gather", B * W * 2 * 8)]  # 2 float64 per sequence per rank


def test_cache_bytes_count_the_replicated_kv_heads(runs) -> None:
    W, cases, out = runs
    for (name, B, P, steps, _), got in zip(cases, out[0][:len(cases)], strict=True):
        c = load_pretrained(name=name).config
        assert got["cache_bytes"] == costs.tp_kv_cache_bytes(L=c.L, B=B, S=P + steps, H_kv=c.H_kv, d_h=c.d_h,
                                                             s=4, W=W)
        whole = 2 * c.L * B * (P + steps) * c.H_kv * c.d_h * 4
        assert W * got["cache_bytes"] == max(whole, W * whole // c.H_kv)  # replicas when H_kv < W


def test_every_rank_holds_the_bytes_exercise_17_counts(runs) -> None:
    """What a rank loads, counted on the running shard, is `ex17_shards.rank_bytes` of the checkpoint's shapes
    (Exercise 17 Q4's oracle): more than the model over W, by the replicated LayerNorms, row biases and position
    table, and by the K/V replicas when H_kv < W. Catches a shard that loads a tensor the rule splits whole, or
    the exercise's oracle drifting from the model."""
    W, cases, out = runs
    for i, (name, *_rest) in enumerate(cases):
        c = load_pretrained(name=name).config
        want = ex17_shards.rank_bytes(ex17_shards.model_shapes(c), H=c.H, H_kv=c.H_kv, W=W, s=4)
        assert {rank[i]["held_bytes"] for rank in out} == {want}, (W, name)
        whole = sum(t.numel() for t in load_pretrained(name=name).model.state_dict().values()) * 4
        assert want > whole // W


def test_mutants_fail_the_count_and_the_logits(runs) -> None:
    W, cases, out = runs
    if W != 2:
        pytest.skip("the mutants run in the W = 2 launch")
    name, B, P, steps, _ = cases[0]
    c = load_pretrained(name=name).config
    mutants = [r for r in out[0] if "mutant" in r]
    assert {m["mutant"] for m in mutants} == {"extra", "forgotten"}
    for m in mutants:
        counted = [len(r) for r in m["records"]]
        assert counted != [costs.tp_collectives_per_step(L=c.L, W=W)] * (steps + 1), m["mutant"]
        assert max(m["diffs"]) > 100 * TOL, m["mutant"]


def test_one_rank_is_the_model_and_sends_nothing() -> None:
    pre = load_pretrained(name="minigpt-gqa2")
    model = pre.model
    tp = TensorParallelMiniGPT(model, Collectives(0, 1))
    prompt = torch.randint(0, 600, (3, 5), generator=torch.Generator().manual_seed(1))
    got = workers._run(model, tp, prompt, 3)
    assert max(got["diffs"]) <= TOL and got["agree"]
    assert got["records"] == [[]] * 4 and costs.tp_collectives_per_step(L=4, W=1) == 0
    assert ex17_placements.collectives(_layers(pre.config), B=3, T=5, s=4, W=1) == []


def test_a_shard_keeps_its_models_device_and_dtype() -> None:
    """A rank's cache, its causal mask and its logits live where its shard does, in the shard's dtype: here the
    meta device (which allocates nothing and refuses to mix with CPU tensors) and float64. Catches the cache
    built with torch's default device or dtype, the mask built on the default device (a GPU rank fails), and the
    default batch of `new_cache` (one sequence)."""
    meta = TensorParallelMiniGPT(load_pretrained(name="minigpt-gqa2").model.to("meta"), Collectives(0, 1))
    cache = meta.new_cache(2, S_max=8)
    assert cache.k[0].device.type == "meta"
    out = meta(torch.zeros(2, 3, dtype=torch.long, device="meta"), cache)
    assert out.device.type == "meta" and tuple(out.shape) == (2, 3, 600)
    wide = TensorParallelMiniGPT(load_pretrained(name="minigpt-gqa2").model.double(), Collectives(0, 1))
    assert wide.new_cache(2, S_max=8).k[0].dtype == torch.float64
    assert wide.new_cache().k[0].shape[0] == 1


def test_bad_shapes_are_named() -> None:
    c = load_pretrained().config
    with pytest.raises(ValueError, match="W=3 must divide H=4"):
        check_shardable(c, 3)
    with pytest.raises(ValueError, match="W must be an int"):
        check_shardable(c, 0)
    for W in (True, 2.0):  # a bool or a float is not a number of ranks, even one that equals an int
        with pytest.raises(ValueError, match="W must be an int"):
            check_shardable(c, W)
    with pytest.raises(ValueError, match="W=2 and H_kv=3: one must divide the other"):
        check_shardable(ModelConfig(H=6, H_kv=3, d_h=4, d_ffn=24, V=12), 2)
    with pytest.raises(ValueError, match="initialised process group"):
        Collectives(0, 2)
    with pytest.raises(ValueError, match="rank must be"):
        Collectives(1, 1)
    with pytest.raises(ValueError, match="H_kv=3"):
        costs.tp_kv_heads_per_rank(H_kv=3, W=2)
    with pytest.raises(ValueError, match="W must be an integer >= 2"):
        costs.ring_allreduce_beta(link_bandwidth=1e9, W=1)


def test_formulas_by_hand() -> None:
    assert costs.tp_collectives_per_step(L=80, W=8) == 162
    assert costs.tp_collective_bytes(L=1, B=2, d=3, V=5, s=1, W=2) == 3 * 6 + 10
    assert costs.tp_kv_heads_per_rank(H_kv=8, W=2) == 4 and costs.tp_kv_heads_per_rank(H_kv=2, W=8) == 1
    assert costs.ring_allreduce_beta(link_bandwidth=450e9, W=8) == pytest.approx(450e9 * 8 / 14)
    assert costs.allreduce_time(nbytes=1000, coll_latency=1e-5, coll_bandwidth=1e8) == pytest.approx(2e-5)
    t = costs.tp_alpha_beta_step_time(weight_bytes=8000, W=2, bandwidth=1000.0, n_coll=3, coll_bytes=10,
                                      coll_latency=0.5, coll_bandwidth=10.0, t_fixed=1.0)
    assert t == pytest.approx(1.0 + 4.0 + 3 * 1.5)
    assert costs.tp_per_gpu_bandwidth(weight_bytes=800, W=4, step_time=2.0) == 100.0
    assert costs.pipeline_time(t_one=1.0, W=4, m=1) == 1.0  # one decode step: no gain
    assert costs.pipeline_time(t_one=1.0, W=4, m=1000) == pytest.approx(0.25, rel=0.01)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_greedy_token_is_exact_for_any_logits_dtype(dtype: torch.dtype) -> None:
    """The (max, index) pair of `greedy_token` with low-precision logits, V = 600 > 256. The bug it
    catches: the index cast to the logits' dtype (bf16 keeps 8 significant bits: 451 becomes 452, 599
    becomes 600, outside the vocabulary). One rank (W = 1) runs the same code with nothing sent."""
    tp = TensorParallelMiniGPT(load_pretrained().model, Collectives(0, 1))
    V = tp.config.V
    logits = torch.zeros(4, V, dtype=dtype)
    for row, best in enumerate((451, 599, 257, 0)):
        logits[row, best] = 3.0
    logits[3, 300] = 3.0  # a tie: the lowest id wins
    got = tp.greedy_token(logits)
    assert got.dtype == torch.long and got.tolist() == [451, 599, 257, 0]
