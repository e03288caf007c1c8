// MiniGPTCosts, latent: the browser twin of minigpt/costs/latent.py.
// The cache's memory, Chapters 21-22: latent attention's two decode paths; caches that stop growing.
// needs: core, traffic
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/latent.js");
  const { int, num, N, budget } = C._;

  // ---- Chapters 21-22: latent attention's two decode paths (Eqs. 21.1-21.4), caches that stop growing ----
  function mlaPath(a) {
    if (a.path !== "naive" && a.path !== "absorbed") {
      throw new RangeError("path must be one of naive, absorbed, got " + a.path);
    }
    return a.path;
  }
  C.latent_kv_cache_bytes = (a) =>
    N(int(a, "B", 1, 1) * int(a, "S", 0) * int(a, "L", 1) * (int(a, "d_c", 1) + int(a, "d_rope", 0, 0)) * int(a, "s", 1));
  C.mla_layer_flops = function (a) {
    const d = int(a, "d", 1), H = int(a, "H", 1), d_h = int(a, "d_h", 1), d_c = int(a, "d_c", 1);
    const T = int(a, "T", 1), S = int(a, "S", 0), r = int(a, "d_rope", 0, 0), B = int(a, "B", 1, 1);
    const K = S + T, latent = 2n * B * T * d * (d_c + r);
    if (mlaPath(a) === "naive") {
      return N(2n * B * T * d * H * (d_h + r) + latent + 2n * B * K * d_c * 2n * H * d_h +
        2n * B * T * K * H * (2n * d_h + r) + 2n * B * T * H * d_h * d);
    }
    return N(2n * B * T * d * H * (d_c + r) + latent + 2n * B * T * K * H * (2n * d_c + r) + 2n * B * T * H * d_c * d);
  };
  C.mla_attention_flops = function (a) {
    const H = int(a, "H", 1), d_h = int(a, "d_h", 1), d_c = int(a, "d_c", 1);
    const T = int(a, "T", 1), S = int(a, "S", 0), r = int(a, "d_rope", 0, 0), B = int(a, "B", 1, 1);
    const K = S + T;
    if (mlaPath(a) === "naive") return N(2n * B * K * d_c * 2n * H * d_h + 2n * B * T * K * H * (2n * d_h + r));
    return N(2n * B * T * K * H * (2n * d_c + r));
  };
  C.mla_attention_bytes = function (a) {
    const H = int(a, "H", 1), d_h = int(a, "d_h", 1), d_c = int(a, "d_c", 1);
    const K = int(a, "S", 0) + int(a, "T", 1), B = int(a, "B", 1, 1), r = int(a, "d_rope", 0, 0), s = int(a, "s", 1);
    const latents = B * K * (d_c + r) * s;
    return N(mlaPath(a) === "naive" ? latents + 4n * B * K * H * d_h * s : latents);
  };
  C.mla_attention_time = (a) =>
    Math.max(C.mla_attention_flops(a) / num(a, "peak_flops", 0, true), C.mla_attention_bytes(a) / num(a, "bandwidth", 0, true));
  C.mla_absorb_crossover_T = function (a) {
    const T_max = N(int(a, "T_max", 1, 1 << 20));
    const naiveWins = (T) =>
      C.mla_attention_time(Object.assign({}, a, { T, path: "naive" })) <=
      C.mla_attention_time(Object.assign({}, a, { T, path: "absorbed" }));
    if (!naiveWins(T_max)) return T_max + 1;
    let low = 0, high = T_max;
    while (high - low > 1) {
      const mid = Math.floor((low + high) / 2);
      if (naiveWins(mid)) high = mid; else low = mid;
    }
    return high;
  };
  C.streaming_kv_cache_bytes = function (a) {
    const S = int(a, "S", 0), budget = int(a, "sinks", 0, 0) + int(a, "window", 1);
    const kept = S < budget ? S : budget;
    return N(int(a, "B", 1, 1) * kept * 2n * int(a, "L", 1) * int(a, "H_kv", 1) * int(a, "d_h", 1) * int(a, "s", 1));
  };
  C.bounded_decode_step_bytes = function (a) {
    const S = int(a, "S", 0), budget = int(a, "budget", 1);
    return C.decode_step_bytes(Object.assign({}, a, { S: N(S < budget ? S : budget) }));
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
