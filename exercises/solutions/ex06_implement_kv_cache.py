"""Reference solutions for exercises/ex06_implement_kv_cache.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""

import math

import torch
import torch.nn.functional as F


# %% solution:q1
def chunk_attention(q, k_cache, v_cache, k_new, v_new, S):
    """Write the chunk's rows S..S+T-1 in place; query i (position S+i) sees keys 0..S+i: the causal mask aligned
    bottom-right (is_causal=True would align it top-left: right only for S = 0)."""
    T = k_new.shape[2]
    k_cache[:, :, S : S + T] = k_new
    v_cache[:, :, S : S + T] = v_new
    k, v = k_cache[:, :, : S + T], v_cache[:, :, : S + T]  # the valid rows: none of the stale ones past S+T
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # [B, H, T, S+T]
    visible = torch.ones(T, S + T, dtype=torch.bool, device=q.device).tril(S)  # row i: keys 0..S+i
    out = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1) @ v
    return out, k, v


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
def generate_from_weights(params, config, prompt, D):
    """One causal prefill fills every layer's cache and gives token 1; D-1 decode steps each append one row."""
    H, H_kv, d_h, d = config["H"], config["H_kv"], config["d_h"], config["d"]
    B, P = prompt.shape
    ks, vs = [None] * config["L"], [None] * config["L"]  # each layer's cached keys and values [B, H_kv, S, d_h]

    def step(tokens, S):
        """tokens [B, T] at positions S..S+T-1 through every layer; logits [B, V] of the last one."""
        T = tokens.shape[1]
        x = params["tok_emb.weight"][tokens] + params["pos_emb.weight"][S : S + T]  # [B, T, d]
        visible = torch.ones(T, S + T, dtype=torch.bool).tril(S)  # query i (position S+i) sees keys 0..S+i
        for layer in range(config["L"]):
            lw = {n.split(".", 2)[2]: t for n, t in params.items() if n.startswith(f"blocks.{layer}.")}
            h = F.layer_norm(x, (d,), lw["ln1.weight"], lw["ln1.bias"])
            qkv = h @ lw["attn.qkv.weight"].T + lw["attn.qkv.bias"]
            q, k, v = qkv.split([H * d_h, H_kv * d_h, H_kv * d_h], dim=-1)
            k, v = k.view(B, T, H_kv, d_h).transpose(1, 2), v.view(B, T, H_kv, d_h).transpose(1, 2)
            kc = k if S == 0 else torch.cat([ks[layer], k], dim=2)  # the cached rows, then this step's
            vc = v if S == 0 else torch.cat([vs[layer], v], dim=2)
            ks[layer], vs[layer] = kc, vc  # appended: the next step reads them
            g = H // H_kv  # query heads h*g .. h*g+g-1 share KV head h, as in Question 2
            scores = q.view(B, T, H, d_h).transpose(1, 2) @ kc.repeat_interleave(g, dim=1).transpose(-2, -1)
            a = torch.softmax(scores.masked_fill(~visible, float("-inf")) / math.sqrt(d_h), dim=-1)
            a = (a @ vc.repeat_interleave(g, dim=1)).transpose(1, 2).reshape(B, T, d)  # heads side by side
            x = x + a @ lw["attn.out.weight"].T + lw["attn.out.bias"]
            h = F.layer_norm(x, (d,), lw["ln2.weight"], lw["ln2.bias"])
            up = F.gelu(h @ lw["mlp.up.weight"].T + lw["mlp.up.bias"])
            x = x + up @ lw["mlp.down.weight"].T + lw["mlp.down.bias"]
        x = F.layer_norm(x[:, -1], (d,), params["ln_f.weight"], params["ln_f.bias"])  # the last position only
        return x @ params["tok_emb.weight"].T

    token = step(prompt, 0).argmax(dim=-1)  # [B]: each sequence its own argmax
    out = [token]
    for i in range(1, D):
        token = step(token.view(B, 1), P + i - 1).argmax(dim=-1)  # token i-1 at position P+i-1
        out.append(token)
    return torch.stack(out, dim=1).tolist()


# %% solution:q5
def packed_cache_write(k_cache, v_cache, k_new, v_new, lengths, counts):
    """Sequence b's counts[b] packed rows go after its own lengths[b] rows, in slot b; nothing else moves."""
    start = 0  # where sequence b's rows begin in the packed k_new, v_new
    for b, (S, T) in enumerate(zip(lengths, counts, strict=True)):
        k_cache[b, :, S : S + T] = k_new[start : start + T].transpose(0, 1)  # [T, H_kv, d_h] -> [H_kv, T, d_h]
        v_cache[b, :, S : S + T] = v_new[start : start + T].transpose(0, 1)
        start += T
    return k_cache, v_cache
