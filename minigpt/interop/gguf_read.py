"""Reading a GGUF file back with `gguf.GGUFReader`: its shape, tensors, tokenizer and metadata, checked
against the layout llama.cpp's `gpt2` loader expects; and a MiniGPT loaded from it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from minigpt.config import ModelConfig
from minigpt.interop.gguf_layout import ARCH, LAYER_NORM_EPS, _expected_shapes, _gguf, tensor_names
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.tokenizer import Tokenizer


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


def load_gguf(path: Path | str, *, device: str = "cpu") -> tuple[MiniGPT, Tokenizer]:
    """A MiniGPT (eval mode, f32; f16/q8_0 weights dequantized) and its tokenizer from a GGUF file."""
    import torch

    g = read_gguf(path)
    names = tensor_names(g.config)
    model = MiniGPT(g.config)
    model.load_state_dict({ours: torch.from_numpy(g.tensors[theirs].copy()) for ours, theirs in names.items()},
                          strict=True)
    return model.to(device).eval(), g.tokenizer
