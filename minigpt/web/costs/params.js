// MiniGPTCosts, params: the browser twin of minigpt/costs/params.py.
// Parameter counts of the GPT-2-style MiniGPT: the N of Eq. (2.3), by component.
// needs: core
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/params.js");
  const { int, N, kvWidth, ffn, kvProjBig, kvHeadsBig } = C._;

  // ---- Chapter 2: parameters (the GPT-2-style MiniGPT, tied LM head) ----
  function paramsBig(a) {
    const L = int(a, "L", 1), d = int(a, "d", 1), V = int(a, "V", 1), S_max = int(a, "S_max", 1);
    const kv = kvWidth(a), f = ffn(a), b = a.biases === undefined || a.biases ? 1n : 0n;
    const qkv = d * (d + 2n * kv) + b * (d + 2n * kv), out = d * d + b * d, mlp = d * f + b * f + f * d + b * d;
    return {
      token_embedding: V * d, position_embedding: S_max * d, attention: L * (qkv + out), mlp: L * mlp,
      layer_norms: L * 2n * (2n * d) + 2n * d, lm_head: 0n,
    };
  }
  C.params_by_component = function (a) {
    const parts = paramsBig(a), out = {};
    for (const k in parts) out[k] = N(parts[k]);
    return out;
  };
  C.param_count = (a) => N(Object.values(paramsBig(a)).reduce((x, y) => x + y, 0n));
  C.non_embedding_matrix_params = function (a) {
    const L = int(a, "L", 1), d = int(a, "d", 1);
    return N(L * (d * (d + 2n * kvWidth(a)) + d * d + 2n * d * ffn(a)));
  };

  C.kv_projection_params = (a) => N(kvProjBig(a, N(int(a, "H_kv", 1))));

  C.kv_heads_params = (a) => N(kvHeadsBig(a));
})(typeof globalThis !== "undefined" ? globalThis : this);
