"""MiniGPT ↔ Hugging Face: a MiniGPT checkpoint as a GPT-2 model directory, and one read back.

MiniGPT is GPT-2's architecture (pre-LayerNorm blocks, eps 1e-5, learned positions, tied LM head)
with one difference of layout and one of spelling. Layout: MiniGPT's projections are `nn.Linear`
(weight `[out, in]`); GPT-2's are `Conv1D` (weight `[in, out]`), so every matrix is transposed; the
fused qkv is `[(H + 2·H_kv)·d_h, d]` in MiniGPT and `c_attn` `[d, 3d]` in GPT-2, the same q, k, v
order, so only H_kv = H fits (GQA and MQA have no GPT-2 form). Spelling: MiniGPT's GELU is the exact
erf form, which GPT-2's config calls `"gelu"` (GPT-2's own `"gelu_new"` is the tanh approximation).

The directory (`config.json`, `model.safetensors`, and with a tokenizer `tokenizer.json` +
`tokenizer_config.json`) loads with `transformers.GPT2LMHeadModel.from_pretrained(directory)` and
`AutoTokenizer.from_pretrained(directory)`, no custom code. Writing and reading need only
`safetensors` (and `tokenizers` for tokenizer.json); `transformers` is never imported here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from minigpt.config import ModelConfig
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.tokenizer import Tokenizer

#: MiniGPT's LayerNorm eps (torch's default), the value GPT-2's config must carry.
LAYER_NORM_EPS = 1e-5

#: MiniGPT block parameter → GPT-2 block parameter, and whether the tensor is transposed (Linear → Conv1D).
_BLOCK = {
    "ln1.weight": ("ln_1.weight", False), "ln1.bias": ("ln_1.bias", False),
    "attn.qkv.weight": ("attn.c_attn.weight", True), "attn.qkv.bias": ("attn.c_attn.bias", False),
    "attn.out.weight": ("attn.c_proj.weight", True), "attn.out.bias": ("attn.c_proj.bias", False),
    "ln2.weight": ("ln_2.weight", False), "ln2.bias": ("ln_2.bias", False),
    "mlp.up.weight": ("mlp.c_fc.weight", True), "mlp.up.bias": ("mlp.c_fc.bias", False),
    "mlp.down.weight": ("mlp.c_proj.weight", True), "mlp.down.bias": ("mlp.c_proj.bias", False),
}
_TOP = {"tok_emb.weight": "wte.weight", "pos_emb.weight": "wpe.weight",
        "ln_f.weight": "ln_f.weight", "ln_f.bias": "ln_f.bias"}


def gpt2_config(config: ModelConfig) -> dict[str, Any]:
    """GPT-2 config.json of a MiniGPT: n_layer = L, n_head = H, n_embd = d, n_inner = d_ffn, n_positions = S_max."""
    if config.H_kv != config.H:
        raise ValueError(
            f"GPT-2 has one key/value head per query head: H_kv must equal H to export, got H={config.H}, "
            f"H_kv={config.H_kv} ({'MQA' if config.H_kv == 1 else 'GQA'} has no GPT-2 form)"
        )
    c = config
    return {
        "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
        "vocab_size": c.V, "n_positions": c.S_max, "n_embd": c.d, "n_layer": c.L, "n_head": c.H, "n_inner": c.d_ffn,
        "activation_function": "gelu", "layer_norm_epsilon": LAYER_NORM_EPS,
        "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
        "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False,
        "tie_word_embeddings": True, "use_cache": True,
        "bos_token_id": None, "eos_token_id": None, "pad_token_id": 0,  # MiniGPT has no BOS/EOS; "<pad>" is id 0
        "dtype": "float32",
    }


def minigpt_config(gpt2: dict[str, Any]) -> ModelConfig:
    """The MiniGPT shape of a GPT-2 `config.json`; settings MiniGPT cannot reproduce raise a clear error."""
    if gpt2.get("model_type") != "gpt2":
        raise ValueError(f"config.json model_type must be 'gpt2', got {gpt2.get('model_type')!r}")
    required = {"activation_function": "gelu", "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
                "tie_word_embeddings": True, "add_cross_attention": False}
    for key, allowed in required.items():
        if gpt2.get(key, allowed) != allowed:
            gelu = key == "activation_function"
            hint = " (MiniGPT's GELU is the exact erf form; 'gelu_new' is the tanh one)" if gelu else ""
            raise ValueError(f"config.json {key} must be {allowed!r} for MiniGPT{hint}, got {gpt2[key]!r}")
    eps = gpt2.get("layer_norm_epsilon", LAYER_NORM_EPS)
    if eps != LAYER_NORM_EPS:
        raise ValueError(f"config.json layer_norm_epsilon must be {LAYER_NORM_EPS} (MiniGPT's LayerNorm), got {eps!r}")
    d, H = gpt2["n_embd"], gpt2["n_head"]
    if d % H:
        raise ValueError(f"config.json n_embd={d} must be a multiple of n_head={H}")
    d_ffn = gpt2.get("n_inner") or 4 * d
    return ModelConfig(L=gpt2["n_layer"], H=H, H_kv=H, d_h=d // H, d_ffn=d_ffn, V=gpt2["vocab_size"],
                       S_max=gpt2["n_positions"])


def to_gpt2_state(model: MiniGPT) -> dict[str, torch.Tensor]:
    """MiniGPT's parameters under GPT-2's names (`transformer.h.<i>.attn.c_attn.weight`, …), Conv1D-transposed, fp32.

    The tied LM head is not stored: GPT-2 ties `lm_head.weight` to `transformer.wte.weight` on load.
    """
    gpt2_config(model.config)  # H_kv = H or a clear error
    state = model.state_dict()
    out = {f"transformer.{name}": state[ours] for ours, name in _TOP.items()}
    for i in range(model.config.L):
        for ours, (name, transpose) in _BLOCK.items():
            t = state[f"blocks.{i}.{ours}"]
            out[f"transformer.h.{i}.{name}"] = t.T if transpose else t
    return {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in out.items()}


def from_gpt2_state(state: dict[str, torch.Tensor], config: ModelConfig) -> dict[str, torch.Tensor]:
    """The inverse of `to_gpt2_state`: a MiniGPT state dict from GPT-2 names (with or without `transformer.`)."""
    state = {k.removeprefix("transformer."): v for k, v in state.items()}
    head = state.pop("lm_head.weight", None)
    if head is not None and not torch.equal(head, state.get("wte.weight", head)):
        raise ValueError("lm_head.weight differs from transformer.wte.weight: MiniGPT's LM head is tied")
    state = {k: v for k, v in state.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}  # old mask buffers
    out: dict[str, torch.Tensor] = {}
    names = {name: ours for ours, name in _TOP.items()}
    for i in range(config.L):
        names.update({f"h.{i}.{name}": (f"blocks.{i}.{ours}", t) for ours, (name, t) in _BLOCK.items()})
    missing = sorted(set(names) - set(state))
    unknown = sorted(set(state) - set(names))
    if missing or unknown:
        raise ValueError(f"GPT-2 weights do not fit {config}: missing {missing[:5]}, unexpected {unknown[:5]}")
    for name, target in names.items():
        ours, transpose = target if isinstance(target, tuple) else (target, False)
        out[ours] = state[name].T.contiguous() if transpose else state[name]
    return out


def export_gpt2(model: MiniGPT, directory: Path | str, tokenizer: Tokenizer | None = None) -> Path:
    """Write `model` (and `tokenizer`) as a Hugging Face GPT-2 directory; every file written whole, then renamed."""
    directory = Path(directory)
    if tokenizer is not None and tokenizer.V != model.config.V:
        raise ValueError(f"tokenizer has V={tokenizer.V} tokens but the model has V={model.config.V}")
    files = {"config.json": json.dumps(gpt2_config(model.config), indent=2, sort_keys=True) + "\n"}
    if tokenizer is not None:
        files["tokenizer.json"] = tokenizer_json(tokenizer)
        files["tokenizer_config.json"] = json.dumps(
            {"tokenizer_class": "PreTrainedTokenizerFast", "pad_token": tokenizer.vocab[tokenizer.pad_id],
             "model_max_length": model.config.S_max, "clean_up_tokenization_spaces": False}, indent=2) + "\n"
    state = to_gpt2_state(model)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    try:
        weights = directory / "model.safetensors.tmp"
        save_file(state, str(weights), metadata={"format": "pt"})
        written.append((weights, directory / "model.safetensors"))
        for name, text in files.items():
            tmp = directory / f"{name}.tmp"
            tmp.write_text(text)
            written.append((tmp, directory / name))
    except BaseException:
        for tmp, _ in written:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, final in written:
        os.replace(tmp, final)
    return directory


def tokenizer_json(tokenizer: Tokenizer) -> str:
    """The word-level tokenizer as a `tokenizers` WordLevel model split on whitespace; unknown words are an error."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers

    hf = HFTokenizer(models.WordLevel({w: i for i, w in enumerate(tokenizer.vocab)}))  # no unk: unknown words fail
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return hf.to_str(pretty=True)


def load_gpt2(directory: Path | str, *, device: torch.device | str = "cpu") -> MiniGPT:
    """A MiniGPT (eval mode, fp32) from a GPT-2 directory written by `export_gpt2` or any GPT-2 of MiniGPT's form."""
    directory = Path(directory)
    for name in ("config.json", "model.safetensors"):
        if not (directory / name).is_file():
            raise FileNotFoundError(f"{directory / name} does not exist (a GPT-2 directory needs config.json and "
                                    "model.safetensors)")
    config = minigpt_config(json.loads((directory / "config.json").read_text()))
    model = MiniGPT(config)
    model.load_state_dict(from_gpt2_state(load_file(str(directory / "model.safetensors")), config), strict=True)
    return model.to(device).eval()


def load_gpt2_tokenizer(directory: Path | str) -> Tokenizer:
    """MiniGPT's word-level tokenizer from a directory's `tokenizer.json` (a WordLevel model), read as JSON."""
    data = json.loads((Path(directory) / "tokenizer.json").read_text())
    model = data.get("model", {})
    if model.get("type") != "WordLevel":
        raise ValueError(f"tokenizer.json model type must be 'WordLevel', got {model.get('type')!r}")
    vocab = model["vocab"]
    words = sorted(vocab, key=vocab.__getitem__)
    if [vocab[w] for w in words] != list(range(len(words))):
        raise ValueError("tokenizer.json vocab ids must be 0..V-1 with no gaps")
    return Tokenizer(words)
