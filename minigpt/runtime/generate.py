"""Generation: `prefill()` then `decode_step()` until done, with or without the KV cache."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import torch

from minigpt.runtime.device import sync
from minigpt.runtime.kv_cache import KVCache
from minigpt.runtime.meters import RequestMeters
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.tokenizer import Tokenizer

Prompt = str | Sequence[int] | Sequence[Sequence[int]] | torch.Tensor
StopReason = Literal["max_new_tokens", "stop"]
#: Builds the cache a generation writes: ``new_cache(B, S_max)``, e.g. ``lambda B, S_max:
#: QuantizedKVCache(model.config, B, S_max=S_max, bits=8)``; the default is ``model.new_cache``.
CacheFactory = Callable[[int, int], KVCache]


@torch.no_grad()
def prefill(model: MiniGPT, prompt: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """Phase 1 (Eq. 1.2): one parallel pass over the prompt `[B, P]`; fills `cache`; returns logits `[B, V]`."""
    return model(prompt, cache, last_only=True)[:, -1]


@torch.no_grad()
def decode_step(model: MiniGPT, token: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """Phase 2 (Eq. 1.3): one new token per sequence `[B]` against the cache; returns logits `[B, V]`."""
    return model(token.view(-1, 1), cache, last_only=True)[:, -1]


@torch.no_grad()
def no_cache_step(model: MiniGPT, seq: torch.Tensor) -> torch.Tensor:
    """A step without the cache (Eq. 1.5's term): a full forward over the whole sequence `[B, S]`; logits `[B, V]`."""
    return model(seq, last_only=True)[:, -1]


def sample(
    logits: torch.Tensor,
    *,
    temperature: float = 0.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Next token per row of `logits` `[B, V]`: greedy at temperature 0, else softmax(logits/T) over the top k."""
    if temperature == 0.0:
        return logits.argmax(dim=-1)
    logits = logits.float() / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).view(-1)


@dataclass(frozen=True)
class Generation:
    """The result of one request: new tokens per sequence, why it stopped, and its meters."""

    tokens: list[list[int]]
    stop_reasons: list[StopReason]
    meters: RequestMeters
    texts: list[str] | None = None

    @property
    def text(self) -> str | None:
        """The first (or only) sequence's new text, when a tokenizer was given."""
        return self.texts[0] if self.texts else None


class Stream:
    """Iterator over the new tokens of a single sequence as they are produced; `.result` when done."""

    def __init__(self, steps: Iterator[list[int]]) -> None:
        self._steps = steps
        self.result: Generation | None = None

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> int:
        try:
            return next(self._steps)[0]
        except StopIteration as done:
            self.result = done.value
            raise


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen and when a sequence stops (one request's sampling settings).

    temperature 0 is greedy; else softmax(logits / temperature) over the `top_k` largest logits
    (all of them when None), drawn with a generator seeded by `seed`. A sequence stops when its new
    tokens end with one of the `stop` sequences (strings need a tokenizer); `include_stop` keeps it.
    """

    temperature: float = 0.0
    top_k: int | None = None
    seed: int | None = None
    stop: tuple[str | tuple[int, ...], ...] = ()
    include_stop: bool = False

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < float("inf"):
            raise ValueError(f"temperature must be a finite number >= 0 (0 means greedy), got {t!r}")
        k = self.top_k
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"top_k must be None or an integer >= 1, got {self.top_k!r}")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise ValueError(f"seed must be None or an integer, got {self.seed!r}")
        stop = (self.stop,) if isinstance(self.stop, str) else self.stop
        object.__setattr__(self, "stop", tuple(s if isinstance(s, str) else tuple(s) for s in stop))


def _sampling(sampling: Sampling | None, settings: dict[str, object]) -> Sampling:
    """`sampling` with `settings` (Sampling's fields as keywords) applied; unknown keywords are an error."""
    unknown = sorted(set(settings) - set(Sampling.__dataclass_fields__))
    if unknown:
        raise TypeError(f"unknown generation settings {unknown}; allowed: {sorted(Sampling.__dataclass_fields__)}")
    return replace(sampling or Sampling(), **settings)


def generate(
    model: MiniGPT,
    prompt: Prompt,
    max_new_tokens: int,
    *,
    use_cache: bool = True,
    tokenizer: Tokenizer | None = None,
    sampling: Sampling | None = None,
    new_cache: CacheFactory | None = None,
    **settings: object,
) -> Generation:
    """Generate up to `max_new_tokens` per sequence: prefill, then D − 1 decode steps (Eq. 1.4, 1.5).

    `sampling` (a `Sampling`) or its fields as keywords (``temperature=0.8, seed=0, stop=["."]``).
    `new_cache(B, S_max)` builds the cache (a `QuantizedKVCache`, say); default `model.new_cache`.
    """
    ids = _as_batch(prompt, tokenizer, model)
    steps = _run(model, ids, max_new_tokens, use_cache, _sampling(sampling, settings), tokenizer, new_cache)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def stream(
    model: MiniGPT,
    prompt: str | Sequence[int],
    max_new_tokens: int,
    *,
    use_cache: bool = True,
    tokenizer: Tokenizer | None = None,
    sampling: Sampling | None = None,
    new_cache: CacheFactory | None = None,
    **settings: object,
) -> Stream:
    """Like `generate` for one sequence, but yields each new token id as soon as it is sampled."""
    ids = _as_batch(prompt, tokenizer, model)
    if ids.shape[0] != 1:
        raise ValueError(f"stream() takes one prompt, got a batch of B={ids.shape[0]}; use generate()")
    return Stream(_run(model, ids, max_new_tokens, use_cache, _sampling(sampling, settings), tokenizer, new_cache))


def _run(
    model: MiniGPT,
    ids: torch.Tensor,
    max_new_tokens: int,
    use_cache: bool,
    sampling: Sampling,
    tokenizer: Tokenizer | None,
    new_cache: CacheFactory | None = None,
) -> Iterator[list[int]]:
    """The generation loop shared by `generate` and `stream`: yields the tokens of each step."""
    B, P = ids.shape
    if new_cache is not None and not callable(new_cache):
        raise ValueError(f"new_cache must be a callable (B, S_max) -> cache, got {type(new_cache).__name__}")
    if new_cache is not None and not use_cache:
        raise ValueError("new_cache was given with use_cache=False; a generation without a cache builds none")
    V, S_max = model.config.V, model.config.S_max
    if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be a non-negative integer, got {max_new_tokens!r}")
    if P + max_new_tokens - 1 > S_max:
        raise ValueError(
            f"max_new_tokens={max_new_tokens} does not fit: a prompt of P={P} tokens plus "
            f"{max_new_tokens} new ones needs {P + max_new_tokens - 1} positions but S_max is {S_max}; "
            f"allowed: max_new_tokens <= {S_max - P + 1}"
        )
    if sampling.top_k is not None and sampling.top_k > V:
        raise ValueError(f"top_k must be None or an integer in 1..{V} (V), got {sampling.top_k!r}")
    stops = _stop_ids(sampling.stop, tokenizer)
    generator = None
    if sampling.seed is not None:
        generator = torch.Generator(device=model.device).manual_seed(sampling.seed)

    out: list[list[int]] = [[] for _ in range(B)]
    reasons: list[StopReason] = ["max_new_tokens"] * B
    done = [False] * B
    prefill_s = decode_s = 0.0
    decode_steps = 0
    was_training = model.training
    model.eval()
    try:
        factory = new_cache or (lambda B, S_max: model.new_cache(B, S_max=S_max))
        cache = factory(B, P + max(max_new_tokens - 1, 0)) if use_cache else None
        seq = ids  # the whole sequence, kept only without a cache (each step recomputes it)
        token = ids[:, -1]
        t0 = time.perf_counter()
        for step in range(max_new_tokens):
            if cache is None:
                logits = no_cache_step(model, seq)
            elif step == 0:
                logits = prefill(model, ids, cache)
            else:
                logits = decode_step(model, token, cache)  # only the new token: the cache holds the rest
            token = sample(logits, temperature=float(sampling.temperature), top_k=sampling.top_k, generator=generator)
            if cache is None:
                seq = torch.cat([seq, token.view(B, 1)], dim=1)
            new = token.tolist()
            sync(model.device)
            t1 = time.perf_counter()
            if step == 0:
                prefill_s = t1 - t0
            else:
                decode_s += t1 - t0
                decode_steps += 1
            for b in range(B):
                if done[b]:
                    continue
                out[b].append(new[b])
                for s in stops:
                    if out[b][-len(s):] == s:
                        done[b], reasons[b] = True, "stop"
                        if not sampling.include_stop:
                            del out[b][-len(s):]
                        break
            yield new
            if all(done):
                break
            t0 = time.perf_counter()
    finally:
        model.train(was_training)
    meters = RequestMeters(
        prompt_tokens=P, prefill_s=prefill_s, generated_tokens=sum(len(o) for o in out),
        decode_steps=decode_steps, decode_s=decode_s, B=B,
    )
    texts = [tokenizer.decode(o) for o in out] if tokenizer is not None else None
    return Generation(tokens=out, stop_reasons=reasons, meters=meters, texts=texts)


def _as_batch(prompt: Prompt, tokenizer: Tokenizer | None, model: MiniGPT) -> torch.Tensor:
    """The prompt as a `[B, P]` long tensor on the model's device, validated."""
    if isinstance(prompt, str):
        if tokenizer is None:
            raise ValueError("prompt is a string, so tokenizer must be given (e.g. load_pretrained().tokenizer)")
        rows = [tokenizer.encode(prompt)]
    elif isinstance(prompt, torch.Tensor):
        if prompt.dim() == 1:
            prompt = prompt.view(1, -1)
        if prompt.dim() != 2:
            raise ValueError(f"prompt tensor must be [P] or [B, P], got shape {tuple(prompt.shape)}")
        rows = prompt.tolist()
    else:
        rows = [list(prompt)] if prompt and isinstance(prompt[0], int) else [list(r) for r in prompt]
    if not rows or any(len(r) == 0 for r in rows):
        raise ValueError("prompt is empty: generation needs at least one prompt token (P >= 1)")
    if len({len(r) for r in rows}) != 1:
        raise ValueError(f"prompts in one batch must have equal length P, got lengths {[len(r) for r in rows]}")
    P = len(rows[0])
    if P > model.config.S_max:
        raise ValueError(f"prompt has P={P} tokens but S_max is {model.config.S_max}")
    if not all(isinstance(t, int) and not isinstance(t, bool) for r in rows for t in r):
        raise ValueError("prompt token ids must be integers")
    return torch.tensor(rows, dtype=torch.long, device=model.device)


def _stop_ids(stop: Sequence[str | Sequence[int]], tokenizer: Tokenizer | None) -> list[list[int]]:
    stops = []
    for s in stop:
        if isinstance(s, str):
            if tokenizer is None:
                raise ValueError(f"stop sequence {s!r} is a string, so tokenizer must be given")
            s = tokenizer.encode(s)
        s = list(s)
        if not s:
            raise ValueError("stop sequences must be non-empty")
        stops.append(s)
    return stops
