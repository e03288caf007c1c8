"""Reference solutions for exercises/ex18_cache_frontier.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import math

import torch


# %% solution:q1
def absorbed_decode(x, c, k_rope, w_q, w_qr, w_uk, w_uv, w_o, theta):
    """One MLA decode step over the latents c and the RoPE keys, W_UK and W_UV absorbed; [d]."""
    H, d_h, d_c = w_uk.shape
    S, d_rope = k_rope.shape
    half = d_rope // 2
    angle = (S - 1) * theta ** (-2 * torch.arange(half) / d_rope)  # the new token sits at S - 1
    cos, sin = torch.cos(angle), torch.sin(angle)
    out = torch.zeros(w_o.shape[0])
    for h in range(H):
        rows = slice(h * d_h, (h + 1) * d_h)
        q = w_q[rows] @ x  # [d_h]: the part with no position
        q_lat = w_uk[h].T @ q  # [d_c]: W_UK absorbed into the query
        qr = w_qr[h * d_rope:(h + 1) * d_rope] @ x  # [d_rope]: the RoPE part
        a, b = qr[0::2], qr[1::2]  # DeepSeek's pairs (2i, 2i + 1)
        q_rot = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(d_rope)
        scores = (c @ q_lat + k_rope @ q_rot) / math.sqrt(d_h + d_rope)  # [S]
        weights = torch.softmax(scores, dim=-1)
        o_lat = weights @ c  # [d_c]
        out = out + w_o[:, rows] @ (w_uv[h] @ o_lat)  # W_UV absorbed into the output
    return out


# %% solution:q2
def snapkv_keep(q, k, window, kernel, budget):
    """The prompt positions a SnapKV cache keeps, in increasing order."""
    T, d_h = k.shape
    if T <= budget:
        return list(range(T))
    w = min(window, T)
    votes = [0.0] * T
    for i in range(T - w, T):  # the observation window's queries, each over the keys it can see
        weights = torch.softmax(k[: i + 1] @ q[i] / math.sqrt(d_h), dim=0)
        for j in range(i + 1):
            votes[j] += float(weights[j])
    before = T - w
    half = kernel // 2
    pooled = [max(votes[max(0, j - half): min(before, j + half + 1)]) for j in range(before)]
    best = sorted(range(before), key=lambda j: pooled[j], reverse=True)[: budget - w]
    return sorted(best) + list(range(before, T))


# %% solution:q3
def h2o_decode_reads(q, k, budget, recent):
    """The positions each decode step's attention reads through an H2O cache of `budget` keys."""
    held, score, reads = [], {}, []
    for t in range(q.shape[0]):
        held.append(t)
        score[t] = 0.0
        keys = torch.stack([k[p] for p in held])
        weights = torch.softmax(keys @ q[t] / math.sqrt(q.shape[1]), dim=0)
        reads.append(list(held))  # attention read these: H2O evicts after the step
        for p, w in zip(held, weights.tolist(), strict=True):
            score[p] += w
        if len(held) > budget:
            old, new = held[: len(held) - recent], held[len(held) - recent:]
            heavy = sorted(old, key=lambda p: score[p], reverse=True)[: budget - len(new)]
            held = sorted(heavy) + new
    return reads


# %% solution:q4
def window_chunk_keys(fed, T, window, sinks):
    """For each query of a chunk of T tokens, the indices of the keys it attends among those the window cache
    hands its attention: the slots holding a token, in slot order, then the chunk's own T keys."""
    slots = [-1] * (sinks + window)  # the position each slot holds; -1: empty

    def slot(p):
        return p if p < sinks else sinks + (p - sinks) % window

    S = 0
    for n in fed:  # a forward stores the sinks among its tokens and its last window tokens
        for p in range(S, S + n):
            if p < sinks or p >= S + n - window:
                slots[slot(p)] = p
        S += n
    keys = [p for p in slots if p >= 0] + list(range(S, S + T))  # read before the chunk is stored
    rows = []
    for t in range(S, S + T):
        rows.append([j for j, p in enumerate(keys) if p <= t and (p < sinks or p > t - window)])
    return rows
