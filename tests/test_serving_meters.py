"""The engine's meters and log as a reader sees them, and what one step schedules and records:
`latency_summary`'s keys and means, the log line that `Engine(echo=True)` prints, the token budget of a
step, the prefix blocks a step caches. The bugs they catch are named in each test: a summary key cut one
character short ("ttf_mean_s"), an `echo` flag that never reaches the log (nothing printed), and others."""

from __future__ import annotations

import math

import pytest
from tiny_engine import engine

from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.serving import Engine, EngineConfig, Request, latency_summary
from minigpt.serving.log import EngineLog, Interval
from minigpt.serving.prefix_cache import ROOT, block_hashes, block_key
from minigpt.serving.request import Tracked
from minigpt.serving.trace import poisson_trace


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
        log.tick(2.0, running=1, waiting=0, preempted=0, kv_usage=0.25, prefix_hit_rate=0.0)
        printed = capsys.readouterr().out
        assert len(log.intervals) == 1
        if echo:
            assert printed == str(log.intervals[0]) + "\n" and "Avg prompt throughput: 4.0 tokens/s" in printed
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


def test_the_scheduler_sizes_a_request_at_its_longest_and_the_engine_says_why_it_stopped() -> None:
    """Worst-case blocks: ⌈(P + D − 1) / b⌉ (guards a floor or a sign lost: a negative count reserves nothing);
    a cancel without a reason records the default one; the cache-aware order without a prefix cache is
    refused with the setting to change."""
    e = engine(block_size=4, max_batch=2)
    for P, D, blocks in ((5, 4, 2), (5, 5, 3), (1, 1, 1), (8, 1, 2)):
        assert e.scheduler.worst_case_blocks(Tracked(Request("r", tuple(range(1, P + 1)), D))) == blocks
    e.submit(Request("c", (1, 2, 3), 8))
    e.step()
    e.cancel("c")
    assert e.requests["c"].reason == "cancelled by the user"
    with pytest.raises(ValueError, match=r"it needs a prefix_cache \(EngineConfig\(prefix_caching=True\)\)$"):
        engine(cache_aware=True)


def test_inputs_the_engine_refuses_and_the_key_it_keeps() -> None:
    """A trace of zero requests and a swap replay without a link are refused by name; a block's key keeps its
    tokens (the collision check compares them). Guards a check joined by `and` (n = 0 accepted), a message
    with the wrong type name, and a key without its tokens."""
    with pytest.raises(ValueError, match=r"n must be an integer >= 1 \(requests\), got 0"):
        poisson_trace(0, rate=1.0)
    with pytest.raises(ValueError, match=r"needs host_link \(a LinkPreset, e\.g\. costs\.presets\.HOST_LINKS"):
        Engine.replay(MODELS["Llama-2-7B"], HARDWARE["H100 SXM"], config=EngineConfig(preemption="swap"))
    assert block_key(ROOT, [3, 1, 2]).tokens == (3, 1, 2)
