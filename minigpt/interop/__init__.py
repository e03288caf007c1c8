"""MiniGPT in other ecosystems: `hf` writes and reads Hugging Face GPT-2 model directories; `gguf` writes
and reads the GGUF file llama.cpp runs (`gguf_layout`, `gguf_write`, `gguf_read`, `gguf_reference`);
`llamacpp` runs it (llama-cpp-python) and reads llama.cpp's meters."""
