// MiniGPTCosts, wall_clock: the browser twin of minigpt/costs/wall_clock.py.
// Wall clock of one request, Chapter 4 (Eq. 4.1): time to first token plus decode time.
// needs: core
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/wall_clock.js");
  const { int, num, N } = C._;

  // ---- Chapter 4: wall clock ----
  C.wall_clock = function (a) {
    const ttft_s = N(int(a, "P", 0)) / num(a, "prefill_tok_s", 0, true);
    const decode_s = N(int(a, "D", 0)) / num(a, "decode_tok_s", 0, true);
    const total_s = ttft_s + decode_s;
    return { ttft_s, decode_s, total_s, decode_share: total_s ? decode_s / total_s : 0 };
  };

  // ---- Chapter 4: cost per million output tokens (Eq. 4.3) ----
  C.cost_per_million_tokens = (a) =>
    (num(a, "price_per_hour", 0, true) * 1e6) / (3600 * num(a, "tok_s", 0, true));

  // ---- Chapter 4: decode time when every step also reads the cache (Eq. 4.1 with Eq. 3.5) ----
  C.decode_time_with_kv = function (a) {
    const P = int(a, "P", 0), D = int(a, "D", 0), W = int(a, "weight_bytes", 1), kv = int(a, "kv_bytes_per_token", 0);
    const read = D * W + kv * (D * P + (D * (D - 1n)) / 2n);
    return N(read) / N(W) / num(a, "decode_tok_s", 0, true);
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
