"""The reference arithmetic: llama.cpp's `gpt2` graph in numpy, from a GGUF file's tensors.

One difference of arithmetic stays: MiniGPT's GELU is the exact erf form; llama.cpp's GPT-2 graph calls
`ggml_gelu`, the tanh approximation, which ggml's CPU backend reads from a table indexed by the input
rounded to fp16 (`GGML_GELU_FP16` in `ggml-cpu/vec.h`). `reference_logits(..., gelu="ggml")` computes
that form, so a comparison can separate the activation from everything else.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from minigpt.interop.gguf_layout import FILE_TYPES, LAYER_NORM_EPS, _gguf
from minigpt.interop.gguf_read import GGUFModel, read_gguf


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

    It never uses the exporter's name table (`gguf_layout.tensor_names`), so a tensor written transposed or
    under a swapped name gives different logits than MiniGPT's. `gelu`: "erf" (MiniGPT's) or "ggml"
    (llama.cpp's CPU GELU).
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
