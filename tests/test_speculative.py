"""Speculative decoding: greedy speculation emits exactly the target's greedy tokens; speculative sampling
(the rejection rule of Leviathan et al. 2023 / Chen et al. 2023) emits tokens distributed as the target's.

Greedy, honestly: the verify pass multiplies γ + 1 rows where a decode step multiplies one, a different GEMM
shape, so the target's logits agree only to fp32 rounding (~1e-6). Tokens are compared; where they differ, the
test requires the plain path's top-two margin there to be below `NEAR_TIE` (a tie broken by rounding), and with
the random models below (weights of std 0.3, margins far above 1e-4) no difference is allowed at all.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from minigpt import MiniGPT, ModelConfig, costs, generate, load_pretrained
from minigpt.corpus.sentences import generate_sentences
from minigpt.runtime.speculative import (
    acceptance_probability,
    residual_distribution,
    speculative_generate,
)

NEAR_TIE = 1e-4


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def random_model(config: ModelConfig, seed: int, std: float) -> MiniGPT:
    """A random model with weights of std `std`: its logits are far apart (no near-ties) at std 0.3."""
    torch.manual_seed(seed)
    model = MiniGPT(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, std)
    return model


def greedy(model: MiniGPT, prompt: torch.Tensor, D: int) -> torch.Tensor:
    return torch.as_tensor(generate(model, prompt, D).tokens)


def assert_same_or_near_tie(model: MiniGPT, prompt: torch.Tensor, expected: torch.Tensor, got: torch.Tensor,
                            allow_ties: bool) -> int:
    """Tokens equal; a first difference only where the plain path's top-two margin is a near-tie. Returns ties."""
    ties = 0
    for b in range(prompt.shape[0]):
        diff = (expected[b] != got[b]).nonzero()
        if len(diff) == 0:
            continue
        t = int(diff[0])
        with torch.no_grad():
            logits = model(torch.cat([prompt[b], expected[b, :t]])[None])[0, -1]
        top2 = logits.topk(2).values
        margin = float(top2[0] - top2[1])
        assert allow_ties and margin < NEAR_TIE, f"sequence {b} differs at token {t} with margin {margin:.3g}"
        ties += 1
    return ties


@settings(max_examples=25, deadline=None)
@given(B=st.integers(1, 3), P=st.integers(1, 12), D=st.integers(1, 30), gamma=st.integers(1, 8),
       H_kv=st.sampled_from([1, 2]), seed=st.integers(0, 2**16))
def test_greedy_speculation_is_the_targets_greedy_output(B, P, D, gamma, H_kv, seed):
    target = random_model(ModelConfig(L=2, H=4, H_kv=H_kv, d_h=8, d_ffn=64, V=50, S_max=64), seed, 0.3)
    draft = random_model(ModelConfig(L=1, H=2, H_kv=2, d_h=8, d_ffn=32, V=50, S_max=64), seed + 1, 0.3)
    prompt = torch.randint(0, 50, (B, P), generator=torch.Generator().manual_seed(seed))
    expected = greedy(target, prompt, D)
    result = speculative_generate(target, draft, prompt, D, gamma=gamma)
    assert result.tokens.shape == (B, D)
    assert_same_or_near_tie(target, prompt, expected, result.tokens, allow_ties=False)
    assert result.target_passes == len(result.accepted) <= D
    assert sum(result.accepted) + result.target_passes >= D  # each pass emits its accepted drafts plus one


def test_the_target_as_its_own_draft_accepts_everything():
    target = random_model(ModelConfig(L=2, H=4, H_kv=4, d_h=8, d_ffn=64, V=50, S_max=64), 0, 0.3)
    prompt = torch.randint(0, 50, (2, 5), generator=torch.Generator().manual_seed(0))
    result = speculative_generate(target, target, prompt, 25, gamma=4)
    assert torch.equal(result.tokens, greedy(target, prompt, 25))
    assert result.alpha_counted == 1.0 and result.target_passes == 5  # 5 tokens per pass: γ + 1


def test_shipped_models_on_corpus_prompts():
    target, draft = load_pretrained().model, load_pretrained(name="minigpt-draft").model
    tok = load_pretrained().tokenizer
    sentences = generate_sentences(24, seed=7)
    ties = 0
    for i, sentence in enumerate(sentences):
        words = sentence.split()
        prompt = torch.tensor([tok.encode(" ".join(words[: 2 + i % 4]))])
        expected = greedy(target, prompt, 30)
        result = speculative_generate(target, draft, prompt, 30, gamma=1 + i % 6)
        ties += assert_same_or_near_tie(target, prompt, expected, result.tokens, allow_ties=True)
    assert ties <= 2, f"{ties} near-ties of 24 prompts: more than rounding explains"


# ---- speculative sampling keeps the target's distribution ----

DELTA = 1e-3  # the false-alarm rate of the bound below


def tv_threshold(p: torch.Tensor, N: int, delta: float = DELTA) -> float:
    """A TV distance that N samples of p exceed with probability ≤ delta: E[TV] ≤ ½·Σ √(p(1−p)/N) (Jensen), and
    TV moves by ≤ 1/N when one sample changes, so McDiarmid adds √(ln(1/delta)/(2N))."""
    return 0.5 * float((p * (1 - p) / N).sqrt().sum()) + math.sqrt(math.log(1 / delta) / (2 * N))


def two_token_distribution(model: MiniGPT, prompt: torch.Tensor, temperature: float) -> torch.Tensor:
    """Exact p(x1, x2 | prompt) `[V, V]` at `temperature`, by one forward per first token."""
    V = model.config.V
    with torch.no_grad():
        seqs = torch.cat([prompt.expand(V, -1), torch.arange(V)[:, None]], dim=1)  # [V, P+1]
        logits = model(seqs) / temperature
    first = torch.softmax(logits[0, -2], -1)  # p(x1)
    second = torch.softmax(logits[:, -1], -1)  # p(x2 | x1)
    return first[:, None] * second


def empirical(tokens: torch.Tensor, V: int) -> torch.Tensor:
    counts = torch.bincount(tokens[:, 0] * V + tokens[:, 1], minlength=V * V).float()
    return (counts / counts.sum()).view(V, V)


TINY = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=5, S_max=16)


@pytest.mark.parametrize("gamma,temperature,batched", [(3, 1.0, True), (1, 1.0, True), (4, 0.7, True),
                                                       (3, 1.0, False)])
def test_speculative_sampling_keeps_the_targets_distribution(gamma, temperature, batched):
    """TV(empirical, exact target) below the δ = 1e-3 bound over V² = 25 two-token outcomes; the draft's own
    distribution is farther than the bound (the test would catch a sampler that returned the draft's tokens)."""
    target, draft = random_model(TINY, 1, 1.0), random_model(TINY, 2, 1.0)
    prompt = torch.tensor([[1, 3, 0]])
    exact = two_token_distribution(target, prompt, temperature)
    gen = torch.Generator().manual_seed(1234)
    if batched:  # one batch of N identical prompts: the B > 1 path (one rewind for the batch)
        N = 20_000
        tokens = speculative_generate(target, draft, prompt.expand(N, -1), 2, gamma=gamma,
                                      temperature=temperature, generator=gen).tokens
    else:  # N separate B = 1 runs: the rounds accept deep into γ
        N = 1_500
        tokens = torch.cat([speculative_generate(target, draft, prompt, 2, gamma=gamma, temperature=temperature,
                                                 generator=gen).tokens for _ in range(N)])
    tv = 0.5 * float((empirical(tokens, TINY.V) - exact).abs().sum())
    bound = tv_threshold(exact.flatten(), N)
    assert tv < bound, f"TV {tv:.4f} from the target's distribution exceeds the δ={DELTA} bound {bound:.4f}"
    off = 0.5 * float((two_token_distribution(draft, prompt, temperature) - exact).abs().sum())
    assert off > 3 * bound, f"the draft is too close to the target ({off:.3f}) for this test to have power"


def test_a_sampler_that_skips_the_rejection_rule_fails_the_bound():
    """The draft's own samples (what speculation without the rejection rule would emit) fail the same test."""
    target, draft = random_model(TINY, 1, 1.0), random_model(TINY, 2, 1.0)
    prompt = torch.tensor([[1, 3, 0]])
    N = 20_000
    samples = generate(draft, prompt.expand(N, -1), 2, temperature=1.0, seed=5).tokens
    tv = 0.5 * float((empirical(torch.as_tensor(samples), TINY.V) - two_token_distribution(target, prompt, 1.0))
                     .abs().sum())
    assert tv > tv_threshold(two_token_distribution(target, prompt, 1.0).flatten(), N)


def test_acceptance_matches_the_formula_for_a_copy_of_the_target():
    assert costs.speculative_tokens_per_pass(alpha=1.0, gamma=4) == 5
    assert costs.speculative_tokens_per_pass(alpha=0.0, gamma=4) == 1
    assert costs.speculative_speedup(alpha=0.8, gamma=4, cost_ratio=0.05) == pytest.approx(3.3616 / 1.2)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.6, 0.8, 0.9, 0.97, 0.999])
@pytest.mark.parametrize("c,v", [(0.01, 1.0), (0.114, 1.0), (0.28, 1.44), (0.5, 1.2), (1.0, 1.0)])
def test_best_gamma_is_the_argmax_and_the_speedup_is_unimodal(alpha, c, v):
    gains = [costs.speculative_speedup(alpha=alpha, gamma=g, cost_ratio=c, verify_ratio=v) for g in range(1, 33)]
    best = costs.speculative_best_gamma(alpha=alpha, cost_ratio=c, verify_ratio=v, gamma_max=32)
    assert gains[best - 1] == max(gains)
    peak = next((g for g in range(1, 32) if gains[g] <= gains[g - 1]), 32)  # the first γ the next one does not beat
    assert best == peak, "Eq. (17.2) is not unimodal in γ here, or the search missed its peak"
    assert all(a < b for a, b in zip(gains[: best - 1], gains[1:best], strict=True))
    assert all(a >= b for a, b in zip(gains[best - 1 :], gains[best:], strict=False))


def test_best_gamma_on_known_cases():
    assert costs.speculative_best_gamma(alpha=0.0, cost_ratio=0.1) == 1  # nothing accepted: fewest drafts
    assert costs.speculative_best_gamma(alpha=1.0, cost_ratio=0.1, gamma_max=12) == 12  # (γ+1)/(γc+1) grows
    assert costs.speculative_best_gamma(alpha=1.0, cost_ratio=0.5, verify_ratio=0.2) == 1  # v < c: it shrinks
    assert costs.speculative_best_gamma(alpha=1.0, cost_ratio=0.25, verify_ratio=0.25) == 1  # a tie: fewest
    # Llama-3-8B drafting for Llama-3-70B (c = 0.114): the chapter's "best γ" at α = 0.5, 0.7, 0.9
    assert [costs.speculative_best_gamma(alpha=a, cost_ratio=8.03 / 70.6, gamma_max=10) for a in (0.5, 0.7, 0.9)] \
        == [2, 4, 9]
    for bad, match in [(dict(gamma_max=0), "gamma_max must be an integer >= 1"),
                       (dict(gamma_max=1025), r"gamma_max must be an integer in \[1, 1024\]"),
                       (dict(cost_ratio=0.0), "cost_ratio must be a finite number > 0"),
                       (dict(alpha=1.5), "alpha must be a number in")]:
        with pytest.raises(ValueError, match=match):
            costs.speculative_best_gamma(**(dict(alpha=0.8, cost_ratio=0.1) | bad))


def test_rejection_rule_parts():
    g = torch.Generator().manual_seed(0)
    p, q = torch.softmax(torch.randn(3, 9, generator=g), -1), torch.softmax(torch.randn(3, 9, generator=g), -1)
    r = residual_distribution(p, q)
    expected = (p - q).clamp_min(0)
    assert torch.allclose(r, expected / expected.sum(-1, keepdim=True))
    assert torch.allclose(r.sum(-1), torch.ones(3)) and (r[p <= q] == 0).all()
    assert torch.equal(residual_distribution(p, p), p)  # the draft is the target: never rejected, so p
    a = acceptance_probability(p[0], q[0])
    assert torch.allclose(a, torch.minimum(torch.ones(9), p[0] / q[0])) and (a[p[0] >= q[0]] == 1).all()
    # accepting x with min(1, p/q), else drawing from the residual, gives p: q·min(1, p/q) + (1 − β)·r = p
    beta = torch.minimum(p, q).sum(-1, keepdim=True)
    assert torch.allclose(q * acceptance_probability(p, q) + (1 - beta) * r, p, atol=1e-6)


@pytest.mark.parametrize("kwargs,match", [
    (dict(D=0), "D must be an integer >= 1"), (dict(gamma=0), "gamma must be an integer >= 1"),
    (dict(temperature=-1.0), "temperature must be"), (dict(D=200), "exceed S_max"),
])
def test_bad_requests_are_named(kwargs, match):
    target, draft = random_model(TINY, 1, 1.0), random_model(TINY, 2, 1.0)
    args = dict(D=2, gamma=2) | kwargs
    with pytest.raises(ValueError, match=match):
        speculative_generate(target, draft, torch.tensor([[1, 2]]), args.pop("D"), **args)
    with pytest.raises(ValueError, match="share the vocabulary"):
        speculative_generate(target, random_model(ModelConfig(L=1, H=2, H_kv=2, d_h=4, V=7, S_max=16), 0, 1.0),
                             torch.tensor([[1]]), 2)
