"""Exercise 17 (Chapter 20, tensor parallelism): a row-parallel product whose all-reduce rebuilds the
matmul, the QKV rows a rank keeps (with K/V replicas when H_kv < W), where the collectives of a forward
go, derived from what each layer needs (`ex17_placements`), and the bytes one rank holds, tensor by
tensor (`ex17_shards`).

The oracles are the package: `minigpt.distributed.tensor_parallel.qkv_rows` and `shard_state` (what the
sharded model loads), and the placement walk of `ex17_placements` (which the tests check against the
record of a real gloo run of the sharded MiniGPT).
"""

from __future__ import annotations

import random
from typing import Any

import torch

from minigpt.config import ModelConfig
from minigpt.distributed.tensor_parallel import qkv_rows
from minigpt.exercises.ex17_placements import PLACEMENT_EDGES, collectives, placement_cases
from minigpt.exercises.ex17_shards import SHARD_EDGES, rank_bytes, shard_cases
from minigpt.exercises.spec import N_, Exercise, Question, _, exact_int, int_list, randn, tensor

PARTIALS_EDGES = ("W ≥ 2 ranks of k ≥ 2 columns each: strided columns (r, r + W, ...) instead of contiguous blocks",)


def _partials_cases(rng: random.Random) -> list[dict]:
    """The first case has W ≥ 2 ranks of k ≥ 2 columns (`PARTIALS_EDGES`), the others are random."""
    cases = []
    for i in range(6):
        W, k = (rng.choice([2, 3, 4]), rng.randint(2, 5)) if i == 0 else (rng.choice([1, 2, 3, 4]), rng.randint(1, 5))
        lead = [rng.randint(1, 3) for _ in range(rng.randint(1, 2))]
        cases.append(dict(x=randn([*lead, W * k], rng), w=randn([rng.randint(1, 7), W * k], rng), W=W))
    return cases


def _partials(x: torch.Tensor, w: torch.Tensor, W: int) -> torch.Tensor:
    k = w.shape[1] // W
    return torch.stack([x[..., r * k:(r + 1) * k] @ w[:, r * k:(r + 1) * k].T for r in range(W)])


ROWS_EDGES = ("1 < H_kv < W, a rank whose K/V head (rank·H_kv // W) is not rank % H_kv: tiled replicas",)


def _rows_cases(rng: random.Random) -> list[dict]:
    """The edge first (`ROWS_EDGES`), then seven random cases, the first three replicating K/V heads."""
    H = rng.choice([8, 16])
    W = rng.choice([w for w in (4, 8) if H % w == 0])
    H_kv = rng.choice([h for h in (2, 4) if h < W])
    rank = rng.choice([r for r in range(W) if r * H_kv // W != r % H_kv])
    cases = [dict(H=H, H_kv=H_kv, d_h=rng.choice([1, 2, 3]), W=W, rank=rank)]
    while len(cases) < 8:
        H = rng.choice([4, 8, 16])
        H_kv = rng.choice([h for h in (1, 2, 4, 8, 16) if H % h == 0])
        W = rng.choice([w for w in (1, 2, 4, 8) if H % w == 0 and (H_kv % w == 0 or w % H_kv == 0)])
        if len(cases) < 4 and H_kv >= W:  # half the cases replicate K/V heads
            continue
        cases.append(dict(H=H, H_kv=H_kv, d_h=rng.choice([1, 2, 3]), W=W, rank=rng.randrange(W)))
    return cases


def _rows(H: int, H_kv: int, d_h: int, W: int, rank: int) -> list[int]:
    config = ModelConfig(L=1, H=H, H_kv=H_kv, d_h=d_h, d_ffn=W, V=W)
    return qkv_rows(config, W, rank).tolist()


def _records(expected: Any, actual: Any) -> str | None:
    """The same list of [kind, bytes] pairs, in order; the message says where they part."""
    if not isinstance(actual, list):
        return _("expected a list of [kind, nbytes] pairs, got {type}").format(type=type(actual).__name__)
    got = [list(a) if isinstance(a, (list, tuple)) else a for a in actual]
    if len(got) != len(expected):
        return _("expected {n} collectives, got {n_got}").format(n=len(expected), n_got=len(got))
    for i, (e, a) in enumerate(zip(expected, got, strict=True)):
        if a != e:
            return _("collective {i} (counting from 0): expected {expected}, got {actual}").format(
                i=i, expected=e, actual=a)
    return None


EXERCISE = Exercise(
    id="ex17",
    notebook="ex17_tensor_parallel.ipynb",
    title="Tensor parallelism",
    questions=(
        Question(
            "q1", "row_parallel_partials", "row_parallel_partials(x, w, W) -> tensor", _partials_cases, _partials,
            tensor(atol=1e-5, rtol=1e-5),
            N_("rank r holds a contiguous block of the weight's input columns, the r-th of W equal blocks, and the "
               "matching block of the last dimension of x; its partial product has the full output width. "
               "Stack the W partials along a new first dimension, rank 0 first: their sum is the whole product."),
            edges=PARTIALS_EDGES,
        ),
        Question(
            "q2", "qkv_rows_for_rank", "qkv_rows_for_rank(H, H_kv, d_h, W, rank) -> list[int]", _rows_cases,
            _rows, int_list,
            N_("the fused weight holds all query heads, then all key heads, then all value heads, d_h rows per "
               "head. A rank keeps H/W consecutive query heads, then the key rows and then the value rows of the "
               "K/V heads those query heads read: H_kv/W of them, or, when H_kv < W, the one head of their group "
               "(several ranks keep a copy of it)."),
            edges=ROWS_EDGES,
        ),
        Question(
            "q3", "collectives_of_forward", "collectives_of_forward(layers, B, T, s, W) -> list", placement_cases,
            collectives, _records,
            N_("walk the layers keeping the activation's placement on a rank; it starts whole. Before a layer, "
               "change it if the layer needs another: a column-parallel layer and a norm need it whole, a "
               "row-parallel layer split, a local layer takes it whole or split but never as partial sums. "
               "Partial sums to whole is an all_reduce, split to whole an all_gather, partial sums to split a "
               "reduce_scatter, whole to split costs nothing. The layer then leaves it split (column), as partial "
               "sums (row), whole (norm) or as it came (local); at the end it must be whole. A payload is "
               "B·T·width·s, the tensor's full width. One rank sends nothing."),
            edges=PLACEMENT_EDGES,
        ),
        Question(
            "q4", "rank_bytes", "rank_bytes(shapes, H, H_kv, W, s) -> int", shard_cases, rank_bytes, exact_int,
            N_("go through the tensors by name. Split W ways: the QKV weight and bias by rows (H/W query heads, "
               "and of the K/V heads H_kv/W, or one whole head when H_kv < W), the output projection's weight "
               "by its input columns, up's weight and bias by rows, down's weight by its input columns, the "
               "embedding by rows (vocabulary). Whole on every rank: the biases of out and down (added after "
               "the sum), every LayerNorm, the position table. Count the elements a rank holds, s bytes each."),
            edges=SHARD_EDGES,
        ),
    ),
)
