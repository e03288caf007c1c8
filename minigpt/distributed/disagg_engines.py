"""The serving engine on each side of disaggregated serving (Chapter 19): `PrefillEngine` hands each
request's K/V out when its first token is sampled; `DecodeEngine` takes a prefilled request into its
running batch."""

from __future__ import annotations

import torch

from minigpt.distributed.disagg_records import DisaggConfig
from minigpt.distributed.kv_transfer import export_kv, import_kv
from minigpt.runtime.checkpoint import load_pretrained
from minigpt.serving.engine import Engine
from minigpt.serving.request import Request, Status, Tracked


class PrefillEngine(Engine):
    """The serving engine, for requests of one token: when a request ends (its first token sampled),
    its sequence's K/V are copied out before the engine frees its blocks."""

    handoff: list[tuple[Tracked, torch.Tensor]]

    def _finish(self, t: Tracked, reason: str) -> None:
        assert t.seq is not None
        self.handoff.append((t, export_kv(self.pool, t.seq, t.request.P)))
        super()._finish(t, reason)


class DecodeEngine(Engine):
    """The serving engine, fed by transfers: `accept` puts a prefilled request in the running batch."""

    def can_accept(self, P: int) -> bool:
        s = self.scheduler
        return (len(s.running) + len(s.waiting) < s.max_batch
                and s.fits_admission(-(-P // self.pool.block_size)))

    def accept(self, rid: str, prompt: list[int], max_new_tokens: int, first: int, kv: torch.Tensor) -> Tracked:
        """Request `rid` with its prompt's K/V `kv` and its first token: it decodes from the next step on."""
        t = Tracked(Request(rid, tuple(prompt), max_new_tokens, arrival_s=self.now))
        t.seq = import_kv(self.pool, kv)
        t.computed, t.generated, t.token_s = len(prompt), [first], [self.now]
        t.status, t.admitted_s = Status.RUNNING, self.now
        self.requests[rid] = t
        self._ids.add(rid)
        self.scheduler.running.append(t)
        return t


def _engine(cls: type[Engine], cfg: DisaggConfig, *, prefill: bool, device: torch.device | str = "cpu") -> Engine:
    """A fresh engine (a new pool, nothing held) on the shipped MiniGPT, on `device`."""
    model = load_pretrained(device=device).model
    engine = cls.for_model(model, num_blocks=cfg.num_blocks, block_size=cfg.block_size,
                           config=cfg.engine_config(prefill=prefill))
    if isinstance(engine, PrefillEngine):
        engine.handoff = []
    return engine
