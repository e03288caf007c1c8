// MiniGPTCosts, roofline: the browser twin of minigpt/costs/roofline.py.
// The roofline, Chapter 3: arithmetic intensity (Eq. 3.1), the ridge (Eq. 3.2), a step's time.
// needs: core, flops, memory, traffic
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/roofline.js");
  const { int, num, N, nonNeg, kvWidth, layer_flops_big, lm_head_big, kvToken } = C._;

  C.arithmetic_intensity = (a) => num(a, "flops", 0, false) / num(a, "bytes", 0, true);
  C.ridge_point = (a) => num(a, "peak_flops", 0, true) / num(a, "bandwidth", 0, true);
  C.attainable_flops = (a) =>
    Math.min(num(a, "peak_flops", 0, true), num(a, "intensity", 0, false) * num(a, "bandwidth", 0, true));
  C.decode_tok_s_ceiling = (a) =>
    (N(int(a, "B", 1, 1)) * num(a, "bandwidth", 0, true)) / num(a, "bytes_per_step", 0, true);

  C.prefill_intensity = function (a) {
    const moved = C.prefill_bytes(Object.assign({}, a, { weight_bytes: C.weight_bytes(a), kv_bytes_per_token: 0 }));
    return C.arithmetic_intensity({ flops: C.prefill_flops(a), bytes: moved });
  };
  C.decode_intensity = function (a) {
    const kv = N(2n * int(a, "L", 1) * kvWidth(a) * int(a, "s", 1));
    const moved = C.decode_step_bytes(Object.assign({}, a, { weight_bytes: C.weight_bytes(a), kv_bytes_per_token: kv }));
    return C.arithmetic_intensity({ flops: C.decode_step_flops(a), bytes: moved });
  };

  C.roofline_time = (a) =>
    Math.max(nonNeg(a, "flops") / num(a, "peak_flops", 0, true), nonNeg(a, "bytes") / num(a, "bandwidth", 0, true));
  C.roofline_bound = (a) => (nonNeg(a, "intensity") < C.ridge_point(a) ? "memory" : "compute");
  C.decode_step_time = function (a) {
    let s_kv = a.s_kv;
    if (s_kv === undefined || s_kv === null) {
      if (!Number.isInteger(a.s)) throw new RangeError("s_kv must be given (an integer >= 1) when s is fractional, got s=" + a.s);
      s_kv = a.s;
    }
    const overlap = a.overlap === undefined ? true : a.overlap;
    if (typeof overlap !== "boolean") throw new RangeError("overlap must be true (Eq. 7.2's max) or false (the additive form), got " + overlap);
    const flops = C.decode_step_flops(a);
    const L = int(a, "L", 1), S = int(a, "S", 0), B = int(a, "B", 1, 1);
    const kvToken = 2n * L * kvWidth(a) * int({ s_kv }, "s_kv", 1);
    const weights = C.weight_bytes(a);
    const peak = { peak_flops: a.peak_flops, bandwidth: a.bandwidth };
    if (overlap) {
      return C.roofline_time(Object.assign({ flops, bytes: weights + N(B * S * kvToken) }, peak));
    }
    const dense = C.decode_step_flops(Object.assign({}, a, { S: 0 }));
    return C.roofline_time(Object.assign({ flops: dense, bytes: weights }, peak)) +
      C.roofline_time(Object.assign({ flops: flops - dense, bytes: N(B * S * kvToken) }, peak));
  };

  // ---- Chapter 7: a batched decode step in time (Eqs. 7.2–7.4) ----
  function stepFlopsBig(a, S) {
    const L = int(a, "L", 1);
    const b = Object.assign({}, a, { T: 1, S: S });
    return L * layer_flops_big(b) + lm_head_big(b);
  }
  function kvSequenceBytes(a) {
    return int(a, "S", 0) * 2n * int(a, "L", 1) * kvWidth(a) * int(a, "s", 1);
  }
  C.critical_batch = function (a) {
    const ridge = num(a, "peak_flops", 0, true) / num(a, "bandwidth", 0, true);
    const flops1 = N(stepFlopsBig(Object.assign({}, a, { B: 1 }), N(int(a, "S", 0))));
    const margin = flops1 - ridge * N(kvSequenceBytes(a));
    if (margin <= 0) return null;
    return Math.max(1, Math.ceil((ridge * N(int(a, "N_params", 0) * int(a, "s", 1))) / margin));
  };

  // ---- Chapter 3: attention's own intensity with a cache (Eq. 3.6) ----
  function attnFlops(a) {
    const T = int(a, "T", 1), S = int(a, "S", 0);
    return 4n * int(a, "L", 1) * int(a, "B", 1, 1) * T * (S + T) * int(a, "d", 1);
  }
  function attnBytes(a) {
    const kv = kvWidth(a), T = int(a, "T", 1), S = int(a, "S", 0), d = int(a, "d", 1);
    return int(a, "L", 1) * int(a, "B", 1, 1) * (2n * (S + T) * kv + 2n * T * d) * int(a, "s", 1);
  }
  C.attention_flops = (a) => N(attnFlops(a));
  C.attention_bytes = (a) => N(attnBytes(a));
  C.attention_intensity = function (a) {
    const one = Object.assign({}, a, { L: 1, B: 1 });
    return N(attnFlops(one)) / N(attnBytes(one));
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
