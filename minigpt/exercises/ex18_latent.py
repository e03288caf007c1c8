"""Exercise 18, Question 1: one decode step of DeepSeek's multi-head latent attention, decoupled RoPE key included,
through the absorbed weights.

Chapter 21 folds W_UK into the query and W_UV into the output, q_h·(W_UK[h]·c) = (W_UK[h]ᵀ·q_h)·c, and says in
prose what MiniGPT leaves out: with rotary embeddings the rotation sits between the query and W_UK, so DeepSeek
caches beside each latent c (d_c values, no position) one RoPE key k^R (d_rope values, shared by all heads,
rotated at its own position: the d_rope of Eq. (2.5)), and each head's query has a part with no position,
absorbed through W_UK, and a RoPE part rotated at the query's position. The score of head h for the key at j is
(q_h·W_UK[h]·c_j + R(S − 1)·q^R_h · k^R_j) / √(d_h + d_rope) (DeepSeek's qk_head_dim). The new token's own c and
k^R are the last rows of the cache; it sits at position S − 1. The rotation is DeepSeek's: pairs (2i, 2i + 1)
turned by the angle p·θ_i, θ_i = theta^(−2i/d_rope) (`rotate`).

The oracle (`_mla_decode`) is the naive path: each head's keys [W_UK[h]·c ; k^R] and values W_UV[h]·c rebuilt,
the query's RoPE part rotated, ordinary attention. `tests/test_ex18_latent.py` checks it against Hugging Face
transformers' `DeepseekV3Attention` (both pairings: `rope_interleave` on and off) and, with d_rope = 0, against the
package's `LatentAttention` naive path. The case generator draws each edge case until its wrong neighbour
(`LATENT_EDGES`, replayed here with `wrong=`) moves the output by twice the check's tolerance; the neighbours are
written apart in `tests/test_seed_independence_ex14_18.py`. The method (`_decompressed`): an answer that rebuilds
the keys makes an [S, H·d_h] tensor and spends 2·S·d_c·H·d_h FLOPs, which the first case is sized to tell.
"""

from __future__ import annotations

import math
import random

import torch

from minigpt.exercises.spec import N_, build_case, randn

#: The edges, case i is edge i under every seed: first the case sized for the method check, then one case per
#: value neighbour (`_NEIGHBOURS`, same order), each drawn until that neighbour moves the output.
LATENT_EDGES = (
    "the first case, measured (H = 2, d_h = 32, d_c = 4, d_rope = 4, S from 600 to 700): the naive path, keys and "
    "values decompressed from the latents",
    "S >= 2: the query's RoPE part not rotated (or rotated at position 0)",
    "the query's RoPE part rotated at position S (one past the new token's S - 1)",
    "d_rope >= 4: the pairs read as GPT-NeoX's halves (rotate_half: i with i + d_rope/2), not interleaved "
    "(2i with 2i + 1)",
    "the query's RoPE part rotated backwards (by -(S - 1)·θ_i)",
    "the cached RoPE keys rotated again at their positions",
    "scores scaled by 1/√d_h (the latent part's head width) instead of 1/√(d_h + d_rope)",
    "scores scaled by 1/√d_c (the latent's width) instead of 1/√(d_h + d_rope)",
    "the RoPE key ignored: the scores of the latent part alone",
    "the RoPE scores added after the softmax, to its weights",
)
_NEIGHBOURS = ("unrotated", "at S", "halves", "backwards", "rotated again", "scale d_h", "scale d_c",
               "rope ignored", "after softmax")
TOL = 1e-4  # the check's atol and rtol
#: Draws allowed for one edge before the generator gives up (over 20 seeds none took more than three).
DRAWS = 100


def rotate(v: torch.Tensor, positions: torch.Tensor, theta: float, pairing: str = "interleaved") -> torch.Tensor:
    """RoPE: each row v[n] `[..., d_rope]` rotated at `positions[n]`, pair i turned by positions[n]·θ_i with
    θ_i = theta^(−2i/d_rope). "interleaved" (DeepSeek's; Hugging Face's `rope_interleave`, which stores the result
    as halves) pairs 2i with 2i + 1; "halves" (GPT-NeoX's rotate_half) pairs i with i + d_rope/2."""
    d_rope = v.shape[-1]
    freqs = theta ** (-2 * torch.arange(d_rope // 2, dtype=torch.float64) / d_rope)
    angle = positions.to(torch.float64)[..., None] * freqs
    cos, sin = angle.cos().to(v.dtype), angle.sin().to(v.dtype)
    if pairing == "interleaved":
        a, b = v[..., 0::2], v[..., 1::2]
        return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
    if pairing == "halves":
        a, b = v[..., : d_rope // 2], v[..., d_rope // 2:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    raise ValueError(f"pairing must be 'interleaved' or 'halves', got {pairing!r}")


def _softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis, written out: on a shared CPU with two torch threads, the case generator (some
    twenty oracle calls a seed) ran seven times slower with torch's own softmax (measured)."""
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


def _mla_decode(x: torch.Tensor, c: torch.Tensor, k_rope: torch.Tensor, w_q: torch.Tensor, w_qr: torch.Tensor,
                w_uk: torch.Tensor, w_uv: torch.Tensor, w_o: torch.Tensor, theta: float,
                wrong: str | None = None) -> torch.Tensor:
    """The naive decode step, in float64: keys [W_UK[h]·c ; k^R] and values W_UV[h]·c per head, the query's
    RoPE part rotated at S − 1, softmax over the S keys scaled by 1/√(d_h + d_rope); `[d]` in x's dtype. `wrong`
    names a neighbour of `_NEIGHBOURS` to replay instead (the generator's check that an edge separates it)."""
    with torch.no_grad():  # in the body, not a decorator: mutmut mutates no decorated function (CONTRIBUTING)
        H, d_h, d_c = w_uk.shape
        S, d_rope = k_rope.shape
        dtype = x.dtype
        x, c, k_rope, w_q, w_qr, w_uk, w_uv, w_o = (t.double() for t in (x, c, k_rope, w_q, w_qr, w_uk, w_uv, w_o))
        keys = torch.einsum("hkc,sc->hsk", w_uk, c)  # [H, S, d_h]: decompressed
        values = torch.einsum("hkc,sc->hsk", w_uv, c)
        if wrong == "rotated again":
            k_rope = rotate(k_rope, torch.arange(S), theta)
        keys = torch.cat([keys, k_rope.expand(H, S, d_rope)], dim=-1)  # [H, S, d_h + d_rope]
        position = {"unrotated": 0, "at S": S, "backwards": -(S - 1)}.get(wrong or "", S - 1)
        q_rope = rotate((w_qr @ x).view(H, d_rope), torch.full((H,), position), theta,
                        "halves" if wrong == "halves" else "interleaved")
        query = torch.cat([(w_q @ x).view(H, d_h), q_rope], dim=-1)  # [H, d_h + d_rope]
        scale = math.sqrt({"scale d_h": d_h, "scale d_c": d_c}.get(wrong or "", d_h + d_rope))
        nope = torch.einsum("hk,hsk->hs", query[:, :d_h], keys[..., :d_h]) / scale
        rope = torch.einsum("hk,hsk->hs", query[:, d_h:], keys[..., d_h:]) / scale
        if wrong == "rope ignored":
            weights = _softmax(nope)
        elif wrong == "after softmax":
            weights = _softmax(nope) + rope
        else:
            weights = _softmax(nope + rope)
        heads = torch.einsum("hs,hsk->hk", weights, values)  # [H, d_h]
        return (w_o @ heads.reshape(-1)).to(dtype)


def _case(rng: random.Random, sized: bool = False) -> dict:
    """One step: H in {1, 2, 4}, d_h in {2, 4, 8}, d_c in {2, 3, 5, 6, 8, 12}, d_rope in {2, 4, 6, 8}, S from 2 to
    12, theta in {10, 100, 1000, 10000}; or, `sized`, H = 2, d_h = 32, d_c = 4, d_rope = 4, S from 600 to 700.
    Weights ~ N(0, 0.5²), x, the latents and the RoPE keys ~ N(0, 1)."""
    if sized:
        H, d_h, d_c, d_rope, S = 2, 32, 4, 4, rng.randint(600, 700)
    else:
        H, d_h, d_c = rng.choice([1, 2, 4]), rng.choice([2, 4, 8]), rng.choice([2, 3, 5, 6, 8, 12])
        d_rope, S = rng.choice([2, 4, 6, 8]), rng.randint(2, 12)
    d = H * d_h
    return dict(x=randn([d], rng), c=randn([S, d_c], rng), k_rope=randn([S, d_rope], rng),
                w_q=randn([d, d], rng, 0.5), w_qr=randn([H * d_rope, d], rng, 0.5),
                w_uk=randn([H, d_h, d_c], rng, 0.5), w_uv=randn([H, d_h, d_c], rng, 0.5),
                w_o=randn([d, d], rng, 0.5), theta=rng.choice([10.0, 100.0, 1000.0, 10000.0]))


def _separates(case: dict, wrong: str) -> bool:
    """Whether the neighbour `wrong` moves some output element of `case` by more than twice the tolerance."""
    args = build_case(case)
    right, other = _mla_decode(**args), _mla_decode(**args, wrong=wrong)
    return bool(((right - other).abs() > 2 * (TOL + TOL * right.abs())).any())


def _latent_cases(rng: random.Random) -> list[dict]:
    """The case sized for the method check, then one case per value neighbour (`LATENT_EDGES`), each drawn until
    that neighbour moves the output (`DRAWS` at most), then two random steps."""
    cases = [_case(rng, sized=True)]
    for wrong in _NEIGHBOURS:
        for _ in range(DRAWS):
            case = _case(rng)
            if _separates(case, wrong):
                break
        else:
            raise RuntimeError(f"no case in {DRAWS:,} draws separates the decode step from {wrong!r}")
        cases.append(case)
    return cases + [_case(rng) for _ in range(2)]


def _decompressed(case: dict, work: dict[str, int]) -> str | None:
    """The method of ex18 Q1 (`minigpt.exercises.work`): rebuilding the keys, K = c·W_UKᵀ, makes an [S, H·d_h]
    tensor with 2·S·d_c·H·d_h FLOPs (and V as much again). The most an absorbed step spends, with both folded
    matrices built in the call, is 4·d² + 4·d_c·d² + 2·d·H·d_rope + 4·H·d_h·d_c + 2·H·S·(2·d_c + d_rope), and the
    largest tensor it needs is below d², S·(d_c + d_rope) and H·S·(d_c + d_rope). Where the rebuilt keys
    outweigh all of that (d_c + d_rope < d_h, the tensor above each of those sizes, its FLOPs above twice that
    step's), an answer that makes such a tensor or spends those FLOPs decompressed the latents; elsewhere the
    sizes say nothing and only the values count."""
    S, d_c = case["c"]["$randn"]
    d_rope = case["k_rope"]["$randn"][1]
    H, d_h, _ = case["w_uk"]["$randn"]
    d = H * d_h
    rebuilt, flops = S * H * d_h, 2 * S * d_c * H * d_h
    absorbed = 4 * d * d + 4 * d_c * d * d + 2 * d * H * d_rope + 4 * H * d_h * d_c + 2 * H * S * (2 * d_c + d_rope)
    if not (d_c + d_rope < d_h and rebuilt > max(d * d, S * (d_c + d_rope), H * S * (d_c + d_rope))
            and flops > 2 * absorbed):
        return None
    if work["largest"] >= rebuilt or work["flops"] >= flops:
        return N_("the keys or values were rebuilt from the latents (a tensor of S·H·d_h elements, or the FLOPs "
                  "of that product, was measured): the question asks for the absorbed path, which attends over "
                  "the latents themselves")
    return None
