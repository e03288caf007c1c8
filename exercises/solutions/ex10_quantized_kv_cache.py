"""Reference solutions for exercises/ex10_quantized_kv_cache.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import torch


# %% solution:q1
def int8_round_trip(x):
    """Absmax int8 per vector with an fp16 scale, read back in fp32."""
    scale = (x.abs().amax(dim=-1, keepdim=True) / 127).half().float()
    codes = torch.round(x / scale.clamp_min(2**-14)).clamp(-127, 127)
    return codes * scale


# %% solution:q2
def quantized_bytes_per_token(L, H_kv, d_h, bits, group_size):
    """Codes plus fp16 scales, keys and values, every layer."""
    return 2 * L * H_kv * (d_h * bits // 8 + (d_h // group_size) * 2)


# %% solution:q3
def mean_kl(p_logits, q_logits):
    """Mean over rows of KL(softmax(p) ‖ softmax(q))."""
    log_p = torch.log_softmax(p_logits.double(), dim=-1)
    log_q = torch.log_softmax(q_logits.double(), dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(dim=-1).mean().item()


# %% solution:q4
def quantized_decode_gain(model, S, B, bits, group_size):
    """bf16-cache step bytes over quantized-cache step bytes (bf16 weights)."""
    weights = model.N_params * 2
    bf16 = 2 * model.L * model.H_kv * model.d_h * 2
    quant = quantized_bytes_per_token(model.L, model.H_kv, model.d_h, bits, group_size)
    return (weights + B * S * bf16) / (weights + B * S * quant)


# %% solution:q5
def keys_per_channel(k, token_group, outliers, factor):
    """KIVI's key layout: one fp16 absmax scale per channel and block of token_group tokens."""
    k = k.clone()
    k[..., outliers] *= factor
    blocks = k.unflatten(-2, (-1, token_group))  # [..., T/G, G, d_h]
    scales = (blocks.abs().amax(dim=-2) / 127).half().float()  # [..., T/G, d_h]
    codes = torch.round(blocks / scales.clamp_min(2**-14).unsqueeze(-2)).clamp(-127, 127)
    return (codes * scales.unsqueeze(-2)).flatten(-3, -2), scales
