"""Part IV's tools around the engines: the command line that serves a trace disaggregated
(`python -m minigpt.distributed.serve`) and its driver's log, the α-β fit of Eq. (20.4), the timing workers of
`scripts/sweeps/sweep_tp.py`, and where a disaggregated rank computes.

Each test names the bug it catches. Times are never asserted: the timing workers run under a clock
that ticks once per reading, so what they compute from the clock is exact.
"""

from __future__ import annotations

import itertools
import re

import pytest
import torch
from limits import DISTRIBUTED, HANG_S

from minigpt import costs
from minigpt.distributed import disagg, launch, tp_workers
from minigpt.distributed.collectives import fit_alpha_beta
from minigpt.distributed.disagg import _device
from minigpt.distributed.serve import main
from minigpt.runtime.checkpoint import load_pretrained
from minigpt.serving import Request


def test_the_fit_recovers_alpha_and_beta_from_exact_times() -> None:
    """Guards a fit that returns something else than α (a wrong column, a dropped right-hand side)."""
    alpha, beta = 25e-6, 8e9
    sizes = [2**k for k in range(8, 26, 3)]
    got = fit_alpha_beta(sizes, [alpha + n / beta for n in sizes])
    assert got == pytest.approx((alpha, beta), rel=1e-9)
    with pytest.raises(ValueError, match="does not grow with size"):
        fit_alpha_beta([1, 2, 3], [3.0, 2.0, 1.0])


def test_each_worker_rank_computes_on_its_own_gpu_and_the_driver_on_the_cpu() -> None:
    """Guards the device map of `serve(device='cuda')`: rank k (k >= 1) on cuda:k-1, rank 0 and every rank of a
    CPU run on the CPU (the constructor needs no GPU)."""
    assert _device(0, "cuda") == torch.device("cpu")
    assert _device(1, "cuda") == torch.device("cuda", 0) and _device(3, "cuda") == torch.device("cuda", 2)
    assert _device(2, "cpu") == torch.device("cpu")


@pytest.fixture
def ticking_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """`time.perf_counter` as the timing workers read it: 0, 1, 2, ... (one tick per reading)."""
    ticks = itertools.count()
    monkeypatch.setattr(tp_workers.time, "perf_counter", lambda: float(next(ticks)))


def test_a_timed_decode_step_is_the_block_over_its_steps(ticking_clock: None) -> None:
    """`time_decode` on one rank (W = 1, no group): each block of `steps` decode steps reads the clock twice,
    so each time is 1 / steps. Guards a time multiplied by the steps, and a prefill of the wrong prompt (the
    decode then has no cache to extend)."""
    out = tp_workers.time_decode(0, 1, "minigpt", B=2, P=5, steps=4, repeats=3)
    assert out == {"times": [0.25, 0.25, 0.25], "record": []}


@DISTRIBUTED
def test_a_round_of_the_sweep_on_two_ranks_times_every_size_and_gap() -> None:
    """`measure_round` on W = 2, as `sweep_tp.py` runs it: every size and gap gets one time per repeat, and the
    decode step's collectives are Eq. (20.1)'s. Guards a round that skips a size or syncs on no device."""
    c = load_pretrained().config
    sizes = [16, 1024]
    out = launch.run(tp_workers.measure_round, 2, "minigpt", 2, 5, 2, 3, sizes, 2, timeout_s=HANG_S)
    for rank in out:
        assert len(rank["times"]) == 3 and all(t > 0 for t in rank["times"])
        assert sorted(rank["all_reduce"]) == sizes and all(len(v) == 3 for v in rank["all_reduce"].values())
        assert sorted(rank["gaps"]) == list(tp_workers.GAPS_S) and all(len(v) == 3 for v in rank["gaps"].values())
        assert len(rank["record"]) == costs.tp_collectives_per_step(L=c.L, W=2)
        assert sum(n for _, n in rank["record"]) == costs.tp_collective_bytes(L=c.L, B=2, d=c.d, V=c.V, s=4, W=2)


@DISTRIBUTED
def test_the_command_line_serves_a_trace_and_reports_it(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m minigpt.distributed.serve` on a short trace: every request finishes, the bytes sent equal
    Eq. (19.1), the SLO line and the colocated check are printed, and the exit status is 0. Guards the
    command line's arguments not reaching the run (a default in their place) and its summary lines."""
    status = main(["--requests", "3", "--rate", "50", "--prompt", "6", "20", "--output", "2", "5", "--blocks",
                   "32", "--log-interval", "0.2", "--ttft-slo", "60", "--tpot-slo", "60", "--seed", "4",
                   "--check-colocated", "--timeout", str(HANG_S)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "finished 3, failed 0 of 3 in " in out
    sent, formula = out.split("K/V bytes sent ")[1].split("\n")[0].split(" (Eq. 19.1 for the finished requests: ")
    assert sent == formula.rstrip(")") and int(sent.replace(",", "")) > 0
    assert "SLO attainment (TTFT <= 60.0 s, TPOT <= 60.0 s): 100 %" in out
    assert "tokens equal to the colocated engine's for 3 of 3 finished requests" in out


def test_the_command_line_refuses_a_trace_longer_than_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--prompt", "8", "100", "--output", "8", "40"])
    assert stop.value.code == 2
    assert "--prompt HI + --output HI - 1 must be <= S_max = 128" in capsys.readouterr().err


def test_the_driver_logs_a_last_interval_only_if_something_happened_in_it() -> None:
    """The driver's log, without processes: at the end of a run (`force`), an interval shorter than
    `log_interval_s` is logged if it counted anything, prompt tokens alone included, and not if it counted
    nothing. Guards a forced line for an empty interval, a line needing both prompt and generated tokens,
    and a counter that does not start at zero."""
    c = load_pretrained().config
    requests = [Request("a", (1, 2, 3), 2), Request("b", (4, 5), 3, arrival_s=0.1)]
    driver = disagg.Driver(disagg.DisaggConfig(log_interval_s=1.0), requests, False, S_max=c.S_max, V=c.V)
    driver.tick(0.2, force=True)
    assert driver.log == []  # nothing counted yet
    driver._interval[0] += 3  # a prompt of 3 tokens prefilled
    driver.tick(0.4)
    assert driver.log == []  # not forced, shorter than the interval
    driver.tick(0.5, force=True)
    assert len(driver.log) == 1 and driver.log[0].prompt_tok_s == pytest.approx(3 / 0.5)
    assert driver.log[0].generation_tok_s == 0 and driver.log[0].transfer_bytes == 0
    driver.tick(0.7, force=True)
    assert len(driver.log) == 1


def test_the_help_says_each_options_unit_and_constraint(capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` of the command line: the SLOs in seconds, NCCL only with CUDA workers."""
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in (r"--ttft-slo TTFT_SLO seconds", r"--tpot-slo TPOT_SLO seconds", r"nccl needs --device cuda",
                  r"cuda: one GPU per worker"):
        assert re.search(rf"(^| ){re.escape(words)}( |$)", text), words


def test_a_kv_header_announcing_the_wrong_size_is_refused_with_the_expected_count(monkeypatch) -> None:
    """A decode worker reads the header first: a K/V size that does not match 2·L·H_kv·P·d_h for the announced
    P (a sender with another model, or a corrupted header) is refused before any K/V is received, and the
    message gives the count it expected (2·2·2·3·4 = 96 here), so the two sides can be compared."""
    from minigpt.distributed import kv_transfer

    received = []

    def fake_recv(tensor, src, tag=None):  # the header: index 0, attempt 0, P = 3, max_new 2, first 5, 95 elements
        received.append(tag)
        tensor.copy_(torch.tensor([0, 0, 3, 2, 5, 95]))

    monkeypatch.setattr(kv_transfer.dist, "recv", fake_recv)
    with pytest.raises(ValueError, match=r"^header from rank 1 announces 95 K/V elements, expected "
                                         r"2·L·H_kv·P·d_h = 96$"):
        kv_transfer.recv_kv(1, (2, 2, 2, 4), torch.float32)
    assert received == [kv_transfer.TAG_KV_HEADER]  # nothing read past the header
