"""MiniGPT in other ecosystems: `hf` writes and reads Hugging Face GPT-2 model directories."""
