"""The shipped checkpoint: safetensors weights + a JSON card (config, tokenizer, training log). No pickle."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from minigpt.config import ModelConfig
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.tokenizer import Tokenizer

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
DEFAULT_NAME = "minigpt"
FORMAT = "minigpt-checkpoint/1"


@dataclass
class Pretrained:
    """What `load_pretrained` returns: the model, its tokenizer and the card (training log, quality)."""

    model: MiniGPT
    tokenizer: Tokenizer
    card: dict[str, Any]

    @property
    def config(self) -> ModelConfig:
        return self.model.config


def save_checkpoint(model: MiniGPT, tokenizer: Tokenizer, card: dict[str, Any], directory: Path,
                    name: str = DEFAULT_NAME) -> tuple[Path, Path]:
    """Write `<name>.safetensors` and `<name>.json` atomically (temporary files, then rename)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if tokenizer.V != model.config.V:
        raise ValueError(f"tokenizer has V={tokenizer.V} tokens but the model has V={model.config.V}")
    config_json = json.dumps(model.config.to_dict(), sort_keys=True)
    full_card = {"format": FORMAT, "config": model.config.to_dict(), "tokenizer": tokenizer.to_dict(), **card}
    tensors = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in model.state_dict().items()}
    weights, meta = directory / f"{name}.safetensors", directory / f"{name}.json"
    tmp_w, tmp_m = weights.with_suffix(".safetensors.tmp"), meta.with_suffix(".json.tmp")
    save_file(tensors, str(tmp_w), metadata={"format": FORMAT, "config": config_json})
    tmp_m.write_text(json.dumps(full_card, indent=1, sort_keys=True) + "\n")
    tmp_w.replace(weights)
    tmp_m.replace(meta)
    return weights, meta


def load_pretrained(
    directory: Path | str | None = None,
    *,
    name: str = DEFAULT_NAME,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> Pretrained:
    """Load the shipped MiniGPT (or a checkpoint written by `save_checkpoint`) in eval mode."""
    directory = DATA_DIR if directory is None else Path(directory)
    weights, meta = directory / f"{name}.safetensors", directory / f"{name}.json"
    for path in (weights, meta):
        if not path.is_file():
            raise FileNotFoundError(f"checkpoint file {path} does not exist "
                                    "(train one with python -m minigpt.corpus.train)")
    try:
        card = json.loads(meta.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"checkpoint card {meta} is corrupted (not valid JSON): {e}") from e
    if not isinstance(card, dict) or card.get("format") != FORMAT:
        found = card.get("format") if isinstance(card, dict) else None
        raise ValueError(f"checkpoint card {meta} has format {found!r}; expected {FORMAT!r}")
    try:
        config = ModelConfig.from_dict(card["config"])
        tokenizer = Tokenizer.from_dict(card["tokenizer"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"checkpoint card {meta} is malformed: {e}") from e
    try:
        tensors = load_file(str(weights))
        with open(weights, "rb") as f:
            header_len = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(header_len))
    except (SafetensorError, OSError, ValueError) as e:
        raise ValueError(f"checkpoint weights {weights} are corrupted: {e}") from e
    stored_config = json.loads(header.get("__metadata__", {}).get("config", "null"))
    if stored_config != config.to_dict():
        raise ValueError(f"checkpoint mismatch: {weights} was saved for config {stored_config}, "
                         f"but {meta} says {config.to_dict()}")
    if tokenizer.V != config.V:
        raise ValueError(f"checkpoint mismatch: tokenizer has V={tokenizer.V} but config has V={config.V}")
    with torch.device("cpu"):  # whatever default device the caller set (meta would load nothing); moved below
        if "latent" in card:  # multi-head latent attention (runtime.mla): the card names the latent's width
            from minigpt.runtime.mla import MiniGPTMLA

            model = MiniGPTMLA(config, d_c=card["latent"]["d_c"])
        else:
            model = MiniGPT(config)
    try:
        model.load_state_dict(tensors, strict=True)
    except RuntimeError as e:
        raise ValueError(f"checkpoint mismatch: weights in {weights} do not fit {config}: {e}") from e
    model.to(device=device, dtype=dtype).eval()
    return Pretrained(model=model, tokenizer=tokenizer, card=card)
