"""MiniGPT → GGUF, the file llama.cpp runs, and one read back with `gguf`'s own reader: the names a
chapter or a script uses, from the four modules that hold them.

- `gguf_layout`     llama.cpp's `gpt2` layout: tensor names, the shapes its loader expects, the constants
- `gguf_write`      `export_gguf`: the tensors in their stored types (f32, f16, q8_0), metadata, vocabulary
- `gguf_read`       `read_gguf` with `gguf.GGUFReader`, checked against the layout; `load_gguf` to a MiniGPT
- `gguf_reference`  `reference_logits`: llama.cpp's graph in numpy (its GELU, its rounding of the inputs)
"""

from minigpt.interop.gguf_layout import ARCH, FILE_TYPES, LAYER_NORM_EPS, TOKENIZER_MODEL, TOKENIZER_PRE, tensor_names
from minigpt.interop.gguf_read import GGUFModel, load_gguf, read_gguf
from minigpt.interop.gguf_reference import reference_logits
from minigpt.interop.gguf_write import export_gguf, gguf_tensors

__all__ = [
    "ARCH", "FILE_TYPES", "GGUFModel", "LAYER_NORM_EPS", "TOKENIZER_MODEL", "TOKENIZER_PRE", "export_gguf",
    "gguf_tensors", "load_gguf", "read_gguf", "reference_logits", "tensor_names",
]
