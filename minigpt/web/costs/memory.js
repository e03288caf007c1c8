// MiniGPTCosts, memory: the browser twin of minigpt/costs/memory.py.
// Bytes of weights and of the KV cache (Eqs. 2.1-2.8, 2.10) and what fits a memory budget (Eq. 2.9).
// needs: core
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/memory.js");
  const { int, num, N, ceilDiv, ffnMatrices, kvToken, stepBytes, budget } = C._;

  C.weight_bytes = function (a) {
    const n = int(a, "N_params", 0);
    if (Number.isInteger(a.s)) return N(n * int(a, "s", 1));
    return Math.ceil(N(n) * num(a, "s", 0, true)); // a fractional s (int4: 0.5) rounds up
  };
  C.kv_bytes_per_token = (a) => N(kvToken(a));
  C.kv_cache_bytes = (a) => N(int(a, "B", 1, 1) * int(a, "S", 0) * kvToken(a));
  C.int8_kv_bytes = (a) => C.kv_cache_bytes(Object.assign({}, a, { s: 1, s_scale: N(int(a, "s_scale", 0, 2)) }));

  C.memory_budget = (a) => N(budget(a));
  function floorDiv(free, per) {
    return free <= 0n ? 0 : N(free / per); // BigInt division truncates: floor for non-negative
  }
  C.fits_in_memory = (a) => stepBytes(a) <= budget(a);
  C.max_context = function (a) {
    const per = int(a, "B", 1, 1) * int(a, "kv_bytes_per_token", 1);
    return floorDiv(budget(a) - int(a, "weight_bytes", 0), per);
  };
  C.max_batch = function (a) {
    const per = int(a, "S", 1) * int(a, "kv_bytes_per_token", 1);
    return floorDiv(budget(a) - int(a, "weight_bytes", 0), per);
  };

  const KV_HEAD_SCHEMES = ["published", "mha", "gqa", "gqa4", "mqa"];
  C.kv_heads = function (a) {
    const H = N(int(a, "H", 1)), H_kv = N(int(a, "H_kv", 1));
    const scheme = a.scheme === undefined ? "published" : a.scheme;
    if (!KV_HEAD_SCHEMES.includes(scheme)) {
      throw new RangeError("scheme must be one of " + KV_HEAD_SCHEMES.join(", ") + ", got " + scheme);
    }
    return {published: H_kv, mha: H, gqa: Math.max(1, Math.floor(H / 8)), gqa4: Math.max(1, Math.floor(H / 4)), mqa: 1}[scheme];
  };
  C.memory_fit = (a) => ({
    weights_fit: int(a, "weight_bytes", 0) <= budget(a),
    fits: C.fits_in_memory(a),
    max_context: C.max_context(a),
    max_batch: C.max_batch(a),
  });

  // ---- Chapter 2: sliding window, latent attention, mixture of experts ----
  C.window_kv_cache_bytes = function (a) {
    const S = int(a, "S", 0), window = int(a, "window", 1);
    return C.kv_cache_bytes(Object.assign({}, a, { S: N(S < window ? S : window) }));
  };
  C.latent_kv_bytes_per_token = (a) => N(int(a, "L", 1) * (int(a, "d_c", 1) + int(a, "d_rope", 0)) * int(a, "s", 1));

  function experts(a) {
    const E = int(a, "experts", 1), k = int(a, "active_experts", 1);
    if (k > E) throw new RangeError("active_experts must be <= experts = " + E + ", got " + k);
    return [E, k];
  }
  C.moe_active_params = function (a) {
    const [E, k] = experts(a);
    const m = a.ffn_matrices === undefined || a.ffn_matrices === null ? 3n : ffnMatrices(a);
    const idle = int(a, "L", 1) * (E - k) * m * int(a, "d", 1) * int(a, "d_ffn", 1);
    const total = int(a, "N_params", 0);
    if (idle > total) throw new RangeError("N_params must hold the " + idle + " parameters of the idle experts, got " + total);
    return N(total - idle);
  };
  C.moe_expected_experts = function (a) {
    const [E, k] = experts(a);
    return N(E) * (1 - Math.pow(1 - N(k) / N(E), N(int(a, "B", 1, 1))));
  };
  C.moe_decode_params = function (a) {
    const [E, k] = experts(a);
    const m = a.ffn_matrices === undefined || a.ffn_matrices === null ? 3n : ffnMatrices(a);
    const idle = N(E) - C.moe_expected_experts(a);
    const perExpert = int(a, "L", 1) * m * int(a, "d", 1) * int(a, "d_ffn", 1);
    return C.moe_active_params(a) + (N(E - k) - idle) * N(perExpert);
  };

  C.FIT_RESERVE = 0.1; // vLLM's default gpu_memory_utilization = 0.9 (minigpt.costs.memory.FIT_RESERVE)
  C.chips_needed = function (a) {
    const b = budget(Object.assign({}, a, { reserve: a.reserve === undefined ? C.FIT_RESERVE : a.reserve }));
    if (b < 1n) throw new RangeError("memory_bytes·(1 − reserve) must be at least 1 byte");
    const used = stepBytes(a);
    return N(used <= b ? 1n : ceilDiv(used, b));
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
