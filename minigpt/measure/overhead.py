"""The overhead floor: how many operators one decode step dispatches, what one costs, and the time they explain.

Not every aten operator launches device work: a view (`view`, `transpose`, `t`, `expand`, `select`,
`slice`, ...) only writes a new shape and strides into a tensor header. `op_kind` sorts each operator
into "kernel" (it launches work on the device), "view" (metadata only: a header, no kernel, no bytes)
or "sync" (`aten._local_scalar_dense`: a device-to-host copy the host waits for). On a GPU the kernel
and sync operators are the launches; the views cost the host its dispatch and nothing on the device.

A decode step of a small model moves few bytes, so the bandwidth ceiling (Eq. 3.4) predicts far
more tokens per second than an eager step achieves. What the traffic table misses is per-operator
overhead: each aten operator pays Python, the dispatcher, an allocation and a kernel launch whether
it moves 64 bytes or 64 MiB. `count_ops` counts the operators of a real call with a dispatch mode;
`per_op_seconds` times the cheapest operator there is; `overhead_floor` multiplies the two and sets
the product beside the measured step: floor = n_ops · t_op.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from minigpt.measure.timing import Clock, Timing, time_fn
from minigpt.runtime.compiled import StaticDecoder
from minigpt.runtime.generate import decode_step
from minigpt.runtime.model import MiniGPT

#: The aten operator behind `int(t)`, `t.item()` and `t.tolist()`: the device hands a value to the host (a sync).
HOST_SYNC_OP = "aten._local_scalar_dense"


#: Operators that return an alias of their input but whose schema does not say so (`is_view` is
#: False): `_unsafe_view` is `reshape`'s view of a contiguous tensor, `lift_fresh` returns its input.
ALIAS_OPS = frozenset({"aten._unsafe_view", "aten.lift_fresh", "aten.alias"})
#: Operators that allocate an output and launch nothing (the allocator hands out memory).
ALLOC_OPS = frozenset({"aten.empty", "aten.empty_strided", "aten.empty_like", "aten.new_empty"})
#: The kinds of `op_kind`, in the order tables print them.
OP_KINDS = ("kernel", "view", "sync")


def op_kind(func: Any) -> str:
    """"kernel", "view" or "sync" for an aten operator (an OpOverload, or its name such as "aten.t").

    "view": the schema says it returns an alias of an input (`is_view`, or every return annotated
    as a non-writing alias, as `split_with_sizes`), or it is in ALIAS_OPS / ALLOC_OPS: no device
    work. "sync": HOST_SYNC_OP. Everything else, in-place writes (`copy_`) included, is a "kernel".
    """
    if isinstance(func, str):
        func = _overload(func)
    name = str(func.overloadpacket)
    if name == HOST_SYNC_OP:
        return "sync"
    if name in ALIAS_OPS or name in ALLOC_OPS or func.is_view:
        return "view"
    returns = func._schema.returns
    if returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns):
        return "view"
    return "kernel"


def _overload(name: str) -> Any:
    """The OpOverload behind an operator name ("aten.t", "aten.add.Tensor"): `default` or the first."""
    parts = name.split(".")
    if len(parts) not in (2, 3) or parts[0] != "aten":
        raise ValueError(f"name must be an aten operator such as 'aten.t', got {name!r}")
    try:
        packet = getattr(torch.ops.aten, parts[1])
        overloads = packet.overloads()
        overload = parts[2] if len(parts) == 3 else ("default" if "default" in overloads else overloads[0])
        return getattr(packet, overload)
    except (AttributeError, RuntimeError, IndexError) as e:
        raise ValueError(f"name must be an aten operator such as 'aten.t', got {name!r}") from e


def kind_counts(ops: Counter[str] | dict[str, int]) -> dict[str, int]:
    """Operator counts by name, summed by `op_kind`: {"kernel": n, "view": n, "sync": n}."""
    totals = dict.fromkeys(OP_KINDS, 0)
    for name, n in ops.items():
        totals[op_kind(name)] += n
    return totals


class OpCounter(TorchDispatchMode):
    """A dispatch mode that counts every aten operator run under it, by name (e.g. "aten.addmm")."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        self.counts[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


class OpRecorder(TorchDispatchMode):
    """A dispatch mode that records every aten call in order: (operator, args, kwargs, kind, bytes).

    `bytes` of a kernel call is what its tensors hold, every tensor argument plus every tensor
    result (a view moves none: 0). The arguments are kept, so the calls can be replayed one by one.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, tuple, dict, str, int]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        kind = op_kind(func)
        moved = _tensor_bytes((args, kwargs, out)) if kind == "kernel" else 0
        self.calls.append((func, args, kwargs, kind, moved))
        return out


def _tensor_bytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_tensor_bytes(v) for v in value.values())
    return 0


def count_ops(fn: Callable[[], Any]) -> Counter[str]:
    """The aten operators one call of `fn` dispatches, by name: n_ops of the overhead floor is their total."""
    with OpCounter() as counter:
        fn()
    return counter.counts


def decode_step_ops(model: MiniGPT, *, S: int = 16, B: int = 1, check_inputs: bool = True) -> Counter[str]:
    """The operators of one eager decode step (Eq. 1.3) of B sequences against S cached tokens."""
    from minigpt.measure.sweeps import filled_cache  # sweeps imports this layer's timers; keep the import local

    cache = filled_cache(model, B=B, S=S)
    token = torch.zeros(B, 1, dtype=torch.long, device=model.device)
    if check_inputs:
        return count_ops(lambda: decode_step(model, token, cache))
    fast = torch.no_grad()(lambda: model(token.view(-1, 1), cache, last_only=True, check_inputs=False)[:, -1])
    return count_ops(fast)  # decode_step's own operators, less the id check


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


@dataclass(frozen=True)
class OpSpan:
    """One top-level aten operator of a profiled call: name, kind (as `op_kind`), start and end (s)."""

    name: str
    kind: str
    start_s: float
    end_s: float


def op_timeline(fn: Callable[[], Any], *, tries: int = 5) -> list[OpSpan]:
    """The top-level aten operators of one call of `fn` on a time line (torch.profiler, CPU, wall clock).

    "Top-level": an operator no other aten operator called (`aten::linear`, not the `aten::t` and
    `aten::addmm` inside it); its kind is "sync" if it or an operator inside it reads a value back to
    the host, else "kernel" if any operator inside it is a kernel, else "view". Times start at 0 at
    the first operator. The profiler's wall clock counts a descheduled thread, so the call is profiled
    `tries` times and the shortest trace kept (the one least disturbed by other jobs).
    """
    from torch.profiler import ProfilerActivity, profile

    best: list[OpSpan] | None = None
    for _ in range(_int_at_least("tries", tries, 1)):
        with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
        events = [e for e in prof.events() if e.name.startswith("aten::")]
        top = [e for e in events if e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")]
        if not top:
            return []
        t0 = min(e.time_range.start for e in top)
        spans = [OpSpan(e.name.replace("::", "."), _span_kind(e), (e.time_range.start - t0) * 1e-6,
                        (e.time_range.end - t0) * 1e-6) for e in sorted(top, key=lambda e: e.time_range.start)]
        if best is None or spans[-1].end_s < best[-1].end_s:
            best = spans
    return best or []


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (some profiler builds log every start and stop there from C++)."""
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _int_at_least(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _span_kind(event: Any) -> str:
    kinds = set()
    stack = [event]
    while stack:
        e = stack.pop()
        children = [c for c in e.cpu_children if c.name.startswith("aten::")]
        name = e.name.replace("::", ".")
        if name == HOST_SYNC_OP or name == "aten.item":
            return "sync"
        if not children:
            try:
                kinds.add(op_kind(name))
            except ValueError:
                kinds.add("kernel")
        stack.extend(children)
    return "sync" if "sync" in kinds else "kernel" if "kernel" in kinds else "view"
