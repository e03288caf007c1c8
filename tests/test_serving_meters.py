"""The engine's meters and log as a reader sees them, and what one step schedules and records:
`latency_summary`'s keys and means, the log line that `Engine(echo=True)` prints, the token budget of a
step, the prefix blocks a step caches. The bugs they catch are named in each test: a summary key cut one
character short ("ttf_mean_s"), an `echo` flag that never reaches the log (nothing printed), and others."""

from __future__ import annotations

import math

import pytest
from tiny_engine import engine

from minigpt.serving import Request, latency_summary
from minigpt.serving.log import EngineLog, Interval
from minigpt.serving.prefix_cache import block_hashes


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


def test_the_log_line_reads_each_figure_as_a_percentage_of_one() -> None:
    """The line a reader compares with vLLM's: usage and hit rate as percentages of fractions (0.25 is 25.0%).
    Guards a wrong scale on either."""
    line = Interval(0.0, 2.0, 1234.5, 67.8, 3, 2, 1, 0, kv_usage=0.25, prefix_hit_rate=0.125)
    assert str(line) == ("[    2.000 s] Avg prompt throughput: 1,234.5 tokens/s, Avg generation throughput: 67.8 "
                         "tokens/s, Running: 2 reqs, Preempted: 0 reqs, Pending: 1 reqs, KV cache usage: 25.0%, "
                         "Prefix cache hit rate: 12.5%")


def test_a_step_caches_the_full_blocks_of_every_chunk_it_ran() -> None:
    """Prefix caching registers each chunk's completed blocks, whatever the chunks before it completed. Guards a
    loop that stops at the first chunk with no new full block (a short prompt admitted first would keep every
    later prompt of the step out of the cache)."""
    e = engine(block_size=4, prefix_caching=True)
    short, long = Request("short", (1, 2), 3), Request("long", tuple(range(3, 11)), 3)
    e.submit(short)
    e.submit(long)
    chunks = e.step()
    assert [c.tracked.request.id for c in chunks] == ["short", "long"]
    assert all(key in e.prefix_cache for key in block_hashes(long.prompt, 4))
    assert len(e.prefix_cache) == 2
