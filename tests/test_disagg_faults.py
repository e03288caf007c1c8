"""Chapter 19's promise under fault injection: a request ends `finished`, or `failed` with a reason; never
lost, never harmed by another request; no process outlives the run; the survivors' tokens are the colocated
engine's. Each run kills one role at one phase (`DisaggConfig.faults`, SIGKILL as the OOM killer would) or
sends bad requests.

The bugs these catch: a driver that lets an over-long request reach a decode worker (the worker died of it,
and so did the next one it was retried on); an admission rule that differs from the colocated engine's; a
launcher that waits for a rank that died before the group formed (the others block in its creation until
their timeout); a dead prefill worker's requests forgotten (the run would time out, here `TimeoutError` in
`run.error`); a step error that kills its worker or loses its requests; a request retried a second time
after failing twice; a driver death that leaves workers running.

The bound after a fault is not a timed assertion (a busy machine must not fail a test): a run that waited
would end in the launcher's `TimeoutError` at HANG_S, so the kind of error, or a result, is the proof."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from limits import DISTRIBUTED, HANG_S

from minigpt import Sampling
from minigpt.config import ModelConfig
from minigpt.distributed import disagg
from minigpt.distributed.disagg import Fault
from minigpt.distributed.disagg_workers import _admit
from minigpt.distributed.kv_transfer import Transfer
from minigpt.runtime.checkpoint import load_pretrained
from minigpt.serving import Engine, EngineConfig, Request
from minigpt.serving.trace import poisson_trace

pytestmark = DISTRIBUTED


def _spawned_children() -> list[int]:
    """Live worker processes of this test process's runs, zombies excluded: its descendants but the
    multiprocessing helpers that outlive a run by design (the forkserver the workers are forked from, which
    holds only its imports, and the resource tracker)."""
    me = os.getpid()
    parent: dict[int, int] = {}
    helpers: set[int] = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            continue
        parent[int(d.name)] = int(fields[1])
        if int(fields[1]) == me and (b"multiprocessing.forkserver" in cmd or b"resource_tracker" in cmd):
            helpers.add(int(d.name))

    def descends(pid: int) -> bool:
        while pid in parent and pid != me:
            pid = parent[pid]
        return pid == me

    return [pid for pid in parent if pid != me and pid not in helpers and descends(pid)]


def _colocated(requests: list[Request]) -> dict[str, list[int]]:
    torch.set_num_threads(1)
    engine = Engine.for_model(load_pretrained().model, num_blocks=64, config=EngineConfig(max_batch=8))
    return {t.request.id: t.tokens for t in engine.run([Request(r.id, r.prompt, r.max_new_tokens) for r in requests])}


def _trace(n: int, seed: int) -> list[Request]:
    return poisson_trace(n, rate=40.0, seed=seed, P=(3, 60), D=(2, 16))


def _ended_well(run: disagg.DisaggRun, requests: list[Request]) -> tuple[list, list]:
    """The run did not fail whole; every request finished or failed with a reason; the finished ones hold the
    colocated engine's tokens; no worker process is left. Returns (finished, failed)."""
    want = _colocated(requests)
    assert not run.error, run.error  # a run that failed whole (or hung until its timeout) fails every request
    assert {r.status for r in run.records} <= {"finished", "failed"}, [(r.id, r.status) for r in run.records]
    finished = [r for r in run.records if r.status == "finished"]
    failed = [r for r in run.records if r.status == "failed"]
    for r in finished:
        assert r.tokens == want[r.id], r.id
    assert all(r.reason for r in failed)
    assert not _spawned_children()
    return finished, failed


def _malformed(r: Request, **fields) -> Request:
    """A Request whose fields were changed after it was built (its own checks never saw them)."""
    bad = replace(r)
    for k, v in fields.items():
        object.__setattr__(bad, k, v)
    return bad


def test_bad_requests_are_refused_on_arrival_and_harm_no_other() -> None:
    c = ModelConfig()
    trace = _trace(30, seed=11)
    over = Request("over-long", trace[5].prompt + (7,) * 40, c.S_max, arrival_s=trace[5].arrival_s)
    trace[5] = over  # one over-long request among 30: P + D - 1 > S_max
    extra = [
        Request("bad-id", (3, c.V, 4), 3, arrival_s=0.01),
        Request(trace[0].id, (5, 6), 3, arrival_s=0.02),  # a repeated id
        Request("sampled", (5, 6), 3, arrival_s=0.03, sampling=Sampling(temperature=1.0, seed=1)),
        Request("cancels", (5, 6), 3, arrival_s=0.03, cancel_s=1.0),
        _malformed(Request("empty", (5,), 3, arrival_s=0.04), prompt=()),
        _malformed(Request("zero-out", (5,), 3, arrival_s=0.04), max_new_tokens=0),
        Request("one-out", (5, 17, 9), 1, arrival_s=0.05),
        Request("one-in", (23,), 4, arrival_s=0.05),
        Request("just-fits", tuple(range(1, 121)), c.S_max - 120 + 1, arrival_s=0.06),
    ]
    requests = trace + extra
    run = disagg.serve(requests, disagg.DisaggConfig(decode_workers=2, chunk_size=32), timeout_s=HANG_S)
    by_id = {}
    for rec in run.records:
        by_id.setdefault(rec.id, rec)
    engine = Engine.for_model(load_pretrained().model, num_blocks=64)
    assert by_id["over-long"].reason == f"rejected: {engine.rejection(over)}"  # the colocated rule, word for word
    assert "S_max=128" in by_id["over-long"].reason and "bad-id" in by_id
    assert by_id["bad-id"].reason == f"rejected: {engine.rejection(extra[0])}"
    assert "ids must be unique" in run.records[len(trace) + 1].reason
    assert "greedy requests only" in by_id["sampled"].reason and "cancel_s" in by_id["cancels"].reason
    assert "prompt is empty" in by_id["empty"].reason and "max_new_tokens must be" in by_id["zero-out"].reason
    refused = {"over-long", "bad-id", "sampled", "cancels", "empty", "zero-out"}
    finished, failed = _ended_well(run, [r for r in requests if r.id not in refused and r is not extra[1]])
    dup = run.records[len(trace) + 1]
    assert {r.id for r in failed if r is not dup} == refused and dup.status == "failed"
    assert len([r for r in finished if r.id in {t.id for t in trace}]) == 29  # the other 29 of the trace
    assert len(finished) == 29 + 3  # and one-out, one-in, just-fits
    assert not run.dead and not run.error


def test_the_request_check_of_a_decode_worker_is_the_colocated_engines() -> None:
    """A decode worker checks what it receives too (a driver with another configuration could send it
    anything); the reason is the engine's."""
    cfg = disagg.DisaggConfig(num_blocks=4)
    engine = disagg.DecodeEngine.for_model(load_pretrained().model, num_blocks=cfg.num_blocks,
                                           config=cfg.engine_config(prefill=False))
    kv = torch.zeros(2, 4, 4, 50, 16)
    too_long = Transfer(0, 0, list(range(50)), 40, 1, kv)  # 89 tokens: 6 blocks of 16 > 4
    assert _admit(engine, too_long) == engine.rejection(Request("0.0", tuple(range(50)), 40))
    assert "4 blocks in all" in _admit(engine, too_long)
    assert _admit(engine, Transfer(0, 0, list(range(50)), 14, 1, kv)) is None


def test_a_worker_dead_before_the_group_forms_fails_the_run_with_the_reason() -> None:
    requests = _trace(4, seed=1)
    cfg = disagg.DisaggConfig(faults=(Fault("decode", "rendezvous"),))
    run = disagg.serve(requests, cfg, timeout_s=HANG_S)
    assert "RendezvousError" in run.error and "rank 2" in run.error, run.error
    assert all(r.status == "failed" and "before the process group formed" in r.reason for r in run.records)
    assert not _spawned_children()


@pytest.mark.parametrize("phase", ["decode", "shutdown"])
def test_a_driver_that_dies_ends_the_run_and_leaves_no_worker(phase: str) -> None:
    requests = _trace(6, seed=2)
    fault = Fault("driver", phase, after=5 if phase == "decode" else 1)  # the fifth token heard, or the end
    run = disagg.serve(requests, disagg.DisaggConfig(faults=(fault,)), timeout_s=HANG_S)
    assert run.error.startswith("RuntimeError: worker rank 0") and "exit code -9" in run.error, run.error
    assert all(r.status == "failed" and "rank 0" in r.reason for r in run.records)
    assert not _spawned_children()


def test_a_prefill_worker_that_dies_mid_prefill_costs_no_request() -> None:
    """And the decode worker killed once the run's last request has ended (at shutdown) loses nothing."""
    requests = _trace(10, seed=3)
    cfg = disagg.DisaggConfig(prefill_workers=2, silence_s=3.0,
                              faults=(Fault("prefill", "prefill", after=3), Fault("decode", "shutdown")))
    run = disagg.serve(requests, cfg, timeout_s=HANG_S)
    finished, failed = _ended_well(run, requests)
    assert not failed and set(run.dead) == {1, 3} and "exit code -9" in run.dead[1], run.dead
    assert "after the last request ended; exit code -9" in run.dead[3], run.dead
    assert any(r.retried for r in run.records) and all(r.prefill_rank == 2 for r in run.records if r.retried)


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_a_worker_that_hangs_is_fenced_and_its_requests_end(role: str) -> None:
    """A worker that stops answering (SIGSTOP, as a deadlock or a kernel call that never returns would leave
    it) keeps its connections open: no receive from it fails and its process is still there. The driver
    finds it by a send it never takes (a gloo send waits for the peer's receive; the driver's are bounded by
    silence_s) or by its silence, declares it dead, kills it, and ends its requests elsewhere or with the
    reason. A hung prefill worker is the only one here, so the late request's prompt is sent to it; a hung
    decode worker's requests are decoded again on the other.

    The bugs it catches: a driver blocked for good in a send to a worker that will never receive (it was,
    once in a few hundred runs, when a prefill worker died just as the driver sent it a request), and a
    worker declared dead but left running (the launcher would wait for it until its timeout). Either ends in
    the launcher's TimeoutError, in `run.error`."""
    prefill = role == "prefill"
    requests = _trace(10, seed=3) + [Request("late", (5, 17, 9, 4), 6, arrival_s=1.0)]
    cfg = disagg.DisaggConfig(decode_workers=1 if prefill else 2, silence_s=3.0,
                              faults=(Fault(role, role, after=2, hangs=True),))
    run = disagg.serve(requests, cfg, timeout_s=HANG_S)
    finished, failed = _ended_well(run, requests)
    hung = 1 if prefill else 2
    assert set(run.dead) == {hung} and "exit code -9" in run.dead[hung], run.dead  # fenced: SIGKILL
    if prefill:  # found by the send of the late request's prompt, which it never took
        assert "a send to it failed" in run.dead[hung], run.dead
        assert failed and all("no live prefill worker" in r.reason for r in failed), [r.reason for r in failed]
        assert "late" in {r.id for r in failed}
    else:  # found by its silence; every request decoded on rank 3 in the end
        assert "silence_s=3.0" in run.dead[hung] and not failed, (run.dead, [r.reason for r in failed])
        assert any(r.retried for r in run.records)


def test_deaths_in_mid_transfer_end_every_request_with_a_reason() -> None:
    """A prefill worker killed between a transfer's header and its K/V, and a decode worker killed after
    receiving a header: the half-sent request goes back to the queue; a request caught by both deaths has
    failed twice and ends failed, saying so."""
    requests = _trace(10, seed=4)
    cfg = disagg.DisaggConfig(prefill_workers=2, decode_workers=2, silence_s=3.0,
                              faults=(Fault("prefill", "transfer", after=2), Fault("decode", "transfer", 1, 3)))
    run = disagg.serve(requests, cfg, timeout_s=HANG_S)
    finished, failed = _ended_well(run, requests)
    assert set(run.dead) == {1, 4}, run.dead
    assert any(r.retried for r in run.records)
    for r in failed:
        assert "not retried again" in r.reason or "no live" in r.reason, r.reason


def test_a_step_that_raises_fails_its_requests_once_and_the_worker_goes_on() -> None:
    """Both decode workers' third step raises: each sends its requests back (retried once, elsewhere) and
    serves on with a fresh engine; a request caught in both failing steps ends failed, not retried again. The
    prefill worker is killed at shutdown, which costs nothing."""
    requests = _trace(10, seed=6)
    cfg = disagg.DisaggConfig(decode_workers=2, faults=(Fault("decode", "step", 0, 3), Fault("decode", "step", 1, 3),
                                                        Fault("prefill", "shutdown")))
    run = disagg.serve(requests, cfg, timeout_s=HANG_S)
    finished, failed = _ended_well(run, requests)
    assert list(run.dead) == [1] and "after the last request ended" in run.dead[1], run.dead  # at shutdown
    assert [run.workers[k]["step_errors"] for k in (2, 3)] == [1, 1]
    retried = [r for r in run.records if r.retried]
    assert retried and all("a step raised RuntimeError" in r.retried[0] for r in retried)
    for r in failed:
        assert "not retried again" in r.reason and "a step raised" in r.reason
    assert len(finished) >= len(requests) - len(failed) and finished


def test_a_request_is_retried_once_then_failed_with_both_reasons() -> None:
    """The driver's rule, without processes: the first failure of a request sends it back to the queue,
    the second ends it (it may be what kills workers), and a dead worker's record names what it held.
    The bug it catches: a poison request retried on every worker in turn."""
    c = ModelConfig()
    requests = _trace(3, seed=7)
    driver = disagg.Driver(disagg.DisaggConfig(decode_workers=2), requests, False, S_max=c.S_max, V=c.V)
    r = driver.records[0]
    r.status, r.prefill_rank, r.decode_rank, r.transfer_s = "decoding", 1, 2, 0.001
    driver.declare_dead(2, "killed")
    assert driver.dead[2] == f"killed; it held {r.id}" and r.status == "queued" and r.attempt == 1
    assert list(driver.queue) == [0] and r.retried == ["rank 2 died (killed)"]
    r.status, r.prefill_rank, r.decode_rank = "prefilling", 1, 3
    driver.retry(0, "decode rank 3: a step raised RuntimeError: boom")
    assert r.status == "failed" and "not retried again" in r.reason and "rank 2 died (killed)" in r.reason
    none = disagg.Driver(disagg.DisaggConfig(retries=0), requests, False, S_max=c.S_max, V=c.V)
    none.retry(1, "why")
    assert none.records[1].status == "failed" and none.records[1].reason == "why; not retried (retries=0)"


def test_the_first_token_goes_first_whatever_order_the_two_workers_reports_arrive_in() -> None:
    """The first token comes from the prefill worker, the others from the decode worker, on two connections: on a
    busy machine the driver may read the decode worker's tokens, and even its DONE, before the prefill worker's
    FIRST. The bug it catches: FIRST replacing the tokens heard so far (a finished request missing tokens, seen
    once under load: [165, 1, 3, 6, 22] for [165, 31, 280, 1, 3, 6, 22]), or ignored once the request finished,
    or the run ending before it arrives."""
    from minigpt.distributed.disagg_wire import DONE, FIRST, SENT, TOKEN

    c = ModelConfig()
    requests = [replace(r, max_new_tokens=4) for r in _trace(2, seed=9)]
    for done_first in (False, True):
        driver = disagg.Driver(disagg.DisaggConfig(), requests, False, S_max=c.S_max, V=c.V)
        driver.t0 = 0.5  # token times are reported on the workers' clock, recorded from the run's start
        r = driver.records[0]
        r.status, r.prefill_rank, r.decode_rank = "prefilling", 1, 2
        for tok in (31, 280, 1):
            driver.handle(2, [TOKEN, 0, 0, tok, 2.0 + tok / 1000], 0.0)
        if done_first:
            driver.handle(2, [DONE, 0, 0], 0.0)
            assert driver._open(r)  # finished, but the prefill worker's reports are still due
        driver.handle(1, [FIRST, 0, 0, 165, 1.0, 0.0], 0.0)
        driver.handle(1, [SENT, 0, 0, 64, 0.01, 2], 0.0)
        if not done_first:
            driver.handle(2, [DONE, 0, 0], 0.0)
        assert r.tokens == [165, 31, 280, 1] and r.token_s[0] == 0.5 and r.status == "finished", (done_first, r)
        assert r.token_s[1:] == pytest.approx([1.531, 1.78, 1.501])
        assert not driver._open(r)


def test_the_driver_sees_a_worker_whose_process_ended() -> None:
    """A receive from a dead peer may never complete, and a prefill worker that dies with only a transfer in
    flight holds no prefill the silence rule would time: the driver also looks at the workers' processes. The
    bug it catches: that request waiting forever (it did, once, on a busy machine: 300 s, then a timeout)."""
    import subprocess
    import sys

    c = ModelConfig()
    driver = disagg.Driver(disagg.DisaggConfig(), _trace(2, seed=8), False, S_max=c.S_max, V=c.V)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    driver.pids = {1: os.getpid(), 2: ended.pid}
    assert driver.gone() == [2]
    r = driver.records[0]
    r.status, r.prefill_rank, r.decode_rank, r.transfer_s = "decoding", 1, 2, None  # its K/V still in flight
    assert driver.holding(1) == [0] and driver.holding(2) == []


def test_admission_refuses_each_bad_request_with_the_colocated_engines_words() -> None:
    """The driver's check without processes: each rule, its message, and the first of two equal ids kept. The
    bugs it catches: a rule dropped or loosened (P + D - 1 against S_max, ids against V, the pool's blocks), a
    repeated id that refuses the first request instead of the second, a malformed request let through."""
    from minigpt.distributed.disagg import admission

    c = ModelConfig()
    cfg = disagg.DisaggConfig(num_blocks=4, block_size=16)  # 64 tokens of K/V per request at most
    engine = Engine.for_model(load_pretrained().model, num_blocks=4, block_size=16)
    ok = Request("ok", (1, 2, 3), 10)
    fits = Request("fits", tuple(range(1, 60)), 6)  # 64 tokens: 4 blocks
    blocks = Request("blocks", tuple(range(1, 60)), 7)  # 65 tokens: 5 blocks
    positions = Request("positions", (1,) * 100, c.S_max - 99)  # 128 positions: fits S_max, not 4 blocks
    long = Request("long", (1,) * 100, c.S_max - 98)  # 129 positions
    token = Request("token", (1, c.V), 2)
    again = Request("ok", (4,), 2)
    sampled = Request("sampled", (1, 2), 2, sampling=Sampling(temperature=0.7, seed=3))
    cancel = Request("cancel", (1, 2), 2, cancel_s=0.5)
    empty = _malformed(Request("empty", (1,), 2), prompt=())
    requests = [ok, fits, blocks, positions, long, token, again, sampled, cancel, empty]
    got = dict(zip([r.id + str(i) for i, r in enumerate(requests)],
                   admission(requests, cfg, S_max=c.S_max, V=c.V), strict=True))
    assert got["ok0"] is None and got["fits1"] is None
    for name, r in (("blocks2", blocks), ("positions3", positions), ("long4", long), ("token5", token)):
        assert got[name] == engine.rejection(r) and got[name], name
    assert "S_max=128" in got["long4"] and "5 KV blocks" in got["blocks2"] and "V=600" in got["token5"]
    assert got["ok6"] == "request id 'ok' is already in use; ids must be unique"
    assert "greedy requests only" in got["sampled7"] and got["cancel8"].startswith("cancel_s")
    assert "prompt is empty" in got["empty9"]


def test_a_fault_names_its_worker_by_role_and_number() -> None:
    """`fault_at` maps (role, worker number) to a rank: prefill worker 1 is rank 2 and decode worker 0 the
    first rank after the prefill workers. Guards a role looked up under another name (the fault would never
    fire, and a fault test would pass without its fault)."""
    cfg = disagg.DisaggConfig(prefill_workers=2, decode_workers=2, faults=(
        disagg.Fault("prefill", "prefill", worker=1, after=3), disagg.Fault("decode", "decode", worker=0, after=2),
        disagg.Fault("driver", "decode", after=5)))
    assert [cfg.fault_at(rank, "prefill") for rank in range(5)] == [None, None, 3, None, None]
    assert [cfg.fault_at(rank, "decode") for rank in range(5)] == [5, None, None, 2, None]


def test_a_hang_is_a_workers_fault_after_its_group_formed() -> None:
    """`hangs=True` stops a worker at a phase after its group formed; elsewhere it is refused by name (a hung
    driver, or a hang before the rendezvous, only waits for the launcher's timeout; `step` raises). Guards the
    hang read from another fault of the rank: the hung-worker tests would then kill their worker instead."""
    cfg = disagg.DisaggConfig(prefill_workers=2, faults=(
        Fault("prefill", "prefill", worker=1, after=3, hangs=True), Fault("prefill", "transfer", worker=1, after=2),
        Fault("decode", "decode", after=4), Fault("decode", "decode", after=2, hangs=True)))
    assert [cfg.fault_hangs(rank, "prefill") for rank in range(4)] == [False, False, True, False]
    assert not cfg.fault_hangs(2, "transfer") and cfg.fault_at(2, "transfer") == 2
    assert cfg.fault_hangs(3, "decode") and cfg.fault_at(3, "decode") == 2  # the first to fire says how
    for role, phase in (("driver", "decode"), ("prefill", "rendezvous"), ("decode", "step")):
        with pytest.raises(ValueError, match="hangs=True is for a worker"):
            Fault(role, phase, hangs=True)
    with pytest.raises(ValueError, match="hangs must be True or False"):
        Fault("prefill", "prefill", hangs=1)


def test_the_backend_goes_with_the_device() -> None:
    """gloo with the CPU, NCCL with GPUs: the check accepts both pairs (NCCL on a machine with enough GPUs) and
    refuses the crossed ones by name. Guards a device name compared in another case, which refuses NCCL on
    GPUs."""
    cfg = disagg.DisaggConfig()
    assert disagg._check_backend(cfg, "gloo", "cpu") == "gloo"
    for backend, device in (("nccl", "cpu"), ("gloo", "cuda")):
        with pytest.raises(ValueError, match=f"^backend='{backend}' does not go with device='{device}'"):
            disagg._check_backend(cfg, backend, device)
    if torch.cuda.is_available() and torch.cuda.device_count() >= cfg.prefill_workers + cfg.decode_workers:
        assert disagg._check_backend(cfg, "nccl", "cuda") == "cpu:gloo,cuda:nccl"
    else:
        with pytest.raises(ValueError, match="^device='cuda' puts each of the 2 workers on its own GPU"):
            disagg._check_backend(cfg, "nccl", "cuda")


def test_serving_nothing_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="^requests is empty: serve needs at least one Request$"):
        disagg.serve([], disagg.DisaggConfig())


def test_a_failed_request_hears_nothing_more_and_a_failed_transfer_kills_its_receiver() -> None:
    """A request that failed takes no later report (a late TOKEN from its old decode worker), and XFAIL (a
    prefill worker could not send its K/V) declares the receiving rank dead, naming why, and retries the
    request. The bugs they catch: a filter that lets a failed request's reports through, and the receiver's
    rank read from another field of the message (no rank dead, the receiver used again)."""
    from minigpt.distributed.disagg_wire import TOKEN, XFAIL

    c = ModelConfig()
    driver = disagg.Driver(disagg.DisaggConfig(decode_workers=2), _trace(2, seed=3), False, S_max=c.S_max, V=c.V)
    driver.t0 = 0.0
    r = driver.records[0]
    r.status, r.reason, r.prefill_rank, r.decode_rank = "failed", "refused", 1, 2
    driver.handle(2, [TOKEN, 0, r.attempt, 7, 1.0, 0.0, 0.0], 0.0)
    assert r.tokens == [] and r.status == "failed"
    s = driver.records[1]
    s.status, s.prefill_rank, s.decode_rank = "prefilling", 1, 3
    driver.handle(1, [XFAIL, 1, s.attempt, 3, 0.0, 0.0, 0.0], 0.0)
    assert 3 not in driver.live and "the K/V transfer to it failed" in driver.dead[3]
    assert s.attempt == 1 and s.status == "queued", s
