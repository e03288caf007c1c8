"""Where a request enters disaggregated serving (Chapter 19): the driver's check, before any worker sees it, and
its routing rule."""

from __future__ import annotations

from dataclasses import replace

from minigpt.distributed.disagg_records import DisaggConfig
from minigpt.runtime.generate import Sampling
from minigpt.serving.request import Request, rejection


def admission(requests: list[Request], cfg: DisaggConfig, *, S_max: int, V: int) -> list[str | None]:
    """For each request, why it is refused where it enters (None if admitted): the colocated engine's rule on
    one decode worker's pool, Request's own field checks run again, what this path cannot serve, and an id
    already used by an earlier request of the list."""
    seen: set[str] = set()
    out: list[str | None] = []
    for r in requests:
        why = None
        if r.id in seen:
            why = f"request id {r.id!r} is already in use; ids must be unique"
        seen.add(r.id)
        if why is None:
            try:
                replace(r)  # Request's checks, again: the object may have been changed since it was made
            except ValueError as e:
                why = str(e)
        if why is None and r.sampling != Sampling():
            why = f"disaggregated serving here takes greedy requests only (sampling=Sampling()), got {r.sampling}"
        if why is None and r.cancel_s is not None:
            why = "cancel_s is not supported by disaggregated serving"
        if why is None:
            why = rejection(r, S_max=S_max, V=V, num_blocks=cfg.num_blocks, block_size=cfg.block_size)
        out.append(why)
    return out


def least_loaded(loads: dict[int, int]) -> int:
    """The worker with the smallest load, the lowest-numbered on a tie: the driver's routing rule, for both pools
    (a prefill worker's load is the prompt tokens of the requests prefilling on it, a decode worker's the requests
    it holds)."""
    return min(loads, key=lambda k: (loads[k], k))
