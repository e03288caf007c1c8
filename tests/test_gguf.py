"""MiniGPT → GGUF, read back with gguf's own `GGUFReader` (no llama.cpp needed).

The check that matters is `reference_logits`: it computes logits from the file's tensors by llama.cpp's
`gpt2` graph, reading them by llama.cpp's names and shapes, never through the exporter's name table. So a
tensor written transposed (attn_output is square: no shape check sees it) or under a swapped name gives
other logits than MiniGPT's; the mutant tests below write such files and check that the comparison fails.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from mutation_pass import shared_scope

gguf = pytest.importorskip("gguf", reason="gguf is in requirements.txt (make install)")

from minigpt import MiniGPT, ModelConfig, generate, load_pretrained  # noqa: E402
from minigpt.interop import gguf as G  # noqa: E402
from minigpt.interop import gguf_reference, gguf_write  # noqa: E402
from minigpt.runtime.tokenizer import Tokenizer  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: f32 file vs MiniGPT, both in f32: only the order of f32 additions differs (numpy vs torch matmuls);
#: measured 4e-6 on logits of magnitude ~10.
F32_ATOL = 1e-4
PROMPT = "Yesterday I worked and he played ."


@pytest.fixture(scope=shared_scope)
def shipped():
    return load_pretrained()


@pytest.fixture(scope=shared_scope)
def ids(shipped) -> list[int]:
    return shipped.tokenizer.encode(PROMPT) + list(range(3, 12))


@pytest.fixture(scope=shared_scope)
def logits(shipped, ids) -> np.ndarray:
    with torch.no_grad():
        return shipped.model(torch.tensor([ids]))[0].numpy()


@pytest.fixture(scope=shared_scope)
def files(shipped, tmp_path_factory) -> dict[str, object]:
    d = tmp_path_factory.mktemp("gguf")
    return {ft: G.export_gguf(shipped.model, d / f"minigpt-{ft}.gguf", shipped.tokenizer, file_type=ft)
            for ft in G.FILE_TYPES}


def test_metadata_llama_cpp_reads(files, shipped) -> None:
    g = G.read_gguf(files["f32"])
    assert g.config == shipped.model.config
    assert g.tokenizer.vocab == shipped.tokenizer.vocab
    m = g.metadata
    assert m["general.architecture"] == "gpt2" and m["gpt2.block_count"] == 4
    assert m["gpt2.embedding_length"] == 64 and m["gpt2.feed_forward_length"] == 256
    assert m["gpt2.attention.head_count"] == m["gpt2.attention.head_count_kv"] == 4
    assert m["gpt2.context_length"] == 128
    assert m["tokenizer.ggml.model"] == "whitespace" and m["tokenizer.ggml.pre"] == "llama-bpe"
    assert m["tokenizer.ggml.add_bos_token"] is False and m["tokenizer.ggml.eos_token_id"] == 0
    assert m["tokenizer.ggml.normalizer.lowercase"] is False  # llama.cpp's default lowercases
    reader = gguf.GGUFReader(str(files["f32"]))
    types = reader.get_field("tokenizer.ggml.token_type").contents()
    assert types[0] == gguf.TokenType.CONTROL and set(types[1:]) == {gguf.TokenType.NORMAL}


def test_tensor_names_and_shapes_are_llama_cpps(files) -> None:
    """The names and ggml shapes llama.cpp's `llama_model_gpt2::load_arch_tensors` asks for (ggml order
    {n_in, n_out}); no `output.weight` (the head is tied)."""
    reader = gguf.GGUFReader(str(files["f32"]))
    shapes = {t.name: [int(n) for n in t.shape] for t in reader.tensors}
    assert shapes["token_embd.weight"] == [64, 600] and shapes["position_embd.weight"] == [64, 128]
    assert shapes["blk.0.attn_qkv.weight"] == [64, 192] and shapes["blk.0.attn_qkv.bias"] == [192]
    assert shapes["blk.3.ffn_up.weight"] == [64, 256] and shapes["blk.3.ffn_down.weight"] == [256, 64]
    assert "output.weight" not in shapes and len(shapes) == 4 + 12 * 4


def test_f32_file_computes_minigpts_logits(files, ids, logits) -> None:
    ref = G.reference_logits(files["f32"], ids)
    np.testing.assert_allclose(ref, logits, atol=F32_ATOL, rtol=0)


def test_load_gguf_round_trip_is_exact(files, shipped) -> None:
    model, tokenizer = G.load_gguf(files["f32"])
    theirs = model.state_dict()
    for name, t in shipped.model.state_dict().items():
        assert torch.equal(theirs[name], t), name
    assert tokenizer.vocab == shipped.tokenizer.vocab


def _mutant(tmp_path, shipped, monkeypatch, change) -> object:
    original = G.gguf_tensors

    def mutated(model, file_type="f32"):
        tensors = original(model, file_type)
        change(tensors)
        return tensors

    monkeypatch.setattr(gguf_write, "gguf_tensors", mutated)
    return G.export_gguf(shipped.model, tmp_path / "mutant.gguf", shipped.tokenizer)


@pytest.mark.parametrize("change", ["transpose attn_output", "swap attn_norm/ffn_norm", "swap q/k rows"])
def test_mutant_file_fails_the_check(change, tmp_path, shipped, monkeypatch, ids, logits) -> None:
    """Bugs the f32 check catches: a square matrix written transposed (its shape is right), two tensors of
    one shape under each other's names, the fused qkv's q and k blocks in the wrong order."""
    def edit(tensors):
        if change == "transpose attn_output":
            data, q = tensors["blk.1.attn_output.weight"]
            tensors["blk.1.attn_output.weight"] = (np.ascontiguousarray(data.T), q)
        elif change == "swap attn_norm/ffn_norm":
            a, b = "blk.2.attn_norm.weight", "blk.2.ffn_norm.weight"
            tensors[a], tensors[b] = tensors[b], tensors[a]
        else:
            data, q = tensors["blk.0.attn_qkv.weight"]
            tensors["blk.0.attn_qkv.weight"] = (np.concatenate([data[64:128], data[:64], data[128:]]), q)

    path = _mutant(tmp_path, shipped, monkeypatch, edit)
    G.read_gguf(path)  # names and shapes still pass: only the values tell
    assert np.abs(G.reference_logits(path, ids) - logits).max() > 100 * F32_ATOL


@pytest.mark.parametrize("file_type", ["f16", "q8_0"])
def test_quantized_weights_within_their_rounding(file_type, files, shipped) -> None:
    """Matrices stored in the file type, within its rounding: f16 half an ulp (2^-11 relative), q8_0 half a
    step of each 32-value block's scale max|w|/127 (plus the scale's own f16 rounding); norms, biases and
    positions stay f32 and exact."""
    g = G.read_gguf(files[file_type])
    names = G.tensor_names(shipped.model.config)
    state = shipped.model.state_dict()
    expected_type = {"f16": "F16", "q8_0": "Q8_0"}[file_type]
    for ours, theirs in names.items():
        w, got = state[ours].numpy(), g.tensors[theirs]
        if w.ndim == 1 or theirs == "position_embd.weight":
            assert g.types[theirs] == "F32" and np.array_equal(got, w), theirs
            continue
        assert g.types[theirs] == expected_type, theirs
        err = np.abs(got - w)
        if file_type == "f16":
            assert (err <= np.abs(w) * 2.0**-11 + 2.0**-25).all(), theirs
        else:
            blocks = np.abs(w).reshape(w.shape[0], -1, 32).max(-1, keepdims=True) / 127
            bound = np.broadcast_to(blocks * 0.5 * (1 + 2.0**-10) + 128 * blocks * 2.0**-11, (*blocks.shape[:2], 32))
            assert (err <= bound.reshape(w.shape) + 1e-7).all(), theirs


#: Measured max |logit diff| vs f32 on the test's prompt: f16 0.0032, q8_0 0.051 (logits of magnitude ~10).
QUANT_ATOL = {"f16": 0.01, "q8_0": 0.1}


@pytest.mark.parametrize("file_type", ["f16", "q8_0"])
def test_quantized_files_logits_close(file_type, files, ids, logits) -> None:
    diff = np.abs(G.reference_logits(files[file_type], ids) - logits).max()
    assert 10 * F32_ATOL < diff < QUANT_ATOL[file_type]


def test_f16_keeps_the_greedy_continuation(files, shipped) -> None:
    """f16 keeps it; q8_0 does not always: the grammar's choices (which subject, which object) are near
    ties (top-2 logit gaps of 0.005-0.01 measured), below q8_0's logit error, so its continuation departs
    at such a tie (measured on "Yesterday I worked": step 3, "he" for "I")."""
    model, _ = G.load_gguf(files["f16"])
    for text in ("Yesterday I worked", "Every morning the", "Tomorrow she will"):
        prompt = torch.tensor([shipped.tokenizer.encode(text)])
        assert generate(model, prompt, 16).tokens == generate(shipped.model, prompt, 16).tokens


def test_the_reference_gelu_returns_float32_as_ggml_does() -> None:
    """The exact GELU of the reference computes in float64 and returns float32, the dtype ggml's activations have
    (guards the float64 result kept: every later product of the reference would run in double)."""
    x = np.array([-1.0, 0.0, 0.5], dtype=np.float32)
    assert gguf_reference._gelu_erf(x).dtype == np.float32


def test_gelu_is_the_one_difference_of_form(files, ids, logits) -> None:
    """llama.cpp's GPT-2 GELU (tanh form, fp16 table) moves MiniGPT's logits by ~1e-3: far above f32
    rounding, so an f32 comparison with llama.cpp must allow for it or compute it (`gelu="ggml"`)."""
    g = G.read_gguf(files["f32"])
    diff = np.abs(G.reference_logits(g, ids, gelu="ggml") - logits).max()
    assert 10 * F32_ATOL < diff < 1e-2


def test_ggml_gelu_amplifies_f32_rounding(files, ids, monkeypatch) -> None:
    """Why llama.cpp's f32 logits differ from the same graph in numpy by more than f32 rounding: ggml's
    GELU reads a table at its input rounded to fp16, so a one-ulp change of an input near an fp16 rounding
    boundary changes the output by a whole fp16 step. Measured on 44 tokens: inputs perturbed by 1e-7
    (relative) move the logits 6e-5 through ggml's GELU, 6e-6 through erf's; by 1e-6, 1.6e-3 against 2.2e-5."""
    g = G.read_gguf(files["f32"])
    moved = {}
    for gelu, name in (("erf", "_gelu_erf"), ("ggml", "_gelu_ggml")):
        base = G.reference_logits(g, ids, gelu=gelu)
        f, rng = getattr(gguf_reference, name), np.random.default_rng(0)
        monkeypatch.setattr(gguf_reference, name, lambda x, f=f, rng=rng: f(
            (x * (1 + rng.uniform(-1e-6, 1e-6, x.shape))).astype(np.float32)))
        moved[gelu] = np.abs(G.reference_logits(g, ids, gelu=gelu) - base).max()
        monkeypatch.setattr(gguf_reference, name, f)
    assert moved["ggml"] > 5 * moved["erf"]


def test_gqa_model_exports_with_head_count_kv(tmp_path) -> None:
    pre = load_pretrained(name="minigpt-gqa2")
    assert pre.model.config.H_kv == 2
    path = G.export_gguf(pre.model, tmp_path / "gqa.gguf", pre.tokenizer)
    g = G.read_gguf(path)
    assert g.config == pre.model.config and g.metadata["gpt2.attention.head_count_kv"] == 2
    ids = pre.tokenizer.encode(PROMPT)
    with torch.no_grad():
        want = pre.model(torch.tensor([ids]))[0].numpy()
    np.testing.assert_allclose(G.reference_logits(g, ids), want, atol=F32_ATOL, rtol=0)


def test_bad_input_names_the_parameter(tmp_path, shipped) -> None:
    with pytest.raises(ValueError, match="file_type must be one of"):
        G.export_gguf(shipped.model, tmp_path / "x.gguf", shipped.tokenizer, file_type="q4_0")
    with pytest.raises(ValueError, match="tokenizer has V=3"):
        G.export_gguf(shipped.model, tmp_path / "x.gguf", Tokenizer(["<pad>", "a", "b"]))
    odd = MiniGPT(ModelConfig(L=1, H=2, H_kv=2, d_h=8, d_ffn=48, V=3, S_max=8))
    with pytest.raises(ValueError, match="multiples of 32"):
        G.export_gguf(odd, tmp_path / "x.gguf", Tokenizer(["<pad>", "a", "b"]), file_type="q8_0")
    assert not list(tmp_path.iterdir())  # nothing half-written
    with pytest.raises(ValueError, match="gelu must be"):
        G.reference_logits(tmp_path / "x.gguf", [1], gelu="tanh")
    with pytest.raises(ValueError, match="inputs must be one of"):
        G.reference_logits(tmp_path / "x.gguf", [1], inputs="q4_0")
    with pytest.raises(FileNotFoundError):
        G.read_gguf(tmp_path / "absent.gguf")


def test_other_architecture_is_refused(tmp_path) -> None:
    w = gguf.GGUFWriter(str(tmp_path / "llama.gguf"), "llama")
    w.add_block_count(1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ValueError, match="general.architecture must be 'gpt2'"):
        G.read_gguf(tmp_path / "llama.gguf")
