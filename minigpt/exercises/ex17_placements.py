"""Exercise 17's third question (Chapter 20): where a tensor-parallel forward's collectives go, derived from what
each layer needs.

On each rank an activation is held in one of three placements (PyTorch's DTensor calls them `Replicate()`,
`Shard(-1)` and `Partial()`): *whole*, every rank holds all of it; *split*, rank r holds the r-th of W blocks of
its last dimension; *partial*, every rank holds a full-size term and the value is the sum of the W terms. A layer
needs its input in a placement and leaves its output in one (`NEEDS`, `LEAVES`); when the input is not what the
layer needs, the ranks change it, at that moment and with the collective DTensor's `redistribute` uses
(`torch/distributed/tensor/_redistribute.py`, `_comm_type_key`): partial to whole is an all-reduce, split to
whole an all-gather, partial to split a reduce-scatter, whole to split free (each rank keeps its block). The
forward's input is whole, and its output must be. Each collective's payload is its full tensor, B·T·width·s
bytes: the tensor summed, or the tensor the gather produces, as `minigpt.distributed.collectives` records it.
One rank sends nothing.

Chapter 20's forward (`chapter_layers`) gives Eqs. (20.1)-(20.2); `tests/test_tensor_parallel.py` checks that
this walk over it is the record a real gloo run of the sharded MiniGPT keeps. `collectives(kind=...)` is the walk
with one plausible slip (`WRONG_KINDS`); `placement_cases` draws, every time, a plan on which each slip changes
the answer (`PLACEMENT_EDGES`), then the chapter's forward and random plans.
"""

from __future__ import annotations

import random
from typing import Any

#: The placement each layer needs its input in (None: whole or split, as it comes) and the one it leaves.
NEEDS = {"column": "whole", "row": "split", "local": None, "norm": "whole"}
LEAVES = {"column": "split", "row": "partial", "local": None, "norm": "whole"}  # None: as its input

PLACEMENT_EDGES = (
    "a row-parallel layer after a row-parallel one: a reduce-scatter when the next layer needs it, not an "
    "all-reduce right after every row-parallel layer",
    "a column-parallel layer or a norm after a split: gathered first, not passed on split",
    "a layer acting on each value after a row-parallel one: the partial sums made whole first",
    "a gather: its payload is the whole gathered tensor, not one rank's block",
    "a split made whole: an all-gather, not an all-reduce",
    "one rank: nothing sent",
    "a forward whose last layer leaves a split or partial sums: made whole at the end",
    "a reduce-scatter: its payload is the whole tensor summed, not one rank's block",
)
# The slips, in the order of PLACEMENT_EDGES: RowwiseParallel's default output (an all-reduce after every row
# layer); a split passed on where whole is needed; a local layer fed partial sums; a gather counted per rank; a
# split summed; one rank still sending; the output left as it is; a reduce-scatter counted per rank.
WRONG_KINDS = ("eager", "no_gather", "local_partial", "gather_slice", "reduce_for_gather", "one_rank",
               "end_as_is", "scatter_slice")


def _change(have: str, need: str, nbytes: int, W: int, kind: str | None) -> list[list[Any]]:
    """The collective that turns `have` into `need` ([] when none is needed), payload `nbytes`."""
    if have == need or (have == "whole" and need == "split"):
        return []
    if have == "partial":
        if need == "whole":
            return [["all_reduce", nbytes]]
        return [["reduce_scatter", nbytes // W if kind == "scatter_slice" else nbytes]]
    if kind == "reduce_for_gather":
        return [["all_reduce", nbytes]]
    return [["all_gather", nbytes // W if kind == "gather_slice" else nbytes]]


def collectives(layers: list[list[Any]], B: int, T: int, s: int, W: int,
                kind: str | None = None) -> list[list[Any]]:
    """[kind, payload bytes] of every collective of a forward through `layers` ([kind, output width] each), in
    order; `kind` one of `WRONG_KINDS` (or None: the rule of the module docstring)."""
    if W == 1 and kind != "one_rank":
        return []
    out: list[list[Any]] = []
    have, width = "whole", 0
    for layer, new_width in layers:
        need = NEEDS[layer]
        if need is None and have == "partial" and kind != "local_partial":
            need = "whole"
        if need == "whole" and have == "split" and kind == "no_gather":
            need = None
        if need is not None:
            out += _change(have, need, B * T * width * s, W, kind)
            have = need
        have, width = LEAVES[layer] or have, new_width
        if have == "partial" and kind == "eager":
            out.append(["all_reduce", B * T * width * s])
            have = "whole"
    if kind != "end_as_is":
        out += _change(have, "whole", B * T * width * s, W, kind)
    return out


def chapter_layers(L: int, d: int, qkv: int, d_ffn: int, V: int) -> list[list[Any]]:
    """Chapter 20's forward as layers: the vocabulary-split embedding (a row-parallel product of one-hot tokens),
    per block a norm, the column-parallel QKV (`qkv` = (H + 2·H_kv)·d_h rows), attention by heads, the
    row-parallel output projection, a norm, the MLP's column-parallel up and row-parallel down projections, and
    at the end a norm and the LM head split by vocabulary (column-parallel)."""
    block = [["norm", d], ["column", qkv], ["local", d], ["row", d],
             ["norm", d], ["column", d_ffn], ["local", d_ffn], ["row", d]]
    return [["row", d]] + block * L + [["norm", d], ["column", V]]


def _plan(rng: random.Random) -> list[list[Any]]:
    """Two to eight random layers; every width a multiple of 8, so W of 1, 2, 4 or 8 divides it."""
    width = 8 * rng.randint(1, 64)
    layers = []
    for _k in range(rng.randint(2, 8)):
        layer = rng.choice(list(NEEDS))
        if layer != "norm":
            width = 8 * rng.randint(1, 64)
        layers.append([layer, width])
    return layers


def _case(rng: random.Random, W: int) -> dict[str, Any]:
    return dict(layers=_plan(rng), B=rng.randint(1, 8), T=rng.choice([1, rng.randint(2, 64)]),
                s=rng.choice([2, 4]), W=W)


def placement_cases(rng: random.Random) -> list[dict[str, Any]]:
    """One plan per slip of `WRONG_KINDS` (drawn until that slip changes the answer; one rank for "one_rank",
    several for the others), Chapter 20's forward on several ranks, then three random plans."""
    cases = []
    for kind in WRONG_KINDS:
        for _attempt in range(10_000):  # a handful of draws in practice; bounded, so a broken edge fails loudly
            case = _case(rng, 1 if kind == "one_rank" else rng.choice([2, 4, 8]))
            if collectives(**case, kind=kind) != collectives(**case):
                break
        else:
            raise RuntimeError(f"no plan in 10,000 draws separates the slip {kind!r}")
        cases.append(case)
    d, H = rng.choice([(64, 4), (512, 8), (4096, 32)])
    H_kv = rng.choice([h for h in (1, 2, H // 4, H) if H % h == 0])
    chapter = chapter_layers(L=rng.randint(1, 4), d=d, qkv=(H + 2 * H_kv) * (d // H), d_ffn=4 * d,
                             V=rng.choice([600, 32000, 128256]))
    cases.append(dict(layers=chapter, B=rng.randint(1, 8), T=rng.choice([1, rng.randint(2, 64)]),
                      s=rng.choice([2, 4]), W=rng.choice([2, 4, 8])))
    return cases + [_case(rng, rng.choice([1, 2, 4, 8])) for _ in range(3)]
