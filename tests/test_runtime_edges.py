"""Edges of the runtime's small modules that a sampled mutation run showed unchecked (issue 36). Each test names
the bug it guards: a bound off by one, a refusal that names nothing, a law whose weights do not sum to one, a
buffer saved with the model, a 1-D prompt read as two rows."""

from __future__ import annotations

import pytest
import torch

from minigpt import MiniGPT, ModelConfig, generate
from minigpt.runtime.device import default_device
from minigpt.runtime.exact_draws import ExactDraws
from minigpt.runtime.generate import Sampling
from minigpt.runtime.slot_cache import SlotKVCache
from minigpt.runtime.static_cache import StaticKVCache
from minigpt.runtime.tokenizer import Tokenizer

TINY = ModelConfig(L=1, H=2, H_kv=2, d_h=4, d_ffn=16, V=11, S_max=12)


def test_one_slot_is_a_pool() -> None:
    """A pool of a single sequence is valid (batch 1); zero is refused by name."""
    assert SlotKVCache(TINY, slots=1).k.shape[1] == 1
    with pytest.raises(ValueError, match="^slots must be a positive integer, got 0$"):
        SlotKVCache(TINY, slots=0)


def test_top_k_must_be_an_integer() -> None:
    """Sampling(top_k=2.5) is refused before any step (torch.topk would fail mid-generation)."""
    for bad in (2.5, 0, True, "3"):
        with pytest.raises(ValueError, match="^top_k must be None or an integer >= 1"):
            Sampling(temperature=1.0, top_k=bad)
    assert Sampling(temperature=1.0, top_k=1).top_k == 1


def test_a_one_dimensional_prompt_is_one_sequence() -> None:
    """A prompt tensor of shape [P] is one row of P tokens, whatever P's parity."""
    torch.manual_seed(0)
    model = MiniGPT(TINY).eval()
    for P in (3, 4):
        prompt = torch.arange(1, P + 1)
        out = generate(model, prompt, 2)
        assert len(out.tokens) == 1 and len(out.tokens[0]) == 2 and out.meters.prompt_tokens == P
        assert out.tokens == generate(model, prompt.view(1, -1), 2).tokens


def test_refusals_name_what_they_got() -> None:
    """The refusal of a bad forward input and of bad tokenizer data names the type it got."""
    model = MiniGPT(TINY)
    with pytest.raises(ValueError, match=r"got list$"):
        model([[1, 2]])
    with pytest.raises(ValueError, match=r"got list$"):
        Tokenizer.from_dict([1, 2])


def test_a_certain_coin_has_weight_one() -> None:
    """A coin of probability 0 or 1 has one outcome of weight 1, so the law of a procedure sums to one."""
    draws = ExactDraws()
    law = draws.run(lambda: tuple(draws.coin(torch.tensor([0.0, 1.0, 0.25])).tolist()))
    assert sum(w for _, w in law) == pytest.approx(1.0)
    assert dict(law) == {(False, True, True): 0.25, (False, True, False): 0.75}


def test_the_static_caches_row_index_is_not_part_of_its_state() -> None:
    """`rows` is derived from S_max: it is not saved with a state_dict (a checkpoint holds only the cache)."""
    cache = StaticKVCache(TINY, 1)
    assert "rows" not in cache.state_dict() and hasattr(cache, "rows")


def test_the_device_variable_takes_cpu_cuda_and_cuda_n_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIGPT_DEVICE", "cpu")
    assert default_device() == torch.device("cpu")
    for good in ("cuda", "cuda:0"):
        monkeypatch.setenv("MINIGPT_DEVICE", good)
        if torch.cuda.is_available():
            assert default_device().type == "cuda"
        else:
            with pytest.raises(RuntimeError, match="but torch.cuda.is_available"):
                default_device()
    monkeypatch.setenv("MINIGPT_DEVICE", "mps")
    with pytest.raises(ValueError, match="must be 'cpu', 'cuda' or 'cuda:N'"):
        default_device()


def test_without_the_variable_the_device_is_cuda_when_present_else_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default a reader without MINIGPT_DEVICE gets: a misspelled fallback ("CPU") would fail every run on
    a machine without a GPU."""
    monkeypatch.delenv("MINIGPT_DEVICE", raising=False)
    assert default_device() == torch.device("cuda" if torch.cuda.is_available() else "cpu")


def test_a_procedure_whose_replay_sees_other_options_is_named() -> None:
    """`run` replays a procedure along each path; one whose draws depend on something else than the draws
    before them (here a counter) cannot be enumerated, and the error says why."""
    draws, calls = ExactDraws(), []

    def unsteady() -> int:
        calls.append(1)
        return int(draws.draw(torch.ones(1 + len(calls))))

    with pytest.raises(RuntimeError, match="^the procedure is not deterministic given its draws: a replay saw "
                                           "other options$"):
        draws.run(unsteady)


def test_a_slot_pool_takes_its_own_s_max() -> None:
    """`S_max` below the model's gives shorter slots (a smaller pool), not the model's S_max ignored."""
    pool = SlotKVCache(TINY, slots=2, S_max=5)
    assert pool.S_max == pool.page_size == 5 and pool.k.shape == (TINY.L, 2, TINY.H_kv, 5, TINY.d_h)
