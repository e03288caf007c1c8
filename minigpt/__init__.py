"""MiniGPT: the companion package of the book "Prefill & Decode".

A from-scratch GPT-2-style model, its KV cache as a visible object, generation in two named phases
(`prefill`, `decode_step`), a grammar corpus with a checker, and the cost formulas (`minigpt.costs`)
that the book checks against this code. Plots and widgets live in modules imported on demand.
"""

from minigpt.checkpoint import Pretrained, load_pretrained, save_checkpoint
from minigpt.config import ModelConfig
from minigpt.generate import Generation, decode_step, generate, prefill, sample, stream
from minigpt.kv_cache import KVCache
from minigpt.meters import RequestMeters
from minigpt.model import MiniGPT
from minigpt.tokenizer import Tokenizer

__all__ = [
    "Generation", "KVCache", "MiniGPT", "ModelConfig", "Pretrained", "RequestMeters", "Tokenizer",
    "decode_step", "generate", "load_pretrained", "prefill", "sample", "save_checkpoint", "stream",
]
__version__ = "0.1.0"
