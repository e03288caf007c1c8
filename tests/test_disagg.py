"""Chapter 19: prefill and decode apart. Every request's greedy tokens equal the colocated engine's (fp32,
B > 1, prompts of different lengths, chunked prefill); the K/V bytes each transfer carries are Eq. (2.1)·P,
counted by the prefill worker and by the decode worker; a decode worker that dies mid-run costs no request
(retried on the other decode worker, or failed with the reason when none is left) and leaves no process.

Plausible bugs these catch: a K/V export that sends the padded last block or transposes heads and tokens
(tokens differ, bytes differ); an import that writes into the wrong blocks; a decode worker that recomputes
the first token or drops it; a driver that forgets the requests of a dead worker (the run times out), or
retries them without resetting their tokens (tokens differ)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch
from limits import DISTRIBUTED, HANG_S
from mutation_pass import shared_scope

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.distributed import disagg
from minigpt.distributed.kv_transfer import HEADER, export_kv, import_kv
from minigpt.runtime.checkpoint import load_pretrained
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.serving import Engine, EngineConfig, Request
from minigpt.serving.trace import poisson_trace

pytestmark = DISTRIBUTED


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _trace(n: int = 8, seed: int = 3) -> list[Request]:
    return poisson_trace(n, rate=40.0, seed=seed, P=(3, 70), D=(2, 24))


def _colocated(requests: list[Request]) -> dict[str, list[int]]:
    torch.set_num_threads(1)
    engine = Engine.for_model(load_pretrained().model, num_blocks=64, config=EngineConfig(max_batch=8))
    return {t.request.id: t.tokens for t in engine.run([Request(r.id, r.prompt, r.max_new_tokens) for r in requests])}


def test_export_then_import_moves_exactly_the_prompts_kv_into_other_blocks() -> None:
    c = ModelConfig()
    src = PagedKVCache(c, num_blocks=8, block_size=4)
    dst = PagedKVCache(c, num_blocks=8, block_size=4)
    dst.reserve([dst.add_sequence()], 5)  # the destination's free blocks are not the source's
    torch.manual_seed(0)
    src.k.normal_()
    src.v.normal_()
    seq = src.add_sequence()
    src.reserve([seq], 7)
    src.advance([seq], 7)
    kv = export_kv(src, seq, 7)
    assert kv.shape == (2, c.L, c.H_kv, 7, c.d_h)
    assert kv.numel() * kv.element_size() == costs.kv_bytes_per_token(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4) * 7
    new = import_kv(dst, kv)
    assert dst.length(new) == 7 and dst.block_table(new) != src.block_table(seq)[:2]
    for pos in range(7):
        for cache_s, cache_d, i in ((src.k, dst.k, 0), (src.v, dst.v, 1)):
            a = cache_s[:, src.block_table(seq)[pos // 4], :, pos % 4]
            b = cache_d[:, dst.block_table(new)[pos // 4], :, pos % 4]
            assert torch.equal(a, b) and torch.equal(kv[i, :, :, pos], a)
    with pytest.raises(ValueError, match="P must be"):
        export_kv(src, seq, 8)


def test_scatter_writes_p_rows_through_the_table_and_nothing_else() -> None:
    """`scatter_kv` (what `import_kv` and Exercise 16's oracle do): token t of every layer and K/V head lands in
    row t % b of block table[t // b], in the table's order; the last block's rows past P, the table's blocks past
    ⌈P/b⌉ and every other block keep their bytes. Guards blocks taken in id order, a padded last block written
    whole, heads and blocks mixed in a reshape, and a table shorter than P needs."""
    from minigpt.distributed.kv_transfer import scatter_kv

    torch.manual_seed(1)
    k, v = torch.randn(2, 7, 3, 4, 2), torch.randn(2, 7, 3, 4, 2)  # [L, N, H_kv, b, d_h]
    before_k, before_v = k.clone(), v.clone()
    kv = torch.randn(2, 2, 3, 6, 2)  # P = 6: a full block and half of one
    scatter_kv(k, v, [5, 2, 0], kv)
    for t in range(6):
        assert torch.equal(k[:, [5, 2][t // 4], :, t % 4], kv[0, :, :, t])
        assert torch.equal(v[:, [5, 2][t // 4], :, t % 4], kv[1, :, :, t])
    untouched = torch.ones(7, 4, dtype=torch.bool)
    untouched[5], untouched[2, :2] = False, False
    assert torch.equal(k.transpose(2, 3)[:, untouched], before_k.transpose(2, 3)[:, untouched])
    assert torch.equal(v.transpose(2, 3)[:, untouched], before_v.transpose(2, 3)[:, untouched])
    with pytest.raises(ValueError, match="^table has 1 blocks; P=6 tokens of blocks of 4 need 2$"):
        scatter_kv(k, v, [5], kv)


def test_a_payload_of_the_wrong_shape_or_dtype_is_refused_or_cast_and_a_full_pool_changes_nothing() -> None:
    """`import_kv` names the shape it needs for each wrong dimension; `scatter_kv` refuses a payload that is not
    [2, L, H_kv, P, d_h] for its caches, casts a float64 payload to the pool's dtype, and builds its index
    tensors on the caches' device whatever torch's default device (a reader's `set_default_device`); a payload
    too large for the free blocks raises `OutOfBlocks` and leaves no sequence behind."""
    from minigpt.distributed.kv_transfer import scatter_kv
    from minigpt.runtime.paged_cache import OutOfBlocks

    c = ModelConfig(L=2, H=4, H_kv=2, d_h=4, d_ffn=16, V=11, S_max=32)
    pool = PagedKVCache(c, num_blocks=3, block_size=4)
    good = (2, c.L, c.H_kv, 5, c.d_h)
    for shape in [(2, c.L, c.H_kv, 5), (3, c.L, c.H_kv, 5, c.d_h), (2, 1, c.H_kv, 5, c.d_h), (2, c.L, 1, 5, c.d_h),
                  (2, c.L, c.H_kv, 5, 3)]:
        needs = r"^kv must be \[2, L=2, H_kv=2, P, d_h=4\], got "
        with pytest.raises(ValueError, match=needs + re.escape(str(shape)) + "$"):
            import_kv(pool, torch.zeros(shape))
        with pytest.raises(ValueError, match=r"^kv must be \[2, L, H_kv, P, d_h\] with the caches' L, H_kv and d_h "
                                             r"\(2, 2, 4\), got " + re.escape(str(shape)) + "$"):
            scatter_kv(pool.k, pool.v, [0, 1], torch.zeros(shape))
    assert pool.allocator.num_free == 3
    with pytest.raises(OutOfBlocks):
        import_kv(pool, torch.zeros(2, c.L, c.H_kv, 13, c.d_h))  # four blocks, three free
    assert pool.allocator.num_free == 3 and repr(pool).endswith("0/3 used, 0 sequences)")  # nothing left behind
    payload = torch.randn(good, dtype=torch.float64)
    with torch.device("meta"):
        scatter_kv(pool.k, pool.v, [2, 1], payload)
    assert torch.equal(pool.k[:, 2, :, 0], payload[0, :, :, 0].float()) and pool.k.dtype == torch.float32
    assert torch.equal(pool.v[:, 1, :, 0], payload[1, :, :, 4].float())


@pytest.fixture(scope=shared_scope)
def plain_run() -> tuple[list[Request], disagg.DisaggRun]:
    # The trace, and one-token requests: one answered by its prefill alone (its K/V never leaves the prefill
    # worker), and a one-token prompt decoded.
    requests = _trace() + [Request("one-out", (5, 17, 9), 1, arrival_s=0.01),
                           Request("one-in", (23,), 5, arrival_s=0.02)]
    cfg = disagg.DisaggConfig(prefill_workers=1, decode_workers=1, chunk_size=16, num_blocks=64)
    return requests, disagg.serve(requests, cfg, timeout_s=HANG_S)


def test_disaggregated_tokens_equal_the_colocated_engines(plain_run) -> None:
    requests, run = plain_run
    want = _colocated(requests)
    assert len({r.P for r in requests}) >= 5 and max(r.P for r in requests) > 16  # chunked prompts
    for rec in run.records:
        assert rec.status == "finished", (rec.id, rec.reason)
        assert rec.tokens == want[rec.id], rec.id
        assert len(rec.token_s) == rec.max_new_tokens and rec.ttft_s > 0
    assert {"one-out", "one-in"} <= {rec.id for rec in run.records}
    assert not run.dead and all(not _alive(p) for p in run.pids.values())


def test_transfer_bytes_are_eq_2_1_times_P_counted_on_both_sides(plain_run) -> None:
    requests, run = plain_run
    c = ModelConfig()
    per_token = costs.kv_bytes_per_token(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4)
    for rec in run.records:
        assert rec.kv_bytes == per_token * rec.P if rec.max_new_tokens > 1 else rec.kv_bytes == 0
    assert any(r.max_new_tokens == 1 for r in requests), "no one-token request: the zero-transfer case is unchecked"
    expected = sum(per_token * r.P for r in requests if r.max_new_tokens > 1)
    sent = run.workers[1]["kv_bytes_sent"]
    received = run.workers[2]["kv_bytes_received"]
    assert sent == received == expected == run.kv_bytes
    headers = sum(8 * (HEADER + r.P) for r in requests if r.max_new_tokens > 1)  # int64 header and prompt ids
    assert run.workers[1]["meta_bytes_sent"] == headers and run.workers[1]["transfers"] == len(
        [r for r in requests if r.max_new_tokens > 1])
    assert sum(line.transfer_bytes for line in run.log) == expected
    # Each transfer's seconds reach its record (SENT) and the sender's total; a SENT that ends after the
    # driver's last look counts only in the total. Guards a total that keeps the last transfer or
    # subtracts, and a SENT whose fields shift (a rank read as seconds).
    took = [rec.transfer_s for rec in run.records if rec.transfer_s is not None]
    assert took and all(t > 0 for t in took), took
    assert run.workers[1]["transfer_s"] >= sum(took) - 1e-9
    assert sum(line.prompt_tok_s * (line.end_s - line.start_s) for line in run.log) == pytest.approx(
        sum(r.P for r in requests))


def test_a_decode_worker_that_dies_costs_no_request_and_leaves_no_process() -> None:
    requests = _trace(10, seed=5)
    cfg = disagg.DisaggConfig(prefill_workers=1, decode_workers=2, num_blocks=64, silence_s=3.0,
                              faults=(disagg.Fault("decode", "decode", worker=0, after=12),))
    run = disagg.serve(requests, cfg, timeout_s=HANG_S)
    want = _colocated(requests)
    assert list(run.dead) == [2], run.dead  # decode worker 0 is rank 2
    retried = [r for r in run.records if r.retried]
    assert retried, "the dead worker held requests; they must have been retried"
    for rec in run.records:
        assert rec.status == "finished" and rec.tokens == want[rec.id], (rec.id, rec.status, rec.reason)
        assert rec.decode_rank == 3 or not rec.retried
        assert all("rank 2 died" in why for why in rec.retried)
    assert isinstance(run.workers[2], dict) and run.workers[2]["exitcode"] == -9  # SIGKILL
    assert len(run.pids) == 3 and not any(_alive(p) for p in run.pids.values())


def test_with_no_decode_worker_left_a_request_fails_with_the_reason() -> None:
    requests = _trace(6, seed=7)
    cfg = disagg.DisaggConfig(prefill_workers=1, decode_workers=1, num_blocks=64, silence_s=3.0,
                              faults=(disagg.Fault("decode", "decode", worker=0, after=6),))
    run = disagg.serve(requests, cfg, timeout_s=HANG_S)
    assert set(run.dead) == {2}
    assert {r.status for r in run.records} <= {"finished", "failed"}
    failed = [r for r in run.records if r.status == "failed"]
    assert failed and all("died" in r.reason or "no live decode worker" in r.reason for r in failed)
    assert not any(_alive(p) for p in run.pids.values())


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"prefill_workers": 0}, "prefill_workers"), ({"decode_workers": 0}, "decode_workers"),
    ({"retries": -1}, "retries"), ({"retries": 2}, "retries"), ({"silence_s": 0}, "silence_s"),
    ({"faults": (disagg.Fault("decode", "decode", worker=3),)}, "decode fault names worker 3"),
    ({"faults": ("kill rank 2",)}, "faults"),
])
def test_bad_config_names_the_parameter(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        disagg.DisaggConfig(**kwargs)
