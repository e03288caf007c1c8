"""Chapter 11's memory experiments: how much reserved KV memory holds real tokens, by allocation policy.

Three policies for a request whose sequence grows from P prompt tokens to S = P + D tokens:

- (a) ``"max"``: reserve S_max token slots when the request starts (a preallocated `KVCache`, `SlotKVCache`);
- (b) ``"exact"``: reserve exactly S slots when it starts (contiguous; needs D known in advance);
- (c) ``"paged"``: hold ⌈S_t / b⌉ blocks of b slots while it holds S_t tokens (`PagedKVCache`), Eq. (11.1).

`utilisation` averages over every decode step of every request (each step weighs the same, as in a
server that keeps its batch full): the fraction of reserved slots holding a token. Lengths come from
`request_lengths`, a skewed (lognormal) distribution stated in its docstring. External fragmentation
(holes between contiguous allocations) is not simulated, so (a) and (b) are upper bounds.

`shared_prompt_bytes` and `concurrent_sequences` use the real cache objects, not the simulation.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.paged_cache import OutOfBlocks, PagedKVCache
from minigpt.runtime.slot_cache import SlotKVCache

POLICIES = ("max", "exact", "paged")


@dataclass(frozen=True)
class Request:
    """One request: P prompt tokens and D generated ones (its sequence ends at S = P + D tokens)."""

    P: int
    D: int

    @property
    def S(self) -> int:
        return self.P + self.D


def request_lengths(n: int, *, S_max: int, P_median: float = 128, D_median: float = 192, sigma: float = 1.0,
                    seed: int = 0) -> list[Request]:
    """n requests with lognormal P and D (medians `P_median`, `D_median`, log-std `sigma`), P + D ≤ S_max.

    Lognormal lengths are skewed: most requests are short, a few are long (mean > median). P and D are
    drawn independently, rounded up to at least 1, and D is cut so that P + D ≤ S_max (P to S_max − 1).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if isinstance(S_max, bool) or not isinstance(S_max, int) or S_max < 2:
        raise ValueError(f"S_max must be an integer >= 2, got {S_max!r}")
    if not sigma >= 0:
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    rng = random.Random(seed)
    requests = []
    for _ in range(n):
        P = min(S_max - 1, max(1, round(rng.lognormvariate(math.log(P_median), sigma))))
        D = min(S_max - P, max(1, round(rng.lognormvariate(math.log(D_median), sigma))))
        requests.append(Request(P, D))
    return requests


def reserved_slots(request: Request, S_t: int, *, policy: str, S_max: int, block_size: int) -> int:
    """Token slots reserved for `request` while it holds S_t tokens, under `policy` (module docstring)."""
    if policy == "max":
        return S_max
    if policy == "exact":
        return request.S
    if policy == "paged":
        return costs.paged_blocks(S=S_t, block_size=block_size) * block_size
    raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")


def utilisation(requests: list[Request], *, policy: str, S_max: int, block_size: int = 16) -> float:
    """Σ tokens held / Σ slots reserved over every decode step of every request (held S_t = P … S − 1)."""
    held = reserved = 0
    for r in requests:
        for S_t in range(r.P, r.S):  # the D steps of the request: after prefill it holds P, then P+1, ...
            held += S_t
            reserved += reserved_slots(r, S_t, policy=policy, S_max=S_max, block_size=block_size)
    return held / reserved


def paged_waste_bound(*, block_size: int) -> int:
    """The most a paged sequence wastes, in token slots: b − 1 (`costs.paged_slack_tokens` ≤ b − 1, Eq. 11.1)."""
    return max(costs.paged_slack_tokens(S=S, block_size=block_size) for S in range(1, block_size + 1))


@torch.no_grad()
def shared_prompt_bytes(model: MiniGPT, prompt: torch.Tensor, *, n: int, D: int, block_size: int,
                        share: bool, seed: int = 0) -> int:
    """Bytes of KV blocks in use after n samples of one prompt `[P]` each decode D tokens, with or without `fork`.

    With `share`, the prompt is prefilled once and the n samples are forks of it (copy-on-write);
    without, each sample prefills its own copy. Real `PagedKVCache` and forward passes; sampled tokens.
    """
    P = prompt.shape[0]
    per_seq = costs.paged_blocks(S=P + D, block_size=block_size)
    cache = PagedKVCache(model.config, num_blocks=n * per_seq + n, block_size=block_size,
                         dtype=model.dtype, device=model.device)
    if share:
        first = cache.add_sequence()
        model(prompt.view(1, -1), cache.batch([first]))
        seqs = [first] + [cache.fork(first) for _ in range(n - 1)]
    else:
        seqs = [cache.add_sequence() for _ in range(n)]
        model(prompt.view(1, -1).expand(n, P).contiguous(), cache.batch(seqs))
    generator = torch.Generator(device=model.device).manual_seed(seed)
    token = torch.randint(0, model.config.V, (n, 1), generator=generator, device=model.device)
    for _ in range(D):
        logits = model(token, cache.batch(seqs))[:, -1]
        token = torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)
    return cache.bytes_reserved


@dataclass(frozen=True)
class Capacity:
    """How many sequences of the given lengths one KV budget admitted, and the memory they used."""

    policy: str
    sequences: int
    tokens: int
    bytes_reserved: int
    budget_bytes: int


def concurrent_sequences(config: ModelConfig, *, budget_bytes: int, lengths: list[int], paged: bool,
                         block_size: int = 16, dtype: torch.dtype = torch.float32) -> Capacity:
    """Admit sequences of `lengths` (tokens each, in order) into one KV budget until the cache refuses one.

    Without paging: a `SlotKVCache` of ⌊budget / (S_max slots' bytes)⌋ slots, one per sequence. With paging:
    a `PagedKVCache` of ⌊budget / block bytes⌋ blocks; each sequence reserves its blocks (all or nothing).
    """
    per_token = costs.kv_bytes_per_token(L=config.L, H_kv=config.H_kv, d_h=config.d_h, s=dtype.itemsize)
    if paged:
        cache: PagedKVCache | SlotKVCache = PagedKVCache(
            config, num_blocks=max(1, budget_bytes // (per_token * block_size)), block_size=block_size, dtype=dtype)
    else:
        cache = SlotKVCache(config, slots=max(1, budget_bytes // (per_token * config.S_max)), dtype=dtype)
    if cache.nbytes > budget_bytes:
        raise ValueError(f"budget_bytes={budget_bytes} does not hold one slot or block ({cache.nbytes} bytes)")
    admitted = tokens = 0
    for S in lengths:
        try:
            seq = cache.add_sequence()
            cache.reserve([seq], S)
        except OutOfBlocks:
            break
        cache.advance([seq], S)
        admitted, tokens = admitted + 1, tokens + S
    return Capacity(policy="paged" if paged else "slots", sequences=admitted, tokens=tokens,
                    bytes_reserved=cache.bytes_reserved, budget_bytes=budget_bytes)

