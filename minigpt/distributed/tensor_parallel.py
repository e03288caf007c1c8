"""MiniGPT sharded across W ranks, Megatron-style (Chapter 20).

Each rank holds 1/W of every weight matrix and runs the same forward on its shard:

- attention: QKV column-parallel (rank r keeps its H/W query heads and their K/V heads), the output
  projection row-parallel (its H/W·d_h input columns); one all-reduce sums the partial outputs;
- MLP: `up` column-parallel (d_ffn/W hidden units), `down` row-parallel; one all-reduce;
- embedding and the tied LM head vocab-parallel (V/W rows): a token outside the rank's rows looks up
  zeros and an all-reduce assembles the row; each rank's logits are a V/W slice, all-gathered.

So a forward issues 2L + 2 collectives (Eq. 20.1). LayerNorms, biases of the row-parallel layers and
the position table are replicated. When H_kv < W a K/V head is replicated W/H_kv times, as vLLM's
`QKVParallelLinear` does, so every rank holds one K/V head and its own copy of that head's cache.
"""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F

from minigpt.config import ModelConfig
from minigpt.distributed.collectives import Collectives
from minigpt.runtime.kv_cache import KVCache
from minigpt.runtime.model import MiniGPT, attention, causal_visible


def kv_heads_per_rank(H_kv: int, W: int) -> int:
    """K/V heads a rank holds: H_kv/W, or 1 (a replica) when H_kv < W."""
    return max(1, H_kv // W)


def qkv_rows(config: ModelConfig, W: int, rank: int) -> torch.Tensor:
    """Rows of the fused QKV weight `[(H + 2·H_kv)·d_h, d]` that `rank` keeps: its H/W query heads,
    then the keys and the values of the K/V heads they read (a replica when H_kv < W)."""
    c, H, kv = config, config.H // W, kv_heads_per_rank(config.H_kv, W)
    q = torch.arange(rank * H * c.d_h, (rank + 1) * H * c.d_h)
    first = rank * kv if c.H_kv >= W else rank * c.H_kv // W  # a replica: its query heads' group
    k = c.d + torch.arange(first * c.d_h, (first + kv) * c.d_h)
    return torch.cat([q, k, k + c.H_kv * c.d_h])


def check_shardable(config: ModelConfig, W: int) -> None:
    """Raise ValueError naming what W must divide (or be divided by)."""
    c = config
    if isinstance(W, bool) or not isinstance(W, int) or W < 1:
        raise ValueError(f"W must be an int >= 1, got {W!r}")
    for name in ("H", "d_ffn", "V"):
        if getattr(c, name) % W:
            raise ValueError(f"W={W} must divide {name}={getattr(c, name)}")
    if c.H_kv % W and W % c.H_kv:
        raise ValueError(f"W={W} and H_kv={c.H_kv}: one must divide the other")


def param_kind(name: str) -> str:
    """A parameter's name within its block (`blocks.2.attn.qkv.weight` is `attn.qkv.weight`), or the
    name itself outside the blocks (`tok_emb.weight`)."""
    return name.split(".", 2)[-1] if name.startswith("blocks.") else name


def shard_state(state: dict[str, torch.Tensor], config: ModelConfig, W: int, rank: int) -> dict[str, torch.Tensor]:
    """The tensors `rank` of `W` holds, under the names of MiniGPT's `state_dict()` (detached slices of
    `state`): the QKV weight's and bias's `qkv_rows` (column), the output projection's columns of its query
    heads (row), `up`'s d_ffn/W rows and their biases (column), `down`'s d_ffn/W columns (row), the
    embedding's V/W rows (vocabulary); the row-parallel layers' biases, the LayerNorms and the position
    table whole, on every rank."""
    c = config
    check_shardable(c, W)
    rows = qkv_rows(c, W, rank)
    q_rows = rows[:c.H // W * c.d_h]
    f, v = c.d_ffn // W, c.V // W
    out = {}
    for name, t in state.items():
        t = t.detach()
        kind = param_kind(name)
        if kind in ("attn.qkv.weight", "attn.qkv.bias"):
            t = t[rows]
        elif kind == "attn.out.weight":
            t = t[:, q_rows]
        elif kind in ("mlp.up.weight", "mlp.up.bias"):
            t = t[rank * f:(rank + 1) * f]
        elif kind == "mlp.down.weight":
            t = t[:, rank * f:(rank + 1) * f]
        elif kind == "tok_emb.weight":
            t = t[rank * v:(rank + 1) * v]
        out[name] = t
    return out


class TensorParallelMiniGPT:
    """Rank `comm.rank`'s shard of a MiniGPT; `forward` returns the full logits on every rank."""

    def __init__(self, model: MiniGPT, comm: Collectives) -> None:
        c, W, r = model.config, comm.world_size, comm.rank
        p = shard_state(model.state_dict(), c, W, r)  # checks that W can split the model
        self.config, self.comm = c, comm
        H, kv = c.H // W, kv_heads_per_rank(c.H_kv, W)
        # the shard's shape: what this rank's cache holds
        self.local = replace(c, H=H, H_kv=kv, d_ffn=c.d_ffn // W, V=c.V // W)
        self.layers = []
        for i in range(c.L):
            g = {k.removeprefix(f"blocks.{i}."): t for k, t in p.items() if k.startswith(f"blocks.{i}.")}
            self.layers.append(dict(
                ln1=(g["ln1.weight"], g["ln1.bias"]), ln2=(g["ln2.weight"], g["ln2.bias"]),
                qkv_w=g["attn.qkv.weight"], qkv_b=g["attn.qkv.bias"], out_w=g["attn.out.weight"],
                out_b=g["attn.out.bias"], up_w=g["mlp.up.weight"], up_b=g["mlp.up.bias"],
                down_w=g["mlp.down.weight"], down_b=g["mlp.down.bias"]))
        self.vocab_start = r * (c.V // W)
        self.tok_emb = p["tok_emb.weight"]  # [V/W, d], also the LM head's rows
        self.pos_emb = p["pos_emb.weight"]
        self.ln_f = (p["ln_f.weight"], p["ln_f.bias"])

    def new_cache(self, B: int = 1, S_max: int | None = None) -> KVCache:
        """This rank's cache: its K/V heads only (a replica counts in full)."""
        return KVCache(self.local, B, S_max=S_max, dtype=self.tok_emb.dtype, device=self.tok_emb.device)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Vocab-parallel lookup: rows this rank does not hold are zeros; the all-reduce fills them."""
        local = tokens - self.vocab_start
        outside = (local < 0) | (local >= self.tok_emb.shape[0])
        x = F.embedding(local.masked_fill(outside, 0), self.tok_emb)
        return self.comm.all_reduce(x.masked_fill(outside[..., None], 0.0))

    def block(self, p: dict, x: torch.Tensor, cache: KVCache, S: int) -> torch.Tensor:
        c, n = self.local, self.config
        B, T, _ = x.shape
        h = F.layer_norm(x, (n.d,), *p["ln1"])
        q, k, v = F.linear(h, p["qkv_w"], p["qkv_b"]).split(
            [c.H * c.d_h, c.H_kv * c.d_h, c.H_kv * c.d_h], dim=-1)
        q = q.view(B, T, c.H, c.d_h).transpose(1, 2)
        k, v = (t.view(B, T, c.H_kv, c.d_h).transpose(1, 2) for t in (k, v))
        k, v = cache.update(p["layer"], k, v)
        a = attention(q, k, v, causal_visible(S, T, x.device))  # this rank's heads
        a = a.transpose(1, 2).reshape(B, T, c.H * c.d_h)
        x = x + self.comm.all_reduce(a @ p["out_w"].T) + p["out_b"]  # all-reduce 1 of the layer
        h = F.gelu(F.linear(F.layer_norm(x, (n.d,), *p["ln2"]), p["up_w"], p["up_b"]))
        return x + self.comm.all_reduce(h @ p["down_w"].T) + p["down_b"]  # all-reduce 2

    @torch.no_grad()
    def forward(self, tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Logits `[B, T, V]` for tokens `[B, T]` after the S cached ones, on every rank."""
        if tokens.dim() != 2 or tokens.dtype != torch.long:
            raise ValueError(f"tokens must be a torch.long tensor [B, T], got {tuple(tokens.shape)}")
        if tokens.shape[0] != cache.B:
            raise ValueError(f"tokens hold B={tokens.shape[0]} sequences; the cache B={cache.B}")
        S, T = cache.S, tokens.shape[1]
        cache.check_room(T)
        x = self.embed(tokens) + self.pos_emb[S:S + T]
        for i, p in enumerate(self.layers):
            x = self.block(dict(p, layer=i), x, cache, S)
        cache.advance(T)
        logits = F.layer_norm(x, (self.config.d,), *self.ln_f) @ self.tok_emb.T  # [B, T, V/W]
        return self.comm.all_gather(logits)  # the LM head's collective

    __call__ = forward

    def greedy_token(self, logits_shard: torch.Tensor) -> torch.Tensor:
        """The argmax over the whole vocabulary from each rank's slice `[B, V/W]`, by all-gathering
        only (max, index) pairs: 2·B numbers per rank instead of B·V/W. Ties go to the lowest id.

        The pairs travel as float64 whatever the logits' dtype: every bf16, fp16 or fp32 value is exact
        there, and so is every id below 2^53. In the logits' own dtype an id is not (bf16 holds 8
        significant bits: 451 becomes 452, 599 becomes 600, outside the vocabulary); vLLM's sampler
        casts the logits to fp32 for the same reason."""
        value, index = logits_shard.max(dim=-1)
        pair = torch.stack([value.double(), (index + self.vocab_start).double()], dim=-1)  # [B, 2]
        pairs = self.comm.all_gather(pair).view(pair.shape[0], -1, 2)  # [B, W, 2], rank order
        best = pairs[..., 0].argmax(dim=-1, keepdim=True)  # first rank holding the max
        return pairs[..., 1].gather(-1, best).squeeze(-1).long()
