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
