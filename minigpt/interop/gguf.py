"""MiniGPT → GGUF, the file llama.cpp runs, and one read back with `gguf`'s own reader.

llama.cpp knows MiniGPT's architecture as `gpt2` (`src/models/gpt2.cpp`): token + learned position
embeddings, pre-LayerNorm blocks with biases, a fused qkv, a GELU MLP, a final LayerNorm and the LM head
tied to the token embedding (no `output.weight`: llama.cpp duplicates `token_embd.weight`). GGUF stores
a matrix with ggml's shape `{n_in, n_out}`, which is numpy's `[n_out, n_in]`: exactly `nn.Linear`'s
weight, so MiniGPT's matrices go in untransposed (llama.cpp's `convert_hf_to_gguf.py` transposes GPT-2's
`Conv1D` weights to reach the same layout). The qkv rows are q, then k, then v, head by head, as in
llama.cpp's `build_qkv`; with `head_count_kv` = H_kv the same graph runs GQA and MQA.

One difference of arithmetic stays: MiniGPT's GELU is the exact erf form; llama.cpp's GPT-2 graph calls
`ggml_gelu`, the tanh approximation, which ggml's CPU backend reads from a table indexed by the input
rounded to fp16 (`GGML_GELU_FP16` in `ggml-cpu/vec.h`). `reference_logits(..., gelu="ggml")` computes
that form, so a comparison can separate the activation from everything else.

The vocabulary: llama.cpp's `whitespace` tokenizer model (split on whitespace, each word looked up
whole with the `llama-bpe` pre-tokenizer, which skips merges for a word in the vocabulary) reproduces
MiniGPT's word-level `Tokenizer.encode`; the words go in as they are (ASCII, so GPT-2's byte-to-unicode
map leaves them unchanged). Token ids can also be fed to llama.cpp directly, without its tokenizer.

Writing needs `gguf` (llama.cpp's Python package) and numpy; torch is touched only to read the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from minigpt.config import ModelConfig
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.tokenizer import PAD, Tokenizer

#: llama.cpp's architecture name for MiniGPT's graph.
ARCH = "gpt2"
#: MiniGPT's LayerNorm eps (torch's default).
LAYER_NORM_EPS = 1e-5
#: The file types written: matrices in this type; 1-D tensors (norms, biases) and positions stay f32,
#: as llama.cpp's converter does.
FILE_TYPES = ("f32", "f16", "q8_0")
#: Tokenizer model and pre-tokenizer llama.cpp reads (`llama-vocab.cpp`).
TOKENIZER_MODEL = "whitespace"
TOKENIZER_PRE = "llama-bpe"

#: MiniGPT parameter → GGUF tensor (llama.cpp's `LLM_TENSOR_*` names for `gpt2`).
_TOP = {"tok_emb.weight": "token_embd.weight", "pos_emb.weight": "position_embd.weight",
        "ln_f.weight": "output_norm.weight", "ln_f.bias": "output_norm.bias"}
_BLOCK = {
    "ln1.weight": "attn_norm.weight", "ln1.bias": "attn_norm.bias",
    "attn.qkv.weight": "attn_qkv.weight", "attn.qkv.bias": "attn_qkv.bias",
    "attn.out.weight": "attn_output.weight", "attn.out.bias": "attn_output.bias",
    "ln2.weight": "ffn_norm.weight", "ln2.bias": "ffn_norm.bias",
    "mlp.up.weight": "ffn_up.weight", "mlp.up.bias": "ffn_up.bias",
    "mlp.down.weight": "ffn_down.weight", "mlp.down.bias": "ffn_down.bias",
}


def _gguf():
    try:
        import gguf
    except ImportError as e:  # pragma: no cover - the package is pinned in requirements.txt
        raise ImportError("GGUF export needs the 'gguf' package: pip install 'minigpt[gguf]'") from e
    return gguf


def tensor_names(config: ModelConfig) -> dict[str, str]:
    """MiniGPT parameter name → GGUF tensor name, for every parameter of a model of this shape."""
    names = dict(_TOP)
    for i in range(config.L):
        names.update({f"blocks.{i}.{ours}": f"blk.{i}.{theirs}" for ours, theirs in _BLOCK.items()})
    return names


def _storage_type(name: str, ndim: int, file_type: str):
    """The GGML type a tensor is stored in: 1-D tensors and the position table stay f32 (as in llama.cpp's
    converter, `conversion/base.py`: norms and biases are read in f32, `POS_EMBD` is never quantized)."""
    q = _gguf().GGMLQuantizationType
    if ndim <= 1 or name == "position_embd.weight":
        return q.F32
    return {"f32": q.F32, "f16": q.F16, "q8_0": q.Q8_0}[file_type]


def gguf_tensors(model: MiniGPT, file_type: str = "f32") -> dict[str, tuple[np.ndarray, Any]]:
    """GGUF name → (array as stored, GGML type): f32/f16 arrays, or Q8_0's raw blocks (uint8)."""
    if file_type not in FILE_TYPES:
        raise ValueError(f"file_type must be one of {FILE_TYPES}, got {file_type!r}")
    gguf = _gguf()
    state = model.state_dict()
    out = {}
    for ours, theirs in tensor_names(model.config).items():
        data = state[ours].detach().to("cpu").float().numpy()
        qtype = _storage_type(theirs, data.ndim, file_type)
        out[theirs] = (gguf.quants.quantize(data, qtype), qtype)
    return out


def export_gguf(model: MiniGPT, path: Path | str, tokenizer: Tokenizer, *, file_type: str = "f32",
                name: str = "MiniGPT") -> Path:
    """Write `model` and `tokenizer` as one GGUF file llama.cpp loads (architecture `gpt2`); written whole,
    then renamed, so a failure leaves no half file. `file_type`: "f32", "f16" or "q8_0" (the matrices)."""
    if file_type not in FILE_TYPES:
        raise ValueError(f"file_type must be one of {FILE_TYPES}, got {file_type!r}")
    if not isinstance(tokenizer, Tokenizer):
        raise ValueError(f"tokenizer must be a minigpt Tokenizer, got {type(tokenizer).__name__}")
    c = model.config
    if tokenizer.V != c.V:
        raise ValueError(f"tokenizer has V={tokenizer.V} tokens but the model has V={c.V}")
    if file_type == "q8_0":
        bad = {k: v for k, v in (("d", c.d), ("d_ffn", c.d_ffn), ("H·d_h", c.H * c.d_h)) if v % 32}
        if bad:
            raise ValueError(f"q8_0 stores rows in blocks of 32 values: {bad} must be multiples of 32")
    gguf = _gguf()
    path = Path(path)
    ftype = {"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
             "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[file_type]
    tensors = gguf_tensors(model, file_type)
    tmp = path.with_name(path.name + ".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(tmp), ARCH)
    try:
        w.add_name(name)
        w.add_context_length(c.S_max)
        w.add_embedding_length(c.d)
        w.add_feed_forward_length(c.d_ffn)
        w.add_block_count(c.L)
        w.add_head_count(c.H)
        w.add_head_count_kv(c.H_kv)
        w.add_key_length(c.d_h)
        w.add_value_length(c.d_h)
        w.add_layer_norm_eps(LAYER_NORM_EPS)
        w.add_file_type(ftype)
        w.add_vocab_size(c.V)
        _add_tokenizer(w, tokenizer)
        for theirs, (data, qtype) in tensors.items():
            quantized = qtype not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16)
            w.add_tensor(theirs, data, raw_dtype=qtype if quantized else None)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    except BaseException:
        w.close()
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return path


def _add_tokenizer(w, tokenizer: Tokenizer) -> None:
    """MiniGPT's words for llama.cpp's `whitespace` tokenizer; "<pad>" a control token.

    MiniGPT has no BOS/EOS: none is added, and llama.cpp's BPE defaults (id 11 for both, a real word
    here) are replaced by "<pad>", which the model never predicts. llama.cpp requires a merges key for a
    BPE-family vocabulary and gguf-py writes no empty array, so it holds one merge that never fires
    ("<pad>" is never a symbol of split text); the `llama-bpe` pre-tokenizer looks each vocabulary word
    up whole without merging.
    """
    gguf = _gguf()
    vocab = tokenizer.vocab
    w.add_tokenizer_model(TOKENIZER_MODEL)
    w.add_tokenizer_pre(TOKENIZER_PRE)
    w.add_token_list(vocab)
    w.add_token_types([gguf.TokenType.CONTROL if t == PAD else gguf.TokenType.NORMAL for t in vocab])
    w.add_token_merges([f"{PAD} {PAD}"])
    w.add_bool("tokenizer.ggml.normalizer.lowercase", False)  # llama.cpp lowercases by default; MiniGPT's
    w.add_bool("tokenizer.ggml.normalizer.strip_accents", False)  # words are case-sensitive
    w.add_bos_token_id(tokenizer.pad_id)
    w.add_eos_token_id(tokenizer.pad_id)
    w.add_pad_token_id(tokenizer.pad_id)
    w.add_add_bos_token(False)
    w.add_add_eos_token(False)


@dataclass(frozen=True)
class GGUFModel:
    """What a GGUF file holds, read with `gguf.GGUFReader`: the shape, the tensors (dequantized to f32,
    numpy's `[n_out, n_in]` order) by GGUF name, their stored types, the tokenizer and the metadata."""

    config: ModelConfig
    tensors: dict[str, np.ndarray]
    types: dict[str, str]
    tokenizer: Tokenizer
    metadata: dict[str, Any]


def _field(reader, key: str, path: Path) -> Any:
    field = reader.get_field(key)
    if field is None:
        raise ValueError(f"{path} has no metadata key {key!r} (not a MiniGPT GGUF)")
    return field.contents()


def read_gguf(path: Path | str) -> GGUFModel:
    """Read a GGUF written by `export_gguf` (or any llama.cpp `gpt2` file of MiniGPT's form) with gguf's
    own reader; every tensor's shape is checked against the shape llama.cpp's `gpt2` loader expects."""
    gguf = _gguf()
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    reader = gguf.GGUFReader(str(path))
    arch = _field(reader, "general.architecture", path)
    if arch != ARCH:
        raise ValueError(f"{path}: general.architecture must be {ARCH!r} for MiniGPT, got {arch!r}")
    k = f"{ARCH}."
    d, H = _field(reader, k + "embedding_length", path), _field(reader, k + "attention.head_count", path)
    kv = reader.get_field(k + "attention.head_count_kv")
    eps = _field(reader, k + "attention.layer_norm_epsilon", path)
    if abs(eps / LAYER_NORM_EPS - 1) > 1e-6:  # stored as f32
        raise ValueError(f"{path}: layer_norm_epsilon must be {LAYER_NORM_EPS} (MiniGPT's LayerNorm), got {eps}")
    words = _field(reader, "tokenizer.ggml.tokens", path)
    tokenizer = Tokenizer(words)
    if d % H:
        raise ValueError(f"{path}: embedding_length={d} must be a multiple of head_count={H}")
    config = ModelConfig(L=_field(reader, k + "block_count", path), H=H,
                         H_kv=kv.contents() if kv is not None else H, d_h=d // H,
                         d_ffn=_field(reader, k + "feed_forward_length", path), V=len(words),
                         S_max=_field(reader, k + "context_length", path))
    tensors, types = {}, {}
    for t in reader.tensors:
        shape = tuple(int(n) for n in reversed(t.shape))  # ggml's {n_in, n_out} → numpy's [n_out, n_in]
        tensors[t.name] = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), np.float32).reshape(shape)
        types[t.name] = t.tensor_type.name
    expected = _expected_shapes(config)
    missing, unknown = sorted(set(expected) - set(tensors)), sorted(set(tensors) - set(expected))
    if missing or unknown:
        raise ValueError(f"{path}: tensors do not fit {config}: missing {missing[:5]}, unexpected {unknown[:5]}")
    wrong = {n: (tensors[n].shape, s) for n, s in expected.items() if tensors[n].shape != s}
    if wrong:
        raise ValueError(f"{path}: tensor shapes (got, expected) differ: {dict(list(wrong.items())[:5])}")
    metadata = {f.name: f.contents() for f in reader.fields.values()
                if not f.name.startswith(("GGUF.", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type"))}
    return GGUFModel(config, tensors, types, tokenizer, metadata)


def _expected_shapes(c: ModelConfig) -> dict[str, tuple[int, ...]]:
    """llama.cpp's `llama_model_gpt2::load_arch_tensors` shapes, numpy order ([n_out, n_in])."""
    qkv = (c.H + 2 * c.H_kv) * c.d_h
    shapes = {"token_embd.weight": (c.V, c.d), "position_embd.weight": (c.S_max, c.d),
              "output_norm.weight": (c.d,), "output_norm.bias": (c.d,)}
    for i in range(c.L):
        b = f"blk.{i}."
        shapes.update({
            b + "attn_norm.weight": (c.d,), b + "attn_norm.bias": (c.d,),
            b + "attn_qkv.weight": (qkv, c.d), b + "attn_qkv.bias": (qkv,),
            b + "attn_output.weight": (c.d, c.H * c.d_h), b + "attn_output.bias": (c.d,),
            b + "ffn_norm.weight": (c.d,), b + "ffn_norm.bias": (c.d,),
            b + "ffn_up.weight": (c.d_ffn, c.d), b + "ffn_up.bias": (c.d_ffn,),
            b + "ffn_down.weight": (c.d, c.d_ffn), b + "ffn_down.bias": (c.d,),
        })
    return shapes


def load_gguf(path: Path | str, *, device: str = "cpu") -> tuple[MiniGPT, Tokenizer]:
    """A MiniGPT (eval mode, f32; f16/q8_0 weights dequantized) and its tokenizer from a GGUF file."""
    import torch

    g = read_gguf(path)
    names = tensor_names(g.config)
    model = MiniGPT(g.config)
    model.load_state_dict({ours: torch.from_numpy(g.tensors[theirs].copy()) for ours, theirs in names.items()},
                          strict=True)
    return model.to(device).eval(), g.tokenizer


def _gelu_erf(x: np.ndarray) -> np.ndarray:
    from math import erf, sqrt

    return (0.5 * x * (1.0 + np.vectorize(erf, otypes=[np.float64])(x / sqrt(2.0)))).astype(np.float32)


def _gelu_ggml(x: np.ndarray) -> np.ndarray:
    """ggml's CPU GELU (`ggml_vec_gelu_f32` with `GGML_GELU_FP16`): 0 below -10, x above 10, else the tanh
    form evaluated in f32 at the input rounded to fp16, the result rounded to fp16 (a 65536-entry table)."""
    h = x.astype(np.float16).astype(np.float32)
    c, a = np.float32(0.79788456080286535587989211986876), np.float32(0.044715)
    y = (np.float32(0.5) * h * (np.float32(1) + np.tanh(c * h * (np.float32(1) + a * h * h)))).astype(np.float16)
    return np.where(x <= -10, np.float32(0), np.where(x >= 10, x, y.astype(np.float32))).astype(np.float32)


def _round_rows(x: np.ndarray, kind: str) -> np.ndarray:
    """x as a ggml matmul reads it when the other operand is stored in `kind`: ggml converts the activation
    rows to the weight type's `vec_dot_type` (f16 for f16, q8_0 blocks of 32 for q8_0) before the dot."""
    if kind == "f32":
        return x
    if kind == "f16":
        return x.astype(np.float16).astype(np.float32)
    gguf = _gguf()
    q = gguf.GGMLQuantizationType.Q8_0
    return gguf.quants.dequantize(gguf.quants.quantize(np.ascontiguousarray(x, np.float32), q), q).reshape(x.shape)


def reference_logits(model: GGUFModel | Path | str, tokens, *, gelu: str = "erf", inputs: str = "f32",
                     kv: str = "f32") -> np.ndarray:
    """Logits `[T, V]` (f32) of one sequence computed from a GGUF file's tensors by llama.cpp's `gpt2` graph
    (`src/models/gpt2.cpp`): names and shapes as llama.cpp reads them, the qkv rows split q | k | v, heads
    of d_h = n_embd_head consecutive rows, scale 1/√d_h, the LM head = `token_embd.weight`.

    It never uses this module's name table, so a tensor written transposed or under a swapped name gives
    different logits than MiniGPT's. `gelu`: "erf" (MiniGPT's) or "ggml" (llama.cpp's CPU GELU).
    `inputs`: how llama.cpp's CPU matmuls read the activations for the file's weight type ("f32", "f16",
    "q8_0": each row rounded to that type first); `kv`: its KV cache type ("f16", its default: K and V
    rounded when written, and q and the softmax weights rounded to f16 for the two products with them)."""
    if gelu not in ("erf", "ggml"):
        raise ValueError(f"gelu must be 'erf' (MiniGPT's) or 'ggml' (llama.cpp's tanh table), got {gelu!r}")
    if inputs not in FILE_TYPES or kv not in ("f32", "f16"):
        raise ValueError(f"inputs must be one of {FILE_TYPES} and kv 'f32' or 'f16', got {inputs!r}, {kv!r}")
    g = model if isinstance(model, GGUFModel) else read_gguf(model)
    c, t = g.config, g.tensors
    ids = np.asarray(tokens, dtype=np.int64).reshape(-1)
    T = ids.size
    if T == 0 or T > c.S_max or ids.min() < 0 or ids.max() >= c.V:
        raise ValueError(f"tokens must be 1..{c.S_max} ids in 0..{c.V - 1}, got {T} ids")
    act = _gelu_erf if gelu == "erf" else _gelu_ggml

    def norm(x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + np.float32(LAYER_NORM_EPS)) * t[name + ".weight"] + t[name + ".bias"]

    x = t["token_embd.weight"][ids] + t["position_embd.weight"][:T]  # [T, d]
    causal = np.tril(np.ones((T, T), dtype=bool))
    g_size = c.H // c.H_kv
    for i in range(c.L):
        b = f"blk.{i}."
        h = norm(x, b + "attn_norm")
        qkv = _round_rows(h, inputs) @ t[b + "attn_qkv.weight"].T + t[b + "attn_qkv.bias"]
        q = qkv[:, : c.H * c.d_h].reshape(T, c.H, c.d_h)
        k = qkv[:, c.H * c.d_h: (c.H + c.H_kv) * c.d_h].reshape(T, c.H_kv, c.d_h)
        v = qkv[:, (c.H + c.H_kv) * c.d_h:].reshape(T, c.H_kv, c.d_h)
        q, k, v = _round_rows(q, kv), _round_rows(k, kv), _round_rows(v, kv)
        heads = []
        for j in range(c.H):
            s = (q[:, j] @ k[:, j // g_size].T) / np.float32(np.sqrt(c.d_h))
            s = np.where(causal, s, -np.inf)
            p = np.exp(s - s.max(-1, keepdims=True))
            heads.append(_round_rows(p / p.sum(-1, keepdims=True), kv) @ v[:, j // g_size])
        a = np.concatenate(heads, axis=-1)  # [T, H·d_h]
        x = x + _round_rows(a, inputs) @ t[b + "attn_output.weight"].T + t[b + "attn_output.bias"]
        h = norm(x, b + "ffn_norm")
        u = act(_round_rows(h, inputs) @ t[b + "ffn_up.weight"].T + t[b + "ffn_up.bias"])
        x = x + _round_rows(u, inputs) @ t[b + "ffn_down.weight"].T + t[b + "ffn_down.bias"]
    return (_round_rows(norm(x, "output_norm"), inputs) @ t["token_embd.weight"].T).astype(np.float32)
