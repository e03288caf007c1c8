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
    """Eq. (9.2): MHA step bytes over GQA step bytes, each model with its own weights (Eq. 9.3)."""
    beta = 1 if model.biases else 0
    N_mha = model.N_params + 2 * model.L * (model.d + beta) * model.d_h * (model.H - model.H_kv)

    def step(N, H_kv):
        return N * s + B * S * 2 * model.L * H_kv * model.d_h * s

    return step(N_mha, model.H) / step(model.N_params, model.H_kv)


# %% solution:q4
def max_batch_with_heads(hardware, model, H_kv, S):
    """Largest B of S-token caches with H_kv heads next to bf16 weights."""
    beta = 1 if model.biases else 0
    N = model.N_params + 2 * model.L * (model.d + beta) * model.d_h * (H_kv - model.H_kv)
    free = math.floor(hardware.memory_bytes * (1 - 0.1)) - N * 2
    return max(0, free // (S * 2 * model.L * H_kv * model.d_h * 2))
