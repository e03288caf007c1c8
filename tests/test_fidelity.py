"""Quality measurements of Part III: perplexity by teacher forcing, logit error and KL against fp32,
greedy agreement, and `generate(new_cache=...)` with a quantized cache."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from minigpt import MiniGPT, ModelConfig, decode_step, generate, load_pretrained, prefill
from minigpt.corpus import fidelity as fd
from minigpt.corpus import is_grammatical, split_sentences
from minigpt.corpus.quality import grammaticality
from minigpt.runtime.quantized_cache import QuantizedKVCache

PRE = load_pretrained()
WINDOWS = fd.held_out_windows(PRE.tokenizer, n=8, T=64)


def test_held_out_windows_start_at_a_sentence_start_and_differ_from_training():
    assert WINDOWS.shape == (8, 64)
    for row in WINDOWS.tolist():
        first = " ".join(split_sentences(PRE.tokenizer.decode(row).split())[0])
        assert is_grammatical(first), first  # the window begins with a whole sentence
    other = fd.held_out_windows(PRE.tokenizer, n=8, T=64, seed=0)  # the training stream's seed
    assert not torch.equal(WINDOWS, other)


def test_perplexity_with_the_fp32_cache_is_the_cacheless_forward():
    """One forward into an fp32 cache gives the same logits as the forward without a cache (teacher forcing)."""
    model = PRE.model
    with torch.no_grad():
        logits = model(WINDOWS)[:, :-1]
    nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), WINDOWS[:, 1:].reshape(-1)).item()
    got = fd.perplexity(model, WINDOWS, fd.cache_factory(model.config, "fp32"))
    assert got == pytest.approx(math.exp(nll), rel=1e-6)
    assert 1 < got < model.config.V  # a trained model beats the uniform guess V


def test_logit_error_is_zero_for_fp32_and_grows_from_int8_to_int4():
    model = PRE.model
    zero = fd.logit_error(model, WINDOWS, fd.cache_factory(model.config, "fp32"))
    assert zero.max_abs == 0 and zero.mean_kl == 0 and zero.positions == WINDOWS.numel()
    int8 = fd.logit_error(model, WINDOWS, fd.cache_factory(model.config, "int8"))
    int4 = fd.logit_error(model, WINDOWS, fd.cache_factory(model.config, "int4"))
    assert 0 < int8.mean_abs < int4.mean_abs
    assert 0 < int8.mean_kl < int4.mean_kl
    assert int8.max_abs >= int8.mean_abs


def test_compare_tokens_counts_equal_positions_and_the_first_difference():
    a = [[1, 2, 3, 4], [5, 6, 7, 8]]
    b = [[1, 2, 9, 4], [5, 6, 7, 8]]
    agreement = fd.compare_tokens(a, b)
    assert (agreement.tokens, agreement.equal) == (8, 7)
    assert agreement.mean_first_difference == (2 + 4) / 2
    assert agreement.fraction == 7 / 8
    with pytest.raises(ValueError, match="same number"):
        fd.compare_tokens(a, [[1, 2, 3]])


def test_greedy_agreement_of_the_fp32_cache_with_itself_is_total():
    model = PRE.model
    agreement = fd.greedy_agreement(model, WINDOWS[:4, :6], 10, fd.cache_factory(model.config, "fp32"))
    assert agreement.fraction == 1 and agreement.mean_first_difference == 10


def test_generate_uses_the_cache_factory():
    """generate(new_cache=...) builds its cache with the factory, and its tokens are those of a manual
    prefill + decode loop on the same kind of cache."""
    torch.manual_seed(0)
    config = ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=64, V=40, S_max=32)
    model = MiniGPT(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(15)  # logits far apart: int4 rounding changes some greedy tokens
    prompt = torch.randint(0, 40, (3, 5), generator=torch.Generator().manual_seed(1))
    built = []

    def factory(B, S_max):
        built.append((B, S_max))
        return QuantizedKVCache(config, B, bits=4, group_size=4, S_max=S_max)

    out = generate(model, prompt, 8, new_cache=factory)
    assert built == [(3, 5 + 8 - 1)]
    cache = QuantizedKVCache(config, 3, bits=4, group_size=4, S_max=12)
    token = prefill(model, prompt, cache).argmax(-1)
    manual = [token]
    for _ in range(7):
        token = decode_step(model, token, cache).argmax(-1)
        manual.append(token)
    assert out.tokens == torch.stack(manual, 1).tolist()
    with pytest.raises(ValueError, match="new_cache must be a callable"):
        generate(model, prompt, 2, new_cache=3)
    with pytest.raises(ValueError, match="use_cache=False"):
        generate(model, prompt, 2, new_cache=factory, use_cache=False)


def test_grammaticality_runs_on_a_quantized_cache():
    model, tok = PRE.model, PRE.tokenizer
    g = grammaticality(model, tok, 40, new_cache=fd.cache_factory(model.config, "int8"))
    assert g.n_sentences == 40 and g.fraction > 0.8


def test_bad_kinds_and_sizes_name_the_parameter():
    with pytest.raises(ValueError, match="kind must be"):
        fd.cache_factory(PRE.model.config, "int2")
    with pytest.raises(ValueError, match="T must be a positive integer"):
        fd.held_out_windows(PRE.tokenizer, n=2, T=0)
