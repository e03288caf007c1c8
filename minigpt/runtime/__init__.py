"""Running the model: `model` (MiniGPT), `kv_cache` (KVCache), `generate` (prefill, decode_step,
sampling), `meters` (per-request meters), `checkpoint` (the shipped weights), `tokenizer`."""
