// MiniGPTCosts, preemption: the browser twin of minigpt/costs/preemption.py.
// Preemption, Chapter 12: bringing back a preempted sequence of S tokens, by swap or recompute.
// needs: core, flops
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/preemption.js");
  const { int, num, N, kvWidth } = C._;

  // ---- Chapter 12: preemption by swap or recompute (Eqs. 12.3-12.5) ----
  C.swap_time = function (a) {
    const S = int(a, "S", 0), L = int(a, "L", 1), s = int(a, "s", 1);
    return N(S * 2n * L * kvWidth(a) * s) / num(a, "link_bandwidth", 0, true);
  };
  C.recompute_time = function (a) {
    const share = C._.mfu(a, undefined);
    if (int(a, "S", 0) === 0n) return 0;
    const flops = C.prefill_flops(Object.assign({}, a, { P: a.S }));
    return flops / (share * num(a, "peak_flops", 0, true));
  };
  C.step_time_with_swap = function (a) {
    const overlap = a.overlap === undefined ? true : a.overlap;
    if (typeof overlap !== "boolean") throw new RangeError("overlap must be true (Eq. 12.5's max) or false (the sum), got " + overlap);
    const step = num(a, "step_time", 0, false), swap = num(a, "swap_time", 0, false);
    return overlap ? Math.max(step, swap) : step + swap;
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
