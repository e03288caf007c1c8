"""The book's cost formulas as pure functions (no torch): ``from minigpt import costs``.

Every formula takes keyword arguments named by the notation table (L, H_kv, d_h, d, d_ffn, V, B,
P, D, S, s, bandwidth, peak_flops), returns an exact ``int`` where the quantity is a count, and
names the book equation it implements. ``minigpt/web/costs/`` (one script per module) mirrors every name in `FORMULAS`
for the browser explorers; ``tests/test_costs_js.py`` keeps the two equal and fails on a formula
without a twin.

Counting convention: a multiply-add counts as 2 FLOPs (as hardware peak rates and
``torch.utils.flop_counter.FlopCounterMode`` do); the course page "Prefill vs Decode: two phases of
one forward" counts 1, and its boxed formulas are the ``*_macs`` functions.

Optional model symbols default to the course page's case: ``H_kv=None, d_h=None`` is multi-head
attention (H_kv·d_h = d; give both or neither), ``d_ffn=None`` is 4·d, ``V=0`` leaves the LM head
out, ``B=1``. A model's symbols reach a formula through `of` / `evaluate` (module `shape`).

Modules, by chapter: `flops` (1), `params` and `memory` (2), `traffic`, `roofline` and `parallel` (3),
`wall_clock` and `text_rates` (4), `batching` (7), `kv_storage`, `attention_kernels` and `overhead` (Part III), `format`
(the prose), `presets` (published models and chips).
"""

from minigpt.costs.attention_kernels import (
    flash_attention_hbm_bytes,
    flash_attention_hbm_saving,
    flash_decoding_best_splits,
    flash_decoding_num_splits,
    flash_decoding_speedup,
    flash_decoding_time,
    flash_decoding_work_items,
    speculative_batch_tokens_per_pass,
    speculative_best_gamma,
    speculative_speedup,
    speculative_tokens_per_pass,
    standard_attention_hbm_bytes,
    tiled_attention_flops,
    tiled_attention_hbm_bytes,
)
from minigpt.costs.batching import batching_gain, decode_tok_s, ideal_batching_tok_s, kv_read_share
from minigpt.costs.disaggregation import (
    best_pd_ratio,
    disagg_goodput_bound,
    disagg_rate,
    goodput,
    kv_transfer_bytes,
    kv_transfer_time,
    layerwise_transfer_exposed,
    slo_attainment,
)
from minigpt.costs.flops import (
    cache_saving_factor,
    decode_flops,
    decode_macs_seed,
    decode_step_flops,
    decode_step_macs,
    generation_flops,
    layer_flops,
    lm_head_flops,
    no_cache_attention_share,
    no_cache_crossover_D,
    no_cache_flops,
    no_cache_macs_seed,
    prefill_attention_share,
    prefill_crossover_P,
    prefill_flops,
    prefill_flops_by_term,
    prefill_macs,
)
from minigpt.costs.format import (
    fmt_bytes,
    fmt_count,
    fmt_duration,
    fmt_fixed,
    fmt_flops,
    fmt_int,
    fmt_memory_fit,
    fmt_percent,
    fmt_sig,
)
from minigpt.costs.kv_storage import (
    fp8_kv_bytes,
    kivi_kv_bytes,
    kv_storage_bytes,
    paged_blocks,
    paged_fork_saved_blocks,
    paged_slack_tokens,
    quantized_kv_bytes,
)
from minigpt.costs.latent import (
    bounded_decode_step_bytes,
    latent_kv_cache_bytes,
    mla_absorb_crossover_T,
    mla_attention_bytes,
    mla_attention_flops,
    mla_attention_time,
    mla_layer_flops,
    streaming_kv_cache_bytes,
)
from minigpt.costs.memory import (
    FIT_RESERVE,
    MemoryFit,
    chips_needed,
    fits_in_memory,
    int8_kv_bytes,
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_heads,
    latent_kv_bytes_per_token,
    max_batch,
    max_context,
    memory_budget,
    memory_fit,
    moe_active_params,
    moe_decode_params,
    moe_expected_experts,
    weight_bytes,
    window_kv_cache_bytes,
)
from minigpt.costs.overhead import (
    overhead_bound,
    overhead_crossover_params,
    overhead_floor_s,
    overhead_step_model,
    overhead_step_time,
)
from minigpt.costs.parallel import (
    allreduce_time,
    pipeline_time,
    ring_allreduce_beta,
    tp_allreduce_bytes,
    tp_alpha_beta_step_time,
    tp_collective_bytes,
    tp_collectives_per_step,
    tp_decode_step_time,
    tp_kv_cache_bytes,
    tp_kv_heads_per_rank,
    tp_per_gpu_bandwidth,
    tp_replay_step_time,
)
from minigpt.costs.params import (
    config_param_count,
    kv_heads_params,
    kv_projection_params,
    non_embedding_matrix_params,
    param_count,
    params_by_component,
)
from minigpt.costs.preemption import recompute_time, step_time_with_swap, swap_time
from minigpt.costs.roofline import (
    arithmetic_intensity,
    attainable_flops,
    attention_bytes,
    attention_flops,
    attention_intensity,
    critical_batch,
    decode_intensity,
    decode_step_time,
    decode_tok_s_ceiling,
    prefill_intensity,
    ridge_point,
    roofline_bound,
    roofline_time,
)
from minigpt.costs.serving import (
    PrefixHit,
    mixed_step_time,
    prefix_hit_ttft,
    static_batch_steps,
    static_batch_tok_s,
    static_batch_utilisation,
)
from minigpt.costs.shape import MODEL_SYMBOLS, evaluate, model_args, of
from minigpt.costs.text_rates import chars_per_second
from minigpt.costs.traffic import decode_step_bytes, gqa_decode_gain, last_decode_step_floor_s, prefill_bytes
from minigpt.costs.wall_clock import WallClock, cost_per_million_tokens, decode_time_with_kv, wall_clock

# The formulas a reader sees computed: each has a twin of the same name in minigpt/web/costs/<module>.js.
FORMULAS = (
    "layer_flops", "lm_head_flops", "prefill_flops", "decode_step_flops", "decode_flops", "generation_flops",
    "no_cache_flops", "cache_saving_factor", "prefill_macs", "decode_step_macs", "decode_macs_seed",
    "no_cache_macs_seed", "prefill_attention_share", "prefill_crossover_P",
    "params_by_component", "param_count", "non_embedding_matrix_params",
    "weight_bytes", "kv_bytes_per_token", "kv_cache_bytes", "int8_kv_bytes", "fits_in_memory", "max_context",
    "max_batch",
    "decode_step_bytes", "prefill_bytes", "arithmetic_intensity", "ridge_point", "attainable_flops",
    "decode_tok_s_ceiling", "prefill_intensity", "decode_intensity",
    "wall_clock",
    "fmt_bytes", "fmt_flops", "fmt_count",
    # the explorers' formulas (Chapters 1-4, 7) and formatters
    "last_decode_step_floor_s", "memory_budget", "kv_heads", "memory_fit", "roofline_time", "roofline_bound",
    "decode_step_time", "decode_tok_s", "batching_gain", "ideal_batching_tok_s", "kv_read_share", "chars_per_second",
    "fmt_fixed", "fmt_int", "fmt_percent", "fmt_duration", "fmt_memory_fit",
    # Chapter 3: attention's intensity, tensor parallelism; Chapter 4: cost per token; Chapter 6: crossovers
    "attention_flops", "attention_bytes", "attention_intensity", "tp_allreduce_bytes", "tp_decode_step_time",
    "cost_per_million_tokens", "decode_time_with_kv",
    "no_cache_attention_share", "no_cache_crossover_D",
    # Part III: how the cache is stored
    "quantized_kv_bytes", "kivi_kv_bytes", "fp8_kv_bytes", "kv_storage_bytes", "paged_blocks", "paged_slack_tokens",
    # Chapter 2: sliding windows, latent KV, mixtures of experts; Chapter 1: prefill by term
    "window_kv_cache_bytes", "latent_kv_bytes_per_token", "moe_active_params", "moe_expected_experts",
    "prefill_flops_by_term", "moe_decode_params",
    # Chapter 7: the critical batch with the KV term
    "critical_batch",
    # Part III: attention kernels (tiling, split-S decode) and speculative decoding
    "tiled_attention_flops", "standard_attention_hbm_bytes", "flash_attention_hbm_bytes",
    "flash_decoding_work_items", "flash_decoding_speedup", "speculative_tokens_per_pass",
    "speculative_batch_tokens_per_pass", "speculative_speedup",
    "flash_attention_hbm_saving", "flash_decoding_best_splits",  # Chapters 15-16: the explorers' ratio and best K
    "speculative_best_gamma",  # Chapter 17: the best γ, Eq. (17.3)
    "paged_fork_saved_blocks",  # Chapter 11: n samples sharing one prompt, Eq. (11.3)
    "mixed_step_time",  # Part III: serving (Chapters 12-14)
    "static_batch_steps", "static_batch_utilisation", "static_batch_tok_s",  # Chapter 12, Eqs. (12.1)-(12.2)
    "prefix_hit_ttft",  # Chapter 13, Eq. (13.1)
    "swap_time", "recompute_time", "step_time_with_swap",  # Chapter 12: preemption, Eqs. (12.3)-(12.5)
    "overhead_floor_s", "overhead_step_time", "overhead_bound", "overhead_crossover_params",
    "overhead_step_model",  # Chapter 18
    "kv_projection_params", "kv_heads_params", "gqa_decode_gain", "chips_needed",  # Chapter 9, Eqs. (9.2)-(9.4)
    "tiled_attention_hbm_bytes",  # Chapter 15, Eq. (15.1): both loop orders
    "flash_decoding_time", "flash_decoding_num_splits",  # Chapter 16, Eqs. (16.1)-(16.2)
    "kv_transfer_bytes", "kv_transfer_time", "slo_attainment", "goodput",  # Chapter 19, Eqs. (19.1)-(19.4)
    "layerwise_transfer_exposed",  # Chapter 19, a layer-by-layer transfer behind the prefill
    "disagg_rate", "best_pd_ratio", "disagg_goodput_bound",  # Chapter 19, Eqs. (19.5)-(19.6)
    "tp_collectives_per_step", "tp_collective_bytes", "tp_kv_heads_per_rank", "tp_kv_cache_bytes",
    "allreduce_time", "ring_allreduce_beta", "tp_alpha_beta_step_time", "tp_per_gpu_bandwidth",
    "pipeline_time", "tp_replay_step_time",  # Chapter 20, Eqs. (20.1)-(20.7)
    # Chapters 21-22: latent attention's two decode paths (Eqs. 21.1-21.4), caches that stop growing (22.1)
    "latent_kv_cache_bytes", "mla_layer_flops", "mla_attention_flops", "mla_attention_bytes", "mla_attention_time",
    "mla_absorb_crossover_T", "streaming_kv_cache_bytes", "bounded_decode_step_bytes",
)

__all__ = [*FORMULAS, "FIT_RESERVE", "FORMULAS", "MODEL_SYMBOLS", "MemoryFit", "PrefixHit", "WallClock",
           "config_param_count", "evaluate", "fmt_sig", "model_args", "of"]
