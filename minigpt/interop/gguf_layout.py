"""The GGUF layout llama.cpp's `gpt2` graph reads: its names, the shapes its loader expects, the constants.

llama.cpp knows MiniGPT's architecture as `gpt2` (`src/models/gpt2.cpp`): token + learned position
embeddings, pre-LayerNorm blocks with biases, a fused qkv, a GELU MLP, a final LayerNorm and the LM head
tied to the token embedding (no `output.weight`: llama.cpp duplicates `token_embd.weight`). GGUF stores
a matrix with ggml's shape `{n_in, n_out}`, which is numpy's `[n_out, n_in]`: exactly `nn.Linear`'s
weight, so MiniGPT's matrices go in untransposed (llama.cpp's `convert_hf_to_gguf.py` transposes GPT-2's
`Conv1D` weights to reach the same layout). The qkv rows are q, then k, then v, head by head, as in
llama.cpp's `build_qkv`; with `head_count_kv` = H_kv the same graph runs GQA and MQA.
"""

from __future__ import annotations

from minigpt.config import ModelConfig

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
