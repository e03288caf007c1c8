"""KV eviction by attention score: a budget of b tokens per sequence, layer and key/value head.

- `H2OCache` (Zhang et al. 2023, heavy-hitter oracle): every key's attention weight is accumulated over
  the queries that saw it (summed over the g query heads of its group); when the cache holds more than b
  tokens it keeps the `recent` newest and the b - recent keys of highest accumulated score, and evicts the
  rest. At the end of a prefill the scores are the prompt's column sums of attention.
- `SnapKVCache` (Li et al. 2024): once, at the end of the prefill, the last `window` queries of the prompt
  (the observation window) vote: their attention to each earlier key, summed over the window and the
  group's heads, smoothed by a max-pool of `kernel` positions over the keys before the window, keeps the
  b - window best of those plus the window itself. Decode steps then append without eviction (SnapKV
  compresses the prompt only). SnapKV's code (FasterDecoding/SnapKV, `snapkv_utils.py` at 395b54d) pools
  with an average by default and offers this max-pool as `pooling='maxpool'`.

Both keep each kept key's position (as the papers do with RoPE): a token at t gets position t, so the
stream stays within S_max. The kept sets differ per layer and head, so each (layer, sequence, head) row is
compacted by its own gather; every row holds the same count n, so attention stays a dense `[B, H_kv, n, d_h]`.

Scores need the attention weights, which a fused kernel (FlashAttention) never writes out: `observe`
recomputes softmax(q·kᵀ/√d_h) from q and the keys (`MiniGPT` calls it when a cache has it), as the
reference implementations do in eager attention. Its cost is one more score matrix per layer; the scores
themselves are one fp32 per kept key and head (`score_bytes`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from minigpt.config import ModelConfig
from minigpt.runtime.kv_cache import check_cache_args


def _count(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


class ScoredKVCache:
    """The common part: storage `[L, B, H_kv, S_max, d_h]`, per-row positions and scores, a held count n
    (the same in every row) and the absolute count t. Subclasses choose what to keep in `_evict`."""

    _kind = "eviction cache"

    def __init__(self, config: ModelConfig, B: int, *, budget: int, dtype: torch.dtype,
                 device: torch.device | str) -> None:
        S_max = check_cache_args(config, B, None, dtype)
        self.budget = _count("budget", budget, 1)
        self.config, self.B, self.S_max = config, B, S_max
        shape = (config.L, B, config.H_kv, S_max)
        self.k = torch.zeros((*shape, config.d_h), dtype=dtype, device=device)
        self.v = torch.zeros((*shape, config.d_h), dtype=dtype, device=device)
        self.pos = torch.full(shape, -1, dtype=torch.long, device=device)
        self.score = torch.zeros(shape, dtype=torch.float32, device=device)
        self.n, self.t, self.bytes_read = 0, 0, 0

    @property
    def dtype(self) -> torch.dtype:
        return self.k.dtype

    @property
    def device(self) -> torch.device:
        return self.k.device

    @property
    def S(self) -> int:
        """The absolute count t (a new token's position; `MiniGPT` checks t + T <= S_max)."""
        return self.t

    @property
    def lengths(self) -> torch.Tensor:
        return torch.full((self.B,), self.t, dtype=torch.long, device=self.device)

    @property
    def bytes_used(self) -> int:
        """K/V bytes of the n tokens held (every layer, sequence and head): 2·L·B·H_kv·n·d_h·s."""
        return self.k[:, :, :, : self.n].nbytes + self.v[:, :, :, : self.n].nbytes

    @property
    def score_bytes(self) -> int:
        """The scores kept beside them: one fp32 per held key, layer, sequence and head."""
        return self.score[:, :, :, : self.n].nbytes

    def check_room(self, T: int) -> None:
        if self.n + T > self.S_max:
            raise ValueError(f"{self._kind} overflow: it holds n={self.n} tokens and {T} more were written, "
                             f"but its storage has {self.S_max} rows")

    def visible(self, T: int) -> torch.Tensor:
        """`[1, T, n + T]`: every held key, and the new tokens causally (a mask, so the model reads `lengths`)."""
        held = torch.ones((T, self.n), dtype=torch.bool, device=self.device)
        new = torch.ones((T, T), dtype=torch.bool, device=self.device).tril()
        return torch.cat([held, new], dim=1).unsqueeze(0)

    def update(self, layer: int, k_new: torch.Tensor, v_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append `[B, H_kv, T, d_h]` at rows [n, n+T) of `layer`; return rows [0, n+T)."""
        T, n = k_new.shape[2], self.n
        self.k[layer, :, :, n : n + T] = k_new
        self.v[layer, :, :, n : n + T] = v_new
        self.pos[layer, :, :, n : n + T] = self.t + torch.arange(T, device=self.device)
        self.score[layer, :, :, n : n + T] = 0.0
        k, v = self.k[layer, :, :, : n + T], self.v[layer, :, :, : n + T]
        self.bytes_read += k.nbytes + v.nbytes
        return k, v

    def weights(self, q: torch.Tensor, k: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        """Attention weights `[B, H_kv, g, T, K]` of queries q `[B, H, T, d_h]` on keys k `[B, H_kv, K, d_h]`
        where `visible` `[1 or B, T, K]` lets them see (`MiniGPT` always passes the mask it attends with)."""
        B, H, T, d_h = q.shape
        H_kv = k.shape[1]
        scores = q.float().view(B, H_kv, H // H_kv, T, d_h) @ k.float().unsqueeze(2).transpose(-2, -1)
        scores = (scores / math.sqrt(d_h)).masked_fill(~visible[:, None, None], float("-inf"))
        return torch.softmax(scores, dim=-1)

    def observe(self, layer: int, q: torch.Tensor, k: torch.Tensor, visible: torch.Tensor) -> None:
        raise NotImplementedError

    def advance(self, T: int) -> None:
        """Count the T tokens, then evict down to the budget (every layer)."""
        self.n += T
        self.t += T
        self._evict()

    def _evict(self) -> None:
        raise NotImplementedError

    def _keep(self, priority: torch.Tensor, count: int) -> None:
        """Keep, in every row, the `count` keys of highest `priority` `[L, B, H_kv, n]` (in position order)."""
        idx = priority.topk(count, dim=-1).indices
        idx = idx.gather(-1, self.pos[..., : self.n].gather(-1, idx).argsort(dim=-1))  # by position
        for store in (self.k, self.v):
            kept = store[:, :, :, : self.n].gather(3, idx.unsqueeze(-1).expand(-1, -1, -1, -1, store.shape[-1]))
            store[:, :, :, :count] = kept
        for meta in (self.pos, self.score):
            meta[..., :count] = meta[..., : self.n].gather(-1, idx)
        self.n = count

    def reset(self) -> None:
        self.n, self.t, self.bytes_read = 0, 0, 0


class H2OCache(ScoredKVCache):
    """Heavy hitters + a recent window, b = heavy + `recent` tokens per row (H2O; `recent` defaults to b // 2,
    the split of the H2O recipe in llama-recipes)."""

    _kind = "H2O cache"

    def __init__(self, config: ModelConfig, B: int = 1, *, budget: int, recent: int | None = None,
                 dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> None:
        super().__init__(config, B, budget=budget, dtype=dtype, device=device)
        recent = budget // 2 if recent is None else recent
        if isinstance(recent, bool) or not isinstance(recent, int) or not 0 <= recent <= budget:
            raise ValueError(f"recent must be an integer in 0..budget={budget}, got {recent!r}")
        self.recent = recent

    def observe(self, layer: int, q: torch.Tensor, k: torch.Tensor, visible: torch.Tensor) -> None:
        """Add each key's attention, summed over the queries and the group's heads, to its score."""
        K = k.shape[2]
        self.score[layer, :, :, :K] += self.weights(q, k, visible).sum(dim=(2, 3))

    def _evict(self) -> None:
        if self.n <= self.budget:
            return
        recent = self.pos[..., : self.n] >= self.t - self.recent  # the newest `recent` tokens stay
        self._keep(self.score[..., : self.n].masked_fill(recent, float("inf")), self.budget)


class SnapKVCache(ScoredKVCache):
    """The prompt compressed once to b tokens by its last `window` queries' votes; decode appends (SnapKV)."""

    _kind = "SnapKV cache"

    def __init__(self, config: ModelConfig, B: int = 1, *, budget: int, window: int = 8, kernel: int = 7,
                 dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> None:
        super().__init__(config, B, budget=budget, dtype=dtype, device=device)
        if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= budget:
            raise ValueError(f"window must be an integer in 1..budget={budget}, got {window!r}")
        if isinstance(kernel, bool) or not isinstance(kernel, int) or kernel < 1 or kernel % 2 == 0:
            raise ValueError(f"kernel must be a positive odd integer (the pooling width), got {kernel!r}")
        self.window, self.kernel = window, kernel
        self.compressed = False

    def observe(self, layer: int, q: torch.Tensor, k: torch.Tensor, visible: torch.Tensor) -> None:
        """In the prefill (the first forward), score the prompt's keys by the observation window's attention."""
        if self.t > 0:
            return
        T = q.shape[2]
        w = min(self.window, T)
        votes = self.weights(q[:, :, T - w :], k, visible[:, T - w :])
        votes = votes.sum(dim=(2, 3))  # [B, H_kv, K]
        # The keys before the window are pooled among themselves (the window is kept whole, so its votes do
        # not spill onto its neighbour), as SnapKV's code pools `attn_weights[..., :-window]`.
        prefix = votes[..., : k.shape[2] - w]
        if prefix.shape[-1]:
            pooled = F.max_pool1d(prefix.flatten(0, 1).unsqueeze(1), self.kernel, stride=1,
                                  padding=self.kernel // 2)
            votes[..., : prefix.shape[-1]] = pooled.view_as(prefix)
        self.score[layer, :, :, : k.shape[2]] = votes

    def _evict(self) -> None:
        if self.compressed or self.n <= self.budget:
            self.compressed = True
            return
        window = self.pos[..., : self.n] >= self.t - self.window  # the observation window stays
        self._keep(self.score[..., : self.n].masked_fill(window, float("inf")), self.budget)
        self.compressed = True

    def reset(self) -> None:
        super().reset()
        self.compressed = False
