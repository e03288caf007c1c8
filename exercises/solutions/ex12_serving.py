"""Reference solutions for exercises/ex12_serving.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import math


# %% solution:q1
def prefix_hit_tokens(prompts, block_size):
    """A set of cached prefixes, one per full block: the tuple of all tokens up to the block's end."""
    cached, hits = set(), []
    for p in prompts:
        full = len(p) // block_size
        n = 0
        while n < full and tuple(p[: (n + 1) * block_size]) in cached:
            n += 1
        hits.append(min(n * block_size, len(p) - 1))
        cached.update(tuple(p[: (i + 1) * block_size]) for i in range(full))
    return hits


# %% solution:q2
def batching_steps(max_new_tokens, max_batch):
    """Simulate both policies; a request finishing in step k frees its slot for step k + 1."""
    static = sum(max(max_new_tokens[i : i + max_batch]) for i in range(0, len(max_new_tokens), max_batch))
    waiting, running, steps = list(max_new_tokens), [], 0
    while waiting or running:
        while waiting and len(running) < max_batch:
            running.append(waiting.pop(0))
        steps += 1
        running = [left - 1 for left in running if left > 1]
    return static, steps


# %% solution:q3
def chunk_steps(P, chunk_size, decodes):
    """Each step leaves chunk_size − decodes tokens of budget for the prompt."""
    return math.ceil(P / (chunk_size - decodes))


# %% solution:q4
def preemption_costs(model, S, mfu, link_bandwidth):
    """Recompute: the prefill of S tokens, Eq. (1.2), under the roofline; swap: the K/V out and back over the link."""
    from minigpt.costs.presets import HARDWARE, MODELS

    m, hw = MODELS[model], HARDWARE["H100 SXM"]
    d, kv = m.H * m.d_h, m.H_kv * m.d_h
    matrices = 2 * d * (d + 2 * kv) + 2 * d * d + 2 * m.ffn_matrices * d * m.d_ffn  # per token and layer, Eq. (1.1)
    flops = m.L * (S * matrices + 4 * S * S * d) + 2 * d * m.V  # Eq. (1.2): the LM head at the last position only
    weights = 2 * m.N_params  # bf16
    recompute = max(weights / hw.bandwidth, flops / (mfu * hw.peak_flops))  # compute at mfu of the peak
    kv_per_token = 2 * m.L * kv * 2  # Eq. (2.1) in bf16
    swap = 2 * S * kv_per_token / link_bandwidth  # out to host memory and back
    return recompute, swap
