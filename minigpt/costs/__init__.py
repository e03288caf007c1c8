"""The book's cost formulas as pure functions (no torch): ``from minigpt import costs``.

Every formula takes keyword arguments named by the notation table (L, H_kv, d_h, d, d_ffn, V, B,
P, D, S, s, bandwidth, peak_flops), returns an exact ``int`` where the quantity is a count, and
names the book equation it implements. ``minigpt/web/costs.js`` mirrors every name in `FORMULAS`
for the browser explorers; ``tests/test_costs_js.py`` keeps the two equal and fails on a formula
without a twin.

Counting convention: a multiply-add counts as 2 FLOPs (as hardware peak rates and
``torch.utils.flop_counter.FlopCounterMode`` do); the course page "Prefill vs Decode: two phases of
one forward" counts 1, and its boxed formulas are the ``*_macs`` functions.

Optional model symbols default to the course page's case: ``H_kv=None, d_h=None`` is multi-head
attention (H_kv·d_h = d; give both or neither), ``d_ffn=None`` is 4·d, ``V=0`` leaves the LM head
out, ``B=1``. A model's symbols reach a formula through `of` / `evaluate` (module `shape`).

Modules, by chapter: `flops` (1), `params` and `memory` (2), `traffic` and `roofline` (3),
`wall_clock` and `text_rates` (4), `format` (the prose), `presets` (published models and chips).
"""

from minigpt.costs.flops import (
    cache_saving_factor,
    decode_flops,
    decode_macs_seed,
    decode_step_flops,
    decode_step_macs,
    generation_flops,
    layer_flops,
    lm_head_flops,
    no_cache_flops,
    no_cache_macs_seed,
    prefill_attention_share,
    prefill_crossover_P,
    prefill_flops,
    prefill_macs,
)
from minigpt.costs.format import fmt_bytes, fmt_count, fmt_flops
from minigpt.costs.memory import (
    fits_in_memory,
    int8_kv_bytes,
    kv_bytes_per_token,
    kv_cache_bytes,
    max_batch,
    max_context,
    weight_bytes,
)
from minigpt.costs.params import non_embedding_matrix_params, param_count, params_by_component
from minigpt.costs.roofline import (
    arithmetic_intensity,
    attainable_flops,
    critical_batch,
    decode_intensity,
    decode_step_time,
    decode_tok_s_ceiling,
    prefill_intensity,
    ridge_point,
)
from minigpt.costs.shape import MODEL_SYMBOLS, evaluate, model_args, of
from minigpt.costs.traffic import decode_step_bytes, prefill_bytes
from minigpt.costs.wall_clock import WallClock, wall_clock

# The formulas a reader sees computed: each has a twin of the same name in minigpt/web/costs.js.
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
    "decode_step_time", "critical_batch",
)

__all__ = [
    "FORMULAS", "MODEL_SYMBOLS", "WallClock", "arithmetic_intensity", "attainable_flops",
    "cache_saving_factor", "decode_flops", "decode_intensity", "decode_macs_seed", "decode_step_bytes",
    "decode_step_flops", "decode_step_macs", "decode_tok_s_ceiling", "evaluate", "fits_in_memory",
    "fmt_bytes", "fmt_count", "fmt_flops", "generation_flops", "int8_kv_bytes", "kv_bytes_per_token",
    "kv_cache_bytes", "layer_flops", "lm_head_flops", "max_batch", "max_context", "model_args",
    "no_cache_flops", "no_cache_macs_seed", "non_embedding_matrix_params", "of", "param_count",
    "params_by_component", "prefill_attention_share", "prefill_bytes", "prefill_crossover_P", "prefill_flops",
    "prefill_intensity", "prefill_macs", "ridge_point", "wall_clock", "weight_bytes",
    "critical_batch", "decode_step_time",
]
