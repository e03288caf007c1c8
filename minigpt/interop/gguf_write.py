"""Writing MiniGPT as a GGUF file llama.cpp runs: the tensors in their stored types, the metadata, the vocabulary.

The vocabulary: llama.cpp's `whitespace` tokenizer model (split on whitespace, each word looked up
whole with the `llama-bpe` pre-tokenizer, which skips merges for a word in the vocabulary) reproduces
MiniGPT's word-level `Tokenizer.encode`; the words go in as they are (ASCII, so GPT-2's byte-to-unicode
map leaves them unchanged). Token ids can also be fed to llama.cpp directly, without its tokenizer.

Writing needs `gguf` (llama.cpp's Python package) and numpy; torch is touched only to read the model.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from minigpt.interop.gguf_layout import (
    ARCH,
    FILE_TYPES,
    LAYER_NORM_EPS,
    TOKENIZER_MODEL,
    TOKENIZER_PRE,
    _gguf,
    tensor_names,
)
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.tokenizer import PAD, Tokenizer


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
