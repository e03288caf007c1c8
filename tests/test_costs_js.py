"""minigpt/web/costs/ (the browser sliders) computes what minigpt/costs/ computes.

The public API of `minigpt.costs` is enumerated: every name of `costs.FORMULAS` must have a twin in
the scripts and be called on the grid below; every other public name must be listed in `PYTHON_ONLY`
with the reason it needs no twin. Each call runs with only the scripts a page would load for that
function (`cost_scripts.scripts_for`), so a room that calls another without saying so in its
``needs:`` line fails here, as it would on a page; and each twin lives in the room named after its
Python module.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import asdict, is_dataclass
from pathlib import Path

import pytest
from node import NODE, run_node

from minigpt import costs
from minigpt.book import cost_scripts
from minigpt.costs.presets import HARDWARE, MODELS

WEB = Path(__file__).resolve().parents[1] / "minigpt" / "web"
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed; the cost scripts are checked with node")

DRIVER = """
for (const path of JSON.parse(process.argv[1])) require(path);
const C = globalThis.MiniGPTCosts;
const calls = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = calls.map(([name, kwargs, args]) => {
  try {
    return {value: args ? C[name](...args) : C[name](kwargs)};
  } catch (e) {
    return {error: String(e.message)};
  }
});
const functions = Object.keys(C).filter((k) => typeof C[k] === "function");
process.stdout.write(JSON.stringify({out, functions, MODELS: C.MODELS, HARDWARE: C.HARDWARE}));
"""

# Public names of minigpt.costs without a JS twin, and why none is needed.
PYTHON_ONLY = {
    "FORMULAS": "the list of names this test enumerates",
    "fmt_sig": "rounds glued values in the notebooks (Python side only); the page shows what was glued",
    "MODEL_SYMBOLS": "explorers.py expands a model's symbols into named arguments before the page sees them",
    "evaluate": "model-shape binding for Python callers; an explorer's spec holds the expanded arguments",
    "of": "model-shape binding for Python callers (see evaluate)",
    "model_args": "model-shape binding for Python callers (see evaluate)",
    "WallClock": "a result type: the JS twin of wall_clock returns the same fields as a plain object",
    "MemoryFit": "a result type: the JS twin of memory_fit returns the same fields as a plain object",
    "PrefixHit": "a result type: the JS twin of prefix_hit_ttft returns the same fields as a plain object",
    "config_param_count": "takes a ModelConfig; an explorer gets N_params from preset_value, which calls it",
    "FIT_RESERVE": "a constant: chips_needed's default reserve, mirrored in costs/memory.js and exercised by the calls "
                   "below that leave reserve out",
}

SHAPES = [
    dict(d=64),
    dict(d=64, V=600),
    dict(d=64, H_kv=2, d_h=16, d_ffn=100, V=600, B=3),
    dict(d=4096, H_kv=8, d_h=128, d_ffn=14336, V=128256, B=7),
    dict(d=4096, H_kv=8, d_h=128, d_ffn=14336, V=128256, ffn_matrices=3),
    dict(d=12288, V=50257, B=64),
]
SIZES = [dict(L=1, P=1, D=1), dict(L=4, P=2, D=3), dict(L=32, P=4096, D=1000), dict(L=96, P=2048, D=10**6)]


def _calls() -> list[tuple[str, dict, list | None]]:
    calls: list[tuple[str, dict, list | None]] = []
    for shape, size in itertools.product(SHAPES, SIZES):
        L, P, D, d = size["L"], size["P"], size["D"], shape["d"]
        model = dict(shape, L=L)
        calls += [
            ("prefill_flops", dict(model, P=P), None),
            ("decode_step_flops", dict(model, S=P + D), None),
            ("decode_flops", dict(model, P=P, D=D), None),
            ("generation_flops", dict(model, P=P, D=D), None),
            ("no_cache_flops", dict(model, P=P, D=D), None),
            ("cache_saving_factor", dict(model, P=P, D=D), None),
            ("layer_flops", {k: v for k, v in dict(shape, T=P, S=D).items() if k != "V"}, None),
            ("layer_flops", {k: v for k, v in dict(shape, T=P, S=D, causal=True).items() if k != "V"}, None),
            ("lm_head_flops", dict(d=d, V=shape.get("V", 0), T=P, B=shape.get("B", 1)), None),
            ("prefill_macs", dict(L=L, P=P, d=d), None),
            ("decode_step_macs", dict(L=L, S=P, d=d), None),
            ("decode_macs_seed", dict(L=L, P=P, D=D, d=d), None),
            ("no_cache_macs_seed", dict(L=L, P=P, D=D, d=d), None),
            ("prefill_attention_share", dict(P=P, d=d), None),
            ("prefill_crossover_P", dict(d=d), None),
            ("non_embedding_matrix_params", {k: v for k, v in dict(shape, L=L).items()
                                             if k in ("L", "d", "d_ffn", "H_kv", "d_h")}, None),
            ("last_decode_step_floor_s", dict(L=L, d=d, V=shape.get("V", 0), P=P, D=D, bandwidth=1.6e12), None),
            ("last_decode_step_floor_s", dict(L=L, d=d, V=600, P=P, D=1, bandwidth=5e10, s=4), None),
        ]
    for L, H_kv, d_h, s, S, B in [
        (4, 4, 16, 4, 5, 1),
        (32, 8, 128, 2, 8192, 16),
        (96, 96, 128, 2, 10**6, 512),
    ]:
        kv = dict(L=L, H_kv=H_kv, d_h=d_h)
        calls += [
            ("kv_bytes_per_token", dict(kv, s=s), None),
            ("kv_cache_bytes", dict(kv, s=s, S=S, B=B), None),
            ("int8_kv_bytes", dict(kv, S=S, B=B), None),
            ("int8_kv_bytes", dict(kv, S=S, s_scale=4), None),
            ("weight_bytes", dict(N_params=L * 10**9 + 7, s=s), None),
            (
                "decode_step_bytes",
                dict(weight_bytes=L * 10**9, kv_bytes_per_token=2 * L * H_kv * d_h * s, S=S, B=B),
                None,
            ),
        ]
    for L, d, V, S_max, extra in [(4, 64, 600, 128, {}), (2, 48, 100, 16, dict(H_kv=1, d_h=16, d_ffn=100)),
                                  (12, 768, 50257, 1024, dict(biases=False))]:
        model = dict(L=L, d=d, V=V, S_max=S_max, **extra)
        calls += [("params_by_component", model, None), ("param_count", model, None)]
    for model, s in itertools.product(MODELS.values(), (1, 2, 4)):
        sym = model.symbols()
        for P, S, B in [(1, 0, 1), (128, 1024, 8), (4096, 32768, 64)]:
            calls += [
                ("prefill_intensity", dict(sym, P=P, B=B, s=s, N_params=model.N_params), None),
                ("decode_intensity", dict(sym, S=S, B=B, s=s, N_params=model.N_params), None),
                ("prefill_bytes", dict(weight_bytes=model.N_params * s, P=P, d=model.d, s=s, B=B,
                                       kv_bytes_per_token=2 * model.L * model.H_kv * model.d_h * s), None),
                ("prefill_bytes", dict(weight_bytes=model.N_params * s, P=P, d=model.d, s=s), None),
                ("kv_bytes_per_token", dict(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=s, s_scale=s - 1), None),
                ("kv_cache_bytes", dict(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=s, S=S, B=B, s_scale=2), None),
                ("weight_bytes", dict(N_params=model.N_params, s=s / 2), None),  # 0.5: int4
                ("weight_bytes", dict(N_params=model.N_params + 1, s=0.5), None),  # rounds up
            ]
        for scheme in ("published", "mha", "gqa", "gqa4", "mqa"):
            calls.append(("kv_heads", dict(H=model.H, H_kv=model.H_kv, scheme=scheme), None))
    for hw, model in itertools.product(HARDWARE.values(), MODELS.values()):
        w = costs.weight_bytes(N_params=model.N_params, s=2)
        kv = costs.kv_bytes_per_token(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=2)
        budget = dict(memory_bytes=hw.memory_bytes, weight_bytes=w, kv_bytes_per_token=kv)
        chip = dict(bandwidth=hw.bandwidth, peak_flops=hw.peak_flops)
        for S, B, s, s_kv, overlap in [(1, 1, 2, None, True), (1024, 8, 2, None, False), (8192, 256, 1, 2, True),
                                       (131072, 1024, 0.5, 1, False), (0, 64, 4, None, True)]:
            step = dict(model.symbols(), N_params=model.N_params, s=s, s_kv=s_kv, S=S, B=B, overlap=overlap, **chip)
            calls += [(name, step, None) for name in
                      ("decode_step_time", "decode_tok_s", "batching_gain", "ideal_batching_tok_s")]
            calls.append(("kv_read_share", dict(weight_bytes=w, kv_bytes_per_token=kv, S=S, B=B), None))
        flops = costs.decode_step_flops(**model.symbols(), S=4096, B=16)
        for flop_count, moved in [(flops, w), (0, w), (flops, 0), (2 * model.N_params * 4096, w)]:
            calls.append(("roofline_time", dict(flops=flop_count, bytes=moved, **chip), None))
        for intensity in (0, 1.5, hw.peak_flops / hw.bandwidth, 1e4):
            calls.append(("roofline_bound", dict(intensity=intensity, **chip), None))
        calls += [
            ("memory_budget", dict(memory_bytes=hw.memory_bytes), None),
            ("memory_budget", dict(memory_bytes=hw.memory_bytes, reserve=0.15), None),
            ("memory_fit", dict(budget, S=8192), None),
            ("memory_fit", dict(budget, S=131072, B=16, reserve=0.1), None),
            ("memory_fit", dict(budget, weight_bytes=hw.memory_bytes + 1, S=1), None),
        ]
        calls += [
            ("ridge_point", dict(peak_flops=hw.peak_flops, bandwidth=hw.bandwidth), None),
            ("attainable_flops", dict(intensity=1.5, peak_flops=hw.peak_flops, bandwidth=hw.bandwidth), None),
            ("attainable_flops", dict(intensity=1e4, peak_flops=hw.peak_flops, bandwidth=hw.bandwidth), None),
            ("decode_tok_s_ceiling", dict(bandwidth=hw.bandwidth, bytes_per_step=w + 1000 * kv, B=8), None),
            ("arithmetic_intensity", dict(flops=2 * model.N_params, bytes=w), None),
            ("max_context", dict(budget, B=4), None),
            ("max_context", dict(budget, reserve=0.1), None),
            ("max_batch", dict(budget, S=4096), None),
            ("max_batch", dict(budget, S=4096, reserve=0.25), None),
            ("fits_in_memory", dict(budget, S=4096, B=2), None),
            ("fits_in_memory", dict(budget, S=100_000, B=64, reserve=0.1), None),
        ]
    calls += [
        ("wall_clock", dict(P=P, D=D, prefill_tok_s=p, decode_tok_s=t), None)
        for P, D, p, t in [(1000, 300, 2000, 40), (12_000, 500, 1500, 40), (0, 0, 1, 1), (7, 3, 1e3, 33.3)]
    ]
    sizes = [
        0,
        1,
        999,
        1000,
        1023,
        1024,
        2304,
        1536,
        512 * 1024,
        4.5 * 1024**2,
        2 * 1024**3,
        17_179_869_184,
        393_216,
        5.73e12,
        1e21,
        123.456,
        2**53 + 1,
    ]
    for n in sizes:
        calls += [
            ("fmt_bytes", {}, [n]), ("fmt_bytes", {}, [n, {"binary": False, "suffix": "/s"}]), ("fmt_flops", {}, [n]),
            ("fmt_flops", {}, [n, {"exact": True}]), ("fmt_flops", {}, [n, {"suffix": "/s"}]), ("fmt_count", {}, [n]),
            ("fmt_fixed", {}, [n]), ("fmt_fixed", {}, [n, {"decimals": 2, "suffix": " ms"}]), ("fmt_int", {}, [n]),
            ("fmt_percent", {}, [n / 3e4]), ("fmt_percent", {}, [n / 7e3, {"decimals": 0}]),
            ("fmt_duration", {}, [n / 1e9]), ("fmt_duration", {}, [n]),
        ]
    for x in (0.5, 2.5, 0.125, 1.005, 99.95, 999.5, 0.0004567, 5e-10, -3.25):
        calls += [("fmt_fixed", {}, [x, {"decimals": 2}]), ("fmt_int", {}, [x, {"suffix": " tok/s"}]),
                  ("fmt_percent", {}, [x])]
        if x >= 0:
            calls += [("fmt_duration", {}, [x]), ("fmt_count", {}, [x])]
    for fit in (dict(weights_fit=False, fits=False, max_context=0, max_batch=0),
                dict(weights_fit=True, fits=False, max_context=1234, max_batch=0),
                dict(weights_fit=True, fits=True, max_context=1_048_576, max_batch=17)):
        calls.append(("fmt_memory_fit", {}, [fit]))
    calls += [("chars_per_second", dict(tok_s=t, chars_per_token=c), None)
              for t, c in [(40, 4.1), (0, 3.0), (123.4, 0.9)]]
    for L, H_kv, d_h, S, B in [(4, 4, 16, 128, 1), (32, 8, 128, 8192, 16), (80, 8, 128, 10**6, 64)]:
        kv = dict(L=L, H_kv=H_kv, d_h=d_h, S=S, B=B)
        calls += [
            ("quantized_kv_bytes", kv, None),
            ("quantized_kv_bytes", dict(kv, bits=4, group_size=min(32, d_h)), None),
            ("quantized_kv_bytes", dict(kv, bits=4, group_size=d_h, s_scale=4), None),
            ("kivi_kv_bytes", kv, None),
            ("kivi_kv_bytes", dict(kv, S=S + 7, bits=4, group_size=min(32, d_h), token_group=32, s=2), None),
            ("fp8_kv_bytes", kv, None),
            ("fp8_kv_bytes", dict(kv, s_scale=2), None),
            ("kv_storage_bytes", kv, None),
            ("kv_storage_bytes", dict(kv, layout="per_token", bits=4, group_size=min(32, d_h)), None),
            ("kv_storage_bytes", dict(kv, S=S + 7, layout="kivi", bits=4, group_size=min(32, d_h), token_group=32,
                                      s=2), None),
            ("kv_storage_bytes", dict(kv, layout="kivi"), None),
            ("kv_storage_bytes", dict(kv, layout="fp8"), None),
        ]
    for L, T, S, d, H_kv, d_h, s, B in [(4, 1, 5, 64, 4, 16, 4, 1), (32, 1, 4095, 4096, 8, 128, 2, 8),
                                         (80, 512, 8192, 8192, 8, 128, 2, 3), (96, 7, 0, 12288, None, None, 1, 64)]:
        calls += [
            ("attention_flops", dict(L=L, T=T, S=S, d=d, B=B), None),
            ("attention_bytes", dict(L=L, T=T, S=S, d=d, s=s, H_kv=H_kv, d_h=d_h, B=B), None),
            ("attention_intensity", dict(T=T, S=S, d=d, s=s, H_kv=H_kv, d_h=d_h), None),
            ("tp_allreduce_bytes", dict(L=L, B=B, d=d, s=s), None),
        ]
    calls += [
        ("tp_decode_step_time",
         dict(bytes_per_step=b, n_gpus=n, bandwidth=bw, allreduce_bytes=a, link_bandwidth=lk), None)
        for b, n, bw, a, lk in [(141_000_000_000, 2, 3.35e12, 1_310_720, 450e9), (10**9, 1, 1e12, 0, 1e9),
                                (7 * 10**9, 8, 2e12, 10**7, 300e9)]
    ]
    calls += [("cost_per_million_tokens", dict(price_per_hour=p, tok_s=t), None)
              for p, t in [(2.0, 40.0), (3.5, 12_345.6), (0.01, 1)]]
    calls += [
        ("decode_time_with_kv", dict(P=P, D=D, decode_tok_s=r, weight_bytes=w, kv_bytes_per_token=k), None)
        for P, D, r, w, k in [(1000, 300, 40.0, 16 * 10**9, 131_072), (12_000, 500, 25.0, 14 * 10**9, 524_288),
                              (1, 1, 1.0, 1, 0)]
    ]
    for P, D, d in [(1, 1, 64), (16, 100, 64), (4096, 1000, 4096), (2, 10**5, 12288)]:
        calls += [("no_cache_attention_share", dict(P=P, D=D, d=d), None),
                  ("no_cache_crossover_D", dict(d=d), None)]
    for shape in SHAPES:
        calls.append(("prefill_flops_by_term", dict(shape, L=32, P=777), None))
    chips = ((2039e9, 312e12), (3.35e12, 989e12), (4e10, 1e11))
    for S, s, hw in itertools.product((0, 128, 1024, 4096), (1, 2), chips):
        llama = dict(L=32, d=4096, d_ffn=11008, V=32000, ffn_matrices=3, N_params=6_740_000_000)
        calls.append(("critical_batch", dict(llama, S=S, s=s, bandwidth=hw[0], peak_flops=hw[1]), None))
        calls.append(("decode_step_time", dict(llama, S=S, s=s, B=64, bandwidth=hw[0], peak_flops=hw[1],
                                               overlap=False), None))
    windows = [(32, 8, 128, 2, 32768, 4096, 1), (32, 8, 128, 2, 1000, 4096, 3), (4, 4, 16, 4, 0, 1, 1)]
    for L, H_kv, d_h, s, S, w, B in windows:
        calls.append(("window_kv_cache_bytes", dict(L=L, H_kv=H_kv, d_h=d_h, s=s, S=S, window=w, B=B), None))
    calls += [("latent_kv_bytes_per_token", dict(L=L, d_c=c, d_rope=r, s=s), None)
              for L, c, r, s in [(61, 512, 64, 2), (4, 16, 0, 4)]]
    for L, c, r, s, S, B in [(61, 512, 64, 2, 4096, 3), (4, 16, 0, 4, 0, 1), (4, 8, 0, 4, 127, 5)]:
        calls.append(("latent_kv_cache_bytes", dict(L=L, d_c=c, d_rope=r, s=s, S=S, B=B), None))
    mla_shapes = [dict(d=64, H=4, d_h=16, d_c=32), dict(d=7168, H=128, d_h=128, d_c=512, d_rope=64),
                  dict(d=64, H=4, d_h=16, d_c=8, B=3)]
    for shape, (T, S), path in itertools.product(mla_shapes, [(1, 0), (1, 127), (16, 100), (200, 4096)],
                                                 ("naive", "absorbed")):
        calls += [("mla_layer_flops", dict(shape, T=T, S=S, path=path), None),
                  ("mla_attention_flops", {k: v for k, v in dict(shape, T=T, S=S, path=path).items() if k != "d"},
                   None)]
        for s, hw in [(2, HARDWARE["H100 SXM"]), (4, HARDWARE["T4"])]:
            attn = {k: v for k, v in dict(shape, T=T, S=S, path=path, s=s).items() if k != "d"}
            calls += [("mla_attention_bytes", attn, None),
                      ("mla_attention_time", dict(attn, peak_flops=hw.peak_flops, bandwidth=hw.bandwidth), None)]
    for shape, S, hw, s in itertools.product(mla_shapes, (1, 4096), (HARDWARE["H100 SXM"], HARDWARE["T4"]), (1, 2)):
        args = {k: v for k, v in dict(shape, S=S, s=s, peak_flops=hw.peak_flops, bandwidth=hw.bandwidth).items()
                if k not in ("d", "B")}
        calls += [("mla_absorb_crossover_T", args, None), ("mla_absorb_crossover_T", dict(args, T_max=7), None)]
    for S, w, k, B in [(0, 16, 0, 1), (100, 16, 4, 2), (20, 16, 4, 1), (10**6, 4096, 4, 8)]:
        calls.append(("streaming_kv_cache_bytes", dict(L=4, H_kv=4, d_h=16, s=4, S=S, window=w, sinks=k, B=B), None))
        calls.append(("bounded_decode_step_bytes", dict(weight_bytes=10**6, kv_bytes_per_token=512, S=S,
                                                        budget=w + k, B=B), None))
    moe = dict(N_params=46_700_000_000, L=32, d=4096, d_ffn=14336, experts=8, active_experts=2)
    calls += [("moe_active_params", moe, None), ("moe_active_params", dict(moe, ffn_matrices=2), None)]
    for B in (1, 2, 8, 16, 1000):
        calls += [("moe_expected_experts", dict(experts=8, active_experts=2, B=B), None),
                  ("moe_decode_params", dict(moe, B=B), None)]
    for S, b in [(0, 1), (1, 16), (16, 16), (17, 16), (1000, 7), (10**6, 256)]:
        calls += [("paged_blocks", dict(S=S, block_size=b), None),
                  ("paged_slack_tokens", dict(S=S, block_size=b), None)]
    for T, S, bq, bk in [(1, 0, 16, 16), (64, 0, 16, 16), (50, 13, 16, 8), (7, 100, 4, 32), (128, 0, 128, 1)]:
        calls += [("tiled_attention_flops", dict(T=T, S=S, d_h=16, H=4, B=3, block_q=bq, block_k=bk), None),
                  ("tiled_attention_flops", dict(T=T, S=S, d_h=64, block_q=bq, block_k=bk, causal=False), None)]
    for P, d_h, s, sram in [(1, 16, 4, 256), (128, 16, 4, 4096), (4096, 128, 2, 192 * 1024), (10**5, 64, 2, 100_000)]:
        calls += [("standard_attention_hbm_bytes", dict(P=P, d_h=d_h, s=s, H=8, B=2), None),
                  ("flash_attention_hbm_bytes", dict(P=P, d_h=d_h, s=s, sram_bytes=sram, H=8, B=2), None)]
        calls.append(("flash_attention_hbm_saving", dict(P=P, d_h=d_h, s=s, sram_bytes=sram), None))
        for bq, bk, kv_outer, causal in [(128, 64, False, False), (128, 64, False, True), (64, 64, True, True),
                                         (7, 5, True, False), (16, 32, False, True)]:
            calls.append(("tiled_attention_hbm_bytes", dict(P=min(P, 5000), d_h=d_h, s=s, block_q=bq, block_k=bk,
                                                            kv_outer=kv_outer, causal=causal, H=3, B=2), None))
    for B, H_kv, S, splits, sms in [(1, 8, 8192, 16, 132), (1, 8, 8192, 17, 132), (64, 8, 100, 4, 132),
                                    (1, 1, 5, 9, 2)]:
        calls += [("flash_decoding_work_items", dict(B=B, H_kv=H_kv, splits=splits), None),
                  ("flash_decoding_speedup", dict(B=B, H_kv=H_kv, S=S, splits=splits, n_sm=sms), None)]
        calls += [("flash_decoding_best_splits", dict(B=B, H_kv=H_kv, S=S, n_sm=sms), None),
                  ("flash_decoding_best_splits", dict(B=B, H_kv=H_kv, S=S, n_sm=sms, max_splits=splits), None)]
    for B, H_kv, S, d_h, g, sms in [(1, 2, 65536, 128, 8, 108), (1, 8, 8192, 128, 4, 132), (64, 8, 4096, 128, 4, 132),
                                    (3, 1, 100, 64, 1, 2), (48, 1, 10**6, 256, 1, 54), (1, 1, 1, 32, 70, 8)]:
        calls.append(("flash_decoding_num_splits", dict(B=B, H_kv=H_kv, S=S, d_h=d_h, H=g * H_kv, n_sm=sms), None))
        for K in (1, 2, 17, 103, 200):
            args = dict(B=B, H_kv=H_kv, S=S, d_h=d_h, s=2, H=g * H_kv, n_sm=sms, splits=K, bandwidth=1555e9)
            calls += [("flash_decoding_time", args, None),
                      ("flash_decoding_time", dict(args, sm_bandwidth=40e9, launch_s=5e-6), None)]
    for alpha, gamma, c in [(0.0, 0, 0.1), (0.5, 3, 0.05), (0.8, 4, 0.2), (1.0, 5, 0.01), (0.999, 12, 1.0)]:
        calls += [("speculative_tokens_per_pass", dict(alpha=alpha, gamma=gamma), None),
                  ("speculative_batch_tokens_per_pass", dict(alpha=alpha, gamma=gamma, B=1 + gamma % 5), None),
                  ("speculative_speedup", dict(alpha=alpha, gamma=gamma, cost_ratio=c), None),
                  ("speculative_speedup", dict(alpha=alpha, gamma=gamma, cost_ratio=c, verify_ratio=1.3), None),
                  ("speculative_speedup", dict(alpha=alpha, gamma=gamma, cost_ratio=c, B=1 + gamma % 5), None)]
    for alpha, c, v, top in [(0.0, 0.1, 1.0, 16), (0.7, 0.114, 1.0, 16), (0.9, 0.114, 1.44, 10), (1.0, 0.1, 1.0, 16),
                             (1.0, 0.1, 0.1, 16), (0.987, 0.28, 1.44, 32), (0.5, 1.0, 2.0, 1), (0.95, 0.01, 1.0, 1024)]:
        calls.append(("speculative_best_gamma", dict(alpha=alpha, cost_ratio=c, verify_ratio=v, gamma_max=top), None))
    calls.append(("speculative_best_gamma", dict(alpha=0.8, cost_ratio=0.05), None))
    calls += [("paged_fork_saved_blocks", dict(P=P, n=n, block_size=b), None)
              for P, n, b in [(1, 1, 16), (100, 8, 16), (15, 4, 16), (4096, 64, 256), (10**6, 3, 7)]]
    for model, hw in itertools.product(MODELS.values(), list(HARDWARE.values())[:2]):  # Part III: serving
        chip = dict(model.symbols(), N_params=model.N_params, s=2, bandwidth=hw.bandwidth, peak_flops=hw.peak_flops)
        calls += [("mixed_step_time", dict(chip, T=T, S_prefix=Sp, B=B, S=S), None)
                  for T, Sp, B, S in [(512, 0, 16, 1024), (0, 0, 8, 4096), (3500, 0, 0, 0), (256, 1024, 31, 300)]]
        calls += [("mixed_step_time", dict(chip, T=T, S_prefix=Sp, B=B, S=S, mfu=m, causal=c), None)
                  for T, Sp, B, S, m, c in [(512, 0, 16, 1024, 0.5, True), (3500, 0, 0, 0, 0.4, True),
                                            (3500, 0, 0, 0, 0.4, False), (256, 1024, 31, 300, 1.0, True)]]
        calls += [("prefix_hit_ttft", dict(chip, S_prefix=Sp, T=T, block_size=b), None)
                  for Sp, T, b in [(0, 1, 16), (40, 4, 16), (2048, 64, 16), (3000, 700, 256), (5, 3, 1)]]
        calls += [("prefix_hit_ttft", dict(chip, S_prefix=Sp, T=T, block_size=16, mfu=0.5, causal=True), None)
                  for Sp, T in [(2048, 64), (3000, 700)]]
        calls += [("static_batch_tok_s", dict(chip, S=S, B=B, D_max=hi, D_min=lo), None)
                  for S, B, lo, hi in [(1024, 16, 1, 256), (0, 1, 1, 1), (300, 64, 64, 512), (4000, 7, 9, 9)]]
    for model, hw in itertools.product(MODELS.values(), list(HARDWARE.values())[1:4]):  # Chapter 12: preemption
        calls += [("swap_time", costs.model_args(costs.swap_time, model, S=S, s=2, link_bandwidth=bw), None)
                  for S, bw in [(0, 32e9), (1, 64e9), (499, 450e9), (4096, 31.5e9)]]
        calls += [("recompute_time", costs.model_args(costs.recompute_time, model, S=S, peak_flops=hw.peak_flops,
                                                      mfu=m), None)
                  for S, m in [(0, 0.5), (1, 1.0), (499, 0.4), (4096, 0.55)]]
    calls += [("step_time_with_swap", dict(step_time=st, swap_time=sw, overlap=o), None)
              for st, sw, o in [(0.0, 0.0, True), (0.02, 0.013, True), (0.02, 0.013, False), (1e-3, 0.5, True)]]
    calls.append(("step_time_with_swap", dict(step_time=0.02, swap_time=0.03), None))
    for B, lo, hi in [(1, 1, 1), (1, 1, 64), (8, 1, 64), (64, 64, 512), (256, 3, 4096), (5, 7, 8)]:
        calls += [("static_batch_steps", dict(B=B, D_max=hi, D_min=lo), None),
                  ("static_batch_utilisation", dict(B=B, D_max=hi, D_min=lo), None)]
    calls.append(("static_batch_utilisation", dict(B=4, D_max=100), None))
    for model, hw in itertools.product(MODELS.values(), list(HARDWARE.values())[::3]):  # Chapter 18: the floor
        chip = dict(model.symbols(), N_params=model.N_params, s=2, bandwidth=hw.bandwidth, peak_flops=hw.peak_flops)
        kv = costs.evaluate(costs.kv_bytes_per_token, model, s=2)
        for n_ops, t_op, B, S in [(236, 1.2e-6, 1, 32), (896, 5e-6, 8, 1024), (100, 2.5e-5, 64, 4096)]:
            floor = dict(n_ops=n_ops, t_op=t_op)
            calls += [("overhead_floor_s", floor, None),
                      ("overhead_step_time", dict(chip, **floor, B=B, S=S), None),
                      ("overhead_step_time", dict(chip, **floor, B=B, S=S, overlap=False), None),
                      ("overhead_bound", dict(chip, **floor, B=B, S=S), None),
                      ("overhead_crossover_params", dict(floor, bandwidth=hw.bandwidth, s=2, kv_bytes_per_token=kv,
                                                         S=S, B=B), None),
                      ("overhead_crossover_params", dict(floor, bandwidth=hw.bandwidth, s=0.5), None),
                      ("overhead_step_model", dict(floor, kernel_s=B * 1e-4, t_call=S * 1e-7), None),
                      ("overhead_step_model", dict(n_ops=0, t_op=1e-6, kernel_s=2e-3), None),
                      ("overhead_step_model", dict(floor, kernel_s=3e-3, kernel_slowdown=0.2), None)]
    for model in MODELS.values():  # Chapter 9: GQA shrinks the K/V projections (Eqs. 9.2-9.3)
        shape = dict(L=model.L, d=model.d, d_h=model.d_h, biases=model.biases)
        for h in sorted({1, model.H_kv, model.H} | ({8} if model.H % 8 == 0 else set())):
            calls.append(("kv_projection_params", dict(shape, H_kv=h), None))
            calls.append(("kv_heads_params", dict(shape, N_params=model.N_params, H_kv=model.H_kv, H_kv_new=h),
                          None))
            N_mha = costs.kv_heads_params(**shape, N_params=model.N_params, H_kv=model.H_kv, H_kv_new=model.H)
            for S, B, s in [(0, 1, 2), (1024, 1, 2), (4096, 32, 2), (32768, 64, 1)]:
                calls.append(("gqa_decode_gain", dict(shape, N_params=N_mha, H_kv=h, S=S, B=B, s=s), None))
    for hw, model in itertools.product(HARDWARE.values(), MODELS.values()):  # Eq. (9.4): chips needed
        w = costs.weight_bytes(N_params=model.N_params, s=2)
        kv = costs.kv_bytes_per_token(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=2)
        for S, B, reserve in [(0, 1, None), (4096, 32, None), (32768, 64, 0.0), (131072, 256, 0.25), (1, 1, 0.5)]:
            args = dict(memory_bytes=hw.memory_bytes, weight_bytes=w, kv_bytes_per_token=kv, S=S, B=B)
            calls.append(("chips_needed", args if reserve is None else dict(args, reserve=reserve), None))
    for model in MODELS.values():  # Chapter 19: the K/V transfer (Eqs. 19.1-19.2)
        kv = dict(L=model.L, H_kv=model.H_kv, d_h=model.d_h, s=2)
        for P, bw, lat in [(0, 50e9, 0.0), (1, 12.5e9, 5e-6), (512, 450e9, 2e-6), (8192, 64e9, 0.0)]:
            calls += [("kv_transfer_bytes", dict(kv, P=P), None),
                      ("kv_transfer_time", dict(kv, P=P, link_bandwidth=bw, link_latency=lat), None)]
        calls.append(("kv_transfer_time", dict(kv, P=100, link_bandwidth=25e9), None))
    for layer_s, nbytes, bw, lat in [([1e-3, 2e-3, 5e-4], 4 << 20, 12.5e9, 5e-6), ([0.0], 0, 50e9, 0.0),
                                     ([2e-4] * 32, 1 << 20, 450e9, 2e-6),
                                     ([3e-3, 1e-4, 1e-4, 2e-3], 8 << 20, 64e9, 0.0)]:  # Chapter 19, layer by layer
        calls.append(("layerwise_transfer_exposed",
                      dict(layer_s=layer_s, layer_bytes=nbytes, link_bandwidth=bw, link_latency=lat), None))
    calls.append(("layerwise_transfer_exposed",
                  dict(layer_s=[1e-3, 1e-3], layer_bytes=1 << 20, link_bandwidth=25e9), None))
    for ttft, tpot, s1, s2 in [([0.1, 0.3, 0.2], [0.01, 0.02, 0.05], 0.25, 0.03), ([1.0], [0.0], 0.5, 0.1),
                               ([0.2, 0.2], [0.04, 0.04], 0.2, 0.04)]:  # Eqs. (19.3)-(19.4)
        calls.append(("slo_attainment", dict(ttft=ttft, tpot=tpot, ttft_slo=s1, tpot_slo=s2), None))
    for rates, att, target, chips in [([1, 2, 4], [1.0, 0.95, 0.5], 0.9, 1), ([4, 1, 2], [0.2, 0.95, 0.91], 0.9, 2),
                                      ([3.0], [0.5], 0.9, 1), ([1, 2, 3], [0.9, 0.8, 1.0], 0.8, 4)]:
        calls.append(("goodput", dict(rates=rates, attainments=att, target=target, chips=chips), None))
    for chips, rp, rd in [(2, 1.0, 1.0), (5, 3.0, 1.0), (8, 0.5, 2.0), (7, 2.5, 2.5), (4, 10.0, 0.1)]:  # Eq. (19.5)
        calls.append(("best_pd_ratio", dict(chips=chips, prefill_rate=rp, decode_rate=rd), None))
        calls.append(("disagg_rate", dict(prefill_chips=chips - 1, decode_chips=1, prefill_rate=rp,
                                          decode_rate=rd), None))
    for name, hw, P, D, slo in [("Llama-2-7B", "H100 SXM", 2048, 256, (0.4, 0.025)),
                                ("Llama-3-8B", "A100 80GB", 512, 64, (0.2, 0.03)),
                                ("Llama-2-7B", "H100 SXM", 32768, 16, (0.1, 0.02))]:  # Eq. (19.6)
        m, h = MODELS[name], HARDWARE[hw]
        chip = dict(L=m.L, d=m.d, N_params=m.N_params, s=2, bandwidth=h.bandwidth, peak_flops=h.peak_flops,
                    H_kv=m.H_kv, d_h=m.d_h, d_ffn=m.d_ffn, V=m.V, ffn_matrices=m.ffn_matrices)
        for n, k in [(1, 1), (1, 3), (2, 1)]:
            calls.append(("disagg_goodput_bound", dict(chip, P=P, D=D, ttft_slo=slo[0], tpot_slo=slo[1],
                                                       link_bandwidth=50e9, prefill_chips=n, decode_chips=k), None))
            calls.append(("disagg_goodput_bound", dict(chip, P=P, D=D, ttft_slo=slo[0], tpot_slo=slo[1],
                                                       link_bandwidth=50e9, prefill_chips=n, decode_chips=k,
                                                       memory_bytes=h.memory_bytes), None))
    for model in MODELS.values():  # Chapter 20: tensor parallelism counted, Eqs. (20.1)-(20.7)
        for W in (1, 2, 4, 8):
            calls += [("tp_collectives_per_step", dict(L=model.L, W=W), None),
                      ("tp_collective_bytes", dict(L=model.L, B=3, d=model.d, V=model.V, s=2, W=W), None),
                      ("tp_collective_bytes", dict(L=model.L, B=1, T=17, d=model.d, V=model.V, s=4, W=W), None),
                      ("tp_kv_heads_per_rank", dict(H_kv=model.H_kv, W=W), None),
                      ("tp_kv_cache_bytes", dict(L=model.L, B=2, S=4096, H_kv=model.H_kv, d_h=model.d_h, s=2,
                                                 W=W), None),
                      ("tp_per_gpu_bandwidth", dict(weight_bytes=2 * model.N_params, W=W, step_time=0.0123),
                       None)]
    for W, link in [(2, 450e9), (8, 450e9), (4, 1.3e9)]:
        calls.append(("ring_allreduce_beta", dict(link_bandwidth=link, W=W), None))
    for n, a, b in [(0, 1e-5, 1e9), (16384, 1.2e-5, 3.1e11), (10**9, 0.0, 2e9)]:
        calls.append(("allreduce_time", dict(nbytes=n, coll_latency=a, coll_bandwidth=b), None))
    for w, W, bw, n, cb, a, b, t0 in [(141 * 10**9, 8, 3.35e12, 162, 16384, 1e-5, 3e11, None),
                                       (986_624, 2, 1e10, 10, 512.0, 4e-5, 1e9, 2.5e-4), (10, 1, 1.0, 0, 0, 0, 1, 0.0)]:
        args = dict(weight_bytes=w, W=W, bandwidth=bw, n_coll=n, coll_bytes=cb, coll_latency=a, coll_bandwidth=b)
        calls.append(("tp_alpha_beta_step_time", args if t0 is None else dict(args, t_fixed=t0), None))
    for model in MODELS.values():
        for W, B, a, link in [(1, 1, 1e-5, 450e9), (2, 1, 1e-5, 450e9), (8, 16, 2e-5, 300e9), (4, 3, 0.0, 1e9)]:
            calls.append(("tp_replay_step_time", dict(L=model.L, B=B, d=model.d, V=model.V, s=2,
                                                      weight_bytes=2 * model.N_params, W=W, bandwidth=3.35e12,
                                                      coll_latency=a, link_bandwidth=link), None))
    for t, W, m in [(1.0, 1, 1), (0.02, 4, 1), (0.5, 8, 64), (3.0, 2, 7)]:
        calls.append(("pipeline_time", dict(t_one=t, W=W, m=m), None))
    return calls


def _paths(scripts: list[str]) -> str:
    return json.dumps([str(WEB / s) for s in scripts])


def _run(calls: list) -> dict:
    """Each call run with only the scripts `scripts_for` names for its function (one node per set)."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, (name, _, _) in enumerate(calls):
        groups.setdefault(tuple(cost_scripts.scripts_for([name])), []).append(i)
    out: list = [None] * len(calls)
    for scripts, indices in groups.items():
        results = run_node(DRIVER, json.dumps([calls[i] for i in indices]), _paths(list(scripts)))
        for i, got in zip(indices, results["out"], strict=True):
            out[i] = got
    every = run_node(DRIVER, "[]", _paths([room.path for room in cost_scripts.rooms().values()]))
    return {**every, "out": out}


@pytest.fixture(scope="module")
def node_results():
    calls = _calls()
    return calls, _run(calls)


def _python(name, kwargs, args):
    fn = getattr(costs, name)
    if args:  # a formatter: the value, then its options as one object (Python: keywords)
        options = args[1] if len(args) > 1 else {}
        result = fn(args[0], **options)
    else:
        result = fn(**kwargs)
    return asdict(result) if is_dataclass(result) else result


def _same(py, js) -> bool:
    if py is None:  # e.g. critical_batch when no batch reaches the ridge: null in JS
        return js is None
    if isinstance(py, bool) or isinstance(py, str):
        return py == js
    if isinstance(py, int):
        return float(py) == float(js)  # BigInt in JS: exact, then one correct rounding, like float()
    if isinstance(py, dict):
        return py.keys() == js.keys() and all(_same(py[k], js[k]) for k in py)
    return math.isclose(py, js, rel_tol=1e-12)


def test_every_public_name_has_a_twin_or_a_reason(node_results):
    _, results = node_results
    public = set(costs.__all__)
    assert set(costs.FORMULAS) <= public, f"in FORMULAS but not public: {set(costs.FORMULAS) - public}"
    unexplained = public - set(costs.FORMULAS) - set(PYTHON_ONLY)
    assert not unexplained, f"public names of minigpt.costs with no JS twin and no reason in PYTHON_ONLY: {unexplained}"
    assert not set(PYTHON_ONLY) & set(costs.FORMULAS), "a name cannot be both mirrored and Python-only"
    missing = [name for name in costs.FORMULAS if name not in results["functions"]]
    assert not missing, f"costs.FORMULAS without a twin in minigpt/web/costs/: {missing}"


def test_every_formula_is_checked_on_the_grid(node_results):
    calls, _ = node_results
    unchecked = set(costs.FORMULAS) - {name for name, _, _ in calls}
    assert not unchecked, f"formulas with no parity call in _calls(): {sorted(unchecked)}"


def test_every_mirrored_function_agrees(node_results):
    calls, results = node_results
    for (name, kwargs, args), got in zip(calls, results["out"], strict=True):
        assert "error" not in got, f"{name}({kwargs or args}) raised in JS: {got.get('error')}"
        expected = _python(name, kwargs, args)
        assert _same(expected, got["value"]), (
            f"{name}({kwargs or args}): python {expected!r} != js {got['value']!r}"
        )


def test_presets_are_the_same(node_results):
    _, results = node_results
    assert results["MODELS"] == {name: asdict(m) for name, m in MODELS.items()}
    assert results["HARDWARE"] == {name: asdict(h) for name, h in HARDWARE.items()}


def test_js_rejects_bad_inputs_like_python():
    calls = [
        ("prefill_flops", dict(L=0, P=2, d=64), None),
        ("prefill_flops", dict(L=4, P=2, d=64, H_kv=2), None),
        ("decode_flops", dict(L=4, P=2, D=0, d=64), None),
        ("kv_bytes_per_token", dict(L=4, H_kv=4, d_h=16, s=1.5), None),
        ("ridge_point", dict(peak_flops=0, bandwidth=1), None),
        ("weight_bytes", dict(N_params=10, s=0), None),
        ("weight_bytes", dict(N_params=10, s=-0.5), None),
        ("kv_bytes_per_token", dict(L=4, H_kv=4, d_h=16, s=2, s_scale=-1), None),
        ("kv_heads", dict(H=32, H_kv=8, scheme="gqa-4"), None),
        ("memory_budget", dict(memory_bytes=10, reserve=1.0), None),
        ("roofline_time", dict(flops=-1, bytes=1, peak_flops=1, bandwidth=1), None),
        ("roofline_bound", dict(intensity=1, peak_flops=1, bandwidth=0), None),
        ("last_decode_step_floor_s", dict(L=4, d=64, V=600, P=0, D=3, bandwidth=1e9), None),
        ("last_decode_step_floor_s", dict(L=4, d=64, V=600, P=2, D=1, bandwidth=0), None),
        ("decode_step_time", dict(L=4, S=8, d=64, N_params=10**5, s=0.5, bandwidth=1e9, peak_flops=1e12), None),
        ("decode_step_time", dict(L=4, S=8, d=64, N_params=10**5, s=2, bandwidth=1e9, peak_flops=1e12,
                                  overlap="yes"), None),
        ("chars_per_second", dict(tok_s=-1, chars_per_token=4), None),
        ("paged_fork_saved_blocks", dict(P=10, n=0, block_size=16), None),
        ("paged_fork_saved_blocks", dict(P=10, n=2, block_size=0), None),
        ("static_batch_steps", dict(B=4, D_max=10, D_min=11), None),
        ("static_batch_steps", dict(B=0, D_max=10), None),
        ("static_batch_utilisation", dict(B=4, D_max=0), None),
        ("prefix_hit_ttft", dict(L=4, d=64, N_params=10**5, s=2, bandwidth=1e9, peak_flops=1e12, S_prefix=8, T=0),
         None),
        ("prefix_hit_ttft", dict(L=4, d=64, N_params=10**5, s=2, bandwidth=1e9, peak_flops=1e12, S_prefix=8, T=2,
                                 block_size=0), None),
        ("speculative_best_gamma", dict(alpha=0.8, cost_ratio=0.1, gamma_max=0), None),
        ("speculative_best_gamma", dict(alpha=0.8, cost_ratio=0.1, gamma_max=1025), None),
        ("speculative_best_gamma", dict(alpha=1.2, cost_ratio=0.1), None),
        ("speculative_speedup", dict(alpha=0.8, gamma=4, cost_ratio=0.1, B=0), None),
        ("kv_storage_bytes", dict(L=2, H_kv=2, d_h=16, S=8, layout="fp4"), None),
        ("kv_storage_bytes", dict(L=2, H_kv=2, d_h=16, S=8, layout="fp8", bits=4), None),
        ("kv_storage_bytes", dict(L=2, H_kv=2, d_h=16, S=8, layout="fp8", group_size=8), None),
        ("kv_storage_bytes", dict(L=2, H_kv=2, d_h=16, S=8, layout="kivi", bits=3), None),
        ("swap_time", dict(L=4, d=64, S=-1, s=2, link_bandwidth=1e9), None),
        ("swap_time", dict(L=4, d=64, S=10, s=2, link_bandwidth=0), None),
        ("mixed_step_time", dict(L=4, d=64, N_params=10**5, s=2, bandwidth=1e9, peak_flops=1e12, T=2, mfu=0.0), None),
        ("mixed_step_time", dict(L=4, d=64, N_params=10**5, s=2, bandwidth=1e9, peak_flops=1e12, T=2, mfu=1.5), None),
        ("mixed_step_time", dict(L=4, d=64, N_params=10**5, s=2, bandwidth=1e9, peak_flops=1e12, T=2, causal=1),
         None),
        ("recompute_time", dict(L=4, d=64, S=10, peak_flops=1e12, mfu=0), None),
        ("recompute_time", dict(L=4, d=64, S=10, peak_flops=1e12, mfu=1.5), None),
        ("step_time_with_swap", dict(step_time=0.01, swap_time=-1.0), None),
        ("step_time_with_swap", dict(step_time=0.01, swap_time=0.02, overlap="yes"), None),
        ("overhead_floor_s", dict(n_ops=0, t_op=1e-6), None),
        ("kv_heads_params", dict(L=32, d=4096, d_h=128, N_params=10, H_kv=8, H_kv_new=32), None),
        ("kv_projection_params", dict(L=32, d=4096, d_h=128, H_kv=5), None),
        ("chips_needed", dict(memory_bytes=1, weight_bytes=10, kv_bytes_per_token=1, S=1, reserve=0.5), None),
        ("overhead_step_model", dict(n_ops=10, t_op=1e-6, kernel_s=-1.0), None),
        ("overhead_step_model", dict(n_ops=10, t_op=1e-6, kernel_s=0.0, t_call=-1e-6), None),
        ("overhead_step_model", dict(n_ops=10, t_op=1e-6, kernel_s=1.0, kernel_slowdown=-0.1), None),
        ("overhead_floor_s", dict(n_ops=236, t_op=0), None),
        ("overhead_step_time", dict(L=4, S=8, d=64, N_params=10**5, s=4, bandwidth=1e9, peak_flops=1e12, n_ops=236,
                                    t_op=1e-6, overlap="max"), None),
        ("overhead_crossover_params", dict(n_ops=236, t_op=1e-6, bandwidth=1e9, s=0), None),
    ]
    results = _run(calls)
    for (name, kwargs, _), got in zip(calls, results["out"], strict=True):
        with pytest.raises(ValueError):
            getattr(costs, name)(**kwargs)
        assert "error" in got, f"{name}({kwargs}) should throw in JS, returned {got}"


# Names whose room is not their Python module's: the presets' tables, and a constant of memory.py.
ROOM_OF_CONSTANT = {"MODELS": "presets", "HARDWARE": "presets", "FIT_RESERVE": "memory"}


def test_each_twin_lives_in_the_room_of_its_python_module():
    """costs/flops.js holds the twins of costs/flops.py, and so on: the same rooms on both sides."""
    misplaced = {}
    for name, room in cost_scripts.room_of().items():
        module = ROOM_OF_CONSTANT.get(name) or getattr(costs, name).__module__.rsplit(".", 1)[-1]
        if room != module:
            misplaced[name] = (room, module)
    assert not misplaced, f"name: (its JS room, its Python module): {misplaced}"
    assert set(cost_scripts.rooms()) - {"core", "presets"} <= {
        p.stem for p in (Path(costs.__file__).parent).glob("*.py")}


def test_a_room_without_core_says_what_to_load_first():
    script = "try { require(process.argv[1]); console.log(JSON.stringify('loaded')); }" \
             " catch (e) { console.log(JSON.stringify(e.message)); }"
    assert run_node(script, "", str(WEB / "costs" / "flops.js")) == "costs/core.js must load before costs/flops.js"


def test_scripts_for_names_what_a_function_needs_and_rejects_unknown_names():
    assert cost_scripts.scripts_for(["prefill_flops"]) == ["costs/core.js", "costs/flops.js"]
    needed = cost_scripts.scripts_for(["overhead_bound"])  # overhead -> roofline -> flops, memory, traffic
    assert needed == ["costs/core.js", "costs/flops.js", "costs/memory.js", "costs/overhead.js",
                      "costs/roofline.js", "costs/traffic.js"]
    with pytest.raises(ValueError, match="no cost script defines 'prefil_flops'"):
        cost_scripts.scripts_for(["prefil_flops"])
