"""KV eviction by score (H2O, SnapKV): exact where nothing is evicted or where the policy is a window, the kept
set is the one the scores choose, and the bytes a step reads follow the budget (Eq. 3.5 with S → min(S, b))."""

from __future__ import annotations

import pytest
import torch

from minigpt import MiniGPT, ModelConfig, costs
from minigpt.runtime.eviction import H2OCache, SnapKVCache
from minigpt.runtime.window_cache import WindowKVCache

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOL = 2e-5  # of the largest |logit|: fp32 rounding, as tests/test_window_cache.py measures


def assert_close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert (got - want).abs().max() <= TOL * want.abs().max(), (got - want).abs().max()


def _model(seed: int) -> MiniGPT:
    torch.manual_seed(seed)
    model = MiniGPT(ModelConfig(L=2, H=4, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=24)).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(40)
    return model


def _stream(model, cache, tokens, P):
    outs = [model(tokens[:, :P], cache)]
    outs += [model(tokens[:, t : t + 1], cache) for t in range(P, tokens.shape[1])]
    return torch.cat(outs, dim=1)


@pytest.mark.parametrize("make", [lambda c: H2OCache(c, 3, budget=24), lambda c: SnapKVCache(c, 3, budget=24)])
@pytest.mark.parametrize("P", [1, 9])
def test_a_budget_that_holds_everything_changes_nothing(make, P):
    model = _model(0)
    tokens = torch.randint(0, 20, (3, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert_close(_stream(model, make(model.config), tokens, P), model(tokens))


@pytest.mark.parametrize("budget", [3, 8])
def test_h2o_with_only_a_recent_window_is_the_sliding_window(budget):
    """recent = b: H2O keeps the last b tokens, a window of b + 1 with the query (positions absolute).
    Catches an eviction that keeps the wrong rows or scrambles the gather across heads."""
    model = _model(1)
    tokens = torch.randint(0, 20, (2, 24), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        h2o = _stream(model, H2OCache(model.config, 2, budget=budget, recent=budget), tokens, 1)
        window = _stream(model, WindowKVCache(model.config, 2, window=budget + 1), tokens, 1)
    assert_close(h2o, window)


def test_h2o_keeps_the_heavy_hitters_and_the_recent_tokens():
    """After each step every row holds b tokens: the `recent` newest and the highest accumulated scores;
    the scores are the attention each key received (summed over queries and the group's heads)."""
    model = _model(2)
    B, budget, recent = 2, 6, 2
    cache = H2OCache(model.config, B, budget=budget, recent=recent)
    tokens = torch.randint(0, 20, (B, 16), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        model(tokens[:, :10], cache)  # prefill of 10: column sums of the causal attention, then evict to 6
        assert cache.n == budget and cache.t == 10
        pos = cache.pos[..., :budget]
        assert ((pos >= 10 - recent).sum(-1) >= recent).all()  # the recent tokens are all there
        assert (pos.diff(dim=-1) > 0).all()  # in position order
        # the prompt's column sums: each of the 10 queries gives weight 1 in total, per head of the group
        model2 = _model(2)
        full = H2OCache(model2.config, B, budget=24)
        model2(tokens[:, :10], full)
        g = model.config.H // model.config.H_kv
        torch.testing.assert_close(full.score[..., :10].sum(-1), torch.full((2, B, 2), 10.0 * g))
        kept_scores = full.score[..., :10].gather(-1, pos)
        evicted = full.score[..., :10].clone().scatter_(-1, pos, float("-inf"))
        heavy = kept_scores.masked_fill(pos >= 10 - recent, float("inf")).amin(-1)
        assert (heavy >= evicted.amax(-1)).all()  # no evicted key outscored a kept heavy hitter
        model(tokens[:, 10:11], cache)
        assert cache.n == budget and cache.t == 11


def test_snapkv_compresses_the_prompt_once_then_grows():
    model = _model(3)
    B, budget, window = 2, 8, 3
    cache = SnapKVCache(model.config, B, budget=budget, window=window, kernel=3)
    tokens = torch.randint(0, 20, (B, 20), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        model(tokens[:, :16], cache)
        assert cache.n == budget
        assert (cache.pos[..., budget - window : budget] == torch.arange(13, 16)).all()  # the window stays
        for t in range(16, 20):
            model(tokens[:, t : t + 1], cache)
        assert cache.n == budget + 4  # decode appends: SnapKV compresses the prompt only


@pytest.mark.parametrize("budget", [4, 10])
def test_h2o_bytes_per_step_follow_the_budget(budget):
    model = _model(4)
    c = model.config
    B = 3
    cache = H2OCache(c, B, budget=budget)
    per_token = costs.kv_bytes_per_token(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4)
    tokens = torch.randint(0, 20, (B, 1), generator=torch.Generator().manual_seed(4))
    assert cache.bytes_read == 0
    with torch.no_grad():
        for t in range(c.S_max):
            before = cache.bytes_read
            logits = model(tokens, cache)
            assert cache.bytes_read - before == costs.bounded_decode_step_bytes(
                weight_bytes=0, kv_bytes_per_token=per_token, S=t + 1, budget=budget + 1, B=B)
            assert cache.bytes_used == B * min(t + 1, budget) * per_token
            tokens = logits[:, -1:].argmax(-1)


def test_bad_input_is_named():
    c = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=8)
    with pytest.raises(ValueError, match="budget must be an integer >= 1"):
        H2OCache(c, budget=0)
    with pytest.raises(ValueError, match="recent must be an integer in 0..budget=4"):
        H2OCache(c, budget=4, recent=5)
    with pytest.raises(ValueError, match="window must be an integer in 1..budget=4"):
        SnapKVCache(c, budget=4, window=5)
    with pytest.raises(ValueError, match="kernel must be a positive odd integer"):
        SnapKVCache(c, budget=4, window=2, kernel=4)
    for bad in (0.5, 2.0, True, "2"):
        with pytest.raises(ValueError, match="budget must be an integer >= 1"):
            H2OCache(c, budget=bad)
        with pytest.raises(ValueError, match="recent must be an integer"):
            H2OCache(c, budget=4, recent=1.0 if bad == "2" else bad)
        with pytest.raises(ValueError, match="window must be an integer"):
            SnapKVCache(c, budget=4, window=bad)
        with pytest.raises(ValueError, match="kernel must be a positive odd integer"):
            SnapKVCache(c, budget=4, window=2, kernel=3.0 if bad == "2" else bad)
    with pytest.raises(ValueError, match="dtype must be a floating-point dtype"):
        H2OCache(c, budget=4, dtype=torch.int64)


def test_the_edges_of_each_argument_are_allowed():
    """The smallest and largest value each argument allows is accepted (b = 1; recent 0 and b; window 1 and b;
    kernel 1), and recent defaults to b // 2, the H2O recipe's even split."""
    c = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=8)
    assert H2OCache(c, budget=1).recent == 0
    assert [H2OCache(c, budget=b).recent for b in (5, 8)] == [2, 4]
    assert [H2OCache(c, budget=4, recent=r).recent for r in (0, 4)] == [0, 4]
    assert [SnapKVCache(c, budget=4, window=w).window for w in (1, 4)] == [1, 4]
    assert SnapKVCache(c, budget=4, window=2, kernel=1).kernel == 1
    # The defaults the chapter's sweep runs with: one sequence, a window of 8 queries, a pool of 7 keys.
    h2o, snap = H2OCache(c, budget=8), SnapKVCache(c, budget=8)
    assert (h2o.B, snap.B, snap.window, snap.kernel) == (1, 1, 8, 7)


def test_a_write_past_the_storage_is_refused():
    c = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=8)
    cache = H2OCache(c, budget=8)
    cache.check_room(8)  # exactly full is fine
    cache.advance(6)
    cache.check_room(2)
    with pytest.raises(ValueError, match="H2O cache overflow: it holds n=6 tokens and 3 more were written"):
        cache.check_room(3)


def test_every_tensor_lives_on_the_cache_device_with_its_dtype():
    """Built on the `meta` device (no memory) in fp16: K and V in the cache's dtype, positions int64, scores
    fp32 even when torch's default dtype is fp64 (score_bytes counts 4 bytes a score), the mask on the
    device. Catches a tensor left on the CPU, which a GPU run would pay for with a copy or an error."""
    c = ModelConfig(L=2, H=4, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=8)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        for cache in (H2OCache(c, 3, budget=4, dtype=torch.float16, device="meta"),
                      SnapKVCache(c, 3, budget=4, window=2, dtype=torch.float16, device="meta")):
            assert {x.device.type for x in (cache.k, cache.v, cache.pos, cache.score)} == {"meta"}
            assert (cache.k.dtype, cache.v.dtype, cache.pos.dtype, cache.score.dtype) == (
                torch.float16, torch.float16, torch.int64, torch.float32)
            assert cache.visible(3).device.type == "meta" and cache.dtype == torch.float16
            assert cache.bytes_read == 0 and cache.n == cache.t == 0
            cache.advance(2)
            assert cache.score_bytes == 4 * c.L * 3 * c.H_kv * 2
    finally:
        torch.set_default_dtype(default)


def test_snapkv_scores_only_at_the_prefill():
    """A one-token prompt, then decodes: the scores written at the prefill stay as they were (SnapKV votes once),
    and nothing is evicted after it."""
    model = _model(5)
    cache = SnapKVCache(model.config, 2, budget=3, window=1, kernel=1)
    tokens = torch.randint(0, 20, (2, 6), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        model(tokens[:, :1], cache)
        first = cache.score[..., :1].clone()
        for t in range(1, 6):
            model(tokens[:, t : t + 1], cache)
    assert torch.equal(cache.score[..., :1], first) and (cache.score[..., 1:6] == 0).all()
    assert cache.n == 6 and (cache.pos[..., :6] == torch.arange(6)).all()


def test_reset_empties_the_cache_and_snapkv_compresses_the_next_prompt():
    """A cache reused for a new prompt: counts back to zero, and SnapKV votes and compresses again (a cache
    that stayed `compressed` would keep the whole second prompt)."""
    model = _model(6)
    cache = SnapKVCache(model.config, 2, budget=4, window=2, kernel=1)
    tokens = torch.randint(0, 20, (2, 10), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        model(tokens, cache)
        assert cache.n == 4 and cache.compressed
        cache.reset()
        assert (cache.n, cache.t, cache.bytes_read, cache.compressed) == (0, 0, 0, False)
        model(tokens[:, :8], cache)
    assert cache.n == 4 and cache.t == 8 and (cache.pos[..., 2:4] == torch.tensor([6, 7])).all()
