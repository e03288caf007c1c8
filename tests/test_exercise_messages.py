"""What `check()` and the grader tell a student, word for word where a word matters, and the comparisons
that decide a pass, called as a question builds them (a comparison factory runs once, when its exercise
is defined; these tests build their own, so a wrong factory fails here and not only in a grade).

Each test names the bug it catches; they were written against the survivors of a mutation sample
(`mutation/report.md`): a message that drops the student's value or the hint, a tolerance with no
absolute part, a nested-list answer refused as ragged, a method check that needs both of its signs.
"""

from __future__ import annotations

import math

import pytest
import torch

from minigpt.exercises import ex06_generate, ex08, ex11, ex14, ex15, ex16, ex17, ex18_latent, run_check
from minigpt.exercises.case_inputs import describe
from minigpt.exercises.comparisons import boolean, exact_int, int_list, returned, tensor, triple
from minigpt.exercises.wire_shapes import conforms


def _tensor(values: list) -> dict:
    """A tensor as the wire carries it."""
    shape, x = [], values
    while isinstance(x, list):
        shape.append(len(x))
        x = x[0]
    return {"$tensor": values, "shape": shape}


def test_a_nested_list_is_a_tensor_answer_and_a_ragged_one_is_named() -> None:
    """Guards a list answer whose shape is never read (every nested-list answer refused as ragged)."""
    compare = tensor()
    assert compare(_tensor([[1.0, 2.0], [3.0, 4.0]]), [[1.0, 2.0], [3.0, 4.0]]) is None
    assert compare(_tensor([[1.0, 2.0], [3.0, 4.0]]), [[1.0, 2.0], [3.0]]) == "expected a tensor, got a ragged list"
    assert "got shape [4]" in compare(_tensor([[1.0, 2.0], [3.0, 4.0]]), [1.0, 2.0, 3.0, 4.0])


def test_the_tensor_tolerance_has_an_absolute_part() -> None:
    """Guards `allclose` called without `atol`: torch's 1e-8 default would fail a correct answer whose zeros
    come out as 1e-7 (rounding in another order), which the question's stated atol=1e-5 accepts."""
    compare = tensor()
    assert compare(_tensor([0.0, 1.0]), [1e-7, 1.0]) is None
    assert "at index [0]" in compare(_tensor([0.0, 1.0]), [1e-3, 1.0])


def test_a_returned_tensor_is_shown_by_its_shape_and_first_values_to_five_places() -> None:
    assert returned(_tensor([[0.123456789, 2.0]])) == "tensor of shape [1, 2], first values [0.12346, 2.0]"


def test_wrong_values_are_shown_next_to_the_expected_ones() -> None:
    """Guards messages that drop the returned value or mangle the list brackets."""
    assert int_list([1, 2], [1, 3]) == "expected [1, 2], got [1, 3]"
    assert boolean(True, False) == "expected True, got False"
    assert exact_int(5, "5") == "expected the integer 5, got '5'"
    assert ex08.name_or_none(None, "llama") == "expected None (no model reaches the threshold), got 'llama'"
    assert ex17._records([["all_reduce", 8]], "x") == "expected a list of [kind, nbytes] pairs, got str"
    assert ex14._tokens([1, 2, 3], [1, 2, 4]) == (
        "expected [1, 2, 3], got [1, 2, 4]: the kept drafts agree; the last token does not (it is drawn with u[γ] "
        "from the distribution the round ends on)")


def test_a_trace_is_compared_operation_by_operation() -> None:
    """Guards a trace comparison that never walks the states (it raised on every answer of the right length)."""
    compare = ex11._trace_compare(("tables", "free"))
    assert compare([[[0], [1]], [[0, 1], []]], [[[0], [1]], [[0, 1], []]]) is None
    assert compare([[[0], [1]], [[0, 1], []]], [[[0], [1]], [[1, 0], []]]) == \
        "after operation 1: tables expected [0, 1], got [1, 0]"


def test_inputs_are_described_as_the_student_would_build_them() -> None:
    """Guards the descriptions of a configuration, a model, a model's weights, a long list and a large structure in
    a FAIL line."""
    assert describe({"$config": {"L": 1, "H": 2}}) == "ModelConfig(L=1, H=2)"
    assert describe({"$model": {"L": 1, "H": 2}}) == "MiniGPT(L=1, H=2)"
    assert describe({"$weights": {"L": 1, "H": 2}, "seed": 3}) == "MiniGPT(L=1, H=2).state_dict()"
    assert describe(list(range(10))) == "[0, 1, 2, 3, 4, 5, 6, 7, ...]"
    wide = {f"key{i}": list(range(40)) for i in range(7)}
    assert describe(wide) == "{" + ", ".join(f"'key{i}': [40 items]" for i in range(6)) + ", ...}"
    layers = [["column", 123_456_789]] * 40  # ex17 Q3, outlined: its first layer read in full
    assert describe(layers) == "[40 items, the first ['column', 123456789]]"
    shapes = {f"blocks.{i}.mlp.up.weight": [256, 64] for i in range(12)}  # ex17 Q4: a shape read in full
    assert describe(shapes) == "{" + ", ".join(f"'blocks.{i}.mlp.up.weight': [256, 64]" for i in range(6)) + ", ...}"


def _raises(**_: object) -> int:
    raise ValueError("boom")


def _returns_a_set(**_: object) -> set:
    return {1}


def test_a_function_that_raises_is_named_with_its_error_and_the_hint() -> None:
    """Guards a FAIL line without the exception's type or without the question's hint."""
    result = run_check("ex01.q1", _raises, seed=3)
    assert result.status == "fail" and result.seed == 3
    first, hint = result.message.split("\n")
    assert first.startswith("FAIL ex01.q1 prefill_flops: prefill_flops(") and first.endswith("raised ValueError: boom")
    assert hint.startswith("  hint: seed convention (1 FLOP per multiply-add)")


def test_an_answer_the_wire_cannot_carry_fails_with_its_seed() -> None:
    """Guards the unsupported-output path (a set returned): a FAIL that keeps the seed to replay it."""
    result = run_check("ex01.q1", _returns_a_set, seed=11)
    assert result.status == "fail" and result.seed == 11
    assert "set" in result.message and "\n  hint: " in result.message


def test_a_list_answer_conforms_to_a_tensor_of_its_shape() -> None:
    """Guards the shape check reading a list answer's data (every list answer to a tensor question refused)."""
    assert conforms([[1.0, 2.0]], _tensor([[0.0, 0.0]])) is None
    assert conforms([[1.0, 2.0, 3.0]], _tensor([[0.0, 0.0]])) is not None


@pytest.mark.parametrize("largest,flops", [(10**9, 0), (0, 10**12)])
def test_either_sign_of_rebuilt_keys_fails_the_absorbed_question(largest: int, flops: int) -> None:
    """ex18 Q1's method: a tensor of S·H·d_h elements, or the FLOPs of rebuilding it, each alone is enough.
    Guards a check that needs both (an answer that rebuilds K with a gather and no product would pass)."""
    case = {"c": {"$randn": [700, 4]}, "k_rope": {"$randn": [700, 4]}, "w_uk": {"$randn": [2, 32, 4]}}
    problem = ex18_latent._decompressed(case, {"largest": largest, "flops": flops})
    assert problem is not None and problem.startswith("the keys or values were rebuilt from the latents")
    assert ex18_latent._decompressed(case, {"largest": 0, "flops": 0}) is None


def test_the_recomputation_check_starts_just_above_twice_the_cached_bound() -> None:
    """ex06 Q4's method check on a case sized as the question's method case (B = 2, P = 24, D = 8, L = 2, H = 4,
    H_kv = 1, d_h = 8, d_ffn = 128, V = 64): silent at exactly `FACTOR` times the cached path's bound, the message
    word for word one FLOP above it; on a prompt of 4 tokens and D = 2, where recomputing needs less than twice
    the bound, silent whatever the work. The bound by hand on the smallest model (L = H = H_kv = 1, d_h = d = 2,
    d_ffn = 4, V = 3; B = 1, P = 2, D = 2): 64 FLOPs a token in the layer, 12 for the head, 8·T·K for T queries
    over K keys: 2·76 + 32 + 76 + 24 = 284 cached, and (2·64 + 12) + (3·64 + 12) = 344 for the least
    recomputation. Guards `>=` for `>`, the factor moved, a term of the bound mis-priced and a check that speaks
    where the sizes say nothing."""
    assert ex06_generate._flops(dict(L=1, H=1, H_kv=1, d_h=2, d=2, d_ffn=4, V=3), 1, 2, 2) == (284, 344)
    config = dict(L=2, H=4, H_kv=1, d_h=8, d=32, d_ffn=128, V=64, S_max=32)
    case = {"config": config, "prompt": {"$long": [[0] * 24] * 2}, "D": 8}
    cached, least = ex06_generate._flops(config, 2, 24, 8)
    assert least >= 2 * ex06_generate.FACTOR * cached
    assert ex06_generate._recomputed(case, {"flops": ex06_generate.FACTOR * cached, "largest": 0}) is None
    assert ex06_generate._recomputed(case, {"flops": ex06_generate.FACTOR * cached + 1, "largest": 0}) == (
        "the answer did several times the matrix-product FLOPs the cache needs (the prompt and the tokens before "
        "were recomputed at every step): the question asks for one prefill that fills the cache, then decode "
        "steps that each compute the new token alone")
    small = {"config": config, "prompt": {"$long": [[0] * 4] * 2}, "D": 2}
    assert ex06_generate._recomputed(small, {"flops": 10**15, "largest": 0}) is None


def test_a_triple_and_a_replacement_are_read_as_the_questions_say() -> None:
    """ex13's (m, l, o) triple walks the answer's three items, and ex14's replacement is None exactly where the
    package's is, a distribution compared value by value elsewhere. Guards a triple that never reads the answer,
    and a replacement check that lets None pass for a rule that has a replacement (or a tensor for one that has
    none)."""
    three = triple(("m", "l", "o"), (int_list, int_list, int_list))
    assert three([[1], [2], [3]], [[1], [2], [3]]) is None
    assert three([[1], [2], [3]], [[1], [5], [3]]) == "l: expected [2], got [5]"
    r = _tensor([0.25, 0.75])
    assert ex14._replacement(None, None) is None
    assert ex14._replacement(r, [0.25, 0.75]) is None
    assert ex14._replacement(None, r).startswith("expected None, got tensor of shape [2]")
    assert ex14._replacement(r, None).startswith("expected a distribution of shape [2], got None")
    assert ex14._replacement(r, [0.75, 0.25]).startswith("values differ")


def test_the_disaggregation_checks_say_what_was_returned() -> None:
    """ex16's checks quote the student's value and the expected one (guards a message with None in place)."""
    assert ex16._transfer_check((8.0, 0.5), "x") == "expected a pair (layer by layer, whole) of seconds, got 'x'"
    assert ex16._transfer_check((8.0, 0.5), (8.0, 0.25)).startswith(
        "the whole cache in one message: expected 0.5 s, got 0.25: one latency")
    assert ex16._transfer_check((8.0, 0.5), (2.0, 0.5)).startswith(
        "whole message right; layer by layer: expected 8 s after the prefill, got 2.0: a layer's message starts")
    assert ex16._transfer_check((8.0, 0.5), [8.0, 0.5]) is None
    assert ex16._transfer_check((8.0, 0.5), 5) == "expected a pair (layer by layer, whole) of seconds, got 5"
    assert ex16._transfer_check((8.0, 1.5e-05), (8.0, 2.0)) == (
        "the whole cache in one message: expected 1.5e-05 s, got 2.0: one latency, plus every layer's keys and "
        "values (for the heads that keep their own) in bf16 over the link's bandwidth")
    assert ex16._transfer_check((1.5e-05, 0.5), (8.0, 0.5)) == (
        "whole message right; layer by layer: expected 1.5e-05 s after the prefill, got 8.0: a layer's message "
        "starts when its layer's prefill has ended AND the link has finished the message before, and pays its "
        "own latency")
    assert ex16._transfer_check((8.0, 0.5), (8.0, "0.5")).startswith("the whole cache in one message")
    assert ex16._transfer_check((8.0, 0.5), ("8", 0.5)).startswith("whole message right")
    assert ex16._transfer_check((8.0, 0.5), (True, 0.5)).startswith("whole message right")
    # A long value is cut to 80 characters, the last three an ellipsis; one of 80 is shown whole.
    assert ex16._transfer_check((8.0, 0.5), "x" * 78).endswith("got '" + "x" * 78 + "'")
    assert ex16._transfer_check((8.0, 0.5), "x" * 79).endswith("got '" + "x" * 76 + "...")
    route = ex16.EXERCISE.question("q3").compare
    trace = [[0, 0, 30], [1, 0, 12]]
    assert route(trace, [[0, 0, 30], [1, 0, 12]]) is None and route(trace, ((0, 0, 30), (1, 0, 12))) is None
    shape = "expected one [prefill worker, decode worker, TTFT in ms] of ints per request (2 of them), got "
    assert route(trace, [[0, 0, 30]]) == shape + "[[0, 0, 30]]"
    assert route(trace, None) == shape + "None" and route(trace, 5) == shape + "5"  # no TypeError on a non-list
    assert route(trace, ["x" * 300]) == shape + repr(["x" * 300])[:200]  # a long answer cut at 200 characters
    assert route(trace, [[0, 0, 30], [0, 1, 12]]) == (  # the prefill worker named, not the decode one
        "request 1: prefill worker 0, the driver picks 1: at the arrival, count the prompt tokens of the requests "
        "still prefilling on each worker (whole prompts, until their prefill ends); the fewest wins, the lowest "
        "number on a tie")
    assert route(trace, [[0, 0, 30], [1, 1, 12]]) == (
        "request 1: decode worker 1, the driver picks 0: count the requests each decode worker holds at the arrival "
        "(from their arrival to their last token); the fewest wins, the lowest number on a tie")
    assert route(trace, [[0, 0, 30], [1, 0, 42]]) == (
        "request 1: time to first token 42 ms, expected 12 ms: from the arrival to the end of its prefill, which "
        "starts when both the request and its worker are there")
    assert route(trace, [[0, 0, 30.0], [1, 0, 12]]).startswith("expected one [")
    assert route(trace, _tensor([[0, 0, 30], [1, 0, 12]])) is None
    receive = ex16.EXERCISE.question("q4").compare
    assert receive([[3, 1], _tensor([[1.0]])], [[1, 3], _tensor([[1.0]])]) == "table: expected [3, 1], got [1, 3]"
    assert ex15._which("traffic", "overhead").startswith("expected 'traffic', got 'overhead': compare the floor "
                                                         "n_ops·t_op with the step's traffic time, the larger")
    assert ex14._tokens([1, 2, 3], [1, 2]).startswith("expected [1, 2, 3], got [1, 2]: the final token is missing")


def test_a_shape_mismatch_names_the_shape_returned() -> None:
    assert "[3]" in conforms({"$tensor": [1, 2, 3], "shape": [3]}, _tensor([[0.0, 0.0]]))
    assert "?" in conforms({"$tensor": [1, 2, 3], "shape": "3"}, _tensor([[0.0, 0.0]]))


def test_snapkv_cut_and_tie_gap_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    """ex18 Q2's replay on votes worked by hand: the window kept whole, the budget - window best keys before it
    joined to it, and the gap at the cut that rules out near ties (guards the window ranked with the rest, the
    gap taken between the wrong pair, and a tie at the cut let through, where a float32 answer could keep the
    other key)."""
    from minigpt.exercises import ex18_snapkv

    votes = torch.tensor([0.1, 0.5, 0.2, 0.05, 0.3, 9.0], dtype=torch.float64)
    monkeypatch.setattr(ex18_snapkv, "_votes", lambda q, k, window, kernel, wrong=None: votes.clone())
    q = k = torch.zeros(6, 2)
    kept, gap = ex18_snapkv._select(q, k, window=1, kernel=3, budget=3)
    assert kept == [1, 4, 5] and gap == pytest.approx(0.1)
    assert ex18_snapkv._select(q, k, window=1, kernel=3, budget=3, wrong="lowest")[0] == [0, 3, 5]
    assert ex18_snapkv._select(q, k, window=2, kernel=3, budget=2) == ([4, 5], math.inf)  # nothing before it
    votes[2] = 0.3  # keys 2 and 4 tie at the cut
    case = {"q": q, "k": k, "window": 1, "kernel": 3, "budget": 3}
    monkeypatch.setattr(ex18_snapkv, "build", lambda value: value)
    assert not ex18_snapkv._separates(case, None)


def _latent_sizes(H: int, d_h: int, d_c: int, d_rope: int, S: int) -> dict:
    return {"c": {"$randn": [S, d_c]}, "k_rope": {"$randn": [S, d_rope]}, "w_uk": {"$randn": [H, d_h, d_c]}}


@pytest.mark.parametrize(("H", "d_h", "d_c", "d_rope", "S", "expected"),
                         [(1, 16, 2, 2, 163, False), (1, 16, 2, 2, 164, True),
                          (1, 10, 8, 2, 1000, False), (1, 11, 8, 2, 1000, True)])
def test_the_absorbed_method_check_starts_exactly_at_its_thresholds(H: int, d_h: int, d_c: int, d_rope: int, S: int,
                                                                     expected: bool) -> None:
    """ex18 Q1's method check at its two edges. With H = 1, d_h = 16, d_c = d_rope = 2 (d = 16) the rebuilt keys'
    FLOPs, 2·S·d_c·d_h = 64·S, stay under twice the most an absorbed step spends, 2·(4d² + 4·d_c·d² + 2·d·H·d_rope
    + 4·H·d_h·d_c + 2·H·S·(2·d_c + d_rope)) = 6,528 + 24·S, up to S = 163 (10,432 against 10,440) and pass it at
    164. With d_c + d_rope = 10 the rebuilt tensor S·H·d_h is no larger than the latents and RoPE keys side by
    side, S·(d_c + d_rope), at d_h = 10 and larger at d_h = 11. Guards `>=` for `>` in either comparison, a
    coefficient of the absorbed FLOPs moved, twice made three times, and d_rope left out of the widths."""
    work = {"largest": S * H * d_h, "flops": 2 * S * d_c * H * d_h}
    assert (ex18_latent._decompressed(_latent_sizes(H, d_h, d_c, d_rope, S), work) is not None) is expected


@pytest.mark.parametrize("S,d_c,expected", [(700, 4, True), (600, 4, True), (403, 4, False), (700, 28, False),
                                            (20, 4, False)])
def test_the_absorbed_method_check_applies_only_where_the_sizes_tell(S: int, d_c: int, expected: bool) -> None:
    """ex18 Q1's method check speaks only where rebuilding the keys outweighs the absorbed step, as in the question's
    first case (H = 2, d_h = 32, d_rope = 4, d_c = 4, S from 600 to 700). At S = 403 the rebuild's FLOPs (512·S)
    stay under twice the absorbed step's (167,936 + 96·S), with d_c + d_rope = d_h the latents are no smaller
    than the heads, and at S = 20 neither: there only the values count. Guards the absorbed FLOPs mis-priced and
    the conditions joined by `or`."""
    case = _latent_sizes(2, 32, d_c, 4, S)
    rebuilt = {"largest": S * 64, "flops": 2 * S * d_c * 64}
    assert (ex18_latent._decompressed(case, rebuilt) is not None) is expected
    if expected:  # the rebuilt tensor alone, or its FLOPs alone, at exactly their size, is the naive path
        for work in ({"largest": S * 64, "flops": 0}, {"largest": 0, "flops": 2 * S * d_c * 64}):
            assert ex18_latent._decompressed(case, work) == (
                "the keys or values were rebuilt from the latents (a tensor of S·H·d_h elements, or the FLOPs of that "
                "product, was measured): the question asks for the absorbed path, which attends over the latents "
                "themselves")
        assert ex18_latent._decompressed(case, {"largest": S * 64 - 1, "flops": 2 * S * d_c * 64 - 1}) is None




def test_a_preset_record_reads_its_fields_and_refuses_the_rest() -> None:
    """The read-only records the sandbox passes for `MODELS` and `HARDWARE` (`wire_inputs.Record`): fields by
    attribute, a missing one named with the fields there are, no assignment (guards a record built with its
    fields under another name, which recurses, or without its kind)."""
    from minigpt.exercises.wire_inputs import Record, records

    r = records("ModelPreset", {"tiny": {"L": 2, "d": 64}})["tiny"]
    assert isinstance(r, Record) and (r.L, r.d) == (2, 64) and repr(r) == "ModelPreset(L=2, d=64)"
    with pytest.raises(AttributeError, match=r"^ModelPreset has no field 'H'; its fields are \['L', 'd'\]$"):
        r.H  # noqa: B018
    with pytest.raises(AttributeError, match="^ModelPreset is read-only$"):
        r.L = 3


def test_ex07_batch_and_bound_checks_say_what_was_returned() -> None:
    """ex07's own comparisons, word for word: Q2's batch or None (a None where a batch was due, a batch where
    None was), Q3's bound name (a string that is not a bound, the other bound). Guards a message that drops the
    student's value or the expected one, and a wrong bound name that passes (the other bound accepted)."""
    from minigpt.exercises import ex07

    assert ex07.exact_int_or_none(None, None) is None and ex07.exact_int_or_none(12, 12) is None
    assert ex07.exact_int_or_none(None, 12) == "expected None (no batch reaches the ridge point), got 12"
    assert ex07.exact_int_or_none(None, "12") == "expected None (no batch reaches the ridge point), got '12'"
    assert ex07.exact_int_or_none(1234, None) == "expected the integer 1,234, got None"
    assert ex07.exact_int_or_none(12, 13) == exact_int(12, 13) is not None
    assert ex07._bound_name("memory", "memory") is None and ex07._bound_name("compute", "compute") is None
    assert ex07._bound_name("memory", "compute") == "expected 'memory', got 'compute'"
    assert ex07._bound_name("compute", "memory") == "expected 'compute', got 'memory'"
    assert ex07._bound_name("memory", "Memory") == (
        "expected the string 'memory' ('memory' or 'compute'), got 'Memory'")
