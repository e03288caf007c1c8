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
from mutation_pass import shared_scope

from minigpt import generate, load_pretrained
from minigpt.interop import gguf as G

pytestmark = [pytest.mark.llamacpp, pytest.mark.usefixtures("one_torch_thread")]

PROMPT = "Yesterday I worked and he played ."
#: llama.cpp f32 (f32 KV cache, no flash attention) vs the numpy forward of the same graph with ggml's GELU:
#: f32 summation orders differ (ggml's SIMD dot products, numpy's BLAS), and the GELU's table, indexed by
#: its input rounded to fp16, turns a one-ulp difference of an input near an fp16 rounding boundary into a
#: whole fp16 step (tests/test_gguf.py::test_ggml_gelu_amplifies_f32_rounding); measured 3.7e-4 on
#: logits up to 21, where the same graph with erf's smooth GELU stays within ~1e-5.
TABLE_ATOL = 2e-3
#: llama.cpp f32 vs MiniGPT: the GELU's form on top (tanh approximation through the fp16 table vs erf);
#: measured 6.4e-3.
GELU_ATOL = 2e-2


@pytest.fixture(scope=shared_scope)
def shipped():
    return load_pretrained()


@pytest.fixture(scope=shared_scope)
def ids(shipped) -> list[int]:
    return shipped.tokenizer.encode(PROMPT) + list(range(3, 40))


@pytest.fixture(scope=shared_scope)
def minigpt_logits(shipped, ids) -> np.ndarray:
    with torch.no_grad():
        return shipped.model(torch.tensor([ids]))[0].numpy()


@pytest.fixture(scope=shared_scope)
def files(shipped, tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("gguf")
    return {ft: G.export_gguf(shipped.model, d / f"minigpt-{ft}.gguf", shipped.tokenizer, file_type=ft)
            for ft in G.FILE_TYPES}


@pytest.fixture(scope=shared_scope)
def llamacpp():
    from minigpt.interop import llamacpp

    return llamacpp


@pytest.fixture(scope=shared_scope)
def exact(files, llamacpp):
    """The f32 file with an f32 KV cache and no flash attention: nothing rounded below f32 but the GELU."""
    return llamacpp.open_gguf(files["f32"], kv_type="f32")


def test_f32_logits_are_the_graph_with_ggmls_gelu(exact, llamacpp, files, ids, minigpt_logits) -> None:
    """Bugs it catches: a tensor llama.cpp reads other than the exporter meant (names, layout, the qkv
    split, the tied head), an eps or a context setting that changes the arithmetic."""
    ours = llamacpp.logits(exact, ids)
    ggml = G.reference_logits(files["f32"], ids, gelu="ggml")
    to_graph = np.abs(ours - ggml).max()
    to_minigpt = np.abs(ours - minigpt_logits).max()
    assert to_graph < TABLE_ATOL and to_minigpt < GELU_ATOL
    assert to_graph < to_minigpt / 4  # the GELU's form is most of the gap to MiniGPT


def test_greedy_continuation_equal(exact, llamacpp, shipped) -> None:
    for text in ("Yesterday I worked", "Tomorrow she will"):
        prompt = shipped.tokenizer.encode(text)
        want = generate(shipped.model, torch.tensor([prompt]), 24).tokens[0]
        assert llamacpp.greedy(exact, prompt, 24) == want, text


def test_llama_cpps_tokenizer_is_minigpts(exact, shipped) -> None:
    """llama.cpp's `whitespace` tokenizer on MiniGPT's words: case kept (its default lowercases), "." a
    word, "<pad>" a control token read only with special=True."""
    text = "Yesterday I worked and he played . Every morning the"
    assert exact.tokenize(text.encode(), add_bos=False, special=False) == shipped.tokenizer.encode(text)
    assert exact.tokenize(b"<pad> I", add_bos=False, special=True) == [0, shipped.tokenizer.id_of("I")]


def test_q8_0_is_the_graph_with_q8_0_activations(files, llamacpp, ids, minigpt_logits) -> None:
    """q8_0 moves the logits by ~0.3 (measured 0.31): not the weights' rounding alone (0.05 through the
    numpy graph), but ggml's CPU matmul, which quantizes each activation row to q8_0 blocks before the dot
    with q8_0 weights. The graph computed that way matches llama.cpp to f32 rounding (measured 5.7e-6)."""
    llm = llamacpp.open_gguf(files["q8_0"], kv_type="f32")
    ours = llamacpp.logits(llm, ids)
    as_ggml_reads = G.reference_logits(files["q8_0"], ids, gelu="ggml", inputs="q8_0")
    np.testing.assert_allclose(ours, as_ggml_reads, atol=1e-3, rtol=0)
    assert 0.05 < np.abs(ours - minigpt_logits).max() < 1.0


@pytest.mark.parametrize("file_type,atol", [("f32", 0.05), ("f16", 0.05), ("q8_0", 1.0)])
def test_default_f16_kv_cache(file_type, atol, files, llamacpp, ids, minigpt_logits) -> None:
    """What a reader gets with llama.cpp's default f16 KV cache (K and V rounded when written; q and the
    softmax weights rounded to f16 for the two products with them): max |logit diff| vs MiniGPT measured
    1.2e-2 (f32 and f16 weights), 0.32 (q8_0); the graph computed with those roundings comes within 4.5e-3
    of llama.cpp (f32 weights; the rest: f16 rounding flips amplified as the GELU table's are)."""
    llm = llamacpp.open_gguf(files[file_type], kv_type="f16")
    ours = llamacpp.logits(llm, ids)
    assert np.abs(ours - minigpt_logits).max() < atol
    emulated = G.reference_logits(files[file_type], ids, gelu="ggml", inputs=file_type, kv="f16")
    assert np.abs(ours - emulated).max() < 0.05


def test_meters_count_prompt_and_steps(exact, llamacpp, shipped) -> None:
    prompt = shipped.tokenizer.encode(PROMPT)
    m = llamacpp.request_meters(exact, prompt, 8)
    assert (m.n_prompt, m.n_eval) == (len(prompt), 8)
    assert 0 < m.prompt_eval_ms and 0 < m.eval_ms and len(m.wall_steps_s) == 8
    assert "ms per token" in m.log_lines()[0] and m.log_lines()[1].strip().startswith("eval time")


def test_bad_input_names_the_parameter(files, llamacpp, exact) -> None:
    with pytest.raises(ValueError, match="kv_type must be"):
        llamacpp.open_gguf(files["f32"], kv_type="q8_0")
    with pytest.raises(FileNotFoundError, match=r"nowhere\.gguf does not exist"):
        llamacpp.open_gguf(files["f32"].parent / "nowhere.gguf")
    with pytest.raises(ValueError, match="ids must be"):
        llamacpp.logits(exact, [600])
    with pytest.raises(ValueError, match="at least 2 tokens"):
        llamacpp.request_meters(exact, [5], 4)


def test_greedy_reaches_the_last_position_and_evaluates_no_token_past_it(exact, llamacpp, shipped) -> None:
    """D may run the sequence to the file's last position (len(ids) + D = context + 1: the last token is
    sampled, never evaluated); a loop that also evaluates the last sampled token asks llama.cpp for a
    position past the context. Equal to MiniGPT's greedy tokens there too."""
    prompt = shipped.tokenizer.encode(PROMPT)
    D = llamacpp.context(exact) + 1 - len(prompt)
    want = generate(shipped.model, torch.tensor([prompt]), D).tokens[0]
    assert llamacpp.greedy(exact, prompt, D) == want
    assert exact.n_tokens == len(prompt) + D - 1  # the tokens llama.cpp evaluated: the last is only sampled


def test_the_version_record_names_an_unset_thread_count_as_empty(llamacpp, monkeypatch) -> None:
    """`llama_cpp_version()` goes into every sweep's data: an unset OMP_NUM_THREADS is recorded as "" (a
    JSON string, as when it is set), not None."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert llamacpp.llama_cpp_version()["threads_env"] == ""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert llamacpp.llama_cpp_version()["threads_env"] == "1"


def test_verbose_passes_llama_cpps_log_through(files, llamacpp, capfd) -> None:
    """`open_gguf(verbose=True)` lets llama.cpp write its loading log (to the process's stderr, below
    Python's), `verbose=False` silences it: the flag reaches `Llama(verbose=...)`."""
    capfd.readouterr()
    llamacpp.open_gguf(files["f32"], verbose=False)
    quiet = capfd.readouterr().err
    llamacpp.open_gguf(files["f32"], verbose=True)
    loud = capfd.readouterr().err
    assert len(loud) > len(quiet) + 200 and "llama" in loud.lower(), (len(quiet), loud[:200])
