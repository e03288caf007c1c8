"""Arrival traces: Poisson arrivals of random prompts, a shared system prompt, multi-turn chats.

Token ids are random (seeded): a trace measures the engine, not what the model says. Prompt and
output lengths are uniform over the given ranges; `max_new_tokens` is the output length (a replay
has no stop sequences; a real model may stop earlier only if a request sets one).
"""

from __future__ import annotations

import random

from minigpt.serving.request import Request


def _tokens(rng: random.Random, n: int, V: int) -> tuple[int, ...]:
    return tuple(rng.randrange(V) for _ in range(n))


def poisson_trace(
    n: int, *, rate: float, seed: int = 0, P: tuple[int, int] = (8, 32), D: tuple[int, int] = (4, 16),
    system_prompt: int = 0, vary_system: bool = False, V: int = 600, cancel_share: float = 0.0, start_s: float = 0.0,
) -> list[Request]:
    """n requests arriving as a Poisson process of `rate` per second; each prompt is the system prompt
    (`system_prompt` tokens, the same for all unless `vary_system`, which changes its first token per
    request, as a timestamp at its head would) then P own tokens; D new tokens. A `cancel_share` of them
    is cancelled a random while after arriving."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1 (requests), got {n!r}")
    if not rate > 0:
        raise ValueError(f"rate must be > 0 (requests per second), got {rate!r}")
    for name, (lo, hi) in (("P", P), ("D", D)):
        if not 1 <= lo <= hi:
            raise ValueError(f"{name} must be a range (lo, hi) with 1 <= lo <= hi, got {(lo, hi)}")
    rng = random.Random(seed)
    system = _tokens(rng, system_prompt, V)
    t, out = start_s, []
    for i in range(n):
        t += rng.expovariate(rate)
        head = system
        if vary_system and system:
            head = (i % V, *system[1:])
        prompt = head + _tokens(rng, rng.randint(*P), V)
        cancel = t + rng.expovariate(rate) if rng.random() < cancel_share else None
        out.append(Request(f"req{i}", prompt, rng.randint(*D), arrival_s=t, cancel_s=cancel))
    return out


def chat_trace(
    chats: int, turns: int, *, rate: float, think_s: float, seed: int = 0, system_prompt: int = 32,
    user: tuple[int, int] = (4, 12), reply: int = 8, V: int = 600,
) -> list[Request]:
    """Multi-turn chats: turn k's prompt is turn k−1's prompt, a reply of `reply` tokens and a new user
    message, so every turn after the first starts with the previous one; chats start as a Poisson
    process of `rate` and a user waits `think_s` between turns. All chats share the system prompt."""
    rng = random.Random(seed)
    system = _tokens(rng, system_prompt, V)
    start, out = 0.0, []
    for c in range(chats):
        start += rng.expovariate(rate)
        prompt, t = system, start
        for k in range(turns):
            prompt = prompt + _tokens(rng, rng.randint(*user), V)
            out.append(Request(f"chat{c}.{k}", prompt, reply, arrival_s=t))
            prompt = prompt + _tokens(rng, reply, V)  # the reply as the next turn's history
            t += think_s
    return sorted(out, key=lambda r: r.arrival_s)
