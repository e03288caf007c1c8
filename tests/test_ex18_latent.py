"""Exercise 18 Question 1 (`minigpt.exercises.ex18_latent`): one decode step of DeepSeek's latent attention with
its decoupled RoPE key, through the absorbed weights. The oracle is the naive path written in the module. Here:
the oracle is Hugging Face transformers' `DeepseekV3Attention` (the last position of a causal forward, with the
latents, the rotated RoPE keys and the weights read out of the module), with DeepSeek's interleaved pairs and, as
the named neighbour, GPT-NeoX's halves; with d_rope = 0 it is the package's `LatentAttention`, naive path; a
case worked by hand; the reference solution passes. (The named wrong answers, written apart, lose under every
seed in `tests/test_seed_independence_ex14_18.py`; the reference solution's mutants fail in
`tests/test_exercise_mechanisms.py`, MUTANTS; the generator's ranges are pinned in `tests/test_case_generators.py`;
the method check's thresholds in `tests/test_exercise_messages.py`.)"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import torch

from minigpt.config import ModelConfig
from minigpt.exercises import run_check
from minigpt.exercises.ex18_latent import _mla_decode, rotate
from minigpt.runtime.mla import LatentAttention, LatentCache

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "exercises" / "solutions" / "ex18_cache_frontier.py"


def _deepseek_step(H: int, d_h: int, d_c: int, d_rope: int, S: int, theta: float, interleave: bool,
                   seed: int) -> tuple[torch.Tensor, dict]:
    """A tiny `DeepseekV3Attention` (no query latent, q_lora_rank=None) run over S hidden states with the causal
    mask, in float64: its output at the last position, and the question's inputs read out of the module (the
    latents after `kv_a_layernorm`, the RoPE keys as the module rotated them, put back in DeepSeek's interleaved
    order where `rope_interleave` stored them as halves, and the weights)."""
    deepseek = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
    from transformers import DeepseekV3Config

    d = H * d_h
    config = DeepseekV3Config(vocab_size=8, hidden_size=d, intermediate_size=8, num_hidden_layers=1,
                              num_attention_heads=H, num_key_value_heads=H, q_lora_rank=None, kv_lora_rank=d_c,
                              qk_rope_head_dim=d_rope, qk_nope_head_dim=d_h, v_head_dim=d_h, attention_bias=False,
                              rope_interleave=interleave, max_position_embeddings=64,
                              rope_parameters={"rope_type": "default", "rope_theta": theta})
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    attn = deepseek.DeepseekV3Attention(config, layer_idx=0).double().eval()
    with torch.no_grad():
        attn.kv_a_layernorm.weight.uniform_(0.5, 1.5)  # not all ones: the latent read after the norm
        hidden = torch.randn(1, S, d, dtype=torch.float64)
        cos, sin = deepseek.DeepseekV3RotaryEmbedding(config)(hidden, torch.arange(S)[None])
        mask = torch.full((S, S), float("-inf"), dtype=torch.float64).triu(1)[None, None]
        out = attn(hidden, (cos, sin), mask)[0][0, -1]
        kv_nope, k_pe = attn.kv_a_proj_with_mqa(hidden[0]).split([d_c, d_rope], dim=-1)
        c = attn.kv_a_layernorm(kv_nope)
        k_pe = k_pe.view(1, 1, S, d_rope)
        rope = deepseek.apply_rotary_pos_emb_interleave if interleave else deepseek.apply_rotary_pos_emb
        k_rope = rope(k_pe, k_pe, cos, sin)[1][0, 0]
        if interleave:  # stored as [evens rotated, odds rotated]: back to the pairs (2i, 2i + 1)
            k_rope = torch.stack([k_rope[:, : d_rope // 2], k_rope[:, d_rope // 2:]], dim=-1).flatten(1)
        w_q, w_qr = attn.q_proj.weight.view(H, d_h + d_rope, d).split([d_h, d_rope], dim=1)
        w_uk, w_uv = attn.kv_b_proj.weight.view(H, 2 * d_h, d_c).split([d_h, d_h], dim=1)
    args = dict(x=hidden[0, -1], c=c, k_rope=k_rope, w_q=w_q.reshape(d, d), w_qr=w_qr.reshape(H * d_rope, d),
                w_uk=w_uk, w_uv=w_uv, w_o=attn.o_proj.weight.detach(), theta=theta)
    return out, {k: v.detach().clone() if isinstance(v, torch.Tensor) else v for k, v in args.items()}


@pytest.mark.parametrize("interleave", [True, False])
def test_the_oracle_is_hugging_faces_deepseek_v3_attention(interleave: bool) -> None:
    """`DeepseekV3Attention`'s output for the last of S tokens is the oracle's on the latents, RoPE keys and
    weights read out of it: DeepSeek's interleaved pairs (`rope_interleave=True`, the question's convention) are
    the oracle, GPT-NeoX's halves (`rope_interleave=False`) its named neighbour, and each is told from the other.
    Catches an oracle that rotates the query at another position, pairs the other way, rotates the cached keys
    again, scales by another width or leaves W_UK, W_UV or the RoPE key out."""
    rng = random.Random(5)
    for _ in range(4):
        H, d_h, d_c = rng.choice([1, 2, 4]), rng.choice([2, 4, 8]), rng.choice([2, 3, 5, 8])
        d_rope, S, theta = rng.choice([4, 6, 8]), rng.randint(2, 9), rng.choice([10.0, 100.0, 10000.0])
        out, args = _deepseek_step(H, d_h, d_c, d_rope, S, theta, interleave, rng.randrange(2**31))
        right = _mla_decode(**args, wrong=None if interleave else "halves")
        other = _mla_decode(**args, wrong="halves" if interleave else None)
        assert right.dtype == torch.float64
        torch.testing.assert_close(right, out, atol=1e-6, rtol=1e-6)
        assert not torch.allclose(other, out, atol=1e-3, rtol=1e-3)


@torch.no_grad()
def _package_naive(x: torch.Tensor, c: torch.Tensor, w_q: torch.Tensor, w_uk: torch.Tensor, w_uv: torch.Tensor,
                   w_o: torch.Tensor) -> torch.Tensor:
    """The package's naive decode step (`LatentAttention`, path "naive"): the last latent c[-1] is the query
    token's own (its down-projection is the rank-one map x ↦ c[-1], so the layer writes exactly c[-1] into the
    cache), the S - 1 before it are already cached."""
    H, d_h, d_c = w_uk.shape
    S = c.shape[0]
    config = ModelConfig(L=1, H=H, H_kv=H, d_h=d_h, d_ffn=1, V=1, S_max=S)
    attn = LatentAttention(config, 0, d_c)
    attn.q.weight.copy_(w_q)
    attn.q.bias.zero_()
    attn.up.weight.copy_(torch.cat([w_uk.reshape(H * d_h, d_c), w_uv.reshape(H * d_h, d_c)]))
    attn.out.weight.copy_(w_o)
    attn.out.bias.zero_()
    attn.down.weight.copy_(torch.outer(c[-1], x) / (x @ x))
    cache = LatentCache(config, d_c, 1, S_max=S)
    cache.c[0, 0, : S - 1] = c[:-1]
    cache.advance(S - 1)
    attn.path = "naive"
    return attn(x.view(1, 1, -1), cache, S=S - 1)[0, 0]


def test_without_rope_the_oracle_is_the_packages_naive_path() -> None:
    """With d_rope = 0 (no RoPE key, no RoPE query) the oracle is Chapter 21's `LatentAttention` on the naive path,
    the scores scaled by 1/√d_h. Catches the oracle's latent part drifting from the package's (W_UK and W_UV
    swapped, heads laid out otherwise, another scale)."""
    rng = random.Random(7)
    for _ in range(6):
        H, d_h, d_c, S = rng.choice([1, 2, 4]), rng.choice([2, 4, 8]), rng.choice([3, 5, 8]), rng.randint(1, 12)
        d = H * d_h
        x, c = torch.randn(d), torch.randn(S, d_c)
        w_q, w_o = 0.5 * torch.randn(d, d), 0.5 * torch.randn(d, d)
        w_uk, w_uv = 0.5 * torch.randn(H, d_h, d_c), 0.5 * torch.randn(H, d_h, d_c)
        oracle = _mla_decode(x, c, torch.zeros(S, 0), w_q, torch.zeros(0, d), w_uk, w_uv, w_o, theta=10000.0)
        torch.testing.assert_close(oracle, _package_naive(x, c, w_q, w_uk, w_uv, w_o), atol=1e-5, rtol=1e-5)


def test_a_step_worked_by_hand() -> None:
    """H = 1, d_h = d_c = 1, d_rope = 2, S = 2, every weight 1 and w_qr = [1, 0]ᵀ: the query's RoPE part is [1, 0]
    at position S − 1 = 1, turned by 1 rad (θ_0 = 1 whatever theta) to [cos 1, sin 1]. The latents 0 and 1 give
    the latent scores 0 and 1; the RoPE keys [1, 0] and [0, 1] add cos 1 and sin 1. Divided by √(1 + 2), the
    softmax puts σ((1 + sin 1 − cos 1)/√3) on the second latent, 1, and the output is that weight. Not rotated,
    the score gap is (1 − 1)/√3 = 0 and the weight ½; rotated at S = 2, (1 + sin 2 − cos 2)/√3; divided by √d_h,
    (1 + sin 1 − cos 1)/1."""
    one = torch.ones(1, 1)
    args = dict(x=torch.ones(1), c=torch.tensor([[0.0], [1.0]]), k_rope=torch.eye(2), w_q=one,
                w_qr=torch.tensor([[1.0], [0.0]]), w_uk=one.view(1, 1, 1), w_uv=one.view(1, 1, 1), w_o=one,
                theta=10000.0)

    def sigmoid(z: float) -> float:
        return 1 / (1 + math.exp(-z))

    expected = sigmoid((1 + math.sin(1) - math.cos(1)) / math.sqrt(3))
    assert _mla_decode(**args).item() == pytest.approx(expected, rel=1e-6)
    assert _mla_decode(**args, wrong="unrotated").item() == pytest.approx(0.5, rel=1e-6)
    assert _mla_decode(**args, wrong="at S").item() == pytest.approx(
        sigmoid((1 + math.sin(2) - math.cos(2)) / math.sqrt(3)), rel=1e-6)
    assert _mla_decode(**args, wrong="scale d_h").item() == pytest.approx(
        sigmoid(1 + math.sin(1) - math.cos(1)), rel=1e-6)
    namespace: dict = {}
    exec(compile(SOLUTION.read_text(encoding="utf-8"), str(SOLUTION), "exec"), namespace)  # noqa: S102
    assert namespace["absorbed_decode"](**args).item() == pytest.approx(expected, rel=1e-6)


def test_the_two_pairings_and_their_frequencies() -> None:
    """`rotate`: at d_rope = 2 the two pairings are one rotation by p·θ_0 = p rad; at d_rope = 4 the interleaved
    pairs (0, 1), (2, 3) and the halves (0, 2), (1, 3) are the same rotation with the entries permuted, θ_1 =
    theta^(−1/2); a rotation keeps the norm. Catches a frequency over d_h or without the 2, a sign turned."""
    v = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(rotate(v, torch.tensor([2]), 100.0),
                               torch.tensor([[math.cos(2), math.sin(2)]], dtype=torch.float64))
    torch.testing.assert_close(rotate(v, torch.tensor([2]), 100.0, "halves"), rotate(v, torch.tensor([2]), 100.0))
    w = torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64)
    inter = rotate(w, torch.tensor([3]), 100.0)
    halves = rotate(w[:, [0, 2, 1, 3]], torch.tensor([3]), 100.0, "halves")[:, [0, 2, 1, 3]]
    torch.testing.assert_close(inter, halves)
    a = 3 / 10.0  # theta^(-2·1/4) = 100^(-1/2)
    torch.testing.assert_close(inter[0, 2:], torch.tensor([3 * math.cos(a) - 4 * math.sin(a),
                                                           3 * math.sin(a) + 4 * math.cos(a)], dtype=torch.float64))
    torch.testing.assert_close(inter.norm(), w.norm())


def test_the_reference_solution_passes() -> None:
    namespace: dict = {}
    exec(compile(SOLUTION.read_text(encoding="utf-8"), str(SOLUTION), "exec"), namespace)  # noqa: S102
    for seed in (0, 1):
        assert run_check("ex18.q1", namespace["absorbed_decode"], seed=seed).status == "pass"


def test_a_decompression_one_token_at_a_time_is_measured() -> None:
    """The method check sees keys and values rebuilt one token at a time, `w_uk[h] @ c[j]` (matrix-vector
    products, which torch's FLOP counter leaves at 0, and no [S, H·d_h] tensor): `work.VECTOR_PRODUCTS` counts
    them, so the sized case flags the answer. The bug it guards: that loop measured 0 FLOPs and passed."""
    from minigpt.exercises.ex18_latent import _decompressed, _latent_cases
    from minigpt.exercises.spec import build_case
    from minigpt.exercises.work import measured

    case = _latent_cases(random.Random(0))[0]  # the case sized for the method check
    args = build_case(case)

    def rebuilt_token_by_token(x, c, k_rope, w_q, w_qr, w_uk, w_uv, w_o, theta):
        for h in range(w_uk.shape[0]):
            for j in range(c.shape[0]):
                w_uk[h] @ c[j], w_uv[h] @ c[j]  # noqa: B018 - the work is the point
        return torch.zeros(x.shape)

    _, work = measured(rebuilt_token_by_token, args)
    S, d_c = args["c"].shape
    H, d_h, _ = args["w_uk"].shape
    assert work["flops"] == 2 * 2 * S * d_c * H * d_h and work["largest"] < S * H * d_h, work
    assert _decompressed(case, work) is not None
