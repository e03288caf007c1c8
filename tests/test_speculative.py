"""Speculative decoding: greedy speculation emits exactly the target's greedy tokens; speculative sampling
(the rejection rule of Leviathan et al. 2023 / Chen et al. 2023) emits tokens distributed as the target's.

Sampling, exactly: `ExactDraws` runs the real code once per path through its draws, so the output law of one
round (B = 1 and B = 2) and of whole runs is compared with the target's to float rounding; 14 mutants of the
rule (the bonus token from q, the residual wrong in four ways, the accept test reversed, the batch rule wrong in
three, greedy drafts with sampled q, a wrong rewind, no bonus token, a reversed coin) must each be rejected.

Greedy, honestly: the verify pass multiplies γ + 1 rows where a decode step multiplies one, a different GEMM
shape, so the target's logits agree only to fp32 rounding (~1e-6). Tokens are compared; where they differ, the
test requires the plain path's top-two margin there to be below `NEAR_TIE` (a tie broken by rounding), and with
the random models below (weights of std 0.3, margins far above 1e-4) no difference is allowed at all.
"""

from __future__ import annotations

import inspect
import itertools
import math
import textwrap
from dataclasses import replace
from unittest import mock

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import MiniGPT, ModelConfig, costs, generate, load_pretrained
from minigpt.corpus.sentences import generate_sentences
from minigpt.runtime import speculative as spec
from minigpt.runtime.exact_draws import ExactDraws
from minigpt.runtime.speculative import (
    accept_drafts,
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


@settings(max_examples=examples(25), deadline=None)
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


# ---- speculative sampling keeps the target's distribution: exactly, by enumerating every path ----
#
# `ExactDraws` runs the real `speculative_generate` once per path through its random draws (`_draw`, `_coin`
# answered along the path) and weighs each output by the path's probability: the output distribution of the
# code as written, with no sampling noise. The models are real MiniGPTs with V = 3; the draft is the target
# with its weights perturbed, close enough that rounds accept deep into γ (α ≈ 0.8 below) and the bonus token
# is emitted on many paths, far enough that a rule that mixes up p and q moves the distribution by > 1e-3.

EXACT_ATOL = 1e-5  # float32 softmax rounding, summed over a few hundred paths, stays below 1e-6 (seen: 3e-8)
SMALL = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=3, S_max=16)
TINY = replace(SMALL, V=5)


def close_pair(config: ModelConfig = SMALL, seed: int = 3, noise: float = 0.3) -> tuple[MiniGPT, MiniGPT]:
    """A target with weights of std 0.4 (its next-token laws spread, e.g. 0.19/0.62/0.19 after PROMPT_1) and a
    draft whose weights are the target's plus N(0, noise²): α ≈ 0.8."""
    target = random_model(config, seed, 0.4)
    draft = MiniGPT(config).eval()
    draft.load_state_dict(target.state_dict())
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for w in draft.parameters():
            w.add_(noise * torch.randn(w.shape, generator=g))
    return target, draft


def conditionals(model: MiniGPT, prompt: torch.Tensor, k: int, temperature: float) -> dict[tuple, torch.Tensor]:
    """softmax(logits/T) after every continuation of `prompt` `[P]` by 0..k-1 tokens, keyed by the continuation."""
    V, out = model.config.V, {}
    for length in range(k):
        conts = list(itertools.product(range(V), repeat=length))
        seqs = torch.cat([prompt.expand(len(conts), -1), torch.tensor(conts, dtype=torch.long).view(len(conts),
                                                                                                  length)], 1)
        with torch.no_grad():
            probs = torch.softmax(model(seqs)[:, -1].double() / temperature, -1)
        out.update(zip(conts, probs, strict=True))
    return out


def sequence_distribution(model: MiniGPT, prompt: torch.Tensor, k: int, temperature: float) -> dict[tuple, float]:
    """The model's exact p(x_1..x_k | prompt) for every k-token continuation (the chain rule over `conditionals`)."""
    cond = conditionals(model, prompt, k, temperature)
    return {seq: math.prod(float(cond[seq[:i]][x]) for i, x in enumerate(seq))
            for seq in itertools.product(range(model.config.V), repeat=k)}


class _RoundDone(Exception):
    def __init__(self, emitted: torch.Tensor, n: int) -> None:
        self.emitted, self.n = emitted, n


def one_round_outcomes(target: MiniGPT, draft: MiniGPT, prompt: torch.Tensor, gamma: int,
                       temperature: float) -> list[tuple[tuple[torch.Tensor, int], float]]:
    """Every outcome of one speculative round from `prompt` `[B, P]`: (tokens emitted `[B, n+1]`, n) and its
    probability. Runs `speculative_generate` (whichever `accept_drafts` the module holds) and stops it after the
    first round's rejection rule."""
    rule = spec.accept_drafts

    def stop_after_the_rule(p, q, drafts, greedy, generator=None, result=None):
        n, nxt = rule(p, q, drafts, greedy, generator, result)
        raise _RoundDone(torch.cat([*drafts[:n], nxt], dim=1), n)

    def one_round():
        try:
            spec.speculative_generate(target, draft, prompt, gamma + 1, gamma=gamma, temperature=temperature)
        except _RoundDone as done:
            return done.emitted, done.n
        raise AssertionError("the round ended without the rejection rule")

    exact = ExactDraws()
    with mock.patch.object(spec, "accept_drafts", stop_after_the_rule), \
            mock.patch.object(spec, "_draw", exact.draw), mock.patch.object(spec, "_coin", exact.coin):
        return exact.run(one_round)


def round_error(target: MiniGPT, draft: MiniGPT, prompt: torch.Tensor, gamma: int, temperature: float = 1.0
                ) -> float:
    """Max |P(sequence) − p_target(sequence)| over the joint γ+1-token continuations of the B prompts, where a
    round's output is continued by the target's exact conditionals (a correct round leaves p unchanged)."""
    B, k = prompt.shape[0], gamma + 1
    conds = [conditionals(target, prompt[b], k, temperature) for b in range(B)]
    got: dict[tuple, float] = {}
    for (emitted, _), weight in one_round_outcomes(target, draft, prompt, gamma, temperature):
        m = emitted.shape[1]
        rows = [tuple(emitted[b].tolist()) for b in range(B)]
        for rests in itertools.product(itertools.product(range(target.config.V), repeat=k - m), repeat=B):
            w = weight
            for b in range(B):
                for i, x in enumerate(rests[b]):
                    w *= float(conds[b][rows[b] + rests[b][:i]][x])
            key = tuple(rows[b] + rests[b] for b in range(B))
            got[key] = got.get(key, 0.0) + w
    want = [sequence_distribution(target, prompt[b], k, temperature) for b in range(B)]
    return max(abs(got.get(key, 0.0) - math.prod(want[b][key[b]] for b in range(B)))
               for key in itertools.product(*[list(w) for w in want]))


def accepted_error(target: MiniGPT, draft: MiniGPT, prompt: torch.Tensor, gamma: int,
                   temperature: float = 1.0) -> float:
    """Max |P(n ≥ j) − Σ_{x_1..x_j} Π_i min(p, q)(x_i)| over j (B = 1): the chance that the first j drafts are all
    accepted is the sum over draft prefixes of Π min(p, q), Leviathan et al.'s β chained along the prefix."""
    cp = conditionals(target, prompt[0], gamma, temperature)
    cq = conditionals(draft, prompt[0], gamma, temperature)
    outcomes = one_round_outcomes(target, draft, prompt, gamma, temperature)
    err = 0.0
    for j in range(1, gamma + 1):
        want = sum(math.prod(float(torch.minimum(cp[s[:i]], cq[s[:i]])[x]) for i, x in enumerate(s))
                   for s in itertools.product(range(target.config.V), repeat=j))
        got = sum(w for (_, n), w in outcomes if n >= j)
        err = max(err, abs(got - want))
    return err


def full_run_error(target: MiniGPT, draft: MiniGPT, prompt: torch.Tensor, D: int, gamma: int,
                   temperature: float = 1.0) -> float:
    """Max |P(x_1..x_D) − p_target(x_1..x_D)| of whole `speculative_generate` runs (B = 1, several rounds each)."""
    exact = ExactDraws()
    with mock.patch.object(spec, "_draw", exact.draw), mock.patch.object(spec, "_coin", exact.coin):
        outcomes = exact.run(lambda: tuple(spec.speculative_generate(target, draft, prompt, D, gamma=gamma,
                                                                temperature=temperature).tokens[0].tolist()))
    got: dict[tuple, float] = {}
    for seq, w in outcomes:
        got[seq] = got.get(seq, 0.0) + w
    want = sequence_distribution(target, prompt[0], D, temperature)
    return max(abs(got.get(s, 0.0) - w) for s, w in want.items())


def own_draft_passes(gamma: int = 3, D: int = 12) -> int:
    """Target passes when the draft is the target, sampling at T = 1: every draft is accepted (p = q), so each
    round emits γ + 1 tokens with its bonus token and D = 12, γ = 3 take exactly 3 passes."""
    target = random_model(SMALL, 5, 1.0)
    prompt = torch.tensor([[0, 2]])
    gen = torch.Generator().manual_seed(0)
    return spec.speculative_generate(target, target, prompt, D, gamma=gamma, temperature=1.0,
                                     generator=gen).target_passes


PROMPT_1 = torch.tensor([[0, 2]])
PROMPT_2 = torch.tensor([[0, 2], [1, 1]])  # two different prompts: the joint law must be the product


def alpha_of_pair() -> float:
    target, draft = close_pair()
    result = speculative_generate(target, draft, torch.tensor([[0, 2]]), 10, gamma=3, temperature=1.0,
                                  generator=torch.Generator().manual_seed(0))
    return result.alpha_expected


def test_the_close_draft_accepts_deep_into_gamma():
    """The test's power comes from rounds that accept: E[β] of the pair is high, and one round from PROMPT_1
    accepts all γ = 3 drafts (and so emits the bonus token) with probability > 0.3, not a rare path."""
    assert 0.6 < alpha_of_pair() < 0.97
    target, draft = close_pair()
    outcomes = one_round_outcomes(target, draft, PROMPT_1, 3, 1.0)
    assert sum(w for (_, n), w in outcomes if n == 3) > 0.3
    assert sum(w for _, w in outcomes) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("gamma,temperature", [(1, 1.0), (3, 1.0), (2, 0.7)])
def test_one_round_keeps_the_targets_distribution_exactly(gamma, temperature):
    """B = 1: one round's output, continued by the target, is the target's law over all 3^(γ+1) sequences."""
    target, draft = close_pair()
    assert round_error(target, draft, PROMPT_1, gamma, temperature) < EXACT_ATOL


@pytest.mark.parametrize("gamma,V", [(1, 3), (2, 2)])
def test_one_batched_round_keeps_each_sequences_distribution_exactly(gamma, V):
    """B = 2 with different prompts: the batch-minimum rule, the accepted draft kept by the sequence that accepted
    it, the correction for the other; the joint law of the two rows is the product of the targets' laws."""
    target, draft = close_pair(replace(SMALL, V=V))
    assert round_error(target, draft, PROMPT_2 % V, gamma) < EXACT_ATOL


def test_acceptance_counts_are_the_chained_betas():
    target, draft = close_pair()
    assert accepted_error(target, draft, PROMPT_1, 3) < EXACT_ATOL


def test_whole_runs_over_several_rounds_keep_the_targets_distribution_exactly():
    """D = 3 > γ + 1 = 2: later rounds start from the first's rewound caches (and from its bonus token)."""
    target, draft = close_pair(replace(SMALL, V=2), seed=4)
    assert full_run_error(target, draft, PROMPT_1 % 2, 3, 1) < EXACT_ATOL


def test_the_target_as_its_own_draft_emits_gamma_plus_one_per_pass_when_sampling():
    assert own_draft_passes() == 3


def test_the_sampling_primitives_draw_what_they_are_given():
    """`_coin` and `_draw` (which the exact tests replace) against their laws: 200,000 draws, 6σ bounds."""
    gen, N = torch.Generator().manual_seed(0), 200_000
    a = torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0]).repeat(N, 1)
    freq = spec._coin(a, gen).double().mean(0)
    assert torch.all((freq - a[0]).abs() <= 6 * (a[0] * (1 - a[0]) / N).sqrt() + 1e-12), freq
    probs = torch.tensor([0.2, 0.0, 0.5, 0.3])
    counts = torch.bincount(spec._draw(probs.repeat(N, 1), gen), minlength=4).double() / N
    assert torch.all((counts - probs).abs() <= 6 * (probs * (1 - probs) / N).sqrt() + 1e-12), counts


@pytest.mark.source_text
def test_every_random_draw_goes_through_the_primitives():
    """The exact tests replace `_draw` and `_coin`; a draw made elsewhere would escape them (and make the replay
    non-deterministic), so the module samples nowhere else."""
    source = inspect.getsource(spec)
    for call, owner in (("torch.rand(", spec._coin), ("torch.multinomial(", spec._draw)):
        assert source.count(call) == 1 and call in inspect.getsource(owner), f"{call} outside {owner.__name__}"
    assert "torch.bernoulli(" not in source and "torch.randint(" not in source


# ---- mutants: plausible bugs in the rejection rule, each of which a test above must reject ----

MUTANTS = {  # name: (function, the line as written, the bug, the statistic that must reject it)
    "bonus drawn from the draft's last q": (
        "accept_drafts", "_draw(p[:, g], generator)", "_draw(q_all[:, g - 1], generator)", "round"),
    "no bonus token (a full round emits γ)": (
        "accept_drafts", "return n, bonus.view(B, 1)", "return n - 1, x[:, g - 1].view(B, 1)", "passes"),
    "residual drawn from p (q not subtracted)": (
        "residual_distribution", "residual = (p - q).clamp_min(0)", "residual = p.clamp_min(0)", "round"),
    "residual |p − q|": (
        "residual_distribution", "residual = (p - q).clamp_min(0)", "residual = (p - q).abs()", "round"),
    "residual normalised over the batch axis": (
        "residual_distribution", "total = residual.sum(-1, keepdim=True)", "total = residual.sum(0, keepdim=True)",
        "round"),
    "residual at the next position": (
        "accept_drafts", "residual_distribution(p[:, n], q_all[:, n])",
        "residual_distribution(p[:, n + 1], q_all[:, n])", "round"),
    "accept test reversed (accept when u ≥ p/q)": (
        "accept_drafts", "ok = _coin(", "ok = ~_coin(", "round"),
    "accept with min(1, q/p)": (
        "acceptance_probability", "(p_x / q_x).clamp(max=1.0)", "(q_x / p_x).clamp(max=1.0)", "accepted"),
    "coin compares u > probs": (
        "_coin", "device=probs.device) < probs", "device=probs.device) > probs", "primitives"),
    "batch keeps the maximum accepted prefix": (
        "accept_drafts", "n = int(n_b.min())", "n = int(n_b.max())", "batched"),
    "batch corrects every sequence (the accepted draft dropped)": (
        "accept_drafts", "torch.where(keep, x[:, n], corrected)", "torch.where(keep, corrected, corrected)",
        "batched"),
    "batch keeps the rejected draft too": (
        "accept_drafts", "keep = n_b > n", "keep = n_b >= n", "batched"),
    "drafts are the draft's argmax while q is its softmax": (
        "speculative_generate", "feed = q_j.argmax(-1, keepdim=True) if greedy else _draw(q_j, generator)[:, None]",
        "feed = q_j.argmax(-1, keepdim=True)", "round"),
    "the next round forgets the bonus token in the cache": (
        "speculative_generate", "t_cache.truncate(seq.shape[1] - 1)", "t_cache.truncate(seq.shape[1] - 2)",
        "full"),
}


def mutate(monkeypatch: pytest.MonkeyPatch, name: str, old: str, new: str) -> None:
    """Replace `old` (which must occur exactly once) by `new` in the source of `spec.<name>` and install it."""
    source = textwrap.dedent(inspect.getsource(getattr(spec, name)))
    assert source.count(old) == 1, f"{name} no longer reads {old!r}: update the mutant"
    monkeypatch.setattr(spec, name, getattr(spec, name))  # monkeypatch puts the original back after the test
    exec(compile(source.replace(old, new), f"<mutant of {name}>", "exec"), vars(spec))  # in the module: the
    # mutant calls, and is called by, whatever the module holds (the exact draws, the other mutants)


def statistic(kind: str) -> float | bool:
    """The check `kind` of the tests above as a number (an error, or passes) or a verdict, for the mutants."""
    target, draft = close_pair()
    if kind == "round":
        return round_error(target, draft, PROMPT_1, 3) > 1e-3
    if kind == "accepted":
        return accepted_error(target, draft, PROMPT_1, 3) > 1e-3
    if kind == "batched":
        return round_error(target, draft, PROMPT_2, 1) > 1e-3
    if kind == "full":
        target, draft = close_pair(replace(SMALL, V=2), seed=4)
        return full_run_error(target, draft, PROMPT_1 % 2, 3, 1) > 1e-3
    if kind == "passes":
        return own_draft_passes() != 3
    if kind == "primitives":
        try:
            test_the_sampling_primitives_draw_what_they_are_given()
        except AssertionError:
            return True
        return False
    raise ValueError(kind)


@pytest.mark.source_text
@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_each_mutant_of_the_rule_is_rejected(monkeypatch, mutant):
    name, old, new, kind = MUTANTS[mutant]
    mutate(monkeypatch, name, old, new)
    assert statistic(kind), f"the mutant '{mutant}' passes the '{kind}' check: the test has no power against it"


@pytest.mark.parametrize("alpha,gamma,B", [(0.8, 4, 1), (0.8, 4, 3), (0.5, 2, 2), (0.95, 3, 4), (1.0, 3, 5)])
def test_the_batch_minimum_formula_is_the_expected_minimum(alpha, gamma, B):
    """Eq. (17.4) against the expectation over every combination of B independent accepted prefixes (truncated
    geometric: P(n = k) = α^k (1 − α) for k < γ, α^γ for k = γ), plus the one token of each round."""
    law = [alpha**k * (1 - alpha) for k in range(gamma)] + [alpha**gamma]
    expected = 1 + sum(math.prod(law[k] for k in ns) * min(ns)
                       for ns in itertools.product(range(gamma + 1), repeat=B))
    assert costs.speculative_batch_tokens_per_pass(alpha=alpha, gamma=gamma, B=B) == pytest.approx(expected)
    if B == 1:
        assert expected == pytest.approx(costs.speculative_tokens_per_pass(alpha=alpha, gamma=gamma))


@pytest.mark.parametrize("alpha,gamma,B", [(0.8, 4, 2), (0.9, 4, 8), (0.5, 1, 3)])
def test_the_batch_speedup_divides_eq_17_4_by_the_round_cost(alpha, gamma, B):
    """Eq. (17.2) at B sequences sharing one length: Eq. (17.4)'s tokens over γ·c + v (a speedup that ignored
    B would equal the B = 1 one, which it must exceed for α < 1); B = 1 is Eq. (17.1)'s speedup exactly."""
    c, v = 0.1, 1.3
    batch = costs.speculative_speedup(alpha=alpha, gamma=gamma, cost_ratio=c, verify_ratio=v, B=B)
    expected = costs.speculative_batch_tokens_per_pass(alpha=alpha, gamma=gamma, B=B) / (gamma * c + v)
    assert batch == pytest.approx(expected, rel=1e-15)
    alone = costs.speculative_speedup(alpha=alpha, gamma=gamma, cost_ratio=c, verify_ratio=v)
    assert alone == costs.speculative_speedup(alpha=alpha, gamma=gamma, cost_ratio=c, verify_ratio=v, B=1)
    assert batch < alone
    with pytest.raises(ValueError, match="B must be"):
        costs.speculative_speedup(alpha=alpha, gamma=gamma, cost_ratio=c, B=0)


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


def test_at_the_models_S_max_the_last_rounds_draft_nothing():
    """P + D − 1 = S_max: the last rounds have no room to draft (g = 0) and verify the last token alone; the
    tokens are still the target's greedy ones. Catches a g = 0 round that emits a wrong token or count."""
    target, draft = close_pair(TINY, seed=4)
    prompt = torch.tensor([[1, 2, 3], [4, 0, 2]])
    D = TINY.S_max - prompt.shape[1] + 1
    out = speculative_generate(target, draft, prompt, D, gamma=3)
    assert out.proposed[-1] == 0 and out.accepted[-1] == 0 and out.tokens.shape == (2, D)
    assert_same_or_near_tie(target, prompt, greedy(target, prompt, D), out.tokens, allow_ties=False)
    # the counts: a draft step per proposed token, a target pass per round, the drafts kept per round [B, g]
    assert out.draft_steps == sum(out.proposed) and out.target_passes == len(out.proposed)
    assert [tuple(d.shape) for d in out.drafted] == [(2, g) for g in out.proposed]


def test_with_room_every_round_drafts_gamma_and_the_default_gamma_is_4():
    """Away from S_max the caches hold P + D − 1 + γ tokens, room for γ drafts in every round, the last
    included; without `gamma`, a round drafts 4."""
    target, draft = close_pair(TINY, seed=4)
    prompt = torch.tensor([[1, 2, 3]])
    out = speculative_generate(target, draft, prompt, 7, gamma=3)
    assert set(out.proposed) == {3}
    assert speculative_generate(target, draft, prompt, 6).proposed[0] == 4


@pytest.mark.parametrize("smaller", ["target", "draft"])
def test_the_smaller_position_table_of_the_two_models_bounds_the_request(smaller):
    """A draft (or target) with a shorter position table than the other: requests up to its S_max run and give
    the target's greedy tokens; the caches are sized by the smaller model."""
    big, short = TINY, replace(TINY, S_max=10)
    target, _ = close_pair(short if smaller == "target" else big, seed=4)
    draft, _ = close_pair(big if smaller == "target" else short, seed=6)
    prompt = torch.tensor([[1, 2, 3]])
    D = short.S_max - prompt.shape[1] + 1
    out = speculative_generate(target, draft, prompt, D, gamma=3)
    assert_same_or_near_tie(target, prompt, greedy(target, prompt, D), out.tokens, allow_ties=False)
    with pytest.raises(ValueError, match=f"exceed S_max={short.S_max}"):
        speculative_generate(target, draft, prompt, D + 1, gamma=3)


def test_a_round_with_no_drafts_samples_its_token_when_sampling():
    """g = 0 (no room to draft): the token comes from p at the last position, drawn when sampling (both tokens
    of p = (0.5, 0.5, 0) appear over 20 seeds), its argmax when greedy; nothing is accepted."""
    p = torch.tensor([[[0.5, 0.5, 0.0]]])
    drawn = {int(accept_drafts(p, [], [], False, torch.Generator().manual_seed(s))[1]) for s in range(20)}
    assert drawn == {0, 1}
    assert accept_drafts(torch.tensor([[[0.1, 0.7, 0.2]]]), [], [], True) == (0, torch.tensor([[1]]))


def test_a_seeded_run_is_reproduced_whatever_the_global_seed():
    """Sampling draws only from the caller's generator: the same seed gives the same tokens and counts even when
    torch's global seed differs, up to the model's S_max (where the g = 0 rounds draw too). Catches a draw that
    forgets the generator (it would use the global RNG)."""
    target, draft = close_pair(TINY, seed=5)
    prompt = torch.tensor([[1, 2], [3, 4]])
    D = TINY.S_max - prompt.shape[1] + 1
    runs = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        out = speculative_generate(target, draft, prompt, D, gamma=3, temperature=1.0,
                                   generator=torch.Generator().manual_seed(7))
        runs.append((out.tokens.tolist(), out.accepted, out.proposed))
    assert runs[0] == runs[1] and runs[0][2][-1] == 0
    others = {str(speculative_generate(target, draft, prompt, D, gamma=3, temperature=1.0,
                                       generator=torch.Generator().manual_seed(s)).tokens.tolist())
              for s in range(4)}
    assert len(others) > 1, "four seeds gave the same tokens: the draws ignore the generator"


def test_beta_is_sum_min_p_q_at_each_verified_position_and_accumulates():
    """By hand: p = (.5, .3, .2) against q = (.2, .5, .3) shares 0.2 + 0.3 + 0.2 = 0.7; (.1, .1, .8) against
    (.3, .3, .4) shares 0.6. A second call appends (β is kept per verified position over the run)."""
    p = torch.tensor([[[0.5, 0.3, 0.2], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]]])
    q = [torch.tensor([[0.2, 0.5, 0.3]]), torch.tensor([[0.3, 0.3, 0.4]])]
    drafts = [torch.tensor([[0]]), torch.tensor([[2]])]
    result = spec.SpeculativeResult(tokens=torch.empty(1, 0, dtype=torch.long))
    for _ in range(2):
        accept_drafts(p, q, drafts, False, torch.Generator().manual_seed(0), result)
    assert result.beta == pytest.approx([0.7, 0.6, 0.7, 0.6])


@pytest.mark.parametrize("prompt,match", [
    (torch.tensor([[1.0, 2.0]]), r"^prompt must be a torch.long tensor of shape \[B, P\] with P >= 1$"),
    (torch.tensor([1, 2]), "prompt must be a torch.long tensor"),
    (torch.zeros(1, 0, dtype=torch.long), r"shape \[B, P\] with P >= 1"),
    ([[1, 2]], "prompt must be a torch.long tensor"),
])
def test_a_bad_prompt_is_named(prompt, match):
    target, draft = random_model(TINY, 1, 1.0), random_model(TINY, 2, 1.0)
    with pytest.raises(ValueError, match=match):
        speculative_generate(target, draft, prompt, 2)


def test_the_edges_of_each_argument():
    """Wrong types are refused (a bool is not a count, 1e30 is not a finite temperature); the longest request the
    caches hold, P + D − 1 = S_max, is accepted, and one more token is refused with its count."""
    target, draft = random_model(TINY, 1, 1.0), random_model(TINY, 2, 1.0)
    prompt = torch.tensor([[1, 2]])
    for kwargs, match in [(dict(D=True), "D must be an integer"), (dict(D=2.0), "D must be an integer"),
                          (dict(gamma=True), "gamma must be an integer"), (dict(gamma=2.0), "gamma must be"),
                          (dict(temperature=True), "temperature must be"), (dict(temperature=1e30), "temperature"),
                          (dict(temperature="1"), "temperature must be"),
                          (dict(D=TINY.S_max), rf"P \+ D - 1 = {TINY.S_max + 1} tokens exceed S_max={TINY.S_max}")]:
        args = dict(D=2) | kwargs
        with pytest.raises(ValueError, match=match):
            speculative_generate(target, draft, prompt, args.pop("D"), **args)
    longest = speculative_generate(target, draft, prompt, TINY.S_max - 1, gamma=1, temperature=1e29,
                                   generator=torch.Generator().manual_seed(0))
    assert longest.tokens.shape == (1, TINY.S_max - 1)
