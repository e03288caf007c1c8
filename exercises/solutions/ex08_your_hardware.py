"""Reference solutions for exercises/ex08_your_hardware.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import numpy as np


# %% solution:q1
def roofline_from_probes(copy_bytes, copy_s, n, matmul_s):
    """Bandwidth from the fastest copy (read + write), peak from the fastest matmul (2·n³ FLOPs)."""
    return 2 * copy_bytes / min(copy_s), 2 * n**3 / min(matmul_s)


# %% solution:q2
def predict_rates(P, prefill_flops, N_params, kv_bytes_per_token, S, s, bandwidth, peak_flops):
    """Eq. (8.1)."""
    return P * peak_flops / prefill_flops, bandwidth / (N_params * s + S * kv_bytes_per_token)


# %% solution:q3
def measured_over_predicted(rows, bandwidth, peak_flops):
    """Measured rate over Eq. (8.1)'s prediction, for prefill and decode, row by row."""
    out = []
    for r in rows:
        prefill = (r["P"] / r["prefill_s"]) / (r["P"] * peak_flops / r["prefill_flops"])
        decode = (1 / r["decode_step_s"]) / (bandwidth / r["decode_bytes"])
        out.append((prefill, decode))
    return out


# %% solution:q4
def overhead_floor(decode_bytes, step_s):
    """Eq. (8.2), weighted least squares: step_s ≈ t0 + bytes / bw_eff."""
    x, y = np.asarray(decode_bytes, dtype=float), np.asarray(step_s, dtype=float)
    slope, t0 = np.polyfit(x, y, 1, w=1 / y)
    return float(t0), float(1 / slope)


# %% solution:q5
def first_bandwidth_bound(rows, bandwidth, threshold):
    """The smallest model (by decode bytes) whose decode reaches `threshold` of the bandwidth prediction."""
    for r in sorted(rows, key=lambda r: r["decode_bytes"]):
        if (1 / r["decode_step_s"]) / (bandwidth / r["decode_bytes"]) >= threshold:
            return r["name"]
    return None
