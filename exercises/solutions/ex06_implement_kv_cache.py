"""Reference solutions for exercises/ex06_implement_kv_cache.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import math

import torch


# %% solution:q1
def cache_write(k_cache, v_cache, k_new, v_new, S):
    """Write rows S..S+T-1 in place and return the valid prefixes."""
    T = k_new.shape[2]
    k_cache[:, :, S : S + T] = k_new
    v_cache[:, :, S : S + T] = v_new
    return k_cache[:, :, : S + T], v_cache[:, :, : S + T]


# %% solution:q2
def attend(q, k, v):
    """One query per head over S cached keys/values; GQA by repeating each KV head g times."""
    g = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(g, dim=1)  # [B, H, S, d_h]
    v = v.repeat_interleave(g, dim=1)
    scores = torch.einsum("bhd,bhsd->bhs", q, k) / math.sqrt(q.shape[-1])
    return torch.einsum("bhs,bhsd->bhd", torch.softmax(scores, dim=-1), v)


# %% solution:q3
@torch.no_grad()
def decode_logits(model, prompt, token):
    """Prefill the prompt into a cache, then one decode step for `token`."""
    cache = model.new_cache(prompt.shape[0])
    model(prompt, cache)
    return model(token.view(-1, 1), cache)[:, -1]


# %% solution:q4
@torch.no_grad()
def greedy_generate(model, prompt, D):
    """One prefill (token 1), then D-1 decode steps."""
    cache = model.new_cache(1)
    logits = model(torch.tensor([prompt]), cache)[:, -1]
    out = [int(logits.argmax())]
    for _ in range(D - 1):
        logits = model(torch.tensor([[out[-1]]]), cache)[:, -1]
        out.append(int(logits.argmax()))
    return out


# %% solution:q5
def packed_cache_write(k_cache, v_cache, k_new, v_new, lengths, counts):
    """Sequence b's counts[b] packed rows go after its own lengths[b] rows, in slot b; nothing else moves."""
    start = 0  # where sequence b's rows begin in the packed k_new, v_new
    for b, (S, T) in enumerate(zip(lengths, counts, strict=True)):
        k_cache[b, :, S : S + T] = k_new[start : start + T].transpose(0, 1)  # [T, H_kv, d_h] -> [H_kv, T, d_h]
        v_cache[b, :, S : S + T] = v_new[start : start + T].transpose(0, 1)
        start += T
    return k_cache, v_cache
