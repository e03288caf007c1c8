"""Reference solutions for exercises/ex02_kv_cache_memory.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

# %% solution:q1
def kv_bytes_per_token(L, H_kv, d_h, s):
    """Eq. (2.1)."""
    return 2 * L * H_kv * d_h * s


# %% solution:q2
def kv_cache_gib(model, S, B, s):
    """Eq. (2.2) in GiB."""
    return B * S * 2 * model.L * model.H_kv * model.d_h * s / 2**30


# %% solution:q3
def max_context(hardware, model, s, B):
    """Largest S with N·s + B·S·(bytes per token) <= memory."""
    free = hardware.memory_bytes - model.N_params * s
    per_token = 2 * model.L * model.H_kv * model.d_h * s
    return max(0, free // (B * per_token))


# %% solution:q4
def max_batch(hardware, model, s, S):
    """Largest B with N·s + B·S·(bytes per token) <= memory."""
    free = hardware.memory_bytes - model.N_params * s
    per_token = 2 * model.L * model.H_kv * model.d_h * s
    return max(0, free // (S * per_token))


# %% solution:q5
def kv_equals_weights(model, B):
    """S at which B sequences' KV cache weighs as much as the weights (s cancels)."""
    return model.N_params / (B * 2 * model.L * model.H_kv * model.d_h)
