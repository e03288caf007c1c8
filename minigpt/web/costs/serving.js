// MiniGPTCosts, serving: the browser twin of minigpt/costs/serving.py.
// Serving, Chapters 12-14: a mixed step, a static batch's wait, what a prefix-cache hit saves.
// needs: core, memory, roofline
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/serving.js");
  const { int, num, N, kvWidth, layer_flops_big, lm_head_big, mfu, kvToken } = C._;

  // ---- Part III: a chunked-prefill step (prompt chunk + decodes) as one forward ----
  C.mixed_step_time = function (a) {
    const L = int(a, "L", 1), T = int(a, "T", 0, 0), B = int(a, "B", 0, 0), S = int(a, "S", 0, 0);
    const Sp = int(a, "S_prefix", 0, 0);
    if (T === 0n && B === 0n) {
      throw new RangeError("a step needs work: T (prompt tokens) or B (decodes) must be >= 1, got T=0 and B=0");
    }
    let flops = T > 0n ? L * layer_flops_big(Object.assign({}, a, { T: N(T), S: N(Sp), B: 1 })) : 0n;
    if (B > 0n) flops += L * layer_flops_big(Object.assign({}, a, { T: 1, S: N(S), B: N(B) }));
    flops += lm_head_big(Object.assign({}, a, { T: 1, B: N(B) + (T > 0n ? 1 : 0) }));
    const kvToken = 2n * L * kvWidth(a) * int(a, "s", 1);
    const moved = C.weight_bytes(a) + N((Sp + B * S) * kvToken);
    const peak = mfu(a, 1) * num(a, "peak_flops", 0, true);
    return C.roofline_time({ flops: N(flops), bytes: moved, peak_flops: peak, bandwidth: a.bandwidth });
  };

  // ---- Chapter 12: a static batch waits for its longest member (Eqs. 12.1-12.2) ----
  function outputRange(a) {
    const D_min = N(int(a, "D_min", 1, 1)), D_max = N(int(a, "D_max", 1));
    if (D_min > D_max) {
      throw new RangeError("D_min must be <= D_max (outputs uniform on D_min..D_max), got D_min=" + D_min + ", D_max=" + D_max);
    }
    return { D_min, D_max, n: D_max - D_min + 1 };
  }
  C.static_batch_steps = function (a) {
    const { D_max, n } = outputRange(a);
    const B = N(int(a, "B", 1));
    let tail = 0;
    for (let j = 1; j < n; j++) tail += (j / n) ** B;
    return D_max - tail;
  };
  C.static_batch_utilisation = function (a) {
    const { D_min, D_max } = outputRange(a);
    return (D_min + D_max) / 2 / C.static_batch_steps(a);
  };
  C.static_batch_tok_s = function (a) {
    const { D_min, D_max, n } = outputRange(a);
    const B = N(int(a, "B", 1, 1));
    const t = [0];
    for (let m = 1; m <= B; m++) t.push(C.decode_step_time(Object.assign({}, a, { B: m })));
    let seconds = D_min * t[B];
    for (let j = 1; j < n; j++) {
      const p = j / n, logP = Math.log(p), logQ = Math.log1p(-p);
      let logC = 0;
      for (let m = 1; m <= B; m++) {
        logC += Math.log(B - m + 1) - Math.log(m);
        seconds += Math.exp(logC + m * logP + (B - m) * logQ) * t[m];
      }
    }
    return B * (D_min + D_max) / 2 / seconds;
  };

  // ---- Chapter 13: what a prefix-cache hit saves (Eq. 13.1) ----
  C.prefix_hit_ttft = function (a) {
    const Sp = int(a, "S_prefix", 0), T = int(a, "T", 1), b = int(a, "block_size", 1, 16);
    const cached = (Sp / b) * b;
    const base = Object.assign({}, a, { B: 0, S: 0 });
    const miss = C.mixed_step_time(Object.assign({}, base, { T: N(Sp + T), S_prefix: 0 }));
    const hit = C.mixed_step_time(Object.assign({}, base, { T: N(Sp + T - cached), S_prefix: N(cached) }));
    const cachedBytes = cached * 2n * int(a, "L", 1) * kvWidth(a) * int(a, "s", 1);
    return {
      cached_tokens: N(cached), miss_s: miss, hit_s: hit, saved_s: miss - hit, speedup: miss / hit,
      cached_bytes: N(cachedBytes),
    };
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
