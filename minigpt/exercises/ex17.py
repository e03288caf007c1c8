"""Exercise 17 (Chapter 20, tensor parallelism): a row-parallel product whose all-reduce rebuilds the
matmul, the QKV rows a rank keeps (with K/V replicas when H_kv < W), where the collectives of a forward
go, derived from what each layer needs (`ex17_placements`), and the smallest W whose shard fits a chip.

The oracles are the package: `minigpt.distributed.tensor_parallel.qkv_rows` (what the sharded model
loads), the placement walk of `ex17_placements` (which the tests check against the record of a real
gloo run of the sharded MiniGPT), and `costs.tp_kv_cache_bytes` (Eq. 20.3) for the fit.
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
from minigpt.distributed.tensor_parallel import qkv_rows
from minigpt.exercises.ex17_placements import PLACEMENT_EDGES, collectives, placement_cases
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


FIT_EDGES = ("the K/V replicas decide the answer: K/V replicas forgotten",
             "an answer W > H_kv: W must divide H_kv (no replicas allowed)")


def _fit_cases(rng: random.Random) -> list[dict]:
    """Half the cases drawn until the K/V replicas decide the answer (16 ranks of a model with 8 K/V heads), and
    the first until its answer is more ranks than K/V heads (`FIT_EDGES`)."""
    names = [n for n in MODELS if n != "MiniGPT"]
    cases: list[dict] = []
    while len(cases) < 8:
        model, chip = rng.choice(names), rng.choice(list(HARDWARE))
        S, B = rng.choice([1024, 4096, 8192, 32768]), rng.choice([1, 8, 32, 128, 512])
        args = (MODELS[model], HARDWARE[chip], S, B)
        if len(cases) % 2 and _smallest_tp(*args) == _smallest_tp(*args, replicas=False):
            continue
        if not cases and _smallest_tp(*args) <= MODELS[model].H_kv:
            continue
        cases.append(dict(model={"$preset": model}, hardware={"$hardware": chip}, S=S, B=B))
    return cases


def _smallest_tp(model: ModelPreset, hardware: HardwarePreset, S: int, B: int, replicas: bool = True) -> int:
    budget = math.floor(hardware.memory_bytes * (1 - costs.FIT_RESERVE))
    for W in (1, 2, 4, 8, 16):
        if model.H % W or (model.H_kv % W and W % model.H_kv):
            continue
        if replicas:
            kv = costs.tp_kv_cache_bytes(L=model.L, B=B, S=S, H_kv=model.H_kv, d_h=model.d_h, s=2, W=W)
        else:  # the answer that forgets the copies, to pick cases where they matter
            kv = 2 * model.L * B * S * model.H_kv * model.d_h * 2 // W
        if math.ceil(model.N_params * 2 / W) + kv <= budget:
            return W
    return 0


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
            "q4", "smallest_tp", "smallest_tp(model, hardware, S, B) -> int", _fit_cases, _smallest_tp,
            exact_int,
            N_("try W = 1, 2, 4, 8, 16 in turn, skipping a W that does not divide H or that neither divides nor is "
               "divided by H_kv. One rank holds its share of the bf16 weights (rounded up to whole bytes) and its "
               "own cache of B sequences of S tokens, with a whole K/V head copied when there are fewer K/V heads "
               "than ranks; it must fit in 90 % of the chip's memory (rounded down). Return 0 when even 16 is not "
               "enough."),
            edges=FIT_EDGES,
        ),
    ),
)
