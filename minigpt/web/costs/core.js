// MiniGPTCosts, core: the object every room of the browser's cost formulas adds its functions to, and
// what they share (argument checks, the counts several rooms build on). The browser twin of
// minigpt/costs/ is one script per module of that package: costs/flops.js mirrors costs/flops.py, and
// so on; this file loads first, then the rooms a page needs, in any order (a room's "needs:" line
// names the rooms its functions call). minigpt/book/cost_scripts.py reads those lines and the
// functions each room defines, so a page loads exactly the rooms its explorers call.
// Same function names as Python, same keyword semantics: each function takes one object, e.g.
// MiniGPTCosts.prefill_flops({L: 4, P: 2, d: 64, V: 600}). Counts are computed exactly with BigInt and
// returned as Numbers (exact below 2^53, correctly rounded above), so they equal float() of the Python
// integers. tests/test_costs_js.py checks every function against Python, each room loaded alone.
// needs:
(function (root) {
  "use strict";
  if (root.MiniGPTCosts) return;  // loaded already (a kernel's explorers inline the scripts once per cell)

  // ---- Arguments: each error names the parameter and what is allowed (minigpt/costs/_check.py) ----
  function int(args, name, minimum, fallback) {
    let value = args[name];
    if (value === undefined || value === null) {
      if (fallback === undefined) throw new RangeError(name + " is required");
      value = fallback;
    }
    if (typeof value !== "number" || !Number.isInteger(value) || value < minimum) {
      throw new RangeError(name + " must be an integer >= " + minimum + ", got " + value);
    }
    return BigInt(value);
  }

  function num(args, name, minimum, strict) {
    const value = args[name];
    if (typeof value !== "number" || !Number.isFinite(value) || value < minimum || (strict && value <= minimum)) {
      throw new RangeError(name + " must be a finite number " + (strict ? "> " : ">= ") + minimum + ", got " + value);
    }
    return value;
  }

  const N = Number;

  function kvWidth(a) {
    const d = int(a, "d", 1);
    const none = (x) => x === undefined || x === null;
    if (none(a.H_kv) && none(a.d_h)) return d;
    if (none(a.H_kv) || none(a.d_h)) {
      throw new RangeError("give both H_kv and d_h, or neither (neither is multi-head attention, H_kv·d_h = d)");
    }
    const H_kv = int(a, "H_kv", 1), d_h = int(a, "d_h", 1);
    if (d % d_h !== 0n) throw new RangeError("d_h must divide d = H·d_h; got d=" + d + ", d_h=" + d_h);
    if ((d / d_h) % H_kv !== 0n) throw new RangeError("H_kv must divide H = d/d_h = " + d / d_h + "; got H_kv=" + H_kv);
    return H_kv * d_h;
  }

  function ffn(a) {
    const d = int(a, "d", 1);
    return a.d_ffn === undefined || a.d_ffn === null ? 4n * d : int(a, "d_ffn", 1);
  }

  function ffnMatrices(a) {
    const m = a.ffn_matrices === undefined || a.ffn_matrices === null ? 2n : int(a, "ffn_matrices", 2);
    if (m !== 2n && m !== 3n) throw new RangeError("ffn_matrices must be 2 (GELU MLP) or 3 (SwiGLU), got " + m);
    return m;
  }

  function tokenMatrixFlops(a) {
    const d = int(a, "d", 1);
    return 2n * d * (d + 2n * kvWidth(a)) + 2n * d * d + 2n * ffnMatrices(a) * d * ffn(a);
  }

  // ---- Counts the rooms share: a layer's FLOPs (Eq. 1.1), the LM head, K/V bytes per token (Eq. 2.4),
  // a decode step's bytes (Eq. 3.5), a memory budget, GQA's K/V projections (Eqs. 9.2-9.3) ----
  function layer_flops_big(a) {
    const T = int(a, "T", 1), S = int(a, "S", 0), B = int(a, "B", 1, 1), d = int(a, "d", 1);
    const causal = a.causal === undefined ? false : a.causal;
    if (typeof causal !== "boolean") throw new RangeError("causal must be True or False, got " + causal);
    const keys = causal ? T * S + (T * (T + 1n)) / 2n : T * (S + T);  // query i sees S+i+1 keys when causal
    return B * T * tokenMatrixFlops(a) + 4n * B * keys * d;
  }

  // Model FLOPs utilisation: the share of the peak a forward sustains, in (0, 1] (absent: 1, the floor).
  function mfu(a, fallback) {
    const value = a.mfu === undefined ? fallback : a.mfu;
    if (typeof value !== "number" || !Number.isFinite(value) || !(value > 0 && value <= 1)) {
      throw new RangeError("mfu must be a share of the peak in (0, 1], got " + value);
    }
    return value;
  }

  function lm_head_big(a) {
    return 2n * int(a, "B", 1, 1) * int(a, "T", 0, 1) * int(a, "d", 1) * int(a, "V", 0, 0);
  }

  function kvToken(a) {
    const perVector = int(a, "d_h", 1) * int(a, "s", 1) + int(a, "s_scale", 0, 0);
    return 2n * int(a, "L", 1) * int(a, "H_kv", 1) * perVector;
  }

  function stepBytes(a) {
    return int(a, "weight_bytes", 0) + int(a, "B", 1, 1) * int(a, "S", 0) * int(a, "kv_bytes_per_token", 0);
  }

  function budget(a) {
    const memory = int(a, "memory_bytes", 0);
    const reserve = a.reserve === undefined ? 0 : a.reserve;
    if (typeof reserve !== "number" || !(reserve >= 0 && reserve < 1)) {
      throw new RangeError("reserve must be a number in [0, 1), got " + reserve);
    }
    return BigInt(Math.floor(N(memory) * (1 - reserve)));
  }

  function nonNeg(a, name) {
    const value = a[name];
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new RangeError(name + " must be a number >= 0, got " + value);
    }
    return value;
  }

  function finite(x) {
    if (typeof x !== "number" || !Number.isFinite(x)) throw new RangeError("x must be a finite number, got " + x);
    return x;
  }

  const ceilDiv = (a, b) => (a + b - 1n) / b;

  function kvProjBig(a, H_kv) {
    kvWidth(Object.assign({}, a, { H_kv: H_kv }));
    const b = a.biases ? 1n : 0n;
    return 2n * int(a, "L", 1) * (int(a, "d", 1) + b) * BigInt(H_kv) * int(a, "d_h", 1);
  }

  function kvHeadsBig(a) {
    const before = kvProjBig(a, N(int(a, "H_kv", 1))), after = kvProjBig(a, N(int(a, "H_kv_new", 1)));
    const n = int(a, "N_params", 1);
    if (before > n) throw new RangeError("N_params must hold the " + before + " K/V projection parameters, got " + n);
    return n - before + after;
  }

  const C = {};
  // The shared helpers, for the rooms only: not enumerable, so not among the formulas.
  Object.defineProperty(C, "_", { value: Object.freeze({
    int, num, N, finite, nonNeg, ceilDiv, kvWidth, ffn, ffnMatrices, tokenMatrixFlops,
    layer_flops_big, lm_head_big, mfu, kvToken, stepBytes, budget, kvProjBig, kvHeadsBig }) });
  root.MiniGPTCosts = C;
  if (typeof module !== "undefined" && module.exports) module.exports = C;
})(typeof globalThis !== "undefined" ? globalThis : this);
