"""Multi-head latent attention (MLA, DeepSeek-V2/V3) on MiniGPT: the cache holds one latent c per token.

Each token's keys and values are reconstructed from a latent c = W_DKV·x of width d_c (d_c ≪ 2·H·d_h) by
per-head up-projections, k_h = W_UK[h]·c and v_h = W_UV[h]·c; the cache stores c only (`LatentCache`,
`[L, B, S_max, d_c]`: L·d_c·s bytes per token, Eq. 2.5 with d_rope = 0). Two ways to decode, as vLLM's
`vllm/v1/attention/backends/mla/common.py` describes them:

- "naive" (vLLM's compute-friendly path, used there for prefill): decompress K and V of every cached token
  (`[B, H, S, d_h]`) and run multi-head attention;
- "absorbed" (the data-movement-friendly path, used for decode): since q_h·(W_UK[h]·c) = (W_UK[h]ᵀ·q_h)·c,
  fold W_UK into the query projection and W_UV into the output projection once (`fold`); attention then runs
  over the latents directly, like multi-query attention with one "head" c of width d_c.

MiniGPT's learned positions are added to x before attention, so the absorption is exact. DeepSeek uses
RoPE, which rotates q and k by their positions: R(t)·W_UK·c cannot be folded into the query projection
(the rotation sits between the two matrices and changes with t), so DeepSeek adds a decoupled RoPE key
k^R = RoPE(W_KR·x) of d_rope = 64 values per token, shared by all heads and cached beside c:
L·(d_c + d_rope)·s bytes per token (`costs.latent_kv_bytes_per_token`). Biases: a key bias adds q·b_k to
every score of a query (softmax ignores it) and a value bias adds b_v to every output (the weights sum
to one), so the up-projections carry none; `latent_from_mha` folds the MHA model's b_v into the output bias.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from minigpt.config import ModelConfig
from minigpt.runtime.kv_cache import TokenCount
from minigpt.runtime.model import MiniGPT, attention, causal_visible

PATHS = ("naive", "absorbed")


class LatentCache(TokenCount):
    """The latents c of every token seen so far, preallocated as `[L, B, S_max, d_c]` (no heads, no K/V pair).

    Same interface as `KVCache` (`S`, `B`, `update`, `advance`, `check_room`, `visible`), but `update` takes
    the new latents `[B, T, d_c]` and returns the valid prefix `[B, S+T, d_c]`. `bytes_used` is
    `costs.latent_kv_cache_bytes` (B·S·L·d_c·s).
    """

    _kind = "latent cache"

    def __init__(self, config: ModelConfig, d_c: int, B: int = 1, *, S_max: int | None = None,
                 dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> None:
        _check_d_c(d_c)
        S_max = self._start(config, B, S_max, dtype)
        self.d_c = d_c
        self.c = torch.zeros((config.L, B, S_max, d_c), dtype=dtype, device=torch.device(device))

    @property
    def dtype(self) -> torch.dtype:
        return self.c.dtype

    @property
    def device(self) -> torch.device:
        return self.c.device

    @property
    def s(self) -> int:
        return self.c.element_size()

    @property
    def nbytes(self) -> int:
        """Bytes allocated, Eq. (2.5) with S = S_max: L·B·S_max·d_c·s."""
        return self.c.nbytes

    @property
    def bytes_used(self) -> int:
        """Bytes holding the S real tokens, counted on the tensor: L·B·S·d_c·s."""
        return self.c[:, :, : self._S].nbytes

    def update(self, layer: int, c_new: torch.Tensor) -> torch.Tensor:
        """Write `c_new` `[B, T, d_c]` at rows [S, S+T) of `layer`; return the valid prefix `[B, S+T, d_c]`."""
        T = c_new.shape[1]
        self.c[layer, :, self._S : self._S + T] = c_new
        return self.c[layer, :, : self._S + T]

    def visible(self, T: int) -> None:
        """Every sequence holds S tokens: the plain causal mask applies."""
        return None

    def __repr__(self) -> str:
        c = self.config
        return (f"LatentCache(L={c.L}, B={self.B}, S={self._S}/{self.S_max}, d_c={self.d_c}, "
                f"dtype={self.dtype}, nbytes={self.nbytes})")


def _check_d_c(d_c: object) -> None:
    if isinstance(d_c, bool) or not isinstance(d_c, int) or d_c <= 0:
        raise ValueError(f"d_c must be a positive integer (the latent's width), got {d_c!r}")


class LatentAttention(nn.Module):
    """MLA for MiniGPT: q = W_Q·x + b_Q, c = W_DKV·x (cached), [k; v] = W_UKV·c per head, out = W_O·a + b_O.

    `path` is "naive" (decompress K, V from the latents, multi-head attention) or "absorbed" (attention over
    the latents with the folded weights of `fold`). Training uses the naive path; `MiniGPTMLA.set_path`
    switches and folds. Both paths read the same cache; their logits agree to fp32 rounding (tests/test_mla.py).
    """

    def __init__(self, config: ModelConfig, layer: int, d_c: int) -> None:
        super().__init__()
        _check_d_c(d_c)
        c = config
        self.config, self.layer, self.d_c = config, layer, d_c
        self.q = nn.Linear(c.d, c.H * c.d_h)
        self.down = nn.Linear(c.d, d_c, bias=False)  # W_DKV: x → c, the only thing cached
        self.up = nn.Linear(d_c, 2 * c.H * c.d_h, bias=False)  # [W_UK; W_UV], vLLM's kv_b_proj
        self.out = nn.Linear(c.d, c.d)
        self.path = "naive"
        self.folded: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
        self.bytes_moved = 0  # attention's HBM traffic of the last forward, counted on its tensors (Eq. 21.3)

    def up_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """W_UK and W_UV as `[H, d_h, d_c]` each."""
        c = self.config
        w_uk, w_uv = self.up.weight.split(c.H * c.d_h, dim=0)
        return w_uk.view(c.H, c.d_h, self.d_c), w_uv.view(c.H, c.d_h, self.d_c)

    @torch.no_grad()
    def fold(self) -> None:
        """Precompute the absorbed weights (once, as vLLM does after loading the weights):

        W_Q'[h] = √(d_c/d_h)·W_UK[h]ᵀ·W_Q[h] `[d_c, d]` and its bias (the factor keeps attention's 1/√d_h while
        the kernel divides by √d_c), and W_O'[h] = W_O[:, h]·W_UV[h] `[d, d_c]`.
        """
        c = self.config
        w_uk, w_uv = self.up_weights()
        w_q = self.q.weight.view(c.H, c.d_h, c.d)
        b_q = self.q.bias.view(c.H, c.d_h)
        ratio = math.sqrt(self.d_c / c.d_h)
        wq = ratio * torch.einsum("hkc,hkd->hcd", w_uk, w_q).reshape(c.H * self.d_c, c.d)
        bq = ratio * torch.einsum("hkc,hk->hc", w_uk, b_q).reshape(c.H * self.d_c)
        w_o = self.out.weight.view(c.d, c.H, c.d_h)
        wo = torch.einsum("ehk,hkc->ehc", w_o, w_uv).reshape(c.d, c.H * self.d_c)
        self.folded = (wq.contiguous(), bq.contiguous(), wo.contiguous())

    def forward(self, x: torch.Tensor, cache: LatentCache | None, S: int = 0) -> torch.Tensor:
        cfg = self.config
        B, T, _ = x.shape  # [B, T, d]; S tokens already cached
        lat = self.down(x)  # [B, T, d_c]
        if cache is not None:
            lat = cache.update(self.layer, lat)  # [B, S+T, d_c]: the valid prefix
        visible = causal_visible(S, T, x.device)
        K = lat.shape[1]
        if self.path == "naive":
            q = self.q(x).view(B, T, cfg.H, cfg.d_h).transpose(1, 2)  # [B, H, T, d_h]
            kv = self.up(lat).view(B, K, 2 * cfg.H, cfg.d_h).transpose(1, 2)  # decompress: [B, 2H, K, d_h]
            self.bytes_moved = lat.nbytes + 2 * kv.nbytes  # read the latents; write K, V and read them back
            k, v = kv.split(cfg.H, dim=1)  # [B, H, K, d_h] each
            a = attention(q, k, v, visible)  # [B, H, T, d_h]
            return self.out(a.transpose(1, 2).reshape(B, T, cfg.d))
        if self.folded is None:
            raise RuntimeError("the absorbed path needs the folded weights: call fold() (MiniGPTMLA.set_path does)")
        wq, bq, wo = self.folded
        q = (x @ wq.T + bq).view(B, T, cfg.H, self.d_c).transpose(1, 2)  # [B, H, T, d_c]: W_UK absorbed
        c = lat.unsqueeze(1)  # [B, 1, K, d_c]: one shared "head", MQA over the latents
        self.bytes_moved = lat.nbytes  # the latents, read once for all H heads
        o = attention(q, c, c, visible)  # [B, H, T, d_c]: the latents' weighted sums, per head
        return o.transpose(1, 2).reshape(B, T, cfg.H * self.d_c) @ wo.T + self.out.bias  # W_UV absorbed


class MiniGPTMLA(MiniGPT):
    """MiniGPT whose attention is `LatentAttention` of latent width d_c; its cache is a `LatentCache`."""

    def __init__(self, config: ModelConfig | None = None, *, d_c: int) -> None:
        super().__init__(config)
        _check_d_c(d_c)
        self.d_c = d_c
        for layer, block in enumerate(self.blocks):
            block.attn = LatentAttention(self.config, layer, d_c)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2's residual scaling, as MiniGPT
            if name.endswith(("attn.out.weight", "mlp.down.weight")):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * self.config.L))

    @property
    def path(self) -> str:
        return self.blocks[0].attn.path

    def set_path(self, path: str) -> MiniGPTMLA:
        """Decode through `path` ("naive" or "absorbed"); "absorbed" folds the current weights first."""
        if path not in PATHS:
            raise ValueError(f"path must be one of {PATHS}, got {path!r}")
        for block in self.blocks:
            block.attn.path = path
            if path == "absorbed":
                block.attn.fold()
        return self

    def train(self, mode: bool = True) -> MiniGPTMLA:
        """Training mode drops the folded weights (they would go stale) and returns to the naive path."""
        if mode:
            for block in self.blocks:
                block.attn.path, block.attn.folded = "naive", None
        return super().train(mode)

    def new_cache(self, B: int = 1, S_max: int | None = None) -> LatentCache:  # type: ignore[override]
        return LatentCache(self.config, self.d_c, B, S_max=S_max, dtype=self.dtype, device=self.device)


@torch.no_grad()
def latent_from_mha(model: MiniGPT, d_c: int, calibration: torch.Tensor | None = None) -> MiniGPTMLA:
    """An MLA model initialised from an MHA MiniGPT by a truncated SVD of each layer's K/V projection.

    The map x → [k; v] is M = [W_K; W_V] `[2·H·d_h, d]` (rank ≤ d). With `calibration` tokens `[B, T]`, M is
    weighted by the square root of the inputs' second moment E[x·xᵀ] (x: the layer's LayerNorm output, bias
    included as a constant 1), so the rank-d_c approximation minimises the error on real activations; without,
    it is the plain SVD of M. W_UKV = U_r (d_c columns), W_DKV = U_rᵀ·M. With d_c ≥ rank M (d_c = d for
    MiniGPT, since 2·H·d_h = 2·d) the copy is exact. Key biases are dropped (softmax ignores them), value
    biases go to the output bias (W_O·b_V).
    """
    c = model.config
    if c.H_kv != c.H:
        raise ValueError(f"model must be multi-head attention (H_kv = H = {c.H}), got H_kv={c.H_kv}")
    _check_d_c(d_c)
    if d_c > c.d:
        raise ValueError(f"d_c must be at most d={c.d} (the rank of [W_K; W_V]), got {d_c}")
    moments = _input_moments(model, calibration) if calibration is not None else None
    mla = MiniGPTMLA(c, d_c=d_c).to(dtype=model.dtype, device=model.device)
    state = {k: v for k, v in model.state_dict().items() if ".attn." not in k}
    mla.load_state_dict(state, strict=False)
    for layer, block in enumerate(model.blocks):
        w_q, w_k, w_v = block.attn.qkv.weight.split(c.d, dim=0)
        b_q, _, b_v = block.attn.qkv.bias.split(c.d, dim=0)
        M = torch.cat([w_k, w_v], dim=0).double()  # [2d, d]
        if moments is None:
            U = torch.linalg.svd(M, full_matrices=False).U
        else:  # weight by E[x xᵀ]^{1/2} (with the constant 1 for the bias the latent does not carry)
            evals, evecs = torch.linalg.eigh(moments[layer])
            root = evecs @ torch.diag(evals.clamp_min(0).sqrt()) @ evecs.T
            U = torch.linalg.svd(M @ root, full_matrices=False).U
        U = U[:, :d_c]  # [2d, d_c]
        attn = mla.blocks[layer].attn
        attn.q.weight.copy_(w_q)
        attn.q.bias.copy_(b_q)
        attn.up.weight.copy_(U.to(attn.up.weight.dtype))
        attn.down.weight.copy_((U.T @ M).to(attn.down.weight.dtype))
        attn.out.weight.copy_(block.attn.out.weight)
        attn.out.bias.copy_(block.attn.out.bias + block.attn.out.weight @ b_v)
    return mla.train(model.training)


@torch.no_grad()
def _input_moments(model: MiniGPT, tokens: torch.Tensor) -> list[torch.Tensor]:
    """Per layer, E[x·xᵀ] `[d, d]` (float64) of the attention's input x = ln1(h) over `tokens`."""
    moments: list[torch.Tensor] = []
    hooks = [block.ln1.register_forward_hook(
        lambda _m, _i, out: moments.append((lambda x: x.T @ x / len(x))(out.reshape(-1, out.shape[-1]).double())))
        for block in model.blocks]
    try:
        model(tokens.to(model.device))
    finally:
        for h in hooks:
            h.remove()
    return moments
