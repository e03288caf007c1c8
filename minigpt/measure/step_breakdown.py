"""The decode step cut into parts, each timed in situ (Eq. 18.4): matmuls, module calls, the other
operators and Python, the id check, the cache rewind; rounds interleaved so a passing load falls on all alike."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

from minigpt.measure.op_count import OP_KINDS, OpRecorder
from minigpt.measure.timing import Clock
from minigpt.runtime.compiled import StaticDecoder
from minigpt.runtime.generate import decode_step
from minigpt.runtime.model import MiniGPT

#: The parts `step_breakdown` times, in the order it prints them.
BREAKDOWN_PARTS = ("step", "forward", "replay", "replay_matmuls", "replay_views", "module_call",
                   "module_forward", "sample", "truncate")
#: The operators that read the weights and the cache: their time grows with the model's bytes.
MATMUL_OPS = frozenset({"aten.addmm", "aten.mm", "aten.bmm"})


@dataclass(frozen=True)
class StepBreakdown:
    """Where one eager decode step's time goes, each part timed in situ (seconds, min/median/max).

    Parts (`times[part] = (min, median, max)`, one call each): "step" is `decode_step` plus the
    cache rewind (what `time_decode_step` times); "forward" the model's forward alone with no id check;
    "replay" every aten call of that forward replayed in order from Python with its recorded
    arguments (dispatcher + kernel, no module code), and of it only the matmuls ("replay_matmuls",
    the kernels that read the weights and the cache) and only the views ("replay_views");
    "module_call" / "module_forward" one `nn.Module.__call__` / one direct `.forward` of a module
    that returns its input; "sample" the greedy argmax over the logits; "truncate" the rewind;
    with `compiled=True`, "compiled" the compiled static-cache step.
    """

    n_kernel: int
    n_view: int
    n_sync: int
    n_modules: int
    kernel_bytes: int
    times: dict[str, tuple[float, float, float]]

    def median(self, part: str) -> float:
        return self.times[part][1]

    @property
    def t_module(self) -> float:
        """The extra cost of one module call over a direct `.forward` (hooks check, `__call__`)."""
        return max(0.0, self.median("module_call") - self.median("module_forward"))

    def parts(self) -> dict[str, float]:
        """The step cut into parts that add up to its median (seconds): the matmuls (replayed alone),
        the module calls, the rest of the forward (other operators, views, the Python between them),
        the id check and what else `decode_step` adds around the forward, and the cache rewind."""
        step, fwd, mm = self.median("step"), self.median("forward"), self.median("replay_matmuls")
        modules = self.n_modules * self.t_module
        return {"matmul kernels": mm,
                "nn.Module calls": modules,
                "other ops, views, Python": fwd - self.median("truncate") - mm - modules,
                "id check, no_grad, [:, -1]": step - fwd,
                "cache rewind": self.median("truncate")}

    def to_record(self) -> dict[str, Any]:
        return {**asdict(self), "t_module": self.t_module, "parts": self.parts()}


def step_breakdown(
    model: MiniGPT, *, S: int = 16, rounds: int = 15, inner: int = 5, clock: Clock = "thread",
    compiled: bool = False,
) -> StepBreakdown:
    """Time the parts of one eager B = 1 decode step at S cached tokens, interleaved round by round.

    Each of `rounds` rounds times every part once (`inner` calls each, averaged) in turn, so a load
    that comes and goes on a shared machine falls on all parts alike; min/median/max over rounds.
    clock="thread" (`time.thread_time`, one torch thread) counts only this thread's CPU time.
    `compiled=True` adds the part "compiled": the `torch.compile`d static-cache step
    (`StaticDecoder`, as `time_static_step` times it), compiled before the rounds start.
    """
    import statistics
    import time

    from minigpt.measure.sweeps import filled_cache

    if clock == "thread" and torch.get_num_threads() != 1:
        raise ValueError("clock='thread' measures one CPU thread: call torch.set_num_threads(1) first")
    if clock not in ("thread", "wall"):
        raise ValueError(f"clock must be 'wall' or 'thread', got {clock!r}")
    now = time.thread_time if clock == "thread" else time.perf_counter
    cache = filled_cache(model, B=1, S=S)
    token = torch.zeros(1, dtype=torch.long, device=model.device)

    @torch.no_grad()
    def forward() -> torch.Tensor:
        out = model(token.view(-1, 1), cache, last_only=True, check_inputs=False)
        cache.truncate(S)
        return out

    recorder = OpRecorder()
    with recorder:
        logits = forward()[:, -1]
    cache.truncate(S)
    calls = recorder.calls
    n_modules = [0]

    def hook(module: Any, args: Any) -> None:
        n_modules[0] += 1

    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        forward()
    finally:
        handle.remove()

    def replay(kinds: tuple[str, ...], names: frozenset[str] | None = None) -> Callable[[], None]:
        chosen = [(f, a, k) for f, a, k, kind, _ in calls
                  if kind in kinds and (names is None or str(f.overloadpacket) in names)]

        def run() -> None:
            for f, a, k in chosen:
                f(*a, **k)
        return run

    class Same(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    same, x = Same(), torch.ones(1)

    def step() -> None:
        decode_step(model, token, cache)
        cache.truncate(S)

    fns = {"step": step, "forward": forward, "replay": replay(OP_KINDS),
           "replay_matmuls": replay(("kernel",), MATMUL_OPS), "replay_views": replay(("view",)),
           "module_call": lambda: same(x), "module_forward": lambda: same.forward(x),
           "sample": lambda: logits.argmax(dim=-1), "truncate": lambda: cache.truncate(S)}
    if compiled:
        decoder = StaticDecoder(model, 1, S_max=S + 1)
        decoder.prefill(torch.zeros(1, S, dtype=torch.long, device=model.device))

        def static_step() -> None:
            decoder.decode_step(token, check_inputs=False)
            decoder.cache.truncate(S)

        static_step()  # compiles
        fns["compiled"] = static_step
    samples: dict[str, list[float]] = {part: [] for part in fns}
    for fn in fns.values():
        fn()
    for _ in range(rounds):
        for part, fn in fns.items():
            t0 = now()
            for _ in range(inner):
                fn()
            samples[part].append((now() - t0) / inner)
    kinds = Counter(kind for *_, kind, _ in calls)
    return StepBreakdown(
        n_kernel=kinds["kernel"], n_view=kinds["view"], n_sync=kinds["sync"], n_modules=n_modules[0],
        kernel_bytes=sum(c[4] for c in calls),
        times={p: (min(v), statistics.median(v), max(v)) for p, v in samples.items()})
