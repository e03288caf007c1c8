"""Exercise 6 Question 4 (`minigpt.exercises.ex06_generate`): greedy generation of D tokens for B prompts from the
weights alone, with the KV cache. The oracle is the package's own `MiniGPT` and `generate`. Here: the oracle is the
model's own generation with its cache and without one; float arithmetic in another order stays under
`FLOAT_ERROR` and every case keeps `MARGIN` between its two largest logits; the generator's replays of the
neighbours are the neighbours written apart; the method check's bound against what the package's two paths measure;
the question needs no model in its sandbox; a case worked by hand; the reference solution and one written apart
pass. (The named wrong answers, written apart, lose under every seed in `tests/test_seed_independence_ex06_09.py`;
the reference solution's mutants fail in `tests/test_exercise_mechanisms.py`, MUTANTS; the generator's ranges are
pinned in `tests/test_case_generators.py`.)"""

from __future__ import annotations

import random

import torch
from reference import reference
from test_seed_independence_ex06_09 import _generation

from minigpt.config import ModelConfig
from minigpt.exercises import EXERCISES, ex06_generate, run_check
from minigpt.exercises.wire import build_case
from minigpt.exercises.work import measured
from minigpt.grading.allowlist import Needs
from minigpt.grading.cases import needs_of
from minigpt.runtime.generate import generate
from minigpt.runtime.model import MiniGPT

Q = EXERCISES["ex06"].question("q4")


def solution():
    return reference("ex06", "generate_from_weights")


def _cases(seeds: range) -> list[dict]:
    return [case for seed in seeds for case in Q.cases(random.Random(seed))]


def _model(args: dict) -> MiniGPT:
    """The model of a case's weights, built here apart from the oracle's own `_model`."""
    model = MiniGPT(ModelConfig.from_dict(args["config"]))
    model.load_state_dict(args["params"])
    return model.eval()


def _package(model: MiniGPT, use_cache: bool):
    """The package's generation on `model`, called as the question calls an answer."""
    return lambda **a: generate(model, a["prompt"], a["D"], use_cache=use_cache).tokens


def test_the_oracle_is_the_models_own_generation_with_and_without_the_cache() -> None:
    """On every case of two seeds: the oracle's tokens are those of `generate` on the model the weights make, with
    its KV cache and without one (Eq. 1.5's recomputation), of the generator's own replay (whose logits it checks
    for ties), and of the reference solution. Catches an oracle that reads another position's logits, generates
    one token too many or too few, or a weight layout that drifts from MiniGPT's."""
    for case in _cases(range(2)):
        args = build_case(case)
        expected = ex06_generate._generate_from_weights(**args)
        model = _model(args)
        assert len(expected) == args["prompt"].shape[0] >= 2 and {len(t) for t in expected} == {case["D"]}
        assert generate(model, args["prompt"], case["D"], use_cache=True).tokens == expected
        assert generate(model, args["prompt"], case["D"], use_cache=False).tokens == expected
        assert ex06_generate._replay(model, args["prompt"], case["D"]).argmax(-1).tolist() == expected
        assert solution()(**build_case(case)) == expected


def test_the_oracle_is_the_shipped_models_generation_on_real_prompts() -> None:
    """The shipped MiniGPT's weights (trained, L = 4, V = 600) and two corpus sentences cut to one length: the
    oracle and the reference solution give the tokens the model itself generates, with its cache and without one
    (the link with Chapter 6's `generate_kv_cache`, on real text rather than random weights)."""
    from minigpt import load_pretrained
    from minigpt.corpus.sentences import generate_sentences

    shipped = load_pretrained()
    model, tokenizer = shipped.model.eval(), shipped.tokenizer
    rows = [tokenizer.encode(text) for text in generate_sentences(2, seed=6)]
    prompt = torch.tensor([r[:8] for r in rows])
    params = {name: t.detach().clone() for name, t in model.state_dict().items()}
    config = dict(model.config.to_dict(), d=model.config.d)
    expected = generate(model, prompt, 12, use_cache=True).tokens
    assert generate(model, prompt, 12, use_cache=False).tokens == expected
    assert ex06_generate._generate_from_weights(params, config, prompt, 12) == expected
    assert solution()(params, config, prompt, 12) == expected


def test_arithmetic_in_another_order_stays_under_the_margin() -> None:
    """The package's model in float64 moves no logit of the generated positions by more than `FLOAT_ERROR` from
    its float32 run (measured at most 1.2e-5 over 420 cases), and every case keeps its two largest logits
    `MARGIN` = 2·FLOAT_ERROR apart: no float32 or float64 answer can flip a greedy token. Catches a margin below
    the float error (a right answer in another order could lose the question) and a generator that stops
    checking the gap."""
    assert ex06_generate.MARGIN == 2 * ex06_generate.FLOAT_ERROR
    for case in _cases(range(3)):
        args = build_case(case)
        model = _model(args)
        single = ex06_generate._replay(model, args["prompt"], case["D"])
        double = ex06_generate._replay(model.double(), args["prompt"], case["D"])
        assert (single.double() - double).abs().max() < ex06_generate.FLOAT_ERROR
        top = single.topk(2, dim=-1).values
        assert (top[..., 0] - top[..., 1] > ex06_generate.MARGIN).all()


def test_the_generators_replays_are_the_named_neighbours() -> None:
    """The generator draws its edges with the package run as each neighbour would run (`_replay(wrong=...)`); each
    replay gives the tokens of that neighbour written apart (an unmasked prefill, an unappended cache, decode
    steps one position early, token 1 from the prefill's first or second-to-last position), or the edge would
    separate another rule."""
    kinds = {"unmasked": dict(causal=False), "unappended": dict(append=False), "shifted": dict(shift=-1),
             "first": dict(first=0), "second-to-last": dict(first=-2)}
    assert set(kinds) == set(ex06_generate.NEIGHBOURS)
    for case in _cases(range(2)):
        args = build_case(case)
        for wrong, bug in kinds.items():
            if wrong != "second-to-last" or args["prompt"].shape[1] >= 2:
                replayed = ex06_generate._replay(_model(args), args["prompt"], case["D"], wrong)
                assert replayed.argmax(-1).tolist() == _generation(**bug)(**args), wrong


def test_the_method_bound_against_the_packages_two_paths() -> None:
    """On the case sized for the method check (the third) of four seeds: the FLOPs the package's cached generation
    measures are the bound `_flops` computes from the case's sizes less the head at the P - 1 prompt positions the
    package skips, and those of its generation without a cache are `_flops`' least recomputation plus its attention,
    term by term; the package's cached generation and the reference solution stay within the bound, and the
    check is silent for them; the package's generation without a cache measures over `FACTOR` times the bound (about
    eight times, and over four times by the bound's own count of the least recomputation) and the check names the
    problem. Wherever recomputing would need less than twice the bound the check is silent whatever the work.
    Catches a bound that a cached answer could exceed, a case too small for recomputation to show, and a check
    that speaks where the sizes say nothing."""
    for seed in range(4):
        cases = Q.cases(random.Random(seed))
        case, args = cases[2], build_case(cases[2])
        rows = case["prompt"]["$long"]
        cached, least = ex06_generate._flops(case["config"], len(rows), len(rows[0]), case["D"])
        assert least >= 2 * ex06_generate.FACTOR * cached
        model = _model(args)
        B, P, D, c = len(rows), len(rows[0]), case["D"], case["config"]
        head = 2 * c["d"] * c["V"]  # the package's prefill reads the head at its last position alone
        _, work = measured(_package(model, use_cache=True), args)
        assert work["flops"] == cached - B * (P - 1) * head  # the bound, counted term by term
        for fn in (_package(model, use_cache=True), solution()):
            _, work = measured(fn, build_case(case))
            assert 0 < work["flops"] <= cached and ex06_generate._recomputed(case, work) is None
        _, work = measured(_package(model, use_cache=False), args)
        attention = sum(c["L"] * 4 * c["H"] * c["d_h"] * (P + j) ** 2 for j in range(D))
        assert work["flops"] == least + B * attention  # the least recomputation, plus its attention
        assert work["flops"] > ex06_generate.FACTOR * cached
        assert ex06_generate._recomputed(case, work).startswith("the answer did several times")
        assert ex06_generate._recomputed(case, {"flops": ex06_generate.FACTOR * cached, "largest": 0}) is None
        for other in cases:  # where recomputing would not need twice the bound, the check says nothing
            rows = other["prompt"]["$long"]
            cached, least = ex06_generate._flops(other["config"], len(rows), len(rows[0]), other["D"])
            silent = ex06_generate._recomputed(other, {"flops": 10**15, "largest": 0}) is None
            assert silent == (least < 2 * ex06_generate.FACTOR * cached)


def test_the_weights_need_no_model() -> None:
    """The question's cases ask the grader for no runtime module (its sandbox holds `MiniGPT` and `generate` as
    stubs) and hand the student plain tensors, ints and dicts, never a model; every case holds B >= 2 prompts."""
    for seed in range(3):
        cases = Q.cases(random.Random(seed))
        assert needs_of(Q, cases) == Needs() and Q.runtime == ()
        for case in cases:
            args = build_case(case)
            assert not any(isinstance(v, torch.nn.Module) for v in args.values())
            assert args["prompt"].dtype == torch.long and args["prompt"].shape[0] >= 2


def _hand_params() -> dict[str, torch.Tensor]:
    """One layer, H = H_kv = 1, d_h = d = 2, d_ffn = 1, V = 3, S_max = 4: every projection zero but the value's
    and the attention's output (the identity), so the query is 0 and attention is the plain mean of the values,
    which are the LayerNormed inputs; the MLP adds nothing; the LayerNorms have weight 1 and bias 0."""
    z = torch.zeros
    qkv = z(6, 2)
    qkv[4:] = torch.eye(2)  # v = LN1(x)
    return {"tok_emb.weight": torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
            "pos_emb.weight": z(4, 2),
            "blocks.0.ln1.weight": torch.ones(2), "blocks.0.ln1.bias": z(2),
            "blocks.0.attn.qkv.weight": qkv, "blocks.0.attn.qkv.bias": z(6),
            "blocks.0.attn.out.weight": torch.eye(2), "blocks.0.attn.out.bias": z(2),
            "blocks.0.ln2.weight": torch.ones(2), "blocks.0.ln2.bias": z(2),
            "blocks.0.mlp.up.weight": z(1, 2), "blocks.0.mlp.up.bias": z(1),
            "blocks.0.mlp.down.weight": z(2, 1), "blocks.0.mlp.down.bias": z(2),
            "ln_f.weight": torch.ones(2), "ln_f.bias": z(2)}


def test_a_case_worked_by_hand() -> None:
    """Tokens 0 and 1 embed as (1, 0) and (0, 1), whose LayerNorms are u = (c, −c) and −u (c just under 1), and
    the positions add nothing. Each position adds to its embedding the mean of the values (the LayerNormed
    embeddings) it attends to; the logits are the final LayerNorm of the sum against the embeddings, so token 0
    wins where the first coordinate is the larger, token 1 where the second is (token 2 scores 0 between them).
    Prompt [0, 1, 1] (P = 3, D = 2): its last position means u, −u, −u into −u/3, (0, 1) + (−c/3, c/3): token 1;
    fed back at position 3 it means the three cached rows and its own, −u/2, (0, 1) + (−c/2, c/2): token 1
    again, [1, 1]. Token 1 read from the prefill's first position instead: (1, 0) + u, token 0, whose decode step
    means u, −u, −u and its own u into 0, (1, 0): token 0, [0, 0]. The second prompt, [1, 0, 0], is the first
    with the two tokens swapped, and so are both answers."""
    params, config = _hand_params(), dict(L=1, H=1, H_kv=1, d_h=2, d=2, d_ffn=1, V=3, S_max=4)
    prompt = torch.tensor([[0, 1, 1], [1, 0, 0]])
    expected = [[1, 1], [0, 0]]  # the second prompt is the first with tokens 0 and 1 swapped: so is its answer
    for fn in (ex06_generate._generate_from_weights, solution(), _generation()):
        assert fn(params, config, prompt.clone(), 2) == expected
    assert _generation(first=0)(params, config, prompt.clone(), 2) == [[0, 0], [1, 1]]


def test_the_reference_and_a_solution_written_apart_pass() -> None:
    """The instructors' solution and one written apart (its own LayerNorm and softmax, a list of keys and values
    per layer, in float64) pass `check` under two seeds, the method check included."""
    for seed in range(2):
        for fn in (solution(), _generation(dtype=torch.float64)):
            result = run_check("ex06.q4", fn, seed=seed)
            assert result.status == "pass", result.message
