"""Multi-head latent attention: the absorbed decode path equals the naive one, an SVD copy of an MHA model
at full rank equals it, the cache holds the latents only, and both paths' FLOPs are Eq. (21.1)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import MiniGPT, ModelConfig, costs
from minigpt.measure.counting import count_flops
from minigpt.runtime import mla as mla_module
from minigpt.runtime.checkpoint import DATA_DIR, load_pretrained
from minigpt.runtime.mla import LatentAttention, LatentCache, MiniGPTMLA, latent_from_mha

# fp32 rounding of the two paths' different matmul orders, relative to the largest |logit| (a softmax's
# near-zero logits carry absolute, not relative, error): measured up to about 5e-6 over 300 random cases
# (2.2e-5 absolute); the tolerance is 4x that.
TOL = 2e-5


def assert_close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert (got - want).abs().max() <= TOL * want.abs().max(), (got - want).abs().max()


def _scaled(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Weights of unit-ish scale (the default init's 0.02 makes every softmax nearly uniform, so a wrong score
    scale would go unseen)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5 * 1.5)
    return model


def _decode_logits(model: MiniGPTMLA, tokens: torch.Tensor, P: int) -> torch.Tensor:
    """Prefill the first P tokens, then one decode step per token: `[B, T, V]`."""
    cache = model.new_cache(tokens.shape[0])
    outs = [model(tokens[:, :P], cache)]
    outs += [model(tokens[:, t : t + 1], cache) for t in range(P, tokens.shape[1])]
    return torch.cat(outs, dim=1)


@settings(max_examples=examples(15), deadline=None)
@given(H=st.sampled_from([1, 2, 4]), d_h=st.sampled_from([4, 8]), d_c=st.sampled_from([2, 6, 16]),
       B=st.integers(2, 3), P=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_absorbed_decode_equals_naive(H, d_h, d_c, B, P, seed):
    """The two paths read the same cache and give the same logits within fp32 rounding (TOL), B > 1, prefill
    then decode. Catches a wrong absorption (a transposed W_UK, a head mixed up, the score scale)."""
    torch.manual_seed(seed)
    config = ModelConfig(L=2, H=H, H_kv=H, d_h=d_h, d_ffn=16, V=20, S_max=12)
    model = _scaled(MiniGPTMLA(config, d_c=d_c), seed).eval()
    tokens = torch.randint(0, 20, (B, 12), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        naive = _decode_logits(model.set_path("naive"), tokens, P)
        absorbed = _decode_logits(model.set_path("absorbed"), tokens, P)
        full = model.set_path("naive")(tokens)
    assert_close(absorbed, naive)
    assert_close(naive, full)


def test_mutant_without_the_score_scale_fails(monkeypatch):
    """The mutant check: folding W_UK without √(d_c/d_h) (so attention divides by √d_c) must be caught."""
    config = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=12)
    model = _scaled(MiniGPTMLA(config, d_c=16), 0).eval()
    tokens = torch.randint(0, 20, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        naive = _decode_logits(model.set_path("naive"), tokens, 3)
        monkeypatch.setattr(mla_module.math, "sqrt", lambda x: 1.0)  # the mutant: no ratio in fold()
        model.set_path("absorbed")
        monkeypatch.undo()
        absorbed = _decode_logits(model, tokens, 3)
    assert (absorbed - naive).abs().max() > 100 * TOL * naive.abs().max()


def test_full_rank_svd_copy_equals_the_mha_model():
    """With d_c = d (the rank of [W_K; W_V]) the MLA copy computes the MHA model's function, biases included:
    b_K is dropped (softmax ignores it) and b_V moves to the output bias. The mutant that leaves the output
    bias as it was (b_V lost) fails."""
    config = ModelConfig(L=2, H=4, H_kv=4, d_h=4, d_ffn=16, V=20, S_max=12)
    mha = _scaled(MiniGPT(config), 1).eval()
    with torch.no_grad():
        for block in mha.blocks:
            block.attn.qkv.bias.normal_(0, 0.5)
    tokens = torch.randint(0, 20, (3, 12), generator=torch.Generator().manual_seed(1))
    mla = latent_from_mha(mha, config.d).eval()
    with torch.no_grad():
        a, b = mha(tokens), mla(tokens)
        assert_close(b, a)
        for ours, theirs in zip(mla.blocks, mha.blocks, strict=True):  # the mutant
            ours.attn.out.bias.copy_(theirs.attn.out.bias)
        assert (mla(tokens) - a).abs().max() > 100 * TOL * a.abs().max()


def test_calibrated_svd_beats_the_plain_one_at_low_rank():
    """Weighting by the inputs' second moment lowers the error of a rank-d_c copy on those inputs."""
    config = ModelConfig(L=1, H=4, H_kv=4, d_h=4, d_ffn=16, V=20, S_max=12)
    mha = _scaled(MiniGPT(config), 2).eval()
    tokens = torch.randint(0, 20, (8, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = mha(tokens)
        plain = (latent_from_mha(mha, 4).eval()(tokens) - ref).pow(2).mean()
        weighted = (latent_from_mha(mha, 4, tokens).eval()(tokens) - ref).pow(2).mean()
    assert weighted < plain


@pytest.mark.parametrize("B,S", [(1, 5), (3, 12)])
def test_the_cache_holds_latents_only(B, S):
    config = ModelConfig(L=2, H=4, H_kv=4, d_h=4, d_ffn=16, V=20, S_max=12)
    model = MiniGPTMLA(config, d_c=3).eval()
    cache = model.new_cache(B)
    model(torch.randint(0, 20, (B, S)), cache)
    assert cache.S == S
    assert cache.bytes_used == costs.latent_kv_cache_bytes(L=2, d_c=3, s=4, S=S, B=B)
    assert cache.nbytes == costs.latent_kv_cache_bytes(L=2, d_c=3, s=4, S=12, B=B)
    # Against the MHA cache of the same model shape: 2·H·d_h / d_c times smaller.
    assert MiniGPT(config).new_cache(B).nbytes == cache.nbytes * 2 * 4 * 4 // 3


@pytest.mark.parametrize("path", ["naive", "absorbed"])
@pytest.mark.parametrize("T,S", [(1, 0), (1, 9), (4, 5), (12, 0)])
def test_counted_flops_and_bytes_equal_eqs_21_1_and_21_3(path, T, S):
    """FlopCounterMode on one attention block, T new tokens after S cached: `costs.mla_layer_flops`; the bytes of
    the tensors attention moved: `costs.mla_attention_bytes`. Catches a path that decompresses when it should
    not (absorbed), a formula that forgets the decompression's FLOPs or its round trip through memory."""
    config = ModelConfig(L=1, H=4, H_kv=4, d_h=4, d_ffn=16, V=20, S_max=16)
    B, d_c = 2, 6
    attn = LatentAttention(config, 0, d_c).eval()
    if path == "absorbed":
        attn.fold()
        attn.path = "absorbed"
    cache = LatentCache(config, d_c, B)
    cache._S = S  # S cached latents (their values do not change the count)
    x = torch.randn(B, T, config.d)
    with torch.no_grad():
        counted = count_flops(lambda: attn(x, cache, S))
    assert counted == costs.mla_layer_flops(d=config.d, H=4, d_h=4, d_c=d_c, T=T, S=S, path=path, B=B)
    # Eq. (21.3): the latents read, and (naive) the decompressed K and V written and read back
    assert attn.bytes_moved == costs.mla_attention_bytes(H=4, d_h=4, d_c=d_c, T=T, S=S, path=path, s=4, B=B)


def test_the_crossover_is_where_the_times_cross():
    """Eq. (21.4): below T* the absorbed path is faster on the roofline, at T* the naive one is not slower."""
    args = dict(H=128, d_h=128, d_c=512, d_rope=64, S=4096, s=2, peak_flops=989e12, bandwidth=3.35e12)
    T = costs.mla_absorb_crossover_T(**args)
    assert 1 < T < 4096

    def time(path, T):
        return costs.mla_attention_time(**args, T=T, path=path)
    assert time("naive", T) <= time("absorbed", T)
    assert time("naive", T - 1) > time("absorbed", T - 1)
    # d_c <= d_h: absorbing never costs more FLOPs per key, so it always pays.
    assert costs.mla_absorb_crossover_T(**dict(args, d_c=64), T_max=1000) == 1001


def test_bad_input_is_named():
    config = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=8)
    with pytest.raises(ValueError, match="d_c must be a positive integer"):
        MiniGPTMLA(config, d_c=0)
    with pytest.raises(ValueError, match="path must be one of"):
        MiniGPTMLA(config, d_c=2).set_path("fast")
    with pytest.raises(ValueError, match="d_c must be at most d=8"):
        latent_from_mha(MiniGPT(config), 9)
    with pytest.raises(ValueError, match="multi-head attention"):
        latent_from_mha(MiniGPT(ModelConfig(L=1, H=2, H_kv=1, d_h=4, d_ffn=16, V=20, S_max=8)), 2)
    with pytest.raises(ValueError, match="path must be one of"):
        costs.mla_layer_flops(d=8, H=2, d_h=4, d_c=2, T=1, S=0, path="fast")
    model = MiniGPTMLA(config, d_c=2).eval()
    model.blocks[0].attn.path = "absorbed"  # without fold()
    with pytest.raises(RuntimeError, match="call fold"):
        model(torch.zeros(1, 2, dtype=torch.long))


@pytest.mark.parametrize("name", ["minigpt-mla8-uptrained", "minigpt-mla4-uptrained"])
def test_shipped_latent_checkpoints_load(name):
    if not (DATA_DIR / f"{name}.safetensors").is_file():
        pytest.skip(f"{name} is not shipped")
    pre = load_pretrained(name=name)
    assert isinstance(pre.model, MiniGPTMLA) and pre.model.d_c == pre.card["latent"]["d_c"]
    tokens = torch.randint(0, pre.config.V, (2, 10), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        naive = _decode_logits(pre.model.set_path("naive"), tokens, 4)
        absorbed = _decode_logits(pre.model.set_path("absorbed"), tokens, 4)
    assert_close(absorbed, naive)


def test_uptraining_keeps_the_latent_model_and_its_checkpoint_round_trips(tmp_path):
    """`train(init=...)` trains a copy of an MLA model (not a MiniGPT with its weights poured in), and a card with
    `latent` loads back as `MiniGPTMLA` with the same logits."""
    from minigpt.corpus.train import TrainConfig, train
    from minigpt.runtime.checkpoint import save_checkpoint

    torch.manual_seed(0)
    init = latent_from_mha(MiniGPT(ModelConfig()), 8).eval()
    tc = TrainConfig(steps=2, B=2, warmup=0, corpus_tokens=20_000, log_every=1)
    model, tokenizer, card = train(tc=tc, progress=False, init=init)
    assert isinstance(model, MiniGPTMLA) and model.d_c == 8
    assert not torch.equal(model.blocks[0].attn.down.weight, init.blocks[0].attn.down.weight)  # it trained
    save_checkpoint(model, tokenizer, {**card, "latent": {"d_c": 8}}, tmp_path, name="mla")
    loaded = load_pretrained(tmp_path, name="mla").model
    tokens = torch.randint(0, 600, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert isinstance(loaded, MiniGPTMLA) and torch.equal(loaded(tokens), model(tokens))


def test_a_latent_attention_block_without_a_cache_is_causal():
    """One block called as a prompt's forward (no cache, S = 0 by default): no position sees a later token; a
    default that counted one cached token would show each query one key ahead."""
    torch.manual_seed(0)
    config = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=20, S_max=12)
    attn = LatentAttention(config, 0, d_c=4).eval()
    x = torch.randn(2, 5, config.d)
    later = x.clone()
    later[:, -1] += 1.0
    with torch.no_grad():
        y, z = attn(x, None), attn(later, None)
    assert torch.equal(y[:, :-1], z[:, :-1]) and not torch.allclose(y[:, -1], z[:, -1])
    assert torch.equal(y, attn(x, None, 0).detach())
