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
    # traffic: Eq. (3.5) and the traffic table of Chapter 1
    (costs.decode_step_bytes, dict(weight_bytes=100, kv_bytes_per_token=8, S=3, B=2),
     dict(weight_bytes=0, kv_bytes_per_token=0, S=0, B=1)),
    (costs.prefill_bytes, dict(weight_bytes=100, P=3, d=8, s=2, B=2, kv_bytes_per_token=8),
     dict(weight_bytes=0, kv_bytes_per_token=0, B=1, P=1, d=1, s=1)),
    (costs.last_decode_step_floor_s, dict(L=2, d=8, V=5, P=3, D=4, bandwidth=1e9, s=2),
     dict(L=1, d=1, V=0, P=1, D=1, s=1)),
    (costs.gqa_decode_gain, dict(N_params=10**6, L=2, d=4, d_h=1, H_kv=1, s=2, S=10, B=2),
     dict(L=1, d=1, d_h=1, H_kv=1, s=1, S=0, B=1)),
    # params: Eq. (2.3)'s N and Eq. (9.3)
    (costs.params_by_component, dict(L=2, d=8, V=5, S_max=16), dict(L=1, d=1, V=1, S_max=1, d_ffn=1)),
    (costs.param_count, dict(L=2, d=8, V=5, S_max=16), dict(L=1, d=1, V=1, S_max=1, d_ffn=1)),
    (costs.non_embedding_matrix_params, dict(L=2, d=8), dict(L=1, d=1, d_ffn=1)),
    (costs.kv_projection_params, dict(L=2, d=8, H_kv=1, d_h=1), dict(L=1, d=1, H_kv=1, d_h=1)),
    (costs.kv_heads_params, dict(N_params=10**6, L=2, d=8, d_h=1, H_kv=2, H_kv_new=4),
     dict(L=1, d_h=1, H_kv=1)),
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


def test_the_checks_the_bound_table_cannot_reach():
    """A bandwidth of zero on both paths of the last step's floor (D = 1 has no step but still a
    chip), and N_params below one: each refused by name."""
    for D in (1, 4):
        with pytest.raises(ValueError, match="^bandwidth must be a finite number > 0"):
            costs.last_decode_step_floor_s(L=2, d=8, V=5, P=3, D=D, bandwidth=0)
    with pytest.raises(ValueError, match="^N_params must be an integer >= 1, got 0$"):
        costs.kv_heads_params(N_params=0, L=2, d=8, d_h=1, H_kv=2, H_kv_new=4)
    with pytest.raises(ValueError, match="^N_params must hold the 64 K/V projection parameters"):
        costs.kv_heads_params(N_params=63, L=2, d=8, d_h=1, H_kv=2, H_kv_new=4)
    assert costs.kv_heads_params(N_params=64, L=2, d=8, d_h=1, H_kv=2, H_kv_new=4) == 128
