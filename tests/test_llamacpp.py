"""MiniGPT's GGUF file run by llama.cpp (llama-cpp-python): the logits, the greedy continuation, the
tokenizer and the meters agree with MiniGPT's, within tolerances each explained below.

These tests need `llama_cpp` (marker `llamacpp`): `make install` installs it from the wheel in
wheels/. Where it is absent the run fails, unless MINIGPT_SKIP_LLAMACPP=1, which skips them and says so
in the run's last line (tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from minigpt import generate, load_pretrained
from minigpt.interop import gguf as G

pytestmark = [pytest.mark.llamacpp, pytest.mark.usefixtures("one_torch_thread")]

PROMPT = "Yesterday I worked and he played ."
#: llama.cpp f32 vs the numpy forward of the same graph with llama.cpp's GELU: f32 rounding only (other
#: summation orders, SIMD dot products), measured ~5e-6 on logits of magnitude ~10.
ROUNDING_ATOL = 1e-4
#: llama.cpp f32 vs MiniGPT: the GELU's form (tanh approximation through an fp16 table vs erf) moves the
#: logits by ~1.5e-3 (tests/test_gguf.py computes it without llama.cpp).
GELU_ATOL = 1e-2


@pytest.fixture(scope="module")
def shipped():
    return load_pretrained()


@pytest.fixture(scope="module")
def ids(shipped) -> list[int]:
    return shipped.tokenizer.encode(PROMPT) + list(range(3, 40))


@pytest.fixture(scope="module")
def minigpt_logits(shipped, ids) -> np.ndarray:
    with torch.no_grad():
        return shipped.model(torch.tensor([ids]))[0].numpy()


@pytest.fixture(scope="module")
def files(shipped, tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("gguf")
    return {ft: G.export_gguf(shipped.model, d / f"minigpt-{ft}.gguf", shipped.tokenizer, file_type=ft)
            for ft in G.FILE_TYPES}


@pytest.fixture(scope="module")
def llamacpp():
    from minigpt.interop import llamacpp

    return llamacpp


@pytest.fixture(scope="module")
def exact(files, llamacpp):
    """The f32 file with an f32 KV cache and no flash attention: nothing rounded below f32 but the GELU."""
    return llamacpp.open_gguf(files["f32"], kv_type="f32")


def test_f32_logits_are_the_graph_with_ggmls_gelu(exact, llamacpp, files, ids, minigpt_logits) -> None:
    ours = llamacpp.logits(exact, ids)
    ggml = G.reference_logits(files["f32"], ids, gelu="ggml")
    np.testing.assert_allclose(ours, ggml, atol=ROUNDING_ATOL, rtol=0)
    gap = np.abs(ours - minigpt_logits).max()
    assert 10 * ROUNDING_ATOL < gap < GELU_ATOL  # the GELU, and nothing else, separates them


def test_greedy_continuation_equal(exact, llamacpp, shipped) -> None:
    for text in ("Yesterday I worked", "Tomorrow she will"):
        prompt = shipped.tokenizer.encode(text)
        want = generate(shipped.model, torch.tensor([prompt]), 24).tokens[0]
        assert llamacpp.greedy(exact, prompt, 24) == want, text


def test_llama_cpps_tokenizer_is_minigpts(exact, shipped) -> None:
    text = "Yesterday I worked and he played . Every morning the cat sleeps ."
    assert exact.tokenize(text.encode(), add_bos=False, special=False) == shipped.tokenizer.encode(text)


@pytest.mark.parametrize("file_type,kv_type,atol", [
    ("f32", "f16", 0.02), ("f16", "f16", 0.05), ("q8_0", "f16", 0.2),
])
def test_default_settings_and_quantized_files(file_type, kv_type, atol, files, llamacpp, ids,
                                              minigpt_logits) -> None:
    """What a reader gets with llama.cpp's default f16 KV cache, and with f16 and q8_0 weights (which also
    round the activations each matmul reads to f16 or q8_0): bounds a few times the measured maxima."""
    llm = llamacpp.open_gguf(files[file_type], kv_type=kv_type)
    gap = np.abs(llamacpp.logits(llm, ids) - minigpt_logits).max()
    assert gap < atol


def test_meters_count_prompt_and_steps(exact, llamacpp, shipped) -> None:
    prompt = shipped.tokenizer.encode(PROMPT)
    m = llamacpp.request_meters(exact, prompt, 8)
    assert (m.n_prompt, m.n_eval) == (len(prompt), 8)
    assert 0 < m.prompt_eval_ms and 0 < m.eval_ms and len(m.wall_steps_s) == 8
    assert "ms per token" in m.log_lines()[0] and m.log_lines()[1].strip().startswith("eval time")


def test_bad_input_names_the_parameter(files, llamacpp, exact) -> None:
    with pytest.raises(ValueError, match="kv_type must be"):
        llamacpp.open_gguf(files["f32"], kv_type="q8_0")
    with pytest.raises(ValueError, match="ids must be"):
        llamacpp.logits(exact, [600])
    with pytest.raises(ValueError, match="at least 2 tokens"):
        llamacpp.request_meters(exact, [5], 4)
