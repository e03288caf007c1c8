"""The collectives a tensor-parallel model calls, each one counted: its kind and its payload bytes.

A sharded model never calls `torch.distributed` directly; it calls `Collectives.all_reduce` and
`Collectives.all_gather`, which record `(kind, nbytes)` and then run the collective on the process
group. Tests compare the record with the formulas of `minigpt.costs.parallel` (Eqs. 20.1-20.2), so
a forgotten or an extra all-reduce fails a test instead of hiding in a correct-looking number.

With one rank nothing is sent and nothing is recorded: vLLM's `tensor_model_parallel_all_reduce`
returns its input unchanged when the group has one member, and so does this.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import torch
import torch.distributed as dist


@dataclass
class Collectives:
    """One rank's handle on the tensor-parallel group: `rank` of `world_size`, and the record."""

    rank: int
    world_size: int
    record: list[tuple[str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        W = self.world_size
        if isinstance(W, bool) or not isinstance(W, int) or W < 1:
            raise ValueError(f"world_size must be an int >= 1, got {W!r}")
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or not 0 <= self.rank < W:
            raise ValueError(f"rank must be an int in 0..{W - 1}, got {self.rank!r}")
        if W > 1 and not (dist.is_initialized() and dist.get_world_size() == W):
            raise ValueError(f"world_size={W} needs an initialised process group of {W} ranks "
                             "(start the workers with minigpt.distributed.launch.run)")

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        """Sum `x` over the ranks, in place; every rank gets the sum. Payload: x's bytes."""
        if self.world_size > 1:
            self.record.append(("all_reduce", x.numel() * x.element_size()))
            dist.all_reduce(x)
        return x

    def all_gather(self, x: torch.Tensor) -> torch.Tensor:
        """Concatenate every rank's `x` along the last dimension, in rank order; every rank gets it.

        Payload: the gathered tensor's bytes (each rank contributes 1/W of them)."""
        if self.world_size == 1:
            return x
        parts = [torch.empty_like(x) for _ in range(self.world_size)]
        dist.all_gather(parts, x.contiguous())
        out = torch.cat(parts, dim=-1)
        self.record.append(("all_gather", out.numel() * out.element_size()))
        return out

    def counts(self) -> Counter[str]:
        """How many collectives of each kind were recorded."""
        return Counter(kind for kind, _ in self.record)

    def nbytes(self) -> int:
        """Payload bytes of every recorded collective together."""
        return sum(n for _, n in self.record)

    def reset(self) -> None:
        """Forget the record (between a prefill and the decode steps measured after it)."""
        self.record.clear()


def fit_alpha_beta(nbytes: list[int], seconds: list[float]) -> tuple[float, float]:
    """Least-squares fit of Eq. (20.4), t = α + nbytes/β, to measured times; returns (α s, β bytes/s).

    Residuals are relative (each divided by its t), so microsecond calls weigh as much as millisecond
    ones: the sizes span decades. Raises ValueError on fewer than two sizes or a fit with β <= 0.
    """
    import numpy as np

    if len(nbytes) != len(seconds) or len(set(nbytes)) < 2:
        raise ValueError("nbytes and seconds must be equal-length lists over at least two sizes")
    n, t = np.asarray(nbytes, dtype=float), np.asarray(seconds, dtype=float)
    (alpha, inv_beta), *_ = np.linalg.lstsq(np.stack([1 / t, n / t], axis=1), np.ones_like(t), rcond=None)
    if inv_beta <= 0:
        raise ValueError(f"the fit gives 1/β = {inv_beta:.3g} <= 0: time does not grow with size here")
    return float(alpha), float(1 / inv_beta)
