"""The overhead floor (Eqs. 18.1-18.2): what one operator costs, and the time n_ops operators explain.

A decode step of a small model moves few bytes, so the bandwidth ceiling (Eq. 3.4) predicts far
more tokens per second than an eager step achieves. What the traffic table misses is per-operator
overhead: each aten operator pays Python, the dispatcher, an allocation and a kernel launch whether
it moves 64 bytes or 64 MiB. `count_ops` (`op_count`) counts the operators of a real call;
`per_op_seconds` times the cheapest operator there is; `overhead_floor` multiplies the two and sets
the product beside the measured step: floor = n_ops · t_op. `measure_overhead` adds the static and
compiled steps (`time_static_step`) and Eq. (3.4)'s bandwidth-bound step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch

from minigpt.measure.op_count import HOST_SYNC_OP, decode_step_ops
from minigpt.measure.timing import Clock, Timing, time_fn
from minigpt.runtime.compiled import StaticDecoder
from minigpt.runtime.model import MiniGPT


def per_op_seconds(
    *, device: torch.device | str = "cpu", calls: int = 1000, repeats: int = 7, clock: Clock = "wall",
) -> float:
    """Seconds of one trivial operator (`a + b` on one-element tensors, from Python): the t_op of the floor.

    The best of `repeats` loops of `calls` additions, divided by `calls` (other jobs only slow it down).
    """
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise ValueError(f"calls must be an integer >= 1, got {calls!r}")
    a = torch.ones(1, device=device)
    b = torch.ones(1, device=device)

    def loop() -> None:
        for _ in range(calls):
            a + b  # noqa: B018  (the operator is the point)

    return time_fn(loop, warmup=1, repeats=repeats, device=device, clock=clock).min_s / calls


@dataclass(frozen=True)
class OverheadFloor:
    """One decode step: operators dispatched, the cost of one, the floor n_ops · t_op, and the measured step."""

    n_ops: int
    host_syncs: int
    per_op_s: float
    floor_s: float
    measured_s: float
    ops: dict[str, int]

    @property
    def explained(self) -> float:
        """Share of the measured step the floor explains (floor / measured)."""
        return self.floor_s / self.measured_s

    def to_record(self) -> dict[str, Any]:
        return {**asdict(self), "explained": self.explained}


def overhead_floor(
    model: MiniGPT, *, S: int = 16, B: int = 1, repeats: int = 20, clock: Clock = "wall",
) -> OverheadFloor:
    """Predict one eager decode step's time from its operators (floor = n_ops · t_op) and measure the step."""
    from minigpt.measure.sweeps import time_decode_step

    ops = decode_step_ops(model, S=S, B=B)
    n_ops = sum(ops.values())
    t_op = per_op_seconds(device=model.device, clock=clock)
    measured = time_decode_step(model, B=B, S=S, warmup=3, repeats=repeats, clock=clock).median_s
    return OverheadFloor(n_ops=n_ops, host_syncs=ops.get(HOST_SYNC_OP, 0), per_op_s=t_op, floor_s=n_ops * t_op,
                         measured_s=measured, ops=dict(ops.most_common()))


def time_static_step(
    decoder: StaticDecoder, *, S: int, warmup: int = 3, repeats: int = 20, seed: int = 0, clock: Clock = "wall",
) -> Timing:
    """Wall time of one (compiled) static-cache decode step, Eq. (1.3), at S cached tokens, batch `decoder.cache.B`.

    Prefills S random tokens once; every timed step writes row S and is rewound (`truncate(S)`), so each sees S.
    The first warm-up call compiles (`decoder.compile_s`).
    """
    model, B = decoder.model, decoder.cache.B
    generator = torch.Generator().manual_seed(seed)
    decoder.prefill(torch.randint(0, model.config.V, (B, S), generator=generator).to(model.device))
    token = torch.zeros(B, dtype=torch.long, device=model.device)

    def step() -> None:
        decoder.decode_step(token, check_inputs=False)
        decoder.cache.truncate(S)

    return time_fn(step, warmup=warmup, repeats=repeats, device=model.device, clock=clock)


def measure_overhead(
    model: MiniGPT, *, S: int = 32, repeats: int = 20, clock: Clock = "wall", bandwidth: float | None = None,
) -> dict[str, Any]:
    """One model's overhead record: the eager floor, the eager, static and compiled step, and Eq. (3.4)'s step.

    `bandwidth` (bytes/s, the probe's) gives the bandwidth-bound step time bytes / bandwidth of Eq. (3.4),
    with the eager step's bytes (weights + S rows of KV); the static steps read S_max = S + 1 rows.
    """
    from minigpt import costs
    from minigpt.measure.counting import module_bytes

    floor = overhead_floor(model, S=S, repeats=repeats, clock=clock)
    static = time_static_step(StaticDecoder(model, 1, S_max=S + 1, compile=False), S=S, repeats=repeats, clock=clock)
    decoder = StaticDecoder(model, 1, S_max=S + 1)
    compiled = time_static_step(decoder, S=S, repeats=repeats, clock=clock)
    kv = costs.of(model.config).kv_bytes_per_token(s=model.dtype.itemsize)
    step_bytes = costs.decode_step_bytes(weight_bytes=module_bytes(model), kv_bytes_per_token=kv, S=S, B=1)
    record = {**floor.to_record(), "S": S, "eager_s": floor.measured_s, "static_eager_s": static.median_s,
              "compiled_s": compiled.median_s, "compile_s": decoder.compile_s, "bytes_per_step": step_bytes}
    if bandwidth is not None:
        record["bandwidth"] = bandwidth
        record["bandwidth_step_s"] = step_bytes / bandwidth
    return record
