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
def rank_bytes(shapes, H, H_kv, W, s):
    """Bytes of the tensors one rank of W holds."""
    d = shapes["tok_emb.weight"][1]
    d_h = d // H
    kv = max(1, H_kv // W)  # a whole K/V head copied when H_kv < W
    total = 0
    for name, shape in shapes.items():
        n = math.prod(shape)
        part = name.split(".", 2)[2] if name.startswith("blocks.") else name
        if part.startswith("attn.qkv."):  # column: its query heads, then K and V
            n = n // shape[0] * (H // W + 2 * kv) * d_h
        elif part in ("attn.out.weight", "mlp.up.weight", "mlp.up.bias", "mlp.down.weight", "tok_emb.weight"):
            n //= W  # split W ways (rows or input columns)
        # out's and down's biases, the LayerNorms and the position table: whole
        total += n
    return total * s
