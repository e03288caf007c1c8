// MiniGPTCosts, flops: the browser twin of minigpt/costs/flops.py.
// FLOPs of prefill, decode and generation, Chapter 1 (Eqs. 1.1–1.6), 2 FLOPs per multiply-add.
// needs: core
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/flops.js");
  const { int, N, kvWidth, ffn, ffnMatrices, tokenMatrixFlops, layer_flops_big, lm_head_big } = C._;

  function prefill_big(a) {
    const L = int(a, "L", 1), P = int(a, "P", 1);
    return L * layer_flops_big(Object.assign({}, a, { T: N(P), S: 0 })) + lm_head_big(Object.assign({}, a, { T: 1 }));
  }
  function decode_big(a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), D = int(a, "D", 1), B = int(a, "B", 1, 1);
    const d = int(a, "d", 1), V = int(a, "V", 0, 0);
    const n = D - 1n;
    const keys = n * P + (n * (n + 1n)) / 2n;
    const perToken = L * tokenMatrixFlops(a) + 2n * d * V;
    return B * (n * perToken + 4n * L * d * keys);
  }
  function no_cache_big(a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), D = int(a, "D", 1), B = int(a, "B", 1, 1);
    const d = int(a, "d", 1), V = int(a, "V", 0, 0);
    const tokens = D * P + (D * (D - 1n)) / 2n;
    const squares = D * P * P + P * D * (D - 1n) + ((D - 1n) * D * (2n * D - 1n)) / 6n;
    return B * (L * tokenMatrixFlops(a) * tokens + 4n * L * d * squares + D * 2n * d * V);
  }

  C.layer_flops = (a) => N(layer_flops_big(a));
  C.lm_head_flops = (a) => N(lm_head_big(a));
  C.prefill_flops = (a) => N(prefill_big(a));
  C.decode_step_flops = function (a) {
    const L = int(a, "L", 1);
    return N(L * layer_flops_big(Object.assign({}, a, { T: 1 })) + lm_head_big(Object.assign({}, a, { T: 1 })));
  };
  C.decode_flops = (a) => N(decode_big(a));
  C.generation_flops = (a) => N(prefill_big(a) + decode_big(a));
  C.no_cache_flops = (a) => N(no_cache_big(a));
  C.cache_saving_factor = (a) => N(no_cache_big(a)) / N(prefill_big(a) + decode_big(a));

  // ---- Chapter 1: the course page's convention (1 per multiply-add, MHA, d_ffn = 4d, no LM head) ----
  C.prefill_macs = function (a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), d = int(a, "d", 1);
    return N(12n * L * P * d * d + 2n * L * P * P * d);
  };
  C.decode_step_macs = function (a) {
    const L = int(a, "L", 1), S = int(a, "S", 0), d = int(a, "d", 1);
    return N(12n * L * d * d + 2n * L * S * d);
  };
  C.decode_macs_seed = function (a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), D = int(a, "D", 1), d = int(a, "d", 1);
    return N(12n * L * D * d * d + 2n * L * d * (D * P + (D * (D - 1n)) / 2n));
  };
  C.no_cache_macs_seed = function (a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), D = int(a, "D", 1), d = int(a, "d", 1);
    const tokens = D * P + (D * (D - 1n)) / 2n;
    const squares = D * P * P + P * D * (D - 1n) + ((D - 1n) * D * (2n * D - 1n)) / 6n;
    return N(12n * L * d * d * tokens + 2n * L * d * squares);
  };
  C.prefill_attention_share = function (a) {
    const P = int(a, "P", 1), d = int(a, "d", 1);
    return N(P) / N(6n * d + P);
  };
  C.prefill_crossover_P = (a) => N(6n * int(a, "d", 1));

  // ---- Chapter 6: where attention takes over the no-cache total (course page's form) ----
  C.no_cache_attention_share = function (a) {
    const P = int(a, "P", 1), D = int(a, "D", 1), d = int(a, "d", 1);
    const tokens = D * P + (D * (D - 1n)) / 2n;
    const squares = D * P * P + P * D * (D - 1n) + ((D - 1n) * D * (2n * D - 1n)) / 6n;
    return N(squares) / N(6n * d * tokens + squares);
  };
  C.no_cache_crossover_D = (a) => N(9n * int(a, "d", 1));

  // ---- Chapter 1: the terms of Eq. (1.2) ----
  C.prefill_flops_by_term = function (a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), B = int(a, "B", 1, 1), d = int(a, "d", 1);
    const tokens = B * P;
    return {
      qkv: N(L * tokens * 2n * d * (d + 2n * kvWidth(a))),
      attention: N(L * 4n * B * P * P * d),
      output: N(L * tokens * 2n * d * d),
      ffn: N(L * tokens * 2n * ffnMatrices(a) * d * ffn(a)),
      lm_head: N(lm_head_big(Object.assign({}, a, { T: 1 }))),
    };
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
