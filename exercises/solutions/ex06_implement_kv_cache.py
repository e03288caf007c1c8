"""Reference solutions for exercises/ex06_implement_kv_cache.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import math

import torch
import torch.nn.functional as F


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
def decode_from_cache(params, config, k_cache, v_cache, token):
    """One decode step at position P from the cached rows and the weights alone; logits [B, V]."""
    H, H_kv, d_h, d = config["H"], config["H_kv"], config["d_h"], config["d"]
    B, P = token.shape[0], k_cache.shape[3]
    x = params["tok_emb.weight"][token] + params["pos_emb.weight"][P]  # [B, d]
    for layer in range(config["L"]):
        w = {name[len(f"blocks.{layer}."):]: t for name, t in params.items() if name.startswith(f"blocks.{layer}.")}
        h = F.layer_norm(x, (d,), w["ln1.weight"], w["ln1.bias"])
        q, k, v = (h @ w["attn.qkv.weight"].T + w["attn.qkv.bias"]).split([H * d_h, H_kv * d_h, H_kv * d_h], dim=-1)
        k = torch.cat([k_cache[layer], k.view(B, H_kv, 1, d_h)], dim=2)  # [B, H_kv, P + 1, d_h]
        v = torch.cat([v_cache[layer], v.view(B, H_kv, 1, d_h)], dim=2)
        a = attend(q.view(B, H, d_h), k, v).reshape(B, d)  # heads side by side, as the block lays them out
        x = x + a @ w["attn.out.weight"].T + w["attn.out.bias"]
        h = F.layer_norm(x, (d,), w["ln2.weight"], w["ln2.bias"])
        x = x + F.gelu(h @ w["mlp.up.weight"].T + w["mlp.up.bias"]) @ w["mlp.down.weight"].T + w["mlp.down.bias"]
    x = F.layer_norm(x, (d,), params["ln_f.weight"], params["ln_f.bias"])
    return x @ params["tok_emb.weight"].T  # the head is the token embedding (tied)


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
