"""Generation: sampling controls, stop sequences, streaming and the per-request meters."""

import pytest
import torch

from minigpt import MiniGPT, ModelConfig, generate, stream
from minigpt.runtime.generate import sample


def tiny() -> MiniGPT:
    torch.manual_seed(0)
    return MiniGPT(ModelConfig(L=1, H=2, H_kv=1, d_h=8, d_ffn=32, V=13, S_max=40)).eval()


def test_seeded_sampling_is_reproducible_and_seed_dependent():
    model = tiny()
    a = generate(model, [1, 2], 20, temperature=1.0, seed=3)
    b = generate(model, [1, 2], 20, temperature=1.0, seed=3)
    c = generate(model, [1, 2], 20, temperature=1.0, seed=4)
    assert a.tokens == b.tokens and a.tokens != c.tokens


def test_top_k_one_is_greedy():
    model = tiny()
    assert generate(model, [3], 15, temperature=2.0, top_k=1, seed=0).tokens == generate(model, [3], 15).tokens


def test_top_k_restricts_support():
    logits = torch.tensor([[0.0, 1.0, 2.0, 3.0]]).repeat(500, 1)
    picks = sample(logits, temperature=5.0, top_k=2, generator=torch.Generator().manual_seed(0))
    assert set(picks.tolist()) == {2, 3}


def test_stop_sequence_ends_early_and_is_excluded_unless_asked():
    model = tiny()
    free = generate(model, [1], 30).tokens[0]
    stop_at = free[5:7]
    first = next(i for i in range(len(free) - 1) if free[i : i + 2] == stop_at)
    out = generate(model, [1], 30, stop=[stop_at])
    assert out.stop_reasons == ["stop"] and out.tokens[0] == free[:first]
    kept = generate(model, [1], 30, stop=[stop_at], include_stop=True)
    assert kept.tokens[0] == free[: first + 2]


def test_stream_yields_the_same_tokens_as_generate_and_ends_with_meters():
    model = tiny()
    s = stream(model, [4, 5], 12)
    streamed = list(s)
    assert streamed == generate(model, [4, 5], 12).tokens[0]
    assert s.result is not None and s.result.meters.generated_tokens == 12


def test_meters_count_prefill_and_decode_steps():
    model = tiny()
    out = generate(model, [[1, 2, 3], [4, 5, 6]], 7)
    m = out.meters
    assert (m.prompt_tokens, m.generated_tokens, m.decode_steps, m.B) == (3, 14, 6, 2)
    assert m.prefill_s > 0 and m.decode_s > 0 and m.total_s == m.prefill_s + m.decode_s
    line = str(m)
    assert "prompt: 3 tokens" in line and "6 decode steps" in line and "\n" not in line


def test_zero_new_tokens_runs_nothing():
    out = generate(tiny(), [1], 0)
    assert out.tokens == [[]] and out.meters.decode_steps == 0


def test_sampling_settings_are_one_frozen_value():
    from dataclasses import FrozenInstanceError

    from minigpt import Sampling

    s = Sampling(temperature=0.5, top_k=3, seed=1, stop=["x", [1, 2]])
    assert s.stop == ("x", (1, 2))
    with pytest.raises(FrozenInstanceError):
        s.temperature = 1.0  # type: ignore[misc]
    for bad, match in (({"temperature": float("nan")}, "temperature"), ({"top_k": 0}, "top_k"),
                       ({"seed": 1.5}, "seed")):
        with pytest.raises(ValueError, match=match):
            Sampling(**bad)


def test_generate_takes_a_sampling_or_its_fields():
    model = tiny()
    from minigpt import Sampling, generate

    a = generate(model, [1, 2, 3], 5, sampling=Sampling(temperature=1.0, seed=7))
    b = generate(model, [1, 2, 3], 5, temperature=1.0, seed=7)
    assert a.tokens == b.tokens
    with pytest.raises(TypeError, match="unknown generation settings"):
        generate(model, [1, 2, 3], 5, temprature=1.0)


def test_no_cache_step_equals_the_cached_decode_step():
    model = tiny()
    from minigpt import decode_step, no_cache_step, prefill

    seq = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]) % 13
    cache = model.new_cache(2)
    prefill(model, seq[:, :3], cache)
    torch.testing.assert_close(decode_step(model, seq[:, 3], cache), no_cache_step(model, seq), atol=1e-5, rtol=1e-5)


def test_stream_takes_a_sampling_object_as_generate_does():
    """`stream(..., sampling=Sampling(...))` samples as `generate` does with the same object (a stream that
    dropped it would decode greedily and still look fine); `.result` is None until the stream ends."""
    from minigpt.runtime.generate import Sampling

    model = tiny()
    how = Sampling(temperature=1.5, seed=7)
    s = stream(model, [4, 5], 16, sampling=how)
    assert s.result is None
    sampled = list(s)
    assert sampled == generate(model, [4, 5], 16, sampling=how).tokens[0]
    assert sampled != generate(model, [4, 5], 16).tokens[0]  # the seed draws other tokens than greedy
    assert s.result is not None and s.result.tokens[0] == sampled
