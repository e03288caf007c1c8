"""Generation: sampling controls, stop sequences, streaming and the per-request meters."""

import torch

from minigpt import MiniGPT, ModelConfig, generate, stream
from minigpt.generate import sample


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
