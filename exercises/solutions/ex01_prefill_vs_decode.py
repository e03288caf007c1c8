"""Reference solutions for exercises/ex01_prefill_vs_decode.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

# %% solution:q1
def prefill_flops(L, P, d):
    """Eq. (1.2), seed convention (1 FLOP per multiply-add)."""
    return 12 * L * P * d**2 + 2 * L * P**2 * d


# %% solution:q2
def decode_step_flops(L, S, d):
    """Eq. (1.3), seed convention."""
    return 12 * L * d**2 + 2 * L * S * d


# %% solution:q3
def decode_flops(L, P, D, d):
    """Eq. (1.4), seed convention: D steps with S = P .. P+D-1."""
    sum_S = D * P + D * (D - 1) // 2
    return 12 * L * D * d**2 + 2 * L * d * sum_S


# %% solution:q4
def no_cache_flops(L, P, D, d):
    """Eq. (1.5), seed convention: step t re-runs a prefill over P+t tokens."""
    sum_n = D * P + D * (D - 1) // 2
    sum_n2 = D * P * P + P * D * (D - 1) + (D - 1) * D * (2 * D - 1) // 6
    return 12 * L * d**2 * sum_n + 2 * L * d * sum_n2


# %% solution:q5
def prefill_flops_full(L, P, d, d_ffn, V):
    """Eq. (1.2) in the 2-FLOP convention, with d_ffn and the LM head at the last position."""
    per_token = 2 * 3 * d * d + 2 * d * d + 2 * 2 * d * d_ffn
    attention = 4 * P * P * d
    return L * (P * per_token + attention) + 2 * d * V
