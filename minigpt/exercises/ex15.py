"""Exercise 15 (Chapter 18, the overhead floor): the operators of one decode step, which of them launch
device work, which term of Eq. (18.1) binds for a configuration, and the mask a static cache attends through.

The oracles are the package: the dispatch-mode counter and `op_kind` of `minigpt.measure.op_count`,
`costs.overhead_bound`, and `StaticKVCache.visible`. Nothing is timed: every answer is deterministic.
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.costs.preset_types import HardwarePreset, ModelPreset
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises.spec import N_, Exercise, Question, _, exact_int, model_spec, tensor
from minigpt.measure.op_count import HOST_SYNC_OP, decode_step_ops, op_kind
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.static_cache import StaticKVCache

COUNT_EDGES = ("any step (views are in every one): views not counted",)


def _count_cases(rng: random.Random) -> list[dict]:
    """Small random MiniGPTs of 1 to 4 layers (the count grows with L), S cached tokens of at most 30 (S_max 32)."""
    cases = []
    for _k in range(6):
        spec = model_spec(rng)
        spec["$model"]["L"] = rng.randint(1, 4)
        cases.append(dict(model=spec, S=rng.randint(1, 30)))
    return cases


def _count(model: MiniGPT, S: int) -> int:
    return sum(decode_step_ops(model, S=S).values())


#: Operators a decode step dispatches, and others of the same kinds, for q2's random lists.
_VIEWS = ("aten.view", "aten.t", "aten.transpose", "aten.expand", "aten.select", "aten.slice", "aten.permute",
          "aten._unsafe_view", "aten.split_with_sizes", "aten.unsqueeze", "aten.squeeze", "aten.as_strided",
          "aten.detach", "aten.unbind", "aten.alias")
_KERNELS = ("aten.addmm", "aten.mm", "aten.bmm", "aten.add", "aten.mul", "aten.div", "aten.copy_",
            "aten.native_layer_norm", "aten._softmax", "aten.gelu", "aten.embedding", "aten.arange", "aten.clone",
            "aten.cat", "aten.index_select", "aten.where", "aten.exp", "aten.sum", "aten.argmax", "aten.min")


CLASSIFY_EDGES = ("aten._unsafe_view in the list: _unsafe_view taken for a kernel (its schema says no alias)",
                  "the host sync in the list: the host sync taken for a kernel")


def _classify_cases(rng: random.Random) -> list[dict]:
    """Six lists of 8 to 16 operator names, views, kernels and the host sync mixed, in random order; the first
    holds _unsafe_view and the host sync (`CLASSIFY_EDGES`)."""
    cases = []
    for k in range(6):
        names = rng.sample(_VIEWS, rng.randint(3, 7)) + rng.sample(_KERNELS, rng.randint(3, 8))
        names += [HOST_SYNC_OP] * (1 if k == 0 else rng.randint(0, 1))
        if k == 0 and "aten._unsafe_view" not in names:
            names[0] = "aten._unsafe_view"
        rng.shuffle(names)
        cases.append(dict(names=names))
    return cases


def _classify(names: list[str]) -> list[str]:
    return [op_kind(name) for name in names]


def _kinds(expected: Any, actual: Any) -> str | None:
    """The same list of "kernel" / "view" / "sync", operator by operator; the first mismatch in words."""
    if not isinstance(actual, list) or len(actual) != len(expected):
        return _("expected a list of {n} strings, one per name, got {actual}").format(n=len(expected),
                                                                                     actual=_short(actual))
    for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
        if a != e:
            return _("operator {i} is a {expected}, you said {actual} (a view only writes a new shape and "
                     "strides over the same storage: does the schema say the output aliases an input?)").format(
                i=i, expected=repr(e), actual=repr(a))
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


BOUND_EDGES = ("the floor between the traffic time of one sequence's cache and of B: the cache of one sequence",)


def _traffic(model: str, hardware: str, **given: int) -> float:
    m, hw = MODELS[model], HARDWARE[hardware]
    return costs.evaluate(costs.decode_step_time, m, N_params=m.N_params, s=2, bandwidth=hw.bandwidth,
                          peak_flops=hw.peak_flops, **given)


def _between(rng: random.Random, **wrong: int) -> dict:
    """A configuration whose floor lies between the traffic time a wrong term gives and the right one
    (`BOUND_EDGES`), so that the two answers differ."""
    for _draw in range(10_000):  # bounded: a wrong term that never moves the time would loop for ever
        model, hardware = rng.choice(list(MODELS)), rng.choice(list(HARDWARE))
        S, B = (rng.randint(1, 16384), rng.randint(2, 64)) if "B" in wrong else (rng.randint(1, 512), rng.randint(1, 8))
        right = _traffic(model, hardware, S=S, B=B)
        low, high = sorted((_traffic(model, hardware, **{**dict(S=S, B=B), **wrong}), right))
        n_ops = rng.randint(60, 3000)
        t_op = float(f"{math.sqrt(low * high) / n_ops:.3g}")
        if high > 1.02 * low and low * 1.001 < n_ops * t_op < high / 1.001:
            return dict(model={"$preset": model}, hardware={"$hardware": hardware}, S=S, B=B, n_ops=n_ops, t_op=t_op)
    raise ValueError(f"no configuration separates {wrong} from the right traffic time")


def _bound_cases(rng: random.Random) -> list[dict]:
    """The edge first (`BOUND_EDGES`), then nine configurations from measured-looking inputs: a preset model and
    chip, B, S, and the n_ops and t_op an operator trace and a timer would give (t_op 0.3..30 µs); both answers
    occur."""
    cases = [_between(rng, B=1)]
    for i in range(9):
        model = "MiniGPT" if i < 3 else rng.choice(list(MODELS))
        S, B = (rng.randint(1, 512), 1) if i % 2 else (rng.randint(513, 16384), rng.randint(1, 64))
        n_ops = rng.randint(60, 3000)
        t_op = float(f"{10 ** rng.uniform(math.log10(3e-7), math.log10(3e-5)):.3g}")
        cases.append(dict(model={"$preset": model}, hardware={"$hardware": rng.choice(list(HARDWARE))},
                          S=S, B=B, n_ops=n_ops, t_op=t_op))
    return cases


def _bound(model: ModelPreset, hardware: HardwarePreset, S: int, B: int, n_ops: int, t_op: float) -> str:
    return costs.evaluate(costs.overhead_bound, model, N_params=model.N_params, s=2, bandwidth=hardware.bandwidth,
                          peak_flops=hardware.peak_flops, S=S, B=B, n_ops=n_ops, t_op=t_op)


def _which(expected: Any, actual: Any) -> str | None:
    if actual not in ("overhead", "traffic"):
        return _('expected the string "overhead" or "traffic", got {actual}').format(actual=_short(actual))
    if actual != expected:
        return _("expected {expected}, got {actual}: compare the floor n_ops·t_op with the step's traffic "
                 "time, the larger of its bytes over the bandwidth and its FLOPs over the peak (weights and "
                 "cache in bf16, the cache of all B sequences, the LM head included)").format(expected=repr(expected),
                                                                                             actual=repr(actual))
    return None


MASK_EDGES = ("a chunk of T ≥ 2 positions: every query sees up to the chunk's last position",)


def _mask_cases(rng: random.Random) -> list[dict]:
    """The first case is a chunk of at least two positions (`MASK_EDGES`), the others random."""
    cases = []
    for k in range(8):
        S_max = rng.randint(2 if k == 0 else 1, 40)
        T = rng.randint(2 if k == 0 else 1, min(4, S_max))
        start = rng.randint(0, S_max - T)
        cases.append(dict(S_max=S_max, input_pos={"$long": list(range(start, start + T))}))
    return cases


def _mask(S_max: int, input_pos: torch.Tensor) -> torch.Tensor:
    return StaticKVCache(ModelConfig(L=1, S_max=S_max), 1, S_max=S_max).visible(input_pos)


def _bool_tensor(expected: Any, actual: Any) -> str | None:
    """A boolean tensor equal to the expected one (a 0/1 integer tensor is not a mask `masked_fill` takes)."""
    if isinstance(actual, dict) and "$tensor" in actual:
        leaves = _leaves(actual["$tensor"])
        if not all(isinstance(x, bool) for x in leaves):
            message = _("expected a torch.bool tensor, got values like {values} (a comparison gives one: rows <= p)")
            return message.format(values=leaves[:4])
    return tensor(atol=0.0, rtol=0.0)(expected, actual)


def _leaves(value: Any) -> list[Any]:
    return [x for v in value for x in _leaves(v)] if isinstance(value, list) else [value]


EXERCISE = Exercise(
    id="ex15",
    notebook="ex15_overhead_floor.ipynb",
    title="The overhead floor",
    questions=(
        Question(
            "q1", "count_decode_ops", "count_decode_ops(model, S) -> int", _count_cases, _count, exact_int,
            N_("a TorchDispatchMode subclass whose __torch_dispatch__(self, func, types, args=(), kwargs=None) "
               "adds one "
               "to a counter and returns func(*args, **(kwargs or {})). Outside the mode: cache = model.new_cache(1, "
               "S_max=S + 1); prefill(model, any [1, S] long prompt, cache); token = torch.zeros(1, 1, "
               "dtype=torch.long). "
               "Inside it, only decode_step(model, token, cache) (from minigpt.runtime.generate). Count every aten "
               "operator, views included."),
            runtime=("runtime/generate.py",),
            edges=COUNT_EDGES,
        ),
        Question(
            "q2", "classify_ops", "classify_ops(names) -> list[str]", _classify_cases, _classify, _kinds,
            N_("for each name look up the operator (torch.ops.aten.<name>, its default overload or its only one) and "
               "ask whether it launches device work: an operator whose output is an alias of an input writes only a "
               "tensor header; _unsafe_view does too, although its schema does not say so; reading a value back to "
               "the host is neither"),
            edges=CLASSIFY_EDGES,
        ),
        Question(
            "q3", "binding_term", "binding_term(model, hardware, S, B, n_ops, t_op) -> str", _bound_cases, _bound,
            _which,
            N_("the floor is what the operators cost; the traffic time is what the chip needs for the step's bytes "
               "or its FLOPs, whichever takes longer; the larger of the two binds (a tie counts as overhead)"),
            edges=BOUND_EDGES,
        ),
        Question(
            "q4", "static_mask", "static_mask(S_max, input_pos) -> torch.Tensor", _mask_cases, _mask, _bool_tensor,
            N_("a boolean tensor of shape [1, T, S_max]: a query sees its own row and every earlier one, never a "
               "later one; build it with one comparison of two tensors shaped to broadcast, so that its shape "
               "never depends on a Python number that changes from step to step"),
            edges=MASK_EDGES,
        ),
    ),
)
