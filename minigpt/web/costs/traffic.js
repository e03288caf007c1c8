// MiniGPTCosts, traffic: the browser twin of minigpt/costs/traffic.py.
// Bytes moved per step, Chapter 3 (Eq. 3.5), and the traffic table of Chapter 1.
// needs: core
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/traffic.js");
  const { int, num, N, stepBytes, kvHeadsBig } = C._;

  C.decode_step_bytes = (a) => N(stepBytes(a));

  // ---- Chapter 3: prefill traffic and intensities ----
  function prefillBytesBig(a) {
    const tokens = int(a, "B", 1, 1) * int(a, "P", 1);
    return int(a, "weight_bytes", 0) + 2n * tokens * int(a, "d", 1) * int(a, "s", 1) +
      tokens * int(a, "kv_bytes_per_token", 0, 0);
  }
  C.prefill_bytes = (a) => N(prefillBytesBig(a));

  C.last_decode_step_floor_s = function (a) {
    const L = int(a, "L", 1), d = int(a, "d", 1), V = int(a, "V", 0), P = int(a, "P", 1), D = int(a, "D", 1);
    const s = int(a, "s", 1, 2), bandwidth = num(a, "bandwidth", 0, true);
    if (D === 1n) return 0;
    const weights = (L * (12n * d * d) + V * d) * s;
    return N(weights + (P + D - 2n) * 2n * L * d * s) / bandwidth;
  };

  C.gqa_decode_gain = function (a) {
    const s = int(a, "s", 1), L = int(a, "L", 1), d_h = int(a, "d_h", 1), H = int(a, "d", 1) / d_h;
    const gqa = kvHeadsBig(Object.assign({}, a, { H_kv: N(H), H_kv_new: a.H_kv }));
    const tokens = int(a, "B", 1, 1) * int(a, "S", 0);
    const step = (n, heads) => N(n * s + tokens * 2n * L * heads * d_h * s);
    return step(int(a, "N_params", 1), H) / step(gqa, int(a, "H_kv", 1));
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
