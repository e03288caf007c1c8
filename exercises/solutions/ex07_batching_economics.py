"""Reference solutions for exercises/ex07_batching_economics.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import math


# %% solution:q1
def step_flops(model, S, B):
    """Eq. (1.3) in the 2-FLOP convention, with the LM head: one new token per sequence against S cached ones."""
    d = model.d
    per_layer = 2 * d * (d + 2 * model.H_kv * model.d_h) + 2 * d * d + 2 * model.ffn_matrices * d * model.d_ffn
    return B * (model.L * (per_layer + 4 * (S + 1) * d) + 2 * d * model.V)


def decode_step_time(model, hardware, S, B, overlap):
    """Eq. (7.2) (overlap=True) or Eq. (7.3) (overlap=False), bf16."""
    s = 2
    weights = model.N_params * s
    kv = B * S * 2 * model.L * model.H_kv * model.d_h * s
    flops = step_flops(model, S, B)
    if overlap:
        return max((weights + kv) / hardware.bandwidth, flops / hardware.peak_flops)
    dense = step_flops(model, 0, B)
    return (max(weights / hardware.bandwidth, dense / hardware.peak_flops)
            + max(kv / hardware.bandwidth, (flops - dense) / hardware.peak_flops))


# %% solution:q2
def critical_batch(model, hardware, S):
    """Eq. (7.4) with the KV term: the smallest B whose decode intensity reaches the ridge point, or None."""
    s = 2
    ridge = hardware.peak_flops / hardware.bandwidth
    d = model.d
    per_layer = 2 * d * (d + 2 * model.H_kv * model.d_h) + 2 * d * d + 2 * model.ffn_matrices * d * model.d_ffn
    flops_1 = model.L * (per_layer + 4 * (S + 1) * d) + 2 * d * model.V
    kv_sequence = S * 2 * model.L * model.H_kv * model.d_h * s
    margin = flops_1 - ridge * kv_sequence
    if margin <= 0:
        return None
    return max(1, math.ceil(ridge * model.N_params * s / margin))


# %% solution:q3
def batch_cap(model, hardware, S, reserve):
    """The batch at which growing B stops paying: B_crit if it fits, else the memory cap B_max."""
    s = 2
    budget = math.floor(hardware.memory_bytes * (1 - reserve))
    free = budget - model.N_params * s
    B_max = max(0, free // (S * 2 * model.L * model.H_kv * model.d_h * s))
    B_crit = critical_batch(model, hardware, S)
    if B_crit is None or B_crit > B_max:
        return B_max, "memory"
    return B_crit, "compute"


# %% solution:q4
def kv_crossover_batch(model, S):
    """B_× = N·s / (S·b_token), bf16."""
    s = 2
    return model.N_params * s / (S * 2 * model.L * model.H_kv * model.d_h * s)


# %% solution:q5
def frontier(model, hardware, S, Bs):
    """(tokens/s per user, total tokens/s) for each B, Eq. (7.2)."""
    points = []
    for B in Bs:
        t = decode_step_time(model, hardware, S, B, True)
        points.append((1 / t, B / t))
    return points
