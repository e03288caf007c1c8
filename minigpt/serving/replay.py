"""Replay: the same scheduler and engine, with each step's time predicted by the book's formulas.

Nothing runs a model: a forward of B sequences, each feeding T tokens after its own S_b cached ones,
takes `roofline_time(F, bytes)` = max(bytes / BW, F / π) (Chapter 3), with F = Σ_b L·layer_flops(T, S_b)
(Eq. 1.1) plus the LM head at one position per sequence (Eq. 1.6), and bytes = the weights once
(Eq. 2.2) + each sequence's S_b cached tokens' K/V read (Eq. 3.5, which leaves out the write of the
new K/V and the activations). A decode-only step is thus Eq. (7.2) exactly. By default a step is
priced as the engine runs it (`ModelExecutor`, and vLLM, Orca, Sarathi-Serve): one forward over all its
tokens, prompt chunks and decodes together, so the weights are read once per step, the mixed step of
`costs.mixed_step_time`. `fused=False` prices the unfused executor instead, one forward per distinct
chunk length T (a mixed step pays a weight read per forward), kept for the comparison.
Two knobs of the compute side: `mfu`, the share of the peak π a forward sustains (F / (mfu·π)), and `causal`,
a prompt chunk's queries priced against the keys they see (query i of T after S cached: S+i+1) instead of all
S+T, as the engines' causal kernels compute. Their defaults (mfu = 1, dense) make every replayed time a floor;
Chapter 12 replays at both ends (mfu = 0.5, causal) to show how far the floor sits from an engine's run.
The LM head is priced at one row per sequence of the step (as `costs.mixed_step_time` does); the fused
executor computes it only at the rows that sample, one d·V row fewer per unfinished prompt chunk.

Block accounting needs no K/V: the pool is a `PagedKVCache` of a one-number-per-token shape, so
the allocator, the block tables, copy-on-write and the prefix cache are the real ones.
"""

from __future__ import annotations

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.costs._check import _mfu
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.serving.executor import forwards
from minigpt.serving.request import Chunk


def replay_blocks(model: ModelPreset, hardware: HardwarePreset, *, block_size: int = 16, s: int = 2,
                  reserve: float = 0.1) -> int:
    """KV blocks beside the weights, Eq. (2.4)'s budget: (memory·(1 − reserve) − N·s) / (b · KV bytes/token)."""
    free = costs.memory_budget(memory_bytes=hardware.memory_bytes, reserve=reserve) - costs.weight_bytes(
        N_params=model.N_params, s=s)
    per_block = block_size * costs.evaluate(costs.kv_bytes_per_token, model, s=s)
    if free < per_block:
        raise ValueError(f"{model.name} at s={s} bytes per weight leaves no room for a KV block on {hardware.name}")
    return free // per_block


def shadow_pool(model: ModelPreset, *, num_blocks: int, block_size: int = 16) -> PagedKVCache:
    """A paged cache for the block accounting of `model`: one value per token slot, not its K/V."""
    S_max = model.S_max or 4096
    return PagedKVCache(ModelConfig(L=1, H=1, H_kv=1, d_h=1, d_ffn=1, V=model.V, S_max=S_max),
                        num_blocks=num_blocks, block_size=block_size)


class ReplayExecutor:
    """Stands in for the model: advances the pool, emits `token` for every sample, predicts the step's time."""

    predicts_time = True

    def __init__(self, model: ModelPreset, hardware: HardwarePreset, pool: PagedKVCache, *, s: int = 2,
                 fused: bool = True, token: int = 0, mfu: float = 1.0, causal: bool = False) -> None:
        self.model, self.hardware, self.pool = model, hardware, pool
        self.s, self.fused, self.token = s, fused, token
        self.peak = _mfu(mfu) * hardware.peak_flops
        if not isinstance(causal, bool):
            raise ValueError(f"causal must be True or False, got {causal!r}")
        self.causal = causal
        self.S_max, self.V, self.device = pool.config.S_max, model.V, pool.device
        self.weight_bytes = costs.weight_bytes(N_params=model.N_params, s=s)
        self.kv_token = costs.evaluate(costs.kv_bytes_per_token, model, s=s)
        self._layer = costs.model_args(costs.layer_flops, model, T=1, S=0)  # the model's symbols, bound once
        self._head = costs.model_args(costs.lm_head_flops, model, T=1, B=1)

    def forward_cost(self, group: list[Chunk]) -> tuple[int, int]:
        """FLOPs and K/V bytes (weights left out) of one forward over `group` (each its own S_b, equal T)."""
        T = group[0].T
        flops = costs.lm_head_flops(**{**self._head, "B": len(group)})
        kv = 0
        for c in group:
            S = c.tracked.computed
            flops += self.model.L * costs.layer_flops(**{**self._layer, "T": T, "S": S, "causal": self.causal})
            kv += S * self.kv_token  # the S cached tokens' K/V, read
        return flops, kv

    def step_time(self, chunks: list[Chunk]) -> float:
        """Predicted seconds of the step: one fused forward's max(bytes/BW, F/(mfu·π)) (default), or the sum over
        the unfused executor's forwards, each paying the weights."""
        hw = self.hardware
        parts = [self.forward_cost(g) for g in forwards(chunks)]
        if self.fused:
            parts = [(sum(f for f, _ in parts), sum(b for _, b in parts))]
        return sum(costs.roofline_time(flops=f, bytes=self.weight_bytes + b, peak_flops=self.peak,
                                       bandwidth=hw.bandwidth) for f, b in parts)

    def run(self, chunks: list[Chunk]) -> dict[int, int]:
        """Advance each chunk's sequence by T; a sampling chunk yields `token`."""
        for c in chunks:
            self.pool.advance([c.tracked.seq], c.T)  # type: ignore[list-item]
        return {id(c.tracked): self.token for c in chunks if c.samples}
