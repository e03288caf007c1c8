"""MiniGPT: a GPT-2-style decoder whose one `forward` serves prefill (T = P) and decode (T = 1)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from minigpt.config import ModelConfig
from minigpt.runtime.kv_cache import KVCache


def causal_visible(S: int, T: int, device: torch.device) -> torch.Tensor | None:
    """`[1, T, S+T]`: query i (at position S+i) sees keys 0..S+i; None for T = 1 (it sees every cached key)."""
    if T == 1:
        return None
    i = torch.arange(T, device=device).view(1, T, 1)
    j = torch.arange(S + T, device=device).view(1, 1, S + T)
    return j <= S + i  # the offset causal mask: a chunk of T tokens after S cached ones


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, visible: torch.Tensor | None) -> torch.Tensor:
    """softmax(q·kᵀ/√d_h, masked)·v, the attention term of Eq. (1.1), with grouped key/value heads.

    q `[B, H, T, d_h]`; k, v `[B, H_kv, K, d_h]`; visible `[B or 1, T, K]` (None: every key). The g = H/H_kv
    query heads that share a K/V head are stacked into one matrix, so K and V are read once per group.
    """
    B, H, T, d_h = q.shape
    H_kv, K = k.shape[1], k.shape[2]
    g = H // H_kv
    q = q.reshape(B, H_kv, g * T, d_h)  # [B, H_kv, g·T, d_h]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(d_h)  # [B, H_kv, g·T, K]
    if visible is not None:
        scores = scores.view(B, H_kv, g, T, K).masked_fill(~visible[:, None, None], float("-inf"))
        scores = scores.view(B, H_kv, g * T, K)
    weights = torch.softmax(scores.float(), dim=-1).to(v.dtype)
    return (weights @ v).view(B, H, T, d_h)  # [B, H, T, d_h]


class CausalSelfAttention(nn.Module):
    """Multi-head attention with H query heads sharing H_kv key/value heads (MHA, GQA or MQA).

    Written with explicit matmuls, so `FlopCounterMode` sees every multiply-add of Eq. (1.1).
    """

    kernel = staticmethod(attention)  # the plain path; `minigpt.runtime.attention.use_attention` swaps it per model

    def __init__(self, config: ModelConfig, layer: int) -> None:
        super().__init__()
        self.config = config
        self.layer = layer
        c = config
        self.qkv = nn.Linear(c.d, (c.H + 2 * c.H_kv) * c.d_h)
        self.out = nn.Linear(c.d, c.d)

    def forward(self, x: torch.Tensor, cache: KVCache | None, S: int = 0) -> torch.Tensor:
        c = self.config
        B, T, _ = x.shape  # [B, T, d]; S tokens already cached
        q, k, v = self.qkv(x).split([c.H * c.d_h, c.H_kv * c.d_h, c.H_kv * c.d_h], dim=-1)
        q = q.view(B, T, c.H, c.d_h).transpose(1, 2)  # [B, H, T, d_h]
        k = k.view(B, T, c.H_kv, c.d_h).transpose(1, 2)  # [B, H_kv, T, d_h]
        v = v.view(B, T, c.H_kv, c.d_h).transpose(1, 2)  # [B, H_kv, T, d_h]
        visible = None
        if cache is not None:
            k, v = cache.update(self.layer, k, v)  # [B, H_kv, S+T, d_h]: the valid prefix only
            visible = cache.visible(T)  # [B, T, K] for a ragged cache (each sequence its own length)
        if visible is None:
            visible = causal_visible(S, T, x.device)
        observe = getattr(cache, "observe", None)
        if observe is not None:  # a cache that evicts by attention score (runtime.eviction: H2O, SnapKV)
            observe(self.layer, q, k, visible)
        a = self.kernel(q, k, v, visible)  # [B, H, T, d_h]
        a = a.transpose(1, 2).reshape(B, T, c.d)  # [B, T, d]
        return self.out(a)


class MLP(nn.Module):
    """The feed-forward block: d → d_ffn → d with GELU."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.up = nn.Linear(config.d, config.d_ffn)
        self.down = nn.Linear(config.d_ffn, config.d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, config: ModelConfig, layer: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d)
        self.attn = CausalSelfAttention(config, layer)
        self.ln2 = nn.LayerNorm(config.d)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor, cache: KVCache | None, S: int = 0) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), cache, S)
        return x + self.mlp(self.ln2(x))


class MiniGPT(nn.Module):
    """Token + learned position embeddings, L pre-LN blocks, final LayerNorm, tied LM head."""

    def __init__(self, config: ModelConfig | None = None) -> None:
        super().__init__()
        self.config = config = config or ModelConfig()
        self.tok_emb = nn.Embedding(config.V, config.d)
        self.pos_emb = nn.Embedding(config.S_max, config.d)
        self.blocks = nn.ModuleList(Block(config, layer) for layer in range(config.L))
        self.ln_f = nn.LayerNorm(config.d)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: scale residual projections by 1/sqrt(2L)
            if name.endswith(("attn.out.weight", "mlp.down.weight")):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.L))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    @property
    def dtype(self) -> torch.dtype:
        return self.tok_emb.weight.dtype

    @property
    def device(self) -> torch.device:
        return self.tok_emb.weight.device

    def new_cache(self, B: int = 1, S_max: int | None = None) -> KVCache:
        """A cache for B sequences in the model's dtype and on its device."""
        return KVCache(self.config, B, S_max=S_max, dtype=self.dtype, device=self.device)

    def forward(
        self, tokens: torch.Tensor, cache: KVCache | None = None, *, last_only: bool = False,
        check_inputs: bool = True,
    ) -> torch.Tensor:
        """Logits `[B, T, V]` for tokens `[B, T]` (`[B, 1, V]` when `last_only`); appends T tokens to `cache`.

        Without a cache the T tokens are the whole sequence (positions 0..T-1). With a cache holding
        S tokens they are positions S..S+T-1: T = P is a prefill, T = 1 a decode step.
        `check_inputs=False` skips only the token-id range check, the one check that reads the device (a
        host sync per call); shapes, dtypes, devices and the room left are still checked.
        """
        S = self._check_inputs(tokens, cache, check_values=check_inputs)  # room for T more is checked here, once
        T = tokens.shape[1]
        positions = torch.arange(S, S + T, device=tokens.device)  # [T]
        if cache is not None and cache.visible(T) is not None:  # ragged: sequence b at S_b, S_b+1, ...
            positions = cache.lengths.view(-1, 1) + torch.arange(T, device=tokens.device)  # [B, T]
        x = self.tok_emb(tokens) + self.pos_emb(positions)  # [B, T, d]
        for block in self.blocks:
            x = block(x, cache, S)
        if cache is not None:
            cache.advance(T)
        if last_only:
            x = x[:, -1:]  # [B, 1, d]
        return self.ln_f(x) @ self.tok_emb.weight.T  # [B, T, V]: the LM head shares the embedding

    def _check_inputs(self, tokens: torch.Tensor, cache: KVCache | None, check_values: bool = True) -> int:
        """Validate a forward's inputs before anything is written; return S, the tokens already cached.

        `check_values` reads the ids' min and max from the device (a host sync): callers whose ids come
        from the model's own argmax (a compiled decode loop) skip it after checking the prompt once.
        """
        c = self.config
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype != torch.long:
            got = f"{tokens.dtype} tensor of shape {tuple(tokens.shape)}" if isinstance(
                tokens, torch.Tensor) else type(tokens).__name__
            raise ValueError(f"tokens must be a torch.long tensor of shape [B, T], got {got}")
        B, T = tokens.shape
        if B == 0 or T == 0:
            raise ValueError(f"tokens must hold at least one token for one sequence, got shape [{B}, {T}]")
        if tokens.device != self.device:
            raise ValueError(f"tokens are on {tokens.device} but the model is on {self.device}")
        if check_values:
            low, high = int(tokens.min()), int(tokens.max())
            if low < 0 or high >= c.V:
                bad = low if low < 0 else high
                raise ValueError(f"token id {bad} is out of range: ids must be in 0..{c.V - 1} (V={c.V})")
        S = 0
        if cache is not None:
            if cache.config != c:
                raise ValueError(f"cache was built for {cache.config}, but the model is {c}")
            if cache.dtype != self.dtype or cache.device != self.device:
                raise ValueError(
                    f"cache is {cache.dtype} on {cache.device} but the model is {self.dtype} on "
                    f"{self.device}; build it with model.new_cache()"
                )
            if cache.B != B:
                raise ValueError(f"tokens hold B={B} sequences but the cache was built for B={cache.B}")
            S = cache.S
        if S + T > c.S_max:
            raise ValueError(
                f"sequence of {S + T} tokens exceeds S_max={c.S_max} (the model's position table)"
            )
        if cache is not None:
            cache.check_room(T)  # last: a paged cache reserves its blocks here
        return S
