"""The engine's meters and log as a reader sees them: `latency_summary`'s keys and means, the log line that
`Engine(echo=True)` prints. The bugs they catch: a summary key cut one character short ("ttf_mean_s"), and an
`echo` flag that never reaches the log (nothing printed)."""

from __future__ import annotations

import math

import pytest
from tiny_engine import engine

from minigpt.serving import Request, latency_summary
from minigpt.serving.log import EngineLog


def test_the_summary_names_each_series_and_its_mean() -> None:
    e = engine()
    out = e.run([Request(f"r{i}", [1, 2, 3, 4, 5], 4) for i in range(3)])
    summary = latency_summary(out)
    for name in ("ttft", "tpot", "itl", "e2e"):
        for stat in ("p50", "p99", "mean"):
            assert math.isfinite(summary[f"{name}_{stat}_s"]), (name, stat)
    assert summary["ttft_p50_s"] <= summary["e2e_p50_s"]
    assert not any(k.startswith(("ttf_", "tpo_", "it_", "e2_")) for k in summary)


def test_echo_prints_each_interval_and_its_absence_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    for echo in (True, False):
        log = EngineLog(0.5, echo=echo)
        log.step(prompt_tokens=8, generated_tokens=2)
        log.tick(1.0, running=1, waiting=0, preempted=0, kv_usage=0.25, prefix_hit_rate=0.0)
        printed = capsys.readouterr().out
        assert len(log.intervals) == 1
        if echo:
            assert printed == str(log.intervals[0]) + "\n" and "Avg prompt throughput: 8.0 tokens/s" in printed
        else:
            assert printed == ""


@pytest.mark.parametrize("chunk_size", [5, 8, 13])
def test_a_step_never_schedules_more_tokens_than_its_budget(chunk_size: int) -> None:
    """The token budget (`chunk_size`) bounds the whole step: decodes, the unfinished prompts carried over and
    the prompts admitted, all together. Guards a budget reset to one chunk's length instead of reduced by
    it (the next prompt would get a chunk as long as the last, and the step would exceed its budget)."""
    e = engine(chunk_size=chunk_size, max_batch=8)
    totals: list[int] = []
    schedule = e.scheduler.schedule

    def counted():
        chunks = schedule()
        totals.append(sum(c.T for c in chunks))
        return chunks

    e.scheduler.schedule = counted
    e.run([Request(f"r{i}", list(range(1, 12 + 3 * i)), 3) for i in range(4)])
    assert totals and max(totals) <= chunk_size, totals
    assert max(totals) == chunk_size  # the budget is used, not only respected
