"""The static cache and the compiled decode step: equal to the eager MiniGPT, validated once, no host sync."""

from __future__ import annotations

import shutil

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from mutation_pass import shared_scope
from profiles import examples

from minigpt import ModelConfig, generate
from minigpt.measure import sweeps
from minigpt.measure.op_count import HOST_SYNC_OP, count_ops
from minigpt.runtime.compiled import StaticDecoder, static_forward
from minigpt.runtime.static_cache import StaticKVCache

#: fp32 tolerance between the compiled step (inductor fuses and reorders reductions) and the eager model.
ATOL = RTOL = 1e-4
SMALL = ModelConfig(L=2, H=2, H_kv=2, d_h=16, d_ffn=64, V=50, S_max=32)
CAN_COMPILE = shutil.which("gcc") is not None or shutil.which("cc") is not None or torch.cuda.is_available()


def _prompt(B: int, P: int, V: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, V, (B, P), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("cfg", [SMALL, ModelConfig(L=2, H=4, H_kv=1, d_h=8, d_ffn=64, V=40, S_max=24)],
                         ids=["MHA", "MQA"])
@pytest.mark.parametrize("B", [1, 3])
def test_static_forward_equals_the_model_step_by_step(cfg: ModelConfig, B: int) -> None:
    model = sweeps.random_model(cfg, seed=2)
    prompt = _prompt(B, 5, cfg.V)
    ref_cache = model.new_cache(B)
    decoder = StaticDecoder(model, B, compile=False)
    with torch.no_grad():
        ref = model(prompt, ref_cache, last_only=True)[:, -1]
    got = decoder.prefill(prompt)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    for _ in range(6):
        token = ref.argmax(dim=-1)
        with torch.no_grad():
            ref = model(token.view(-1, 1), ref_cache, last_only=True)[:, -1]
        got = decoder.decode_step(token)
        torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    assert decoder.S == ref_cache.S == 11


def test_static_generate_equals_generate_and_reuses_its_cache() -> None:
    model = sweeps.random_model(SMALL, seed=3)
    decoder = StaticDecoder(model, 2, compile=False)
    for seed in (1, 2):  # the second request overwrites the first one's rows: stale rows stay masked
        prompt = _prompt(2, 4 + seed, SMALL.V, seed)
        assert decoder.generate(prompt, 9).tolist() == generate(model, prompt, 9).tokens


def test_static_cache_shapes_are_fixed_and_bytes_are_the_allocation() -> None:
    cache = StaticKVCache(SMALL, 2, S_max=20)
    k, v = cache.layer(1)
    assert k.shape == v.shape == (2, SMALL.H_kv, 20, SMALL.d_h)
    assert cache.nbytes == 2 * SMALL.L * 2 * SMALL.H_kv * 20 * SMALL.d_h * 4  # Eq. (2.2), S = S_max
    visible = cache.visible(torch.tensor([3]))
    assert visible.shape == (1, 1, 20) and visible.sum().item() == 4  # rows 0..3


def test_bad_input_is_rejected_before_anything_is_written() -> None:
    model = sweeps.random_model(SMALL)
    decoder = StaticDecoder(model, 1, compile=False)
    with pytest.raises(ValueError, match=r"token id 50 is out of range: ids must be in 0..49"):
        decoder.prefill(torch.tensor([[1, 50]]))
    decoder.prefill(torch.tensor([[1, 2, 3]]))
    before = [t.clone() for t in decoder.cache.layer(0)]
    with pytest.raises(ValueError, match=r"token id -1 is out of range"):
        decoder.decode_step(torch.tensor([-1]))
    with pytest.raises(ValueError, match=r"tokens hold B=2 sequences but the cache was built for B=1"):
        decoder.decode_step(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"tokens must be a torch.long tensor"):
        decoder.decode_step(torch.tensor([1.0]))
    assert decoder.S == 3
    assert all(torch.equal(a, b) for a, b in zip(before, decoder.cache.layer(0), strict=True))
    with pytest.raises(ValueError, match=r"max_new_tokens=31 does not fit.*allowed: max_new_tokens <= 30"):
        decoder.generate(torch.tensor([[1, 2, 3]]), 31)
    with pytest.raises(ValueError, match=r"max_new_tokens must be a positive integer"):
        decoder.generate(torch.tensor([[1]]), 0)
    with pytest.raises(ValueError, match=r"S_max must be an integer in 1..32"):
        StaticKVCache(SMALL, 1, S_max=33)


def test_the_fast_path_does_not_read_the_device() -> None:
    model = sweeps.random_model(SMALL)
    decoder = StaticDecoder(model, 1, compile=False)
    decoder.prefill(torch.tensor([[1, 2, 3]]))
    token = torch.tensor([4])
    checked = count_ops(lambda: decoder.decode_step(token))
    fast = count_ops(lambda: decoder.decode_step(token, check_inputs=False))
    assert checked[HOST_SYNC_OP] == 2  # int(min), int(max): the id check
    assert fast[HOST_SYNC_OP] == 0
    ops = count_ops(lambda: decoder.generate(torch.tensor([[1, 2, 3]]), 6))
    assert ops[HOST_SYNC_OP] == 2  # the prompt's check, once, not once per step


@pytest.fixture(scope=shared_scope)
def compiled() -> StaticDecoder:
    if not CAN_COMPILE:
        pytest.skip("torch.compile needs a C compiler (gcc or cc) on CPU, and none is on PATH")
    return StaticDecoder(sweeps.random_model(SMALL, seed=4), 2)


@pytest.mark.compiles
def test_compiled_step_equals_eager(compiled: StaticDecoder) -> None:
    model = compiled.model
    prompt = _prompt(2, 5, SMALL.V, seed=7)
    tokens = compiled.generate(prompt, 12).tolist()
    assert compiled.compile_s is not None and compiled.compile_s > 0
    assert tokens == generate(model, prompt, 12).tokens
    eager = StaticDecoder(model, 2, compile=False)
    compiled.prefill(prompt)
    eager.prefill(prompt)
    token = prompt[:, -1]
    for _ in range(8):
        got, want = compiled.decode_step(token), eager.decode_step(token)
        torch.testing.assert_close(got, want, atol=ATOL, rtol=RTOL)
        token = want.argmax(dim=-1)


@pytest.mark.compiles
def test_compiled_step_compiles_once(compiled: StaticDecoder) -> None:
    first = compiled.compile_s
    compiled.generate(_prompt(2, 3, SMALL.V, seed=8), 10)  # another prompt length, more steps: no recompile
    assert compiled.compile_s == first
    torch._dynamo.config.error_on_recompile = True
    try:
        compiled.generate(_prompt(2, 6, SMALL.V, seed=9), 5)
    finally:
        torch._dynamo.config.error_on_recompile = False


def test_static_forward_is_the_reference_for_prefill() -> None:
    model = sweeps.random_model(SMALL)
    cache = StaticKVCache(SMALL, 1)
    prompt = _prompt(1, 7, SMALL.V)
    with torch.no_grad():
        got = static_forward(model, prompt, cache, torch.arange(7))
        want = model(prompt)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_truncate_rewinds_the_static_cache() -> None:
    model = sweeps.random_model(SMALL)
    decoder = StaticDecoder(model, 1, compile=False)
    decoder.prefill(torch.tensor([[1, 2, 3]]))
    first = decoder.decode_step(torch.tensor([4]))
    decoder.cache.truncate(3)
    torch.testing.assert_close(decoder.decode_step(torch.tensor([4])), first, atol=0, rtol=0)
    with pytest.raises(ValueError, match=r"S must be an integer in 0..4 \(the tokens held\), got 5"):
        decoder.cache.truncate(5)


@settings(max_examples=examples(15), deadline=None)
@given(L=st.integers(1, 2), H_kv=st.sampled_from([1, 2, 4]), d_h=st.sampled_from([4, 8]), B=st.integers(1, 3),
       P=st.integers(1, 6), D=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_static_path_equals_the_model_over_random_shapes(L: int, H_kv: int, d_h: int, B: int, P: int, D: int,
                                                         seed: int) -> None:
    cfg = ModelConfig(L=L, H=4, H_kv=H_kv, d_h=d_h, d_ffn=16, V=17, S_max=16)
    model = sweeps.random_model(cfg, seed=seed)
    prompt, tokens = _prompt(B, P, cfg.V, seed), _prompt(B, D, cfg.V, seed + 1)
    decoder, cache = StaticDecoder(model, B, S_max=P + D, compile=False), model.new_cache(B, S_max=P + D)
    with torch.no_grad():
        want = [model(prompt, cache, last_only=True)[:, -1]] + [model(tokens[:, i : i + 1], cache)[:, -1]
                                                              for i in range(D)]
    got = [decoder.prefill(prompt)] + [decoder.decode_step(tokens[:, i]) for i in range(D)]  # the same ids fed to both
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
