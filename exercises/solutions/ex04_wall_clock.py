"""Reference solutions for exercises/ex04_wall_clock.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""


import numpy as np


# %% solution:q1
def wall_clock_s(P, D, prefill_tok_s, decode_tok_s):
    """Eq. (4.1)."""
    return P / prefill_tok_s + D / decode_tok_s


# %% solution:q2
def decode_share(P, D, prefill_tok_s, decode_tok_s):
    """Decode's share of Eq. (4.1)."""
    decode = D / decode_tok_s
    return decode / (P / prefill_tok_s + decode)


# %% solution:q3
def rates_from_meters(prompt_tokens, prefill_s, decode_steps, decode_s):
    """The two rates an engine logs."""
    return prompt_tokens / prefill_s, decode_steps / decode_s


# %% solution:q4
def fit_rates(P, D, total_s):
    """Least squares total_s ≈ a·P + b·D; the rates are 1/a and 1/b."""
    A = np.column_stack([np.asarray(P, dtype=float), np.asarray(D, dtype=float)])
    (a, b), *_ = np.linalg.lstsq(A, np.asarray(total_s, dtype=float), rcond=None)
    return 1 / a, 1 / b
