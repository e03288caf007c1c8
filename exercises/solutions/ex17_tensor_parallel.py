"""Reference solutions for exercises/ex17_tensor_parallel.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import math

import torch


# %% solution:q1
def row_parallel_partials(x, w, W):
    """The W partial products of a row-parallel linear layer, [W, ..., d_out]; they sum to x @ w.T."""
    k = w.shape[1] // W
    parts = []
    for r in range(W):
        cols = slice(r * k, (r + 1) * k)
        parts.append(x[..., cols] @ w[:, cols].T)
    return torch.stack(parts)


# %% solution:q2
def qkv_rows_for_rank(H, H_kv, d_h, W, rank):
    """Rows of the fused QKV weight that `rank` keeps: its query heads, then their K and V heads."""
    h = H // W
    q = list(range(rank * h * d_h, (rank + 1) * h * d_h))
    kv = max(1, H_kv // W)
    first = rank * kv if H_kv >= W else rank * H_kv // W  # the replica of its group's K/V head
    k = [H * d_h + i for i in range(first * d_h, (first + kv) * d_h)]
    v = [i + H_kv * d_h for i in k]
    return q + k + v


# %% solution:q3
def collectives_of_forward(layers, B, T, s, W):
    """[[kind, nbytes], ...] of a forward through `layers`, in order."""
    if W == 1:
        return []
    record = []
    have, width = "whole", 0  # the activation's placement, and its full width
    for kind, out_width in layers + [["output", None]]:
        need = {"column": "whole", "norm": "whole", "output": "whole", "row": "split"}.get(kind)
        if kind == "local" and have == "partial":
            need = "whole"  # a value-wise layer never takes partial sums
        nbytes = B * T * width * s
        if need == "whole" and have == "partial":
            record.append(["all_reduce", nbytes])
        elif need == "whole" and have == "split":
            record.append(["all_gather", nbytes])
        elif need == "split" and have == "partial":
            record.append(["reduce_scatter", nbytes])
        have = need or have  # whole to split: each rank keeps its block
        have = {"column": "split", "row": "partial", "norm": "whole"}.get(kind, have)
        width = out_width
    return record


# %% solution:q4
def smallest_tp(model, hardware, S, B):
    """The smallest W in 1, 2, 4, 8, 16 whose per-rank weights and cache fit 90 % of the chip; 0 if none."""
    budget = math.floor(hardware.memory_bytes * 0.9)
    for W in (1, 2, 4, 8, 16):
        if model.H % W or (model.H_kv % W and W % model.H_kv):
            continue
        kv_heads = max(1, model.H_kv // W)
        cache = 2 * model.L * B * S * kv_heads * model.d_h * 2
        if math.ceil(model.N_params * 2 / W) + cache <= budget:
            return W
    return 0
