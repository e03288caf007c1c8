// MiniGPTCosts, batching: the browser twin of minigpt/costs/batching.py.
// Batched decode, Chapter 7: one decode step of B sequences (Eq. 7.2), the gain over B = 1, the cache's share.
// needs: core, roofline
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/batching.js");
  const { int, N, stepBytes } = C._;

  C.decode_tok_s = (a) => N(int(a, "B", 1, 1)) / C.decode_step_time(a);
  C.batching_gain = (a) => C.decode_tok_s(a) / C.decode_tok_s(Object.assign({}, a, { B: 1 }));
  C.ideal_batching_tok_s = (a) => N(int(a, "B", 1, 1)) / C.decode_step_time(Object.assign({}, a, { B: 1 }));
  C.kv_read_share = function (a) {
    const total = stepBytes(a);
    return total ? N(total - int(a, "weight_bytes", 0)) / N(total) : 0;
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
