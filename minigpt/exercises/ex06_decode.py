"""Exercise 6 Q3: one decode step computed from the KV cache and the weights, with no prompt and no model.

The student gets a small random MiniGPT's state dict (`params`, `{"$weights": ...}`: plain tensors), its shape
(`config`: L, H, H_kv, d_h, d, d_ffn, V, S_max), the rows P earlier tokens left in every layer's cache (`k_cache`,
`v_cache` `[L, B, H_kv, P, d_h]`, random: whatever tokens made them, there is no prompt to recompute them from)
and the token at position P of each sequence; the answer is that step's logits `[B, V]`: Chapter 6's decode step
written out, each layer's attention over the P cached rows and the token's own new key and value.

The oracle is the package's own mechanism: the `MiniGPT` those weights make, a `KVCache` holding the given rows
(`advance(P)`), and one forward of the token through them. The cases hand the sandbox weights, not a model, so
the question is graded where `MiniGPT` and `KVCache` are stubs (`minigpt.grading.cases.needs_of`).
`tests/test_ex06_decode.py` checks the oracle against the model's own prefill-then-decode on a real prompt; the
named wrong answers (`DECODE_EDGES`) are written apart in `tests/test_seed_independence_ex06_09.py`, the reference
solution's mutants are in `tests/test_exercise_mechanisms.py`. GELU's tanh approximation (GPT-2's) moves the logits
by about the check's tolerance: about one random case in ten tells it, so its edge is drawn with weights of scale 0.6
until it does (`_gelu_case`). Left out: a LayerNorm ε of 1e-6, which one case in some two hundred tells.
"""

from __future__ import annotations

import functools
import random

import torch
import torch.nn.functional as F

from minigpt.config import ModelConfig
from minigpt.exercises.spec import build_case, randn, weights_spec
from minigpt.runtime.kv_cache import KVCache
from minigpt.runtime.model import MiniGPT

#: Case i is edge i, under every seed; every case has P >= 1 (so the cache matters) and two or more heads (d > d_h).
DECODE_EDGES = (
    "1 < H_kv < H (H = 4, H_kv = 2) in every layer, 2 or 3 layers, B = 2 or 3: KV heads tiled (repeat) instead "
    "of interleaved (repeat_interleave)",
    "P = 1, a cache of one row: the cache ignored (the token attends to itself only), or its own key and value "
    "left out (it attends to the cached rows only)",
    "P >= 2, B = 2 or 3 (and every case): the new token at position P − 1 or 0; the mask of "
    "F.scaled_dot_product_attention(..., is_causal=True), which PyTorch aligns top-left, so a one-row query over "
    "P + 1 keys sees only the first key; the residual added to the normed input instead of the input; the "
    "LayerNorm before the MLP left out; scores scaled by √d instead of √d_h; the final LayerNorm left out; the "
    "query's heads read across the width (d_h × H, not H × d_h); the qkv rows split as k, q, v; ReLU instead of "
    "GELU",
    "weights of scale 0.6, drawn until GELU's tanh approximation moves a logit by twice the tolerance: the tanh "
    "GELU (GPT-2's) instead of the exact one",
)
TOL = 1e-4  # the check's atol and rtol
#: Draws allowed for the GELU edge before the generator gives up (about half of the draws separate it).
DRAWS = 100


def _case(rng: random.Random, H: int | None = None, H_kv: int | None = None, L: int | None = None,
          B: int | None = None, P: int | None = None, scale: float = 0.3) -> dict:
    """One step: H 2 or 4 with an H_kv that divides it, d_h 2 or 4, L 1 to 3, B 1 to 3, P 1 to 12, d_ffn 2d or 4d,
    V 8 to 32, S_max P + 1 to P + 4 (room for the token); weights ~ N(0, scale²), caches ~ N(0, 1)."""
    H = H or rng.choice([2, 4])
    H_kv = H_kv or rng.choice([h for h in (1, 2, 4) if H % h == 0 and h <= H])
    d_h = rng.choice([2, 4])
    L, B, P = L or rng.randint(1, 3), B or rng.randint(1, 3), P or rng.randint(1, 12)
    config = dict(L=L, H=H, H_kv=H_kv, d_h=d_h, d=H * d_h, d_ffn=rng.choice([2, 4]) * H * d_h, V=rng.randint(8, 32),
                  S_max=P + rng.randint(1, 4))
    return dict(params=weights_spec(config, rng, scale), config=config, k_cache=randn([L, B, H_kv, P, d_h], rng),
                v_cache=randn([L, B, H_kv, P, d_h], rng),
                token={"$long": [rng.randrange(config["V"]) for _ in range(B)]})


def _separates_gelu(case: dict) -> bool:
    """Whether the tanh GELU moves some logit of `case` by more than twice the check's tolerance."""
    exact = _decode_from_cache(**build_case(case))
    tanh = _decode_from_cache(**build_case(case), gelu="tanh")
    return bool(((exact - tanh).abs() > 2 * (TOL + TOL * exact.abs())).any())


def _gelu_case(rng: random.Random) -> dict:
    """A step with weights of scale 0.6 (MLP inputs near where the tanh GELU strays most), drawn until the tanh
    GELU moves a logit by twice the tolerance (`DRAWS` at most)."""
    for _ in range(DRAWS):
        case = _case(rng, scale=0.6)
        if _separates_gelu(case):
            return case
    raise RuntimeError(f"no case in {DRAWS:,} draws separates the exact GELU from its tanh approximation")


def _decode_cases(rng: random.Random) -> list[dict]:
    """The edges first (`DECODE_EDGES`: GQA with 1 < H_kv < H over 2 or 3 layers; a cache of one row; P >= 2 with
    B >= 2; weights where the tanh GELU strays), then three random steps."""
    cases = [_case(rng, H=4, H_kv=2, L=rng.randint(2, 3), B=rng.randint(2, 3)),
             _case(rng, P=1),
             _case(rng, B=rng.randint(2, 3), P=rng.randint(2, 12)),
             _gelu_case(rng)]
    return cases + [_case(rng) for _ in range(3)]


def _tanh_mlp(mlp: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return mlp.down(F.gelu(mlp.up(x), approximate="tanh"))


def _decode_from_cache(params: dict[str, torch.Tensor], config: dict[str, int], k_cache: torch.Tensor,
                       v_cache: torch.Tensor, token: torch.Tensor, gelu: str = "none") -> torch.Tensor:
    """The package's decode step: the MiniGPT of `params`, a KVCache holding the P given rows, one forward
    (`gelu="tanh"`: each MLP with the tanh GELU instead, the neighbour `_gelu_case` separates)."""
    with torch.random.fork_rng(devices=[]):  # the model's own initialisation, overwritten, draws from no shared RNG
        model = MiniGPT(ModelConfig.from_dict(config))
    model.load_state_dict(params)
    if gelu == "tanh":
        for block in model.blocks:
            block.mlp.forward = functools.partial(_tanh_mlp, block.mlp)
    P = k_cache.shape[3]
    cache = KVCache(model.config, token.shape[0])
    with torch.no_grad():  # in the body, not a decorator: mutmut mutates no decorated function (CONTRIBUTING)
        cache.k[:, :, :, :P], cache.v[:, :, :, :P] = k_cache, v_cache
        cache.advance(P)
        return model.eval()(token.view(-1, 1), cache, last_only=True)[:, -1]
