"""MiniGPT: the companion package of the book "Prefill & Decode".

A from-scratch GPT-2-style model, its KV cache as a visible object, generation in two named phases
(`prefill`, `decode_step`), a grammar corpus with a checker, and the cost formulas (`minigpt.costs`)
that the book checks against this code. The subpackages, by concern (see ARCHITECTURE.md):

- `minigpt.runtime`  running the model: model, KV cache, generation, meters, checkpoint, tokenizer
- `minigpt.corpus`   the grammar, its sentences and checker, training, quality
- `minigpt.costs`    pure formulas and presets (imports no torch)
- `minigpt.measure`  timers, probes, FLOP counting, sweeps
- `minigpt.book`     notebook helpers and the browser explorers

The names below are imported on first use, so ``import minigpt.costs`` stays free of torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Generation": "minigpt.runtime.generate",
    "KVCache": "minigpt.runtime.kv_cache",
    "MiniGPT": "minigpt.runtime.model",
    "ModelConfig": "minigpt.config",
    "Pretrained": "minigpt.runtime.checkpoint",
    "RequestMeters": "minigpt.runtime.meters",
    "Sampling": "minigpt.runtime.generate",
    "Tokenizer": "minigpt.runtime.tokenizer",
    "decode_step": "minigpt.runtime.generate",
    "generate": "minigpt.runtime.generate",
    "load_pretrained": "minigpt.runtime.checkpoint",
    "no_cache_step": "minigpt.runtime.generate",
    "prefill": "minigpt.runtime.generate",
    "sample": "minigpt.runtime.generate",
    "save_checkpoint": "minigpt.runtime.checkpoint",
    "stream": "minigpt.runtime.generate",
}

__all__ = sorted(_LAZY)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'minigpt' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
