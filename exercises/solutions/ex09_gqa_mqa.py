"""Reference solutions for exercises/ex09_gqa_mqa.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import math

import torch


# %% solution:q1
def grouped_attention(q, k, v):
    """Causal attention with g = H / H_kv query heads per K/V head."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    T = q.shape[2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


# %% solution:q2
def mean_pool_kv(w, H_kv, d_h):
    """New head j = mean of the g old heads j·g … j·g + g − 1."""
    g = w.shape[0] // (H_kv * d_h)
    return w.reshape(H_kv, g, d_h, -1).mean(dim=1).reshape(H_kv * d_h, -1)


# %% solution:q3
def gqa_decode_gain(model, S, B, s):
    """Eq. (9.2): MHA twin step bytes over GQA step bytes; the twin's K/V projections are larger too."""
    extra = 2 * model.L * (model.d + int(model.biases)) * (model.H - model.H_kv) * model.d_h

    def step(H_kv, N):
        return N * s + B * S * 2 * model.L * H_kv * model.d_h * s

    return step(model.H, model.N_params + extra) / step(model.H_kv, model.N_params)


# %% solution:q4
def max_batch_with_heads(hardware, model, H_kv, S):
    """Largest B of S-token caches with H_kv heads next to the bf16 weights of the model with H_kv heads."""
    N = model.N_params + 2 * model.L * (model.d + int(model.biases)) * (H_kv - model.H_kv) * model.d_h
    free = hardware.memory_bytes - N * 2
    return max(0, free // (S * 2 * model.L * H_kv * model.d_h * 2))
