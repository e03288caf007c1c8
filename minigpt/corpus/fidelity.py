"""What a lossy cache or a model variant costs in quality, measured on corpus text (Part III).

Four measurements, each against a baseline (the fp32 `KVCache`, or the shipped MHA model):

- `perplexity`: exp of the mean next-token cross-entropy on held-out corpus windows, by teacher
  forcing: one forward over each window with the cache gives every position's logits (Eq. 10.4).
- `logit_error`: max and mean |logit − baseline logit| and the mean KL(baseline ‖ cache) over the
  same windows (Eq. 10.3).
- `greedy_agreement`: greedy continuations generated with each cache (or model), compared token by
  token: the fraction of equal tokens and how many come before the first difference.
- grammaticality of sampled text: `minigpt.corpus.quality.grammaticality(..., new_cache=...)`.

Held-out text is `training_stream` with a seed the training never uses (`HELD_OUT_SEED`), cut into
windows that start at a sentence start, as the training windows do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from minigpt.config import ModelConfig
from minigpt.corpus.sentences import training_stream
from minigpt.runtime.generate import CacheFactory, generate
from minigpt.runtime.kv_cache import KVCache
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.quantized_cache import FP8KVCache, QuantizedKVCache
from minigpt.runtime.tokenizer import Tokenizer

HELD_OUT_SEED = 20_231_007  # training uses seed 0 (TrainConfig.seed); this stream is never trained on


def held_out_windows(tokenizer: Tokenizer, *, n: int, T: int, seed: int = HELD_OUT_SEED) -> torch.Tensor:
    """`[n, T]` token ids of held-out corpus text, each window starting at a sentence start."""
    for name, value in (("n", n), ("T", T)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    words = training_stream(n * (T + 40), seed=seed)
    ids = torch.tensor([tokenizer.id_of(w) for w in words], dtype=torch.long)
    starts = torch.cat([torch.zeros(1, dtype=torch.long), (ids == tokenizer.id_of(".")).nonzero().view(-1) + 1])
    starts = starts[starts + T <= len(ids)]
    step = max(1, len(starts) // n)
    picked = starts[::step][:n]
    if len(picked) < n:
        raise ValueError(f"the held-out stream holds only {len(picked)} windows of T={T}; ask for fewer")
    return ids[picked.view(-1, 1) + torch.arange(T)]


CACHE_KINDS = ("fp32", "int8", "int4", "int8-kivi", "int4-kivi", "fp8")


def cache_factory(config: ModelConfig, kind: str, *, dtype: torch.dtype = torch.float32,
                  device: torch.device | str = "cpu") -> CacheFactory:
    """`(B, S_max) -> cache` for `kind`: "fp32" (the `KVCache` in `dtype`), "int8" or "int4" (`QuantizedKVCache`,
    per token), "int8-kivi" or "int4-kivi" (keys per channel, values per token) or "fp8" (`FP8KVCache`, E4M3)."""
    if kind == "fp32":
        return lambda B, S_max: KVCache(config, B, S_max=S_max, dtype=dtype, device=device)
    if kind == "fp8":
        return lambda B, S_max: FP8KVCache(config, B, S_max=S_max, dtype=dtype, device=device)
    if kind in CACHE_KINDS:
        bits, axis = int(kind[3]), "channel" if kind.endswith("-kivi") else "token"
        return lambda B, S_max: QuantizedKVCache(config, B, bits=bits, key_axis=axis, S_max=S_max, dtype=dtype,
                                                 device=device)
    raise ValueError(f"kind must be one of {CACHE_KINDS}, got {kind!r}")


@torch.no_grad()
def teacher_forced_logits(model: MiniGPT, tokens: torch.Tensor, new_cache: CacheFactory | None = None) -> torch.Tensor:
    """Logits `[B, T, V]` of one forward over `tokens` `[B, T]` written into a fresh cache from `new_cache`."""
    B, T = tokens.shape
    cache = new_cache(B, T) if new_cache is not None else model.new_cache(B, S_max=T)
    return model(tokens.to(model.device), cache).float()


def perplexity(model: MiniGPT, tokens: torch.Tensor, new_cache: CacheFactory | None = None) -> float:
    """exp(mean −log p(x_{t+1} | x_{≤t})) over every position of `tokens` `[B, T]` but the last (Eq. 10.4)."""
    logits = teacher_forced_logits(model, tokens, new_cache)[:, :-1]
    targets = tokens[:, 1:].to(logits.device)
    return math.exp(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)).item())


def window_nll(model: MiniGPT, tokens: torch.Tensor, new_cache: CacheFactory | None = None) -> torch.Tensor:
    """Mean next-token −log p of each window of `tokens` `[B, T]`: `[B]` (log perplexity per window, Eq. 10.4)."""
    logits = teacher_forced_logits(model, tokens, new_cache)[:, :-1]
    targets = tokens[:, 1:].to(logits.device)
    nll = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")  # [B, T-1]
    return nll.mean(dim=1).cpu()


def window_kl(model: MiniGPT, tokens: torch.Tensor, new_cache: CacheFactory,
              baseline: CacheFactory | None = None) -> torch.Tensor:
    """Mean KL(p_baseline ‖ p_cache) over the positions of each window: `[B]` nats (Eq. 10.3)."""
    log_p = F.log_softmax(teacher_forced_logits(model, tokens, baseline), dim=-1)
    log_q = F.log_softmax(teacher_forced_logits(model, tokens, new_cache), dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(dim=-1).mean(dim=1).cpu()


def mean_ci(x: torch.Tensor | list[float], z: float = 1.96) -> tuple[float, float]:
    """Mean of independent samples and the half-width of its normal-approximation 95 % interval, z·sd/√n."""
    t = torch.as_tensor(x, dtype=torch.float64).flatten()
    if t.numel() < 2:
        raise ValueError(f"a confidence interval needs at least 2 samples, got {t.numel()}")
    return float(t.mean()), float(z * t.std(unbiased=True) / math.sqrt(t.numel()))


def wilson_ci(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson 95 % interval (low, high) of a proportion k/n (grammatical sentences, say)."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@dataclass(frozen=True)
class LogitError:
    """How far a cache's logits are from the baseline's, over every position of the windows (Eq. 10.3)."""

    max_abs: float
    mean_abs: float
    mean_kl: float  # KL(baseline ‖ cache) in nats, averaged over positions
    positions: int


def logit_error(model: MiniGPT, tokens: torch.Tensor, new_cache: CacheFactory,
                baseline: CacheFactory | None = None) -> LogitError:
    """Max and mean |Δ logit| and mean KL(p_baseline ‖ p_cache) of `new_cache` against `baseline` (fp32)."""
    ref = teacher_forced_logits(model, tokens, baseline)
    got = teacher_forced_logits(model, tokens, new_cache)
    diff = (got - ref).abs()
    log_p, log_q = F.log_softmax(ref, dim=-1), F.log_softmax(got, dim=-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(dim=-1)  # [B, T]
    return LogitError(max_abs=diff.max().item(), mean_abs=diff.mean().item(), mean_kl=kl.mean().item(),
                      positions=kl.numel())


@dataclass(frozen=True)
class Agreement:
    """Greedy continuations of one set of prompts under two settings, compared token by token."""

    tokens: int  # tokens compared (B·D)
    equal: int  # positions where both produced the same token
    mean_first_difference: float  # tokens before the first difference, averaged over sequences (D if none)

    @property
    def fraction(self) -> float:
        return self.equal / self.tokens


def compare_tokens(a: list[list[int]], b: list[list[int]]) -> Agreement:
    """Position-by-position agreement of two batches of generated tokens of equal shape."""
    if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b, strict=True)):
        raise ValueError("the two generations must have the same number of sequences and tokens each")
    equal = sum(x == y for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))
    firsts = [next((i for i, (x, y) in enumerate(zip(ra, rb, strict=True)) if x != y), len(ra))
              for ra, rb in zip(a, b, strict=True)]
    return Agreement(tokens=sum(len(r) for r in a), equal=equal, mean_first_difference=sum(firsts) / len(firsts))


def greedy_tokens(model: MiniGPT, prompts: torch.Tensor, D: int,
                  new_cache: CacheFactory | None = None) -> list[list[int]]:
    """D greedy tokens per prompt of `prompts` `[B, P]`, generated with caches from `new_cache`."""
    return generate(model, prompts, D, new_cache=new_cache).tokens


def greedy_agreement(model: MiniGPT, prompts: torch.Tensor, D: int, new_cache: CacheFactory | None = None, *,
                     baseline_model: MiniGPT | None = None, baseline: CacheFactory | None = None) -> Agreement:
    """Greedy tokens with (`model`, `new_cache`) against (`baseline_model` or `model`, `baseline`), compared."""
    ref = greedy_tokens(baseline_model or model, prompts, D, baseline)
    return compare_tokens(greedy_tokens(model, prompts, D, new_cache), ref)
