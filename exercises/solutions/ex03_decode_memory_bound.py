"""Reference solutions for exercises/ex03_decode_memory_bound.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

# %% solution:q1
def decode_intensity(L, S, d, s, N_params, B):
    """Eq. (3.1): Eq. (1.3) (2 FLOPs per multiply-add, MHA, d_ffn = 4d, no LM head) over Eq. (3.5)."""
    flops = B * L * (24 * d * d + 4 * d * (S + 1))
    moved = N_params * s + B * S * 2 * L * d * s
    return flops / moved


# %% solution:q2
def attainable_flops(intensity, peak_flops, bandwidth):
    """Eq. (3.3), the roofline."""
    return min(peak_flops, intensity * bandwidth)


# %% solution:q3
def decode_ceiling(hardware, model, s, S, B):
    """Eq. (3.4) with Eq. (3.5)."""
    step_bytes = model.N_params * s + B * S * 2 * model.L * model.H_kv * model.d_h * s
    return B * hardware.bandwidth / step_bytes


# %% solution:q4
def achieved_bandwidth(tok_s, N_params, s):
    """Bytes per second read by decode at B = 1: every step reads the weights once."""
    return tok_s * N_params * s


# %% solution:q5
def is_memory_bound(intensity, peak_flops, bandwidth):
    """Below the ridge point (Eq. 3.2) the memory roof is the lower one."""
    return bool(intensity < peak_flops / bandwidth)
