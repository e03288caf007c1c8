"""The sliding-window cache with attention sinks: with absolute positions it reproduces the full model under a
sliding-window mask; with positions re-indexed in the cache it runs past S_max; its bytes stop growing."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import MiniGPT, ModelConfig, costs
from minigpt.runtime.model import attention
from minigpt.runtime.window_cache import WindowKVCache

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# fp32 rounding: the ring's slot order sums the same terms in another order. Measured up to 3.9e-6 of the largest
# |logit| (about 4e-5 absolute on logits up to 10) over 120 cases; the tolerance is 5x that, relative to the logits.
TOL = 2e-5


def assert_close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert (got - want).abs().max() <= TOL * want.abs().max(), (got - want).abs().max()


def _model(seed: int, H_kv: int = 2) -> MiniGPT:
    torch.manual_seed(seed)
    model = MiniGPT(ModelConfig(L=2, H=4, H_kv=H_kv, d_h=4, d_ffn=16, V=20, S_max=24)).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(40)  # unit-scale weights: a softmax that is not uniform, so a wrong mask shows
    return model


def windowed(model: MiniGPT, window: int, sinks: int) -> MiniGPT:
    """The reference: the full model whose attention mask is causal ∧ (inside the window ∨ a sink)."""
    ref = copy.deepcopy(model)

    def kernel(q, k, v, visible):
        K = k.shape[2]
        i, j = torch.arange(K).view(K, 1), torch.arange(K).view(1, K)
        return attention(q, k, v, ((j <= i) & ((j > i - window) | (j < sinks))).unsqueeze(0))
    for block in ref.blocks:
        block.attn.kernel = kernel
    return ref


def _stream(model: MiniGPT, cache: WindowKVCache, tokens: torch.Tensor, P: int) -> torch.Tensor:
    outs = [model(tokens[:, :P], cache)]
    outs += [model(tokens[:, t : t + 1], cache) for t in range(P, tokens.shape[1])]
    return torch.cat(outs, dim=1)


@settings(max_examples=examples(12), deadline=None)
@given(window=st.integers(1, 9), sinks=st.integers(0, 3), P=st.integers(1, 20), B=st.integers(2, 3),
       seed=st.integers(0, 2**16))
def test_window_cache_equals_the_windowed_full_model(window, sinks, P, B, seed):
    """Prefill a chunk of P (the mask over held slots and new tokens), then decode through the ring: the
    logits of the full model with the sliding-window mask. Catches an off-by-one window, a sink overwritten
    by the ring, a chunk storing the wrong tokens."""
    model = _model(seed)
    tokens = torch.randint(0, 20, (B, 24), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        got = _stream(model, WindowKVCache(model.config, B, window=window, sinks=sinks), tokens, P)
        want = windowed(model, window, sinks)(tokens)
    assert_close(got, want)


def test_mutant_window_one_token_off_is_caught():
    """The same comparison against a window one token wider must fail: the test sees the window's edge."""
    model = _model(3)
    tokens = torch.randint(0, 20, (2, 24), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        got = _stream(model, WindowKVCache(model.config, 2, window=5, sinks=2), tokens, 4)
        wider = windowed(model, 6, 2)(tokens)
    assert (got - wider).abs().max() > 100 * TOL * wider.abs().max()


def test_a_window_as_long_as_the_stream_is_the_full_cache():
    model = _model(4)
    tokens = torch.randint(0, 20, (2, 24), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        got = _stream(model, WindowKVCache(model.config, 2, window=24), tokens, 7)
        assert_close(got, model(tokens))


@pytest.mark.parametrize("window,sinks", [(4, 0), (6, 2)])
def test_bytes_stop_growing_eq_22_1(window, sinks):
    """Each decode step reads min(t+1, k+W) tokens' K/V (Eq. 3.5 with S → min(S, k+W)); the cache holds
    min(t, k+W) and never allocates more. Positions re-indexed: the stream runs past S_max = 24."""
    model = _model(5)
    c = model.config
    B = 2
    cache = WindowKVCache(c, B, window=window, sinks=sinks, positions="cache")
    per_token = costs.kv_bytes_per_token(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4)
    nbytes = cache.nbytes
    tokens = torch.randint(0, 20, (B, 1), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        for t in range(c.S_max + 8):
            before = cache.bytes_read
            logits = model(tokens, cache)
            read = cache.bytes_read - before
            assert read == costs.bounded_decode_step_bytes(weight_bytes=0, kv_bytes_per_token=per_token, S=t + 1,
                                                           budget=sinks + window, B=B)
            assert cache.bytes_used == costs.streaming_kv_cache_bytes(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4, S=t + 1,
                                                                      window=window, sinks=sinks, B=B)
            assert cache.S <= sinks + window - 1  # the next token's position, inside the cache
            tokens = logits[:, -1:].argmax(-1)
    assert cache.t == c.S_max + 8 > c.S_max and cache.nbytes == nbytes


def test_reindexed_positions_restart_inside_the_cache():
    """positions='cache': a prefill that fits is placed at 0..P-1 as usual, then each new token at
    min(t, k + W - 1); before the window fills, that is the full model's placement (same logits)."""
    model = _model(6)
    tokens = torch.randint(0, 20, (2, 10), generator=torch.Generator().manual_seed(6))
    cache = WindowKVCache(model.config, 2, window=8, sinks=2, positions="cache")
    with torch.no_grad():
        got = _stream(model, cache, tokens, 4)
        assert_close(got, model(tokens))  # t < k + W: nothing evicted
        assert cache.S == 9
        model(tokens[:, :1], cache)
        assert cache.S == 9 and cache.t == 11  # full: the next token goes to position k + W - 1 = 9


def test_bad_input_is_named():
    c = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=8)
    with pytest.raises(ValueError, match="window must be a positive integer"):
        WindowKVCache(c, window=0)
    with pytest.raises(ValueError, match="sinks must be an integer >= 0"):
        WindowKVCache(c, window=2, sinks=-1)
    with pytest.raises(ValueError, match="positions must be one of"):
        WindowKVCache(c, window=2, positions="rope")
    with pytest.raises(ValueError, match="sinks \\+ window must be at most S_max=8"):
        WindowKVCache(c, window=8, sinks=1, positions="cache")
    model = MiniGPT(c).eval()
    cache = WindowKVCache(c, window=4, positions="cache")
    model(torch.zeros(1, 1, dtype=torch.long), cache)
    with pytest.raises(ValueError, match="must start from an empty cache"):
        model(torch.zeros(1, 2, dtype=torch.long), cache)


def test_the_edges_of_each_argument():
    """Wrong types refused (a bool or a float is not a count); the largest ring positions='cache' allows,
    sinks + window = S_max, accepted and one more refused with its size; the stream limit is the model's
    S_max with absolute positions and none with re-indexed ones."""
    c = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=8)
    for bad in (True, 2.0):
        with pytest.raises(ValueError, match="window must be a positive integer"):
            WindowKVCache(c, window=bad)
        with pytest.raises(ValueError, match="sinks must be an integer >= 0"):
            WindowKVCache(c, window=2, sinks=bad)
    with pytest.raises(ValueError, match="dtype must be a floating-point dtype"):
        WindowKVCache(c, window=2, dtype=torch.int64)
    with pytest.raises(ValueError, match="got 9$"):
        WindowKVCache(c, window=7, sinks=2, positions="cache")
    edge = WindowKVCache(c, window=6, sinks=2, positions="cache")
    assert (edge.capacity, edge.S_max, WindowKVCache(c, window=3).S_max) == (8, None, 8)
    assert (WindowKVCache(c, window=1).window, WindowKVCache(c, window=2, sinks=0).sinks) == (1, 0)
    assert WindowKVCache(c, window=2, sinks=1).slot_pos.tolist() == [-1, -1, -1]  # -1: an empty slot


@pytest.mark.parametrize("positions", ["absolute", "cache"])
def test_every_tensor_lives_on_the_cache_device_with_its_dtype(positions):
    """Built on the `meta` device in fp16: K and V in the cache's dtype, slot positions int64, every mask and
    index on the device (a chunk's and a decode step's). Catches a tensor left on the CPU, which a GPU run pays
    for with a copy or an error."""
    c = ModelConfig(L=2, H=2, H_kv=1, d_h=4, d_ffn=16, V=20, S_max=16)
    cache = WindowKVCache(c, 2, window=4, sinks=1, positions=positions, dtype=torch.float16, device="meta")
    assert {x.device.type for x in (cache.k, cache.v, cache.slot_pos)} == {"meta"}
    assert (cache.k.dtype, cache.v.dtype, cache.slot_pos.dtype, cache.dtype) == (
        torch.float16, torch.float16, torch.int64, torch.float16)
    assert cache.bytes_read == 0 and cache.t == 0
    chunk = cache.visible(3)
    assert chunk.device.type == "meta" and chunk.dtype == torch.bool
    kept = cache._kept(3)
    assert all(x.device.type == "meta" and x.dtype == torch.int64 for x in kept)
    cache.t = 5
    step = cache.visible(1)
    assert step is None if positions == "cache" else step.device.type == "meta"


@pytest.mark.parametrize("chunks", [(2, 3, 2), (5, 6), (7, 2, 9), (1, 2, 1, 2)])
@pytest.mark.parametrize("window,sinks", [(3, 0), (4, 2), (6, 1)])
def test_chunks_after_chunks_equal_the_windowed_full_model(chunks, window, sinks):
    """Absolute positions, the prompt fed in several chunks (each chunk's mask reads the positions the last one
    recorded in the slots), then decodes: the windowed full model's logits. Catches a chunk that records the
    wrong positions, or only its first one, and a chunk of two taken for a decode step."""
    model = _model(7)
    B, n = 2, sum(chunks) + 3
    tokens = torch.randint(0, 20, (B, n), generator=torch.Generator().manual_seed(7))
    cache = WindowKVCache(model.config, B, window=window, sinks=sinks)
    outs, start = [], 0
    with torch.no_grad():
        for T in chunks:
            outs.append(model(tokens[:, start : start + T], cache))
            start += T
        outs += [model(tokens[:, t : t + 1], cache) for t in range(start, n)]
        want = windowed(model, window, sinks)(tokens)
    assert_close(torch.cat(outs, dim=1), want)
    held = sorted(p for p in cache.slot_pos.tolist() if p >= 0)
    assert held == sorted(set(range(min(sinks, n))) | set(range(max(n - window, 0), n)))


def test_a_chunk_that_fills_the_reindexed_ring_exactly_is_accepted():
    c = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=8)
    model = MiniGPT(c).eval()
    cache = WindowKVCache(c, window=4, sinks=2, positions="cache")
    with torch.no_grad():
        model(torch.zeros(1, 6, dtype=torch.long), cache)  # sinks + window = 6 tokens
    assert cache.t == 6
    with pytest.raises(ValueError, match="fit sinks \\+ window = 6 tokens .*feed the rest one token at a time$"):
        WindowKVCache(c, window=4, sinks=2, positions="cache").check_room(7)


def test_reset_empties_the_ring_and_it_serves_a_new_stream():
    model = _model(8)
    tokens = torch.randint(0, 20, (2, 12), generator=torch.Generator().manual_seed(8))
    cache = WindowKVCache(model.config, 2, window=4, sinks=1)
    with torch.no_grad():
        first = _stream(model, cache, tokens, 5)
        cache.reset()
        assert (cache.t, cache.bytes_read, cache.slot_pos.tolist()) == (0, 0, [-1] * 5)
        again = _stream(model, cache, tokens, 5)
    assert torch.equal(first, again)
    assert repr(cache).startswith("WindowKVCache(window=4, sinks=1, positions='absolute', L=2, B=2, H_kv=2, t=12, "
                                  "held=5/5, d_h=4, dtype=torch.float32")
