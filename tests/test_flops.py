"""The FLOP formulas of chapter 1 equal what FlopCounterMode counts on the real MiniGPT."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.measure import count_flops
from minigpt.runtime.model import MiniGPT


@st.composite
def configs(draw) -> ModelConfig:
    H_kv = draw(st.integers(1, 3))
    return ModelConfig(
        L=draw(st.integers(1, 3)),
        H=H_kv * draw(st.integers(1, 3)),
        H_kv=H_kv,
        d_h=draw(st.integers(1, 8)),
        d_ffn=draw(st.integers(1, 40)),
        V=draw(st.integers(2, 50)),
        S_max=32,
    )


def _model(cfg: ModelConfig) -> MiniGPT:
    torch.manual_seed(0)
    return MiniGPT(cfg).eval()


@settings(max_examples=examples(25), deadline=None)
@given(cfg=configs(), P=st.integers(1, 12), S=st.integers(1, 16), B=st.integers(1, 3))
def test_prefill_and_decode_step_counts_equal_the_formulas(cfg, P, S, B):
    model = _model(cfg)
    sym = cfg.symbols()
    model_args = dict(
        L=sym["L"], d=sym["d"], H_kv=sym["H_kv"], d_h=sym["d_h"], d_ffn=sym["d_ffn"], V=sym["V"], B=B
    )
    with torch.no_grad():
        cache = model.new_cache(B)
        prompt = torch.randint(cfg.V, (B, P))
        assert count_flops(lambda: model(prompt, cache, last_only=True)) == costs.prefill_flops(
            P=P, **model_args
        )
        cache = model.new_cache(B)
        model(torch.randint(cfg.V, (B, S)), cache)  # S tokens now cached
        token = torch.randint(cfg.V, (B, 1))
        counted = count_flops(lambda: model(token, cache, last_only=True))
    assert counted == costs.decode_step_flops(S=S, **model_args)


@settings(max_examples=examples(15), deadline=None)
@given(cfg=configs(), T=st.integers(1, 12))
def test_full_forward_without_cache_counts_every_logit(cfg, T):
    """Without a cache and without last_only, the LM head runs at all T positions: Eq. (1.6) with T."""
    model = _model(cfg)
    tokens = torch.randint(cfg.V, (1, T))
    with torch.no_grad():
        counted = count_flops(lambda: model(tokens))
    layer = costs.layer_flops(T=T, S=0, d=cfg.d, H_kv=cfg.H_kv, d_h=cfg.d_h, d_ffn=cfg.d_ffn)
    assert counted == cfg.L * layer + costs.lm_head_flops(d=cfg.d, V=cfg.V, T=T)


def test_generation_total_on_minigpt():
    """A D-token generation = one prefill + D−1 decode steps, Eq. (1.2) + Eq. (1.4), counted end to end."""
    cfg = ModelConfig()
    model = _model(cfg)
    P, D = 2, 3  # "Yesterday I" → "worked and he"

    def generate() -> None:
        cache = model.new_cache(1)
        logits = model(torch.randint(cfg.V, (1, P)), cache, last_only=True)
        for _ in range(D - 1):
            logits = model(logits.argmax(-1), cache, last_only=True)

    with torch.no_grad():
        counted = count_flops(generate)
    sym = cfg.symbols()
    expected = costs.generation_flops(
        L=sym["L"], P=P, D=D, d=sym["d"], H_kv=sym["H_kv"], d_h=sym["d_h"], d_ffn=sym["d_ffn"], V=sym["V"]
    )
    assert counted == expected
    # MHA, d_ffn = 4d, LM head left out: twice the seed's multiply-add count.
    assert costs.prefill_flops(L=4, P=P, d=64) == 2 * costs.prefill_macs(L=4, P=P, d=64)
