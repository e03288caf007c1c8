"""`minigpt.serving.schedule_log` on its own: the settings it refuses and how it names them, the settings that reach
the engine (bytes per value, in replay and with MiniGPT's tokens), the step limit, each request's outcome, the
summary's meters, and `python -m minigpt.serving.schedule_log`'s JSON. `tests/test_engine_js.py` checks the steps
against the JavaScript twin; the fields the twin does not compare are checked here, against the log's own steps
and the engine's rules, never against a wall time."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import sys

import pytest
import torch

from minigpt import Pretrained, load_pretrained
from minigpt.costs.presets import MODELS
from minigpt.serving import schedule_log
from minigpt.serving.schedule_log import SETTINGS, build_engine, main, run_schedule

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: Three requests at once (the schedule does not depend on the clock) and one later; prompts of token ids < 600
#: (MiniGPT's vocabulary), short enough for MiniGPT's 128 positions.
TRACE = [
    {"id": "a", "prompt": list(range(1, 25)), "max_new_tokens": 6, "arrival_s": 0.0},
    {"id": "b", "prompt": list(range(30, 70)), "max_new_tokens": 4, "arrival_s": 0.0},
    {"id": "c", "prompt": list(range(100, 110)), "max_new_tokens": 8, "arrival_s": 0.0},
    {"id": "d", "prompt": list(range(200, 216)), "max_new_tokens": 3, "arrival_s": 0.05},
]
#: A request that needs more KV blocks than a pool of 8 blocks of 16 tokens holds: rejected on arrival.
TOO_LONG = {"id": "big", "prompt": list(range(1, 140)), "max_new_tokens": 2, "arrival_s": 0.0}


#: MiniGPT's own tokens on a pool that preempts (by recompute), prompts chunked.
MINIGPT = {"model": "MiniGPT", "num_blocks": 8, "block_size": 8, "s": 4, "max_batch": 3, "chunk_size": 16}


@pytest.fixture(scope="module")
def shipped() -> Pretrained:
    return load_pretrained()


def durations(log: dict) -> list[float]:
    return [s["end"] - s["start"] for s in log["steps"]]


def test_an_unknown_setting_is_refused_naming_it_and_the_allowed_ones() -> None:
    """Catches a misspelled setting ("num_block") silently ignored, the run served with the default instead, and a
    refusal that does not say which names are allowed."""
    with pytest.raises(ValueError, match=r"unknown settings \['num_block'\]; allowed: .*'num_blocks'"):
        build_engine({"num_block": 8})


@pytest.mark.parametrize(("name", "bad", "allowed"), [("model", "Llama-9", "Llama-2-7B"),
                                                      ("hardware", "A100", "A100 80GB"),
                                                      ("host_link", "PCIe", "PCIe Gen4 x16"),
                                                      ("tokens", "bytes", "minigpt")])
def test_a_name_outside_its_table_is_refused_naming_the_choices(name: str, bad: str, allowed: str) -> None:
    """Catches a preset name (or token mode) the tables lack refused with no message, or with one that does not list
    the choices."""
    with pytest.raises(ValueError, match=rf"{name} must be one of \[.*'{allowed}'.*\], got '{bad}'"):
        build_engine({name: bad})


def test_minigpt_tokens_need_the_minigpt_model() -> None:
    """Catches tokens="minigpt" with another model refused by a KeyError or an empty message instead of naming the
    model it got."""
    with pytest.raises(ValueError, match=r"model must be 'MiniGPT', got 'Llama-2-7B'"):
        build_engine({"tokens": "minigpt"})


def test_a_shipped_minigpt_unlike_its_preset_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Catches a shipped MiniGPT whose vocabulary differs from the preset that prices its steps refused with an
    empty message (the preset's V moved here; the shipped model stays)."""
    preset = MODELS["MiniGPT"]
    monkeypatch.setitem(MODELS, "MiniGPT", dataclasses.replace(preset, V=preset.V + 1))
    with pytest.raises(ValueError, match=r"the shipped MiniGPT .* is not the preset MiniGPT"):
        build_engine({"tokens": "minigpt", "model": "MiniGPT"})


def test_bytes_per_value_reach_the_replay_clock() -> None:
    """Catches `s` dropped on its way to `Engine.replay` (every step priced at its default 2 bytes): Llama-2-7B's
    steps on an A100 are memory-bound (weights and K/V read: bytes over bandwidth), so with every request there at
    t = 0, the same schedule at 4 bytes per value takes each step twice as long as at 2."""
    trace = [r for r in TRACE if r["arrival_s"] == 0.0]
    two, four = run_schedule(trace, {"s": 2}), run_schedule(trace, {"s": 4})
    assert [s["chunks"] for s in four["steps"]] == [s["chunks"] for s in two["steps"]]
    assert all(math.isclose(d4, 2 * d2, rel_tol=1e-9) for d2, d4 in zip(durations(two), durations(four), strict=True))


def test_minigpt_tokens_change_only_the_tokens_without_a_prefix_cache() -> None:
    """With no prefix cache (whose keys hash the tokens) a request's tokens decide nothing: MiniGPT's own tokens give
    the replay's schedule, clock included (each step priced as the replay prices it). Catches the MiniGPT engine's
    step prices built without `s` (at its default 2 bytes while the replay uses 4) and any other setting that
    reaches one engine and not the other."""
    replay = run_schedule(TRACE, MINIGPT)
    own = run_schedule(TRACE, {**MINIGPT, "tokens": "minigpt"})
    assert own["steps"] == replay["steps"]
    assert any(s["events"] for s in replay["steps"]), "the pool is meant to preempt (by recompute)"
    assert any(any(r["tokens"]) for r in own["requests"].values()), "MiniGPT's tokens are not all 0"
    for rid, r in own["requests"].items():
        assert {k: v for k, v in r.items() if k != "tokens"} == {
            k: v for k, v in replay["requests"][rid].items() if k != "tokens"}, rid
    assert own["summary"] == replay["summary"]


def test_the_minigpt_pool_is_the_models_whatever_torchs_defaults(monkeypatch: pytest.MonkeyPatch,
                                                                  shipped: Pretrained) -> None:
    """Catches MiniGPT's paged pool made on torch's default device (a reader's `torch.set_default_device("cuda")` in
    Colab) or in its default dtype instead of the model's: with the default device `meta` (a tensor made without
    `device=` lands there on a CPU-only machine) the run must be the same, and with the default dtype float64 the
    pool must still hold the model's float32. The shipped model is loaded before (its loader builds the module on
    the default device)."""
    monkeypatch.setattr(schedule_log, "load_pretrained", lambda: shipped)
    settings = {**MINIGPT, "tokens": "minigpt"}
    want = run_schedule(TRACE, settings)
    with torch.device("meta"):
        assert run_schedule(TRACE, settings) == want
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        pool = build_engine(settings).pool
    finally:
        torch.set_default_dtype(default)
    assert (pool.k.dtype, pool.k.device, pool.v.dtype) == (shipped.model.dtype, shipped.model.device, torch.float32)


def test_the_step_limit_lets_exactly_max_steps_steps_run() -> None:
    """Catches the step limit off by one (one step more let through) and its refusal without the limit it hit."""
    n = len(run_schedule(TRACE)["steps"])
    assert run_schedule(TRACE, max_steps=n) == run_schedule(TRACE)
    with pytest.raises(ValueError, match=rf"did not end within max_steps={n - 1} steps"):
        run_schedule(TRACE, max_steps=n - 1)


def test_each_outcome_says_why_it_ended_and_when_it_was_admitted() -> None:
    """Catches a request's reason or admission time missing from its outcome (the keys the page reads): a finished
    request ends for "max_new_tokens" and was admitted when the first step that runs it started, no earlier than
    its arrival; one too long for the pool is rejected on arrival, with the blocks it needs, and never admitted."""
    trace = [TOO_LONG, *TRACE]
    log = run_schedule(trace, {"num_blocks": 8})
    out = log["requests"]
    big = out["big"]
    assert (big["status"], big["admitted_s"], big["token_s"]) == ("rejected", None, [])
    assert "KV blocks" in big["reason"]
    for r in TRACE:
        o = out[r["id"]]
        first = next(s["start"] for s in log["steps"] if any(c[0] == r["id"] for c in s["chunks"]))
        assert (o["status"], o["reason"], o["admitted_s"]) == ("finished", "max_new_tokens", first), r["id"]
        assert o["admitted_s"] >= r["arrival_s"] and len(o["token_s"]) == r["max_new_tokens"]


def test_the_summary_is_the_meters_of_the_finished_requests() -> None:
    """Catches the summary left empty (every meter of the page blank, and the twin's meters compared with nothing)
    or taken over the wrong requests: its counts are those of the finished requests (the rejected one's prompt
    left out), its span from their first arrival to their last token. A run where nothing finishes has none."""
    log = run_schedule([TOO_LONG, *TRACE], {"num_blocks": 8})
    done = [r for r in TRACE if log["requests"][r["id"]]["status"] == "finished"]
    summary = log["summary"]
    assert summary["requests"] == len(done) == len(TRACE)
    assert summary["output_tokens"] == sum(len(log["requests"][r["id"]]["token_s"]) for r in done)
    assert summary["prompt_tokens"] == sum(len(r["prompt"]) for r in done)
    last = max(log["requests"][r["id"]]["token_s"][-1] for r in done)
    assert math.isclose(summary["span_s"], last - min(r["arrival_s"] for r in done), rel_tol=1e-12)
    assert run_schedule([TOO_LONG], {"num_blocks": 8})["summary"] == {}


def test_the_command_writes_the_log_of_the_job_on_stdin(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m minigpt.serving.schedule_log`: catches the job's trace or settings not read (the defaults served
    instead), the log not written to stdout, and a failing exit status."""
    settings = {"num_blocks": 8, "max_batch": 2, "chunk_size": 16}
    assert run_schedule(TRACE, settings) != run_schedule(TRACE), "the settings are meant to change the log"
    for job, want in (({"trace": TRACE, "settings": settings}, run_schedule(TRACE, settings)),
                      ({"trace": TRACE}, run_schedule(TRACE, SETTINGS))):
        monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(job)))
        assert main([]) == 0
        assert capsys.readouterr().out == json.dumps(want)
