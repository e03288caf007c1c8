"""Exercise 17's fourth question (Chapter 20): the bytes one rank of the sharded MiniGPT holds, tensor by tensor.

A rank does not hold 1/W of the model. The package's rule is `minigpt.distributed.tensor_parallel.shard_state`,
what `TensorParallelMiniGPT` loads (and whose logits the tests check equal the single-process model's): the
column-parallel tensors (QKV's rows and bias, `up`'s rows and bias) and the row-parallel weights (`out`'s and
`down`'s input columns) split W ways, the embedding (tied with the LM head) by vocabulary, but a K/V head copied
whole to every rank of its group when H_kv < W, and the row-parallel layers' biases, the LayerNorms and the
position table whole on every rank. The oracle runs `shard_state` on meta tensors of the given shapes (nothing
is allocated) and counts their elements, s bytes each.

`rank_bytes(kind=...)` is the count with one plausible slip (`WRONG_KINDS`); `shard_cases` draws, every time, a
model on which each slip changes the answer (`SHARD_EDGES`), then the shipped MiniGPT's shapes and random ones.
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from minigpt.config import ModelConfig
from minigpt.distributed.tensor_parallel import param_kind, shard_state
from minigpt.runtime.model import MiniGPT

SHARD_EDGES = (
    "the whole model's bytes over W (the fit check's N·s/W): the tensors a rank holds whole counted whole",
    "H_kv < W: a whole K/V head copied to every rank of its group, not H_kv/W of one",
    "the row-parallel layers' biases (out, down): whole on every rank, not split",
    "the LayerNorms and the position table: whole on every rank, not split",
    "the embedding, tied with the LM head: V/W rows on a rank, not all V",
)
# The slips, in the order of SHARD_EDGES: everything divided by W; the fused QKV divided by W, K/V heads too;
# the row-parallel biases split; the replicated tables split; the embedding kept whole.
WRONG_KINDS = ("over_W", "no_replicas", "row_bias_split", "replicated_split", "embedding_whole")

_ROW_BIASES = ("attn.out.bias", "mlp.down.bias")


def _config(shapes: dict[str, list[int]], H: int, H_kv: int) -> ModelConfig:
    """The shape `shard_state` splits by (heads, d_ffn, V); it walks the tensors it is given, so L and S_max are
    not read."""
    V, d = shapes["tok_emb.weight"]
    return ModelConfig(H=H, H_kv=H_kv, d_h=d // H, d_ffn=shapes["blocks.0.mlp.up.weight"][0], V=V)


def rank_bytes(shapes: dict[str, list[int]], H: int, H_kv: int, W: int, s: int, kind: str | None = None) -> int:
    """Bytes of the tensors one rank of `W` holds (`shard_state`), `s` bytes a value; `kind` one of
    `WRONG_KINDS` (or None: the package's rule)."""
    if kind == "over_W":
        return sum(math.prod(shape) for shape in shapes.values()) * s // W
    c = _config(shapes, H, H_kv)
    held = shard_state({k: torch.empty(v, device="meta") for k, v in shapes.items()}, c, W, 0)
    total = 0
    for name, t in held.items():
        n, part = t.numel(), param_kind(name)
        if kind == "no_replicas" and part.startswith("attn.qkv."):  # every row split W ways, K/V heads too
            n = shapes[name][0] * n // t.shape[0] // W
        elif kind == "row_bias_split" and part in _ROW_BIASES:
            n //= W
        elif kind == "replicated_split" and part.startswith(("ln", "pos_emb")):  # ln1, ln2, ln_f, pos_emb
            n //= W
        elif kind == "embedding_whole" and name == "tok_emb.weight":
            n *= W
        total += n
    return total * s


def model_shapes(config: ModelConfig) -> dict[str, list[int]]:
    """The shapes of a MiniGPT's `state_dict()`, by name (built on the meta device: nothing is allocated)."""
    with torch.device("meta"):
        model = MiniGPT(config)
    return {name: list(t.shape) for name, t in model.state_dict().items()}


def _case(rng: random.Random, replicas: bool) -> dict[str, Any]:
    """A random MiniGPT and a W it can be split over; `replicas`: H_kv < W."""
    for _attempt in range(1_000):  # replicas: about one draw in five
        H = rng.choice([2, 4, 8])
        H_kv = rng.choice([h for h in (1, 2, 4, 8) if H % h == 0])
        W = rng.choice([w for w in (1, 2, 4, 8) if H % w == 0 and (H_kv % w == 0 or w % H_kv == 0)])
        if (H_kv < W) == replicas:
            break
    else:
        raise RuntimeError(f"no head layout in 1,000 draws with replicas={replicas}")
    config = ModelConfig(L=rng.randint(1, 3), H=H, H_kv=H_kv, d_h=rng.choice([4, 8, 16]),
                         d_ffn=8 * rng.randint(1, 32), V=8 * rng.randint(2, 128), S_max=rng.randint(8, 256))
    return dict(shapes=model_shapes(config), H=H, H_kv=H_kv, W=W, s=rng.choice([2, 4]))


def shard_cases(rng: random.Random) -> list[dict[str, Any]]:
    """One model per slip of `WRONG_KINDS` (drawn until that slip changes the answer; with H_kv < W for
    "no_replicas"), the shipped MiniGPT's shapes (L=4, H=4, H_kv=4, d_h=16, d_ffn=256, V=600) over 2 or 4
    ranks, then two random models."""
    cases = []
    for kind in WRONG_KINDS:
        for _attempt in range(1_000):  # a draw or two in practice; bounded, so a broken edge fails loudly
            case = _case(rng, replicas=kind == "no_replicas")
            if rank_bytes(**case, kind=kind) != rank_bytes(**case):
                break
        else:
            raise RuntimeError(f"no model in 1,000 draws separates the slip {kind!r}")
        cases.append(case)
    cases.append(dict(shapes=model_shapes(ModelConfig()), H=4, H_kv=4, W=rng.choice([2, 4]), s=rng.choice([2, 4])))
    return cases + [_case(rng, replicas=rng.random() < 0.5) for _ in range(2)]
