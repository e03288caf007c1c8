"""Exercise 16's third question (Chapter 19): the disaggregated driver's routing, traced by hand.

At each arrival the driver (`minigpt.distributed.disagg_driver.Driver._pick`) sends the request to the prefill
worker with the fewest prompt tokens of requests still prefilling there, and to the decode worker holding the
fewest requests (prefilling or decoding), the lowest-numbered on a tie: `disagg_admission.least_loaded`, the
package's rule, is the oracle's. Around it, a time model: a prefill worker runs its prompts one after another in
the order it receives them, P · `prefill_ms_per_token` ms each; the first token comes at the prefill's end, the
other D − 1 one decode step of `decode_step_ms` each after it (a decode worker batches, and a memory-bound step
costs about the same at any batch size). The real workers run Chapter 12's engine, which prefills several
prompts in one step; the model keeps one at a time so that a trace can be worked by hand. Every time is an
integer number of ms, so no tie is a question of rounding: a request whose prefill (or last token) ends at or
before an arrival does not count there.

`route(kind=...)` is the same walk with one plausible slip (`WRONG_KINDS`); `routing_cases` draws, every time,
one trace on which each slip changes the answer (`ROUTE_EDGES`), then random traces.
"""

from __future__ import annotations

import random
from typing import Any

from minigpt.distributed.disagg_admission import least_loaded
from minigpt.exercises.spec import _

ROUTE_EDGES = (
    "a long prompt nearly done against a short one just begun: whole prompts outstanding counted, not the work left",
    "a prefill that ended before the arrival: not counted, not every token ever routed there",
    "decode workers loaded by the requests they hold, not by those requests' prompt tokens",
    "equal loads: the lowest-numbered worker, not the highest",
    "a worker still busy when the request arrives: the wait counted in the time to first token",
    "a prefill or a last token that ends at the very time of an arrival: not counted there, not still counted",
)
# The slips, in the order of ROUTE_EDGES: routing to the prefill worker that frees first; loads that never go
# down; the decode pool loaded by prompt tokens; ties to the highest number; the TTFT without the queue; what
# ends at an arrival's time still counted there.
WRONG_KINDS = ("work_left", "cumulative", "decode_tokens", "highest", "no_wait", "at_arrival")
#: Draws allowed for one slip's trace (over 2,000 seeds the six slips took 28 draws in all on average; "at_arrival"
#: the most, 170 at worst); past them the generator raises rather than draw forever.
DRAWS = 2_000


def _gone(end: int, t: int, kind: str | None) -> bool:
    """Whether what ends at `end` no longer loads its worker at an arrival at `t` (ends at or before it)."""
    if kind == "cumulative":
        return False
    return end < t if kind == "at_arrival" else end <= t


def route(arrivals_ms: list[int], prompt_tokens: list[int], new_tokens: list[int], prefill_workers: int,
          decode_workers: int, prefill_ms_per_token: int, decode_step_ms: int,
          kind: str | None = None) -> list[list[int]]:
    """Each request's [prefill worker, decode worker, time to first token in ms], in arrival order; `kind` one of
    `WRONG_KINDS` (or None: the driver's rule)."""
    if kind is not None and kind not in WRONG_KINDS:
        raise ValueError(f"kind must be None or one of {WRONG_KINDS}, got {kind!r}")
    free_at = [0] * prefill_workers  # when each prefill worker has finished what it was given
    prefilling: list[tuple[int, int, int]] = []  # (prefill end, prefill worker, P)
    held: list[tuple[int, int, int]] = []  # (last token, decode worker, P)
    out = []
    for t, P, D in zip(arrivals_ms, prompt_tokens, new_tokens, strict=True):
        p_load = {k: sum(n for end, w, n in prefilling if w == k and not _gone(end, t, kind))
                  for k in range(prefill_workers)}
        if kind == "work_left":
            p_load = {k: max(0, free_at[k] - t) for k in range(prefill_workers)}
        d_load = {k: sum(n if kind == "decode_tokens" else 1 for end, w, n in held
                         if w == k and not _gone(end, t, kind)) for k in range(decode_workers)}
        if kind == "highest":
            p, d = (max(load, key=lambda k, load=load: (-load[k], k)) for load in (p_load, d_load))
        else:
            p, d = least_loaded(p_load), least_loaded(d_load)
        start = max(t, free_at[p])
        end = start + P * prefill_ms_per_token
        free_at[p] = end
        prefilling.append((end, p, P))
        held.append((end + (D - 1) * decode_step_ms, d, P))
        out.append([p, d, end - (start if kind == "no_wait" else t)])
    return out


def _trace(rng: random.Random, wants: str | None) -> dict[str, Any]:
    """A random trace, its shape leaning towards what `wants` (a slip) needs: two or more workers of the pool it
    is about, bursts of arrivals."""
    N = rng.randint(2 if wants in ("work_left", "cumulative", "highest") else 1, 3)
    M = rng.randint(2 if wants in ("decode_tokens", "highest") else 1, 3)
    n = rng.randint(5, 10)
    m = rng.randint(1, 3)
    gap = rng.choice([5, 20, 60]) * m
    t, arrivals = 0, []
    for _k in range(n):
        t += rng.randint(0, gap)
        arrivals.append(t)
    return dict(arrivals_ms=arrivals, prompt_tokens=[rng.randint(1, 60) for _ in range(n)],
                new_tokens=[rng.randint(1, 40) for _ in range(n)], prefill_workers=N, decode_workers=M,
                prefill_ms_per_token=m, decode_step_ms=rng.randint(5, 20))


def routing_cases(rng: random.Random) -> list[dict[str, Any]]:
    """One trace per slip of `WRONG_KINDS` (drawn until that slip changes the answer, `DRAWS` at most), then four
    random ones."""
    cases = []
    for kind in WRONG_KINDS:
        for _draw in range(DRAWS):
            case = _trace(rng, kind)
            if route(**case, kind=kind) != route(**case):
                break
        else:
            raise RuntimeError(f"no trace in {DRAWS:,} draws tells the slip {kind!r} from the driver's rule")
        cases.append(case)
    return cases + [_trace(rng, None) for _ in range(4)]


def routing_check(expected: Any, actual: Any) -> str | None:
    """The same triples (a list, a tuple or an integer tensor of them), the first difference said in words."""
    if isinstance(actual, dict) and "$tensor" in actual:
        actual = actual["$tensor"]
    if not isinstance(actual, (list, tuple)) or len(actual) != len(expected) or not all(
            isinstance(row, (list, tuple)) and len(row) == 3
            and all(isinstance(x, int) and not isinstance(x, bool) for x in row) for row in actual):
        return _("expected one [prefill worker, decode worker, TTFT in ms] of ints per request ({n} of them), "
                 "got {actual}").format(n=len(expected), actual=repr(actual)[:200])
    for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
        if list(a) == e:
            continue
        if a[0] != e[0]:
            return _("request {i}: prefill worker {got}, the driver picks {want}: at the arrival, count the prompt "
                     "tokens of the requests still prefilling on each worker (whole prompts, until their prefill "
                     "ends); the fewest wins, the lowest number on a tie").format(i=i, got=a[0], want=e[0])
        if a[1] != e[1]:
            return _("request {i}: decode worker {got}, the driver picks {want}: count the requests each decode "
                     "worker holds at the arrival (from their arrival to their last token); the fewest wins, the "
                     "lowest number on a tie").format(i=i, got=a[1], want=e[1])
        return _("request {i}: time to first token {got} ms, expected {want} ms: from the arrival to the end of its "
                 "prefill, which starts when both the request and its worker are there").format(
            i=i, got=a[2], want=e[2])
    return None
