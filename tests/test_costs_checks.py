"""Every integer symbol a cost formula takes is checked, by name, at the bound the notation gives it.

The formulas refuse a size below its bound with `ValueError("<name> must be an integer >= <bound>")`
(`minigpt/costs/_check.py`), and accept the bound itself. Mutation testing found the checks of most
formulas reached by no test: a check that names another symbol (or none), a bound off by one (an
empty prompt accepted, a one-layer model refused), or a check that tests a constant instead of the
argument survived every test. Each row below is one formula with a valid call and the bound of each
integer symbol; each symbol is tried at its bound (allowed) and one below (refused, by its name).
"""

from __future__ import annotations

import pytest

from minigpt import costs

MODEL = dict(L=2, d=8)
#: (formula, a valid call, {symbol: its smallest allowed value})
CASES = [
    (costs.layer_flops, dict(T=3, S=2, d=8, d_ffn=16), dict(T=1, S=0, d=1, B=1, d_ffn=1)),
    (costs.lm_head_flops, dict(d=8, V=5, T=2, B=2), dict(d=1, V=0, T=0, B=1)),
    (costs.prefill_flops, dict(P=3, V=5, **MODEL), dict(L=1, P=1, d=1, V=0, B=1, d_ffn=1)),
    (costs.decode_step_flops, dict(S=3, V=5, **MODEL), dict(L=1, S=0, d=1, V=0, B=1, d_ffn=1)),
    (costs.decode_flops, dict(P=3, D=4, V=5, **MODEL), dict(L=1, P=1, D=1, d=1, V=0, B=1, d_ffn=1)),
    (costs.generation_flops, dict(P=3, D=4, V=5, **MODEL), dict(L=1, P=1, D=1, d=1, V=0, B=1)),
    (costs.no_cache_flops, dict(P=3, D=4, V=5, **MODEL), dict(L=1, P=1, D=1, d=1, V=0, B=1, d_ffn=1)),
    (costs.cache_saving_factor, dict(P=3, D=4, V=5, **MODEL), dict(L=1, P=1, D=1, d=1, V=0, B=1)),
    (costs.prefill_macs, dict(P=3, **MODEL), dict(L=1, P=1, d=1)),
    (costs.decode_step_macs, dict(S=3, **MODEL), dict(L=1, S=0, d=1)),
    (costs.decode_macs_seed, dict(P=3, D=4, **MODEL), dict(L=1, P=1, D=1, d=1)),
    (costs.no_cache_macs_seed, dict(P=3, D=4, **MODEL), dict(L=1, P=1, D=1, d=1)),
    (costs.prefill_attention_share, dict(P=3, d=8), dict(P=1, d=1)),
    (costs.prefill_crossover_P, dict(d=8), dict(d=1)),
    (costs.no_cache_attention_share, dict(P=3, D=4, d=8), dict(P=1, D=1, d=1)),
    (costs.no_cache_crossover_D, dict(d=8), dict(d=1)),
    (costs.prefill_flops_by_term, dict(P=3, V=5, **MODEL), dict(L=1, P=1, d=1, V=0, B=1, d_ffn=1)),
]
ROWS = [(fn, call, name, bound) for fn, call, bounds in CASES for name, bound in bounds.items()]


@pytest.mark.parametrize(("fn", "call", "name", "bound"), ROWS,
                         ids=[f"{fn.__name__}-{name}" for fn, _, name, _ in ROWS])
def test_each_integer_symbol_is_refused_below_its_bound_by_name(fn, call, name, bound):
    fn(**{**call, name: bound})  # the bound itself is a valid size
    with pytest.raises(ValueError, match=rf"^{name} must be an integer >= {bound}, got {bound - 1}$"):
        fn(**{**call, name: bound - 1})
    with pytest.raises(ValueError, match=rf"^{name} must be an integer >= {bound}, got {bound + 0.5}$"):
        fn(**{**call, name: bound + 0.5})


def test_prefill_by_term_checks_B_before_the_other_terms():
    """`prefill_flops_by_term` checks B itself, first: with only the LM head's check left, a call
    with two bad symbols blamed the FFN width instead of the batch."""
    with pytest.raises(ValueError, match="^B must be an integer >= 1, got 0$"):
        costs.prefill_flops_by_term(L=2, P=3, d=8, B=0, d_ffn=0)
