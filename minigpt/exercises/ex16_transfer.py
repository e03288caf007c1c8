"""Exercise 16, Question 1: a prompt's K/V sent layer by layer while the prefill runs, against one message after it.

The oracle is the package: `costs.layerwise_transfer_exposed` (the layer-by-layer pipeline, Chapter 19's
Mooncake paragraph) and `costs.kv_transfer_time` (Eq. 19.2, the whole cache after the prefill), with
`costs.kv_transfer_bytes` for a layer's bytes (Eq. 19.1 over L). Every case draws the edges that separate
the rule from its plausible wrong neighbours (`TRANSFER_EDGES`).
"""

from __future__ import annotations

import math
import random
from typing import Any

from minigpt import costs
from minigpt.costs.preset_types import ModelPreset
from minigpt.costs.presets import KV_LINKS, MODELS
from minigpt.exercises.comparisons import _is_number
from minigpt.exercises.spec import _, fmt_num

#: The edges every draw holds, each with the wrong neighbour it separates from the rule.
TRANSFER_EDGES = (
    "a link slower than every layer's prefill (link-bound): a layer's message started when its layer ends, "
    "while the link still sends the one before",
    "a link faster than every layer (compute-bound): the messages sent back to back from the prefill's start, "
    "before their layers are ready",
    "a first layer slower than the rest: every layer taken to last the mean",
    "a latency above 0: the latency paid once for all the layer messages",
    "a GQA model (H_kv < H): H instead of H_kv",
)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _layer_bytes(model: ModelPreset, P: int) -> int:
    """One layer's keys and values for the prompt in bf16: Eq. (19.1) with L = 1."""
    return costs.kv_transfer_bytes(L=1, H_kv=model.H_kv, d_h=model.d_h, s=2, P=P)


def _layer_send(model: ModelPreset, P: int, link_bandwidth: float, latency: float) -> float:
    return latency + _layer_bytes(model, P) / link_bandwidth


def _transfer_cases(rng: random.Random) -> list[dict]:
    """Case 0 is link-bound with a slow first layer, case 1 compute-bound, case 2 a link that falls behind
    and catches up; all three GQA models with a latency (`TRANSFER_EDGES`); the other five random."""
    gqa = [name for name, m in MODELS.items() if m.H_kv < m.H]
    links = [link.bandwidth_per_direction for link in KV_LINKS.values()]
    cases = []
    for k in range(8):
        name = rng.choice(gqa if k < 3 else list(MODELS))
        model, P = MODELS[name], rng.randint(16, 8192)
        bandwidth = rng.choice(links)
        latency = float(f"{rng.uniform(1e-6, 5e-5):.3g}") if k < 3 else rng.choice([0.0, 2e-6])
        send = _layer_send(model, P, bandwidth, latency)
        low, high = [(0.2, 0.6), (1.5, 4.0), (0.3, 2.0)][k] if k < 3 else (0.1, 4.0)
        layer_s = [float(f"{send * rng.uniform(low, high):.3g}") for _ in range(model.L)]
        if k == 0:  # slower than the mean, still faster than the link
            layer_s[0] = float(f"{send * 0.9:.3g}")
        cases.append(dict(model={"$preset": name}, P=P, layer_s=layer_s, link_bandwidth=bandwidth, latency=latency))
    return cases


def _transfer(model: ModelPreset, P: int, layer_s: list[float], link_bandwidth: float,
              latency: float) -> tuple[float, float]:
    layered = costs.layerwise_transfer_exposed(layer_s=layer_s, layer_bytes=_layer_bytes(model, P),
                                               link_bandwidth=link_bandwidth, link_latency=latency)
    whole = costs.kv_transfer_time(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=2, P=P,
                                   link_bandwidth=link_bandwidth, link_latency=latency)
    return layered, whole


def _transfer_check(expected: Any, actual: Any) -> str | None:
    if not isinstance(actual, (tuple, list)) or len(actual) != 2:
        return _("expected a pair (layer by layer, whole) of seconds, got {actual}").format(actual=_short(actual))
    layered, whole = actual
    if not _is_number(whole) or not math.isclose(whole, expected[1], rel_tol=1e-9):
        return _("the whole cache in one message: expected {expected} s, got {actual}: one latency, plus every "
                 "layer's keys and values (for the heads that keep their own) in bf16 over the link's "
                 "bandwidth").format(expected=fmt_num(expected[1], ".6g"), actual=_short(whole))
    if not _is_number(layered) or not math.isclose(layered, expected[0], rel_tol=1e-9):  # > 0: a message's time
        return _("whole message right; layer by layer: expected {expected} s after the prefill, got {actual}: a "
                 "layer's message starts when its layer's prefill has ended AND the link has finished the message "
                 "before, and pays its own latency").format(expected=fmt_num(expected[0], ".6g"),
                                                            actual=_short(layered))
    return None
