// MiniGPTCosts: the browser mirror of minigpt/costs/ and minigpt/costs/presets.py, for the book's
// analytic sliders on the static site (no kernel). Same function names, same keyword semantics:
// each function takes one object, e.g. MiniGPTCosts.prefill_flops({L: 4, P: 2, d: 64, V: 600}).
// Counts are computed exactly with BigInt and returned as Numbers (exact below 2^53, correctly
// rounded above), so they equal float() of the Python integers. tests/test_costs_js.py checks it.
(function (root) {
  "use strict";

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

  // ---- Chapter 1: FLOPs (2 per multiply-add) ----
  function layer_flops_big(a) {
    const T = int(a, "T", 1), S = int(a, "S", 0), B = int(a, "B", 1, 1), d = int(a, "d", 1);
    return B * T * tokenMatrixFlops(a) + 4n * B * T * (S + T) * d;
  }
  function lm_head_big(a) {
    return 2n * int(a, "B", 1, 1) * int(a, "T", 0, 1) * int(a, "d", 1) * int(a, "V", 0, 0);
  }
  function prefill_big(a) {
    const L = int(a, "L", 1), P = int(a, "P", 1);
    return L * layer_flops_big(Object.assign({}, a, { T: N(P), S: 0 })) + lm_head_big(Object.assign({}, a, { T: 1 }));
  }
  function decode_big(a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), D = int(a, "D", 1), B = int(a, "B", 1, 1);
    const d = int(a, "d", 1), V = int(a, "V", 0, 0);
    const n = D - 1n;
    const keys = n * P + (n * (n + 1n)) / 2n;
    const perToken = L * tokenMatrixFlops(a) + 2n * d * V;
    return B * (n * perToken + 4n * L * d * keys);
  }
  function no_cache_big(a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), D = int(a, "D", 1), B = int(a, "B", 1, 1);
    const d = int(a, "d", 1), V = int(a, "V", 0, 0);
    const tokens = D * P + (D * (D - 1n)) / 2n;
    const squares = D * P * P + P * D * (D - 1n) + ((D - 1n) * D * (2n * D - 1n)) / 6n;
    return B * (L * tokenMatrixFlops(a) * tokens + 4n * L * d * squares + D * 2n * d * V);
  }

  const C = {};
  C.layer_flops = (a) => N(layer_flops_big(a));
  C.lm_head_flops = (a) => N(lm_head_big(a));
  C.prefill_flops = (a) => N(prefill_big(a));
  C.decode_step_flops = function (a) {
    const L = int(a, "L", 1);
    return N(L * layer_flops_big(Object.assign({}, a, { T: 1 })) + lm_head_big(Object.assign({}, a, { T: 1 })));
  };
  C.decode_flops = (a) => N(decode_big(a));
  C.generation_flops = (a) => N(prefill_big(a) + decode_big(a));
  C.no_cache_flops = (a) => N(no_cache_big(a));
  C.cache_saving_factor = (a) => N(no_cache_big(a)) / N(prefill_big(a) + decode_big(a));

  // ---- Chapter 1: the course page's convention (1 per multiply-add, MHA, d_ffn = 4d, no LM head) ----
  C.prefill_macs = function (a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), d = int(a, "d", 1);
    return N(12n * L * P * d * d + 2n * L * P * P * d);
  };
  C.decode_step_macs = function (a) {
    const L = int(a, "L", 1), S = int(a, "S", 0), d = int(a, "d", 1);
    return N(12n * L * d * d + 2n * L * S * d);
  };
  C.decode_macs_seed = function (a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), D = int(a, "D", 1), d = int(a, "d", 1);
    return N(12n * L * D * d * d + 2n * L * d * (D * P + (D * (D - 1n)) / 2n));
  };
  C.no_cache_macs_seed = function (a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), D = int(a, "D", 1), d = int(a, "d", 1);
    const tokens = D * P + (D * (D - 1n)) / 2n;
    const squares = D * P * P + P * D * (D - 1n) + ((D - 1n) * D * (2n * D - 1n)) / 6n;
    return N(12n * L * d * d * tokens + 2n * L * d * squares);
  };
  C.prefill_attention_share = function (a) {
    const P = int(a, "P", 1), d = int(a, "d", 1);
    return N(P) / N(6n * d + P);
  };
  C.prefill_crossover_P = (a) => N(6n * int(a, "d", 1));

  // ---- Chapter 2: bytes ----
  function kvToken(a) {
    const perVector = int(a, "d_h", 1) * int(a, "s", 1) + int(a, "s_scale", 0, 0);
    return 2n * int(a, "L", 1) * int(a, "H_kv", 1) * perVector;
  }
  C.weight_bytes = function (a) {
    const n = int(a, "N_params", 0);
    if (Number.isInteger(a.s)) return N(n * int(a, "s", 1));
    return Math.ceil(N(n) * num(a, "s", 0, true)); // a fractional s (int4: 0.5) rounds up
  };
  C.kv_bytes_per_token = (a) => N(kvToken(a));
  C.kv_cache_bytes = (a) => N(int(a, "B", 1, 1) * int(a, "S", 0) * kvToken(a));
  C.int8_kv_bytes = (a) => C.kv_cache_bytes(Object.assign({}, a, { s: 1, s_scale: N(int(a, "s_scale", 0, 2)) }));

  // ---- Chapter 3: roofline ----
  function stepBytes(a) {
    return int(a, "weight_bytes", 0) + int(a, "B", 1, 1) * int(a, "S", 0) * int(a, "kv_bytes_per_token", 0);
  }
  C.decode_step_bytes = (a) => N(stepBytes(a));
  C.arithmetic_intensity = (a) => num(a, "flops", 0, false) / num(a, "bytes", 0, true);
  C.ridge_point = (a) => num(a, "peak_flops", 0, true) / num(a, "bandwidth", 0, true);
  C.attainable_flops = (a) =>
    Math.min(num(a, "peak_flops", 0, true), num(a, "intensity", 0, false) * num(a, "bandwidth", 0, true));
  C.decode_tok_s_ceiling = (a) =>
    (N(int(a, "B", 1, 1)) * num(a, "bandwidth", 0, true)) / num(a, "bytes_per_step", 0, true);

  // ---- Chapter 2: memory budget (weights + KV <= (1 - reserve) * memory) ----
  function budget(a) {
    const memory = int(a, "memory_bytes", 0);
    const reserve = a.reserve === undefined ? 0 : a.reserve;
    if (typeof reserve !== "number" || !(reserve >= 0 && reserve < 1)) {
      throw new RangeError("reserve must be a number in [0, 1), got " + reserve);
    }
    return BigInt(Math.floor(N(memory) * (1 - reserve)));
  }
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

  // ---- Chapter 4: wall clock ----
  C.wall_clock = function (a) {
    const ttft_s = N(int(a, "P", 0)) / num(a, "prefill_tok_s", 0, true);
    const decode_s = N(int(a, "D", 0)) / num(a, "decode_tok_s", 0, true);
    const total_s = ttft_s + decode_s;
    return { ttft_s, decode_s, total_s, decode_share: total_s ? decode_s / total_s : 0 };
  };

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

  // ---- Chapter 3: prefill traffic and intensities ----
  function prefillBytesBig(a) {
    const tokens = int(a, "B", 1, 1) * int(a, "P", 1);
    return int(a, "weight_bytes", 0) + 2n * tokens * int(a, "d", 1) * int(a, "s", 1) +
      tokens * int(a, "kv_bytes_per_token", 0, 0);
  }
  C.prefill_bytes = (a) => N(prefillBytesBig(a));
  C.prefill_intensity = function (a) {
    const moved = C.prefill_bytes(Object.assign({}, a, { weight_bytes: C.weight_bytes(a), kv_bytes_per_token: 0 }));
    return C.arithmetic_intensity({ flops: C.prefill_flops(a), bytes: moved });
  };
  C.decode_intensity = function (a) {
    const kv = N(2n * int(a, "L", 1) * kvWidth(a) * int(a, "s", 1));
    const moved = C.decode_step_bytes(Object.assign({}, a, { weight_bytes: C.weight_bytes(a), kv_bytes_per_token: kv }));
    return C.arithmetic_intensity({ flops: C.decode_step_flops(a), bytes: moved });
  };

  // ---- The explorers' formulas (Chapters 1-4, 7) ----
  function nonNeg(a, name) {
    const value = a[name];
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new RangeError(name + " must be a number >= 0, got " + value);
    }
    return value;
  }
  C.last_decode_step_floor_s = function (a) {
    const L = int(a, "L", 1), d = int(a, "d", 1), V = int(a, "V", 0), P = int(a, "P", 1), D = int(a, "D", 1);
    const s = int(a, "s", 1, 2), bandwidth = num(a, "bandwidth", 0, true);
    if (D === 1n) return 0;
    const weights = (L * (12n * d * d) + V * d) * s;
    return N(weights + (P + D - 2n) * 2n * L * d * s) / bandwidth;
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
  C.decode_tok_s = (a) => N(int(a, "B", 1, 1)) / C.decode_step_time(a);
  C.batching_gain = (a) => C.decode_tok_s(a) / C.decode_tok_s(Object.assign({}, a, { B: 1 }));
  C.ideal_batching_tok_s = (a) => N(int(a, "B", 1, 1)) / C.decode_step_time(Object.assign({}, a, { B: 1 }));
  C.kv_read_share = function (a) {
    const total = stepBytes(a);
    return total ? N(total - int(a, "weight_bytes", 0)) / N(total) : 0;
  };
  C.chars_per_second = function (a) {
    if (!(a.tok_s >= 0) || !(a.chars_per_token >= 0)) {
      throw new RangeError("tok_s and chars_per_token must be >= 0, got " + a.tok_s + " and " + a.chars_per_token);
    }
    return a.tok_s * a.chars_per_token;
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


  // ---- Formatting (same strings as the Python side; options as one object, e.g. {binary: false}) ----
  function checkN(n) {
    if (typeof n !== "number" || !Number.isFinite(n) || n < 0) {
      throw new RangeError("n must be a finite number >= 0, got " + n);
    }
  }
  function opt(o, name, fallback) {
    return o && o[name] !== undefined ? o[name] : fallback;
  }
  function grouped(text) {
    const [whole, frac] = text.split(".");
    const g = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return frac === undefined ? g : g + "." + frac;
  }
  C.fmt_bytes = function (n, o) {
    checkN(n);
    const binary = opt(o, "binary", true), suffix = opt(o, "suffix", "");
    const base = binary ? 1024 : 1000;
    const units = binary ? ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] : ["B", "kB", "MB", "GB", "TB", "PB"];
    if (n < base) return (Number.isInteger(n) ? String(n) : n.toFixed(0)) + " B" + suffix;
    let value = n, unit = 0;
    while (value >= base && unit < units.length - 1) { value /= base; unit += 1; }
    return value.toFixed(value < 100 ? 1 : 0) + " " + units[unit] + suffix;
  };
  C.fmt_flops = function (n, o) {
    checkN(n);
    const suffix = opt(o, "suffix", "");
    const prefixes = ["", "k", "M", "G", "T", "P", "E", "Z"];
    let value = n, unit = 0;
    while (value >= 1000 && unit < prefixes.length - 1) { value /= 1000; unit += 1; }
    const text = unit === 0 ? value.toFixed(0) + " FLOP" + suffix
      : value.toFixed(value < 10 ? 2 : 1) + " " + prefixes[unit] + "FLOP" + suffix;
    if (opt(o, "exact", false) && Number.isInteger(n) && n < 2 ** 53) return grouped(String(n)) + " (" + text + ")";
    return text;
  };
  C.fmt_count = function (n) {
    checkN(n);
    if (n < 1e6) {
      const r = Math.abs(n % 1) === 0.5 ? 2 * Math.round(n / 2) : Math.round(n); // Python's round: ties to even
      return grouped(String(r));
    }
    const suffixes = ["", "K", "M", "B", "T"];
    let value = n, unit = 0;
    while (value >= 1000 && unit < suffixes.length - 1) { value /= 1000; unit += 1; }
    return value.toFixed(value < 10 ? 2 : value < 100 ? 1 : 0) + " " + suffixes[unit];
  };
  function finite(x) {
    if (typeof x !== "number" || !Number.isFinite(x)) throw new RangeError("x must be a finite number, got " + x);
    return x;
  }
  function toFixed(x, decimals) {
    // toFixed switches to exponent notation from 1e21; doubles that large are integers: print them exactly.
    if (Math.abs(x) < 1e21) return x.toFixed(decimals);
    return BigInt(x).toString() + (decimals ? "." + "0".repeat(decimals) : "");
  }
  C.fmt_fixed = (x, o) => grouped(toFixed(finite(x), opt(o, "decimals", 1))) + opt(o, "suffix", "");
  C.fmt_int = (x, o) => C.fmt_fixed(x, { decimals: 0, suffix: opt(o, "suffix", "") });
  C.fmt_percent = (x, o) => C.fmt_fixed(100 * finite(x), { decimals: opt(o, "decimals", 1), suffix: "%" });
  C.fmt_duration = function (seconds) {
    checkN(seconds);
    let value = seconds, unit = "s";
    for (const smaller of ["ms", "µs", "ns"]) {
      if (value >= 1 || value === 0) break;
      value *= 1000;
      unit = smaller;
    }
    return toFixed(value, value < 10 ? 2 : value < 100 ? 1 : 0) + " " + unit;
  };
  C.fmt_memory_fit = function (fit) {
    if (!fit.weights_fit) return "weights alone do not fit";
    return (fit.fits ? "fits" : "does not fit") + "; longest context " + grouped(String(fit.max_context)) +
      ", largest batch " + grouped(String(fit.max_batch));
  };

  // ---- Part III: how the cache is stored (minigpt/costs/kv_storage.py) ----
  C.quantized_kv_bytes = function (a) {
    const d_h = int(a, "d_h", 1);
    const bits = a.bits === undefined || a.bits === null ? 8 : a.bits;
    if (bits !== 8 && bits !== 4) throw new RangeError("bits must be 8 or 4, got " + bits);
    const g = a.group_size === undefined || a.group_size === null ? d_h : int(a, "group_size", 1);
    if (d_h % g !== 0n) throw new RangeError("group_size must divide d_h=" + d_h + ", got " + g);
    if (bits === 4 && (d_h % 2n !== 0n || g % 2n !== 0n)) {
      throw new RangeError("int4 packs two values per byte: d_h and group_size must be even, got " + d_h + ", " + g);
    }
    const perVector = (d_h * BigInt(bits)) / 8n + (d_h / g) * int(a, "s_scale", 0, 2);
    return N(int(a, "B", 1, 1) * int(a, "S", 0) * 2n * int(a, "L", 1) * int(a, "H_kv", 1) * perVector);
  };
  C.kivi_kv_bytes = function (a) {
    const G = int(a, "token_group", 1, 16);
    const values = BigInt(C.quantized_kv_bytes(a)) / 2n;
    const d_h = int(a, "d_h", 1);
    const bits = BigInt(a.bits === undefined || a.bits === null ? 8 : a.bits);
    const S = int(a, "S", 0);
    const blocks = S / G;
    const keys = (blocks * G * d_h * bits) / 8n + blocks * d_h * int(a, "s_scale", 0, 2) + (S % G) * d_h * int(a, "s", 1, 4);
    return N(values + int(a, "B", 1, 1) * int(a, "L", 1) * int(a, "H_kv", 1) * keys);
  };
  C.fp8_kv_bytes = (a) =>
    N(int(a, "B", 1, 1) * int(a, "S", 0) * 2n * int(a, "L", 1) * int(a, "H_kv", 1) * int(a, "d_h", 1) +
      2n * int(a, "L", 1) * int(a, "s_scale", 0, 4));
  C.kv_storage_bytes = function (a) {
    const layout = a.layout === undefined || a.layout === null ? "per_token" : a.layout;
    if (layout === "per_token") return C.quantized_kv_bytes(a);
    if (layout === "kivi") return C.kivi_kv_bytes(a);
    if (layout === "fp8") {
      const bits = a.bits === undefined || a.bits === null ? 8 : a.bits;
      const group = a.group_size === undefined ? null : a.group_size;
      if (bits !== 8 || group !== null) {
        throw new RangeError("fp8 stores 8 bits a value with per-layer scales: bits must be 8 and group_size None, got " +
          bits + ", " + group);
      }
      return C.fp8_kv_bytes(Object.assign({}, a, { s_scale: undefined }));
    }
    throw new RangeError("layout must be one of per_token, kivi, fp8, got " + layout);
  };
  function pagedBlocks(a) {
    const b = int(a, "block_size", 1);
    return (int(a, "S", 0) + b - 1n) / b;
  }
  C.paged_blocks = (a) => N(pagedBlocks(a));
  C.paged_slack_tokens = (a) => N(pagedBlocks(a) * int(a, "block_size", 1) - int(a, "S", 0));
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

  // ---- Chapter 3: tensor-parallel decode (Eqs. 3.7, 3.8) ----
  C.tp_allreduce_bytes = (a) => N(2n * int(a, "L", 1) * int(a, "B", 1) * int(a, "d", 1) * int(a, "s", 1));
  C.tp_decode_step_time = function (a) {
    const n = N(int(a, "n_gpus", 1));
    const memory = N(int(a, "bytes_per_step", 1)) / (n * num(a, "bandwidth", 0, true));
    const link = ((2 * (n - 1)) / n) * N(int(a, "allreduce_bytes", 0)) / num(a, "link_bandwidth", 0, true);
    return memory + link;
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
  // ---- Chapter 6: where attention takes over the no-cache total (course page's form) ----
  C.no_cache_attention_share = function (a) {
    const P = int(a, "P", 1), D = int(a, "D", 1), d = int(a, "d", 1);
    const tokens = D * P + (D * (D - 1n)) / 2n;
    const squares = D * P * P + P * D * (D - 1n) + ((D - 1n) * D * (2n * D - 1n)) / 6n;
    return N(squares) / N(6n * d * tokens + squares);
  };
  C.no_cache_crossover_D = (a) => N(9n * int(a, "d", 1));
  // ---- Chapter 11: blocks saved by n samples sharing one prompt (Eq. 11.3) ----
  C.paged_fork_saved_blocks = (a) =>
    N((int(a, "n", 1) - 1n) * (int(a, "P", 1) / int(a, "block_size", 1)));

  // ---- Chapter 2: sliding window, latent attention, mixture of experts ----
  C.window_kv_cache_bytes = function (a) {
    const S = int(a, "S", 0), window = int(a, "window", 1);
    return C.kv_cache_bytes(Object.assign({}, a, { S: N(S < window ? S : window) }));
  };
  C.latent_kv_bytes_per_token = (a) => N(int(a, "L", 1) * (int(a, "d_c", 1) + int(a, "d_rope", 0)) * int(a, "s", 1));

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

  // ---- Chapter 1: the terms of Eq. (1.2) ----
  C.prefill_flops_by_term = function (a) {
    const L = int(a, "L", 1), P = int(a, "P", 1), B = int(a, "B", 1, 1), d = int(a, "d", 1);
    const tokens = B * P;
    return {
      qkv: N(L * tokens * 2n * d * (d + 2n * kvWidth(a))),
      attention: N(L * 4n * B * P * P * d),
      output: N(L * tokens * 2n * d * d),
      ffn: N(L * tokens * 2n * ffnMatrices(a) * d * ffn(a)),
      lm_head: N(lm_head_big(Object.assign({}, a, { T: 1 }))),
    };
  };
  // ---- Part III: attention kernels and speculative decoding (minigpt/costs/attention_kernels.py) ----
  const ceilDiv = (a, b) => (a + b - 1n) / b;
  C.tiled_attention_flops = function (a) {
    const T = int(a, "T", 1), S = int(a, "S", 0, 0), d_h = int(a, "d_h", 1), H = int(a, "H", 1, 1);
    const B = int(a, "B", 1, 1), bq = int(a, "block_q", 1, 16), bk = int(a, "block_k", 1, 16);
    const causal = a.causal === undefined || a.causal === null ? true : a.causal;
    if (typeof causal !== "boolean") throw new RangeError("causal must be true or false, got " + causal);
    const keys = S + T;
    let total = 0n;
    for (let i0 = 0n; i0 < T; i0 += bq) {
      const i1 = i0 + bq < T ? i0 + bq : T;
      let seen = keys;
      if (causal) {
        const whole = ceilDiv(S + i1, bk) * bk;
        seen = whole < keys ? whole : keys;
      }
      total += (i1 - i0) * seen;
    }
    return N(4n * B * H * d_h * total);
  };
  C.standard_attention_hbm_bytes = function (a) {
    const P = int(a, "P", 1), d_h = int(a, "d_h", 1);
    return N(int(a, "B", 1, 1) * int(a, "H", 1, 1) * (4n * P * d_h + 4n * P * P) * int(a, "s", 1));
  };
  C.flash_attention_hbm_bytes = function (a) {
    const n = int(a, "P", 1), d = int(a, "d_h", 1), s = int(a, "s", 1);
    const M = int(a, "sram_bytes", 1) / s;
    if (M < 4n * d) throw new RangeError("sram_bytes must hold at least 4·d_h values, got " + a.sram_bytes);
    const Tc = ceilDiv(n, ceilDiv(M, 4n * d));
    const elements = n * d + 2n * n + 2n * n * d + Tc * (3n * n * d + 4n * n);
    return N(int(a, "B", 1, 1) * int(a, "H", 1, 1) * elements * s);
  };
  C.tiled_attention_hbm_bytes = function (a) {
    const n = int(a, "P", 1), d = int(a, "d_h", 1), bq = int(a, "block_q", 1), bk = int(a, "block_k", 1);
    const flag = (name) => {
      const v = a[name] === undefined || a[name] === null ? false : a[name];
      if (typeof v !== "boolean") throw new RangeError(name + " must be true or false, got " + v);
      return v;
    };
    const kvOuter = flag("kv_outer"), causal = flag("causal");
    let elements;
    if (kvOuter) {
      elements = n * d + 2n * n + 2n * n * d;
      for (let j0 = 0n; j0 < n; j0 += bk) {
        let rows = 0n;
        for (let i0 = 0n; i0 < n; i0 += bq) {
          const i1 = i0 + bq < n ? i0 + bq : n;
          if (!causal || i1 - 1n >= j0) rows += i1 - i0;
        }
        elements += rows * (3n * d + 4n);
      }
    } else {
      elements = 2n * n * d + n;
      for (let i0 = 0n; i0 < n; i0 += bq) {
        const i1 = i0 + bq < n ? i0 + bq : n;
        let keys = n;
        if (causal) {
          const whole = ceilDiv(i1, bk) * bk;
          keys = whole < n ? whole : n;
        }
        elements += 2n * d * keys;
      }
    }
    return N(int(a, "B", 1, 1) * int(a, "H", 1, 1) * elements * int(a, "s", 1));
  };
  C.flash_attention_hbm_saving = function (a) {
    const head = { P: a.P, d_h: a.d_h, s: a.s };
    return C.standard_attention_hbm_bytes(head) / C.flash_attention_hbm_bytes(Object.assign({ sram_bytes: a.sram_bytes }, head));
  };
  C.flash_decoding_work_items = (a) => N(int(a, "B", 1) * int(a, "H_kv", 1) * int(a, "splits", 1, 1));
  C.flash_decoding_speedup = function (a) {
    const S = int(a, "S", 1), sms = int(a, "n_sm", 1, 132), asked = int(a, "splits", 1);
    const splits = asked < S ? asked : S;
    const one = int(a, "B", 1) * int(a, "H_kv", 1);
    return N(ceilDiv(one, sms) * S) / N(ceilDiv(one * splits, sms) * ceilDiv(S, splits));
  };
  C.flash_decoding_best_splits = function (a) {
    const S = int(a, "S", 1), sms = int(a, "n_sm", 1, 132), one = int(a, "B", 1) * int(a, "H_kv", 1);
    const asked = int(a, "max_splits", 1, 64), top = asked < S ? asked : S;
    let best = 1n, fewest = ceilDiv(one, sms) * S;
    for (let k = 2n; k <= top; k += 1n) {
      const steps = ceilDiv(one * k, sms) * ceilDiv(S, k);
      if (steps < fewest) [best, fewest] = [k, steps];
    }
    return N(best);
  };
  const PARTIAL_BYTES = 4n; // fp32 partial output and log-sum-exp per split (minigpt.costs.attention_kernels)
  function group(a, H_kv) {
    if (a.H === undefined || a.H === null) return 1n;
    const H = int(a, "H", 1);
    if (H % H_kv !== 0n) throw new RangeError("H must be a multiple of H_kv = " + H_kv + ", got H=" + H);
    return H / H_kv;
  }
  C.flash_decoding_time = function (a) {
    const B = int(a, "B", 1), H_kv = int(a, "H_kv", 1), S = int(a, "S", 1), d = int(a, "d_h", 1);
    const s = int(a, "s", 1), g = group(a, H_kv), sms = int(a, "n_sm", 1, 132), asked = int(a, "splits", 1);
    const K = asked < S ? asked : S;
    const bw = num(a, "bandwidth", 0, true);
    const rSm = a.sm_bandwidth === undefined || a.sm_bandwidth === null ? bw / N(sms) : num(a, "sm_bandwidth", 0, true);
    const launch = a.launch_s === undefined || a.launch_s === null ? 0 : num(a, "launch_s", 0, false);
    const items = B * H_kv * K;
    const partial = K > 1n ? g * (d + 1n) * PARTIAL_BYTES : 0n;
    const itemBytes = 2n * ceilDiv(S, K) * d * s + partial;
    const moved = B * H_kv * (2n * S * d * s + K * partial);
    const kernel = Math.max(N(ceilDiv(items, sms) * itemBytes) / rSm, N(moved) / bw);
    if (K === 1n) return kernel;
    const mergeBytes = B * H_kv * g * (K * (d + 1n) * PARTIAL_BYTES + d * s);
    return kernel + N(mergeBytes) / bw + launch;
  };
  C.flash_decoding_num_splits = function (a) {
    const H_kv = int(a, "H_kv", 1), g = group(a, H_kv);
    const n = int(a, "B", 1) * H_kv * ceilDiv(g, 64n);
    const slots = 2n * int(a, "n_sm", 1, 132), d = int(a, "d_h", 1);
    const blockN = d <= 64n ? 256n : d <= 128n ? 128n : 64n;
    const nBlocks = ceilDiv(int(a, "S", 1), blockN);
    if (N(n) >= 0.8 * N(slots)) return 1;
    let top = 128n;
    if (slots < top) top = slots;
    if (nBlocks < top) top = nBlocks;
    const eligible = (k) => k === 1n || ceilDiv(nBlocks, k) !== ceilDiv(nBlocks, k - 1n);
    const effs = [];
    for (let k = 1n; k <= top; k += 1n) {
      if (!eligible(k)) continue;
      const waves = N(n * k) / N(slots);
      effs.push([k, waves / Math.ceil(waves)]);
    }
    const best = Math.max(...effs.map((e) => e[1]));
    return N(effs.find((e) => e[1] >= 0.85 * best)[0]);
  };
  C.speculative_tokens_per_pass = function (a) {
    const g = N(int(a, "gamma", 0)), alpha = a.alpha;
    if (typeof alpha !== "number" || !(alpha >= 0 && alpha <= 1)) {
      throw new RangeError("alpha must be a number in [0, 1] (the acceptance rate), got " + alpha);
    }
    return alpha === 1 ? g + 1 : (1 - Math.pow(alpha, g + 1)) / (1 - alpha);
  };
  C.speculative_batch_tokens_per_pass = function (a) {
    const g = N(int(a, "gamma", 0)), B = N(int(a, "B", 1));
    C.speculative_tokens_per_pass(a);
    let total = 1;
    for (let k = 1; k <= g; k += 1) total += Math.pow(a.alpha, k * B);
    return total;
  };
  C.speculative_speedup = function (a) {
    const v = a.verify_ratio === undefined || a.verify_ratio === null ? 1 : num(a, "verify_ratio", 0, true);
    const cost = N(int(a, "gamma", 0)) * num(a, "cost_ratio", 0, true) + v;
    const B = a.B === undefined || a.B === null ? 1 : N(int(a, "B", 1));
    return (B === 1 ? C.speculative_tokens_per_pass(a) : C.speculative_batch_tokens_per_pass(a)) / cost;
  };
  C.speculative_best_gamma = function (a) {
    const top = N(int(a, "gamma_max", 1, 16));
    if (top > 1024) throw new RangeError("gamma_max must be an integer in [1, 1024], got " + top);
    const gains = [];
    for (let g = 1; g <= top; g++) gains.push(C.speculative_speedup(Object.assign({}, a, { gamma: g })));
    const best = Math.max(...gains);
    return gains.findIndex((gain) => gain >= best * (1 - 1e-12)) + 1;
  };

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
    return C.roofline_time({ flops: N(flops), bytes: moved, peak_flops: a.peak_flops, bandwidth: a.bandwidth });
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

  // ---- Chapter 12: preemption by swap or recompute (Eqs. 12.3-12.5) ----
  C.swap_time = function (a) {
    const S = int(a, "S", 0), L = int(a, "L", 1), s = int(a, "s", 1);
    return N(S * 2n * L * kvWidth(a) * s) / num(a, "link_bandwidth", 0, true);
  };
  C.recompute_time = function (a) {
    const mfu = a.mfu;
    if (typeof mfu !== "number" || !Number.isFinite(mfu) || !(mfu > 0 && mfu <= 1)) {
      throw new RangeError("mfu must be a share of the peak in (0, 1], got " + mfu);
    }
    if (int(a, "S", 0) === 0n) return 0;
    const flops = C.prefill_flops(Object.assign({}, a, { P: a.S }));
    return flops / (mfu * num(a, "peak_flops", 0, true));
  };
  C.step_time_with_swap = function (a) {
    const overlap = a.overlap === undefined ? true : a.overlap;
    if (typeof overlap !== "boolean") throw new RangeError("overlap must be true (Eq. 12.5's max) or false (the sum), got " + overlap);
    const step = num(a, "step_time", 0, false), swap = num(a, "swap_time", 0, false);
    return overlap ? Math.max(step, swap) : step + swap;
  };

  // ---- Chapter 19: prefill and decode apart (Eqs. 19.1-19.4) ----
  C.kv_transfer_bytes = (a) => N(int(a, "P", 0) * kvToken(a));
  C.kv_transfer_time = function (a) {
    const lat = a.link_latency === undefined ? 0 : a.link_latency;
    if (typeof lat !== "number" || !Number.isFinite(lat) || lat < 0) {
      throw new RangeError("link_latency must be a finite number >= 0 (seconds), got " + lat);
    }
    return lat + C.kv_transfer_bytes(a) / num(a, "link_bandwidth", 0, true);
  };
  const times = function (name, v) {
    if (!Array.isArray(v) || v.length === 0) throw new RangeError(name + " must be a non-empty list of seconds (one per request)");
    return v.map((x) => {
      if (x === null) return NaN;
      if (typeof x !== "number" || x < 0) throw new RangeError(name + " must hold numbers >= 0 (seconds; nan for a one-token request's TPOT), got " + x);
      return x;
    });
  };
  C.slo_attainment = function (a) {
    const t1 = times("ttft", a.ttft), t2 = times("tpot", a.tpot);
    if (t1.length !== t2.length) throw new RangeError("ttft and tpot must have one value per request, got " + t1.length + " and " + t2.length);
    const s1 = num(a, "ttft_slo", 0, true), s2 = num(a, "tpot_slo", 0, true);
    let ok = 0;
    for (let i = 0; i < t1.length; i++) if (t1[i] <= s1 && (Number.isNaN(t2[i]) || t2[i] <= s2)) ok++;
    return ok / t1.length;
  };
  C.goodput = function (a) {
    const r = a.rates, at = a.attainments;
    if (!Array.isArray(r) || !Array.isArray(at) || r.length === 0 || r.length !== at.length) {
      throw new RangeError("rates and attainments must be non-empty lists of the same length (one per load)");
    }
    const target = a.target === undefined ? 0.9 : a.target;
    if (typeof target !== "number" || !(target > 0 && target <= 1)) throw new RangeError("target must be a share in (0, 1], got " + target);
    const pairs = r.map((x, i) => {
      if (typeof x !== "number" || !Number.isFinite(x) || x <= 0) throw new RangeError("rates must be a finite number > 0, got " + x);
      return [x, at[i]];
    }).sort((p, q) => p[0] - q[0]);
    for (const [, y] of pairs) if (typeof y !== "number" || y < 0 || y > 1) throw new RangeError("attainments must be shares in [0, 1], got " + y);
    let best = 0;
    for (const [x, y] of pairs) { if (y < target) break; best = x; }
    return best / Number(int(a, "chips", 1, 1));
  };

  C.disagg_rate = function (a) {
    const n = N(int(a, "prefill_chips", 1)), m = N(int(a, "decode_chips", 1));
    return Math.min(n * num(a, "prefill_rate", 0, true), m * num(a, "decode_rate", 0, true));
  };
  C.best_pd_ratio = function (a) {
    const total = N(int(a, "chips", 2));
    let best = 1, bestRate = -1;
    for (let n = 1; n < total; n++) {
      const r = C.disagg_rate({ prefill_chips: n, decode_chips: total - n, prefill_rate: a.prefill_rate, decode_rate: a.decode_rate });
      if (r > bestRate) { best = n; bestRate = r; }
    }
    return { prefill: best, decode: total - best };
  };

  C.disagg_goodput_bound = function (a) {
    const D = N(int(a, "D", 2));
    const ttft = num(a, "ttft_slo", 0, true), tpot = num(a, "tpot_slo", 0, true);
    const tPre = C.mixed_step_time(Object.assign({}, a, { T: N(int(a, "P", 1)), B: 0, S: 0, S_prefix: 0 }));
    const gap = C.kv_transfer_time({ L: a.L, H_kv: a.H_kv, d_h: a.d_h, s: a.s, P: a.P,
      link_bandwidth: a.link_bandwidth }) / (D - 1);
    const S = N(a.P) + Math.floor(D / 2);
    let Bmax = a.B_max === undefined ? 256 : N(int(a, "B_max", 1));
    if (a.memory_bytes !== undefined && a.memory_bytes !== null) {
      const room = num(a, "memory_bytes", 0, true) * (1 - 0.10) - N(a.N_params) * N(a.s);
      Bmax = Math.min(Bmax, Math.floor(room / (S * N(kvToken(a)))));
    }
    let best = 0;
    for (let B = 1; B <= Bmax; B++) {
      const step = C.mixed_step_time(Object.assign({}, a, { T: 0, B: B, S: S, S_prefix: 0 }));
      if (step + gap > tpot) break;
      best = B / (D * step);
    }
    if (tPre > ttft || best === 0) return 0;
    const n = N(int(a, "prefill_chips", 1)), m = N(int(a, "decode_chips", 1));
    return C.disagg_rate({ prefill_chips: n, decode_chips: m, prefill_rate: 1 / tPre, decode_rate: best }) / (n + m);
  };

  // ---- Chapter 18: the overhead floor (n_ops operators of t_op seconds each) ----
  C.overhead_floor_s = (a) => N(int(a, "n_ops", 1)) * num(a, "t_op", 0, true);
  C.overhead_step_time = function (a) {
    const overlap = a.overlap === undefined ? true : a.overlap;
    if (typeof overlap !== "boolean") throw new RangeError("overlap must be true (Eq. 18.1's max) or false (Eq. 18.2's sum), got " + overlap);
    const floor = C.overhead_floor_s(a);
    const traffic = C.decode_step_time(Object.assign({}, a, { overlap: true }));
    return overlap ? Math.max(traffic, floor) : traffic + floor;
  };
  C.overhead_bound = function (a) {
    const floor = C.overhead_floor_s(a);
    return floor >= C.decode_step_time(Object.assign({}, a, { overlap: true })) ? "overhead" : "traffic";
  };
  C.overhead_crossover_params = function (a) {
    const floorBytes = C.overhead_floor_s(a) * num(a, "bandwidth", 0, true);
    const cache = N(int(a, "B", 1, 1) * int(a, "S", 0, 0) * int(a, "kv_bytes_per_token", 0, 0));
    return Math.max(0, (floorBytes - cache) / num(a, "s", 0, true));
  };
  C.overhead_step_model = function (a) {
    const tCall = a.t_call === undefined ? 0 : num(a, "t_call", 0, false);
    const kernel = num(a, "kernel_s", 0, false);
    const rho = a.kernel_slowdown === undefined ? 0 : num(a, "kernel_slowdown", 0, false);
    return tCall + N(int(a, "n_ops", 0)) * num(a, "t_op", 0, true) + (1 + rho) * kernel;
  };

  // ---- Chapter 9: GQA shrinks the K/V projections and the cache (Eqs. 9.2-9.3); what fits (Eq. 9.4) ----
  function kvProjBig(a, H_kv) {
    kvWidth(Object.assign({}, a, { H_kv: H_kv }));
    const b = a.biases ? 1n : 0n;
    return 2n * int(a, "L", 1) * (int(a, "d", 1) + b) * BigInt(H_kv) * int(a, "d_h", 1);
  }
  C.kv_projection_params = (a) => N(kvProjBig(a, N(int(a, "H_kv", 1))));
  function kvHeadsBig(a) {
    const before = kvProjBig(a, N(int(a, "H_kv", 1))), after = kvProjBig(a, N(int(a, "H_kv_new", 1)));
    const n = int(a, "N_params", 1);
    if (before > n) throw new RangeError("N_params must hold the " + before + " K/V projection parameters, got " + n);
    return n - before + after;
  }
  C.kv_heads_params = (a) => N(kvHeadsBig(a));
  C.gqa_decode_gain = function (a) {
    const s = int(a, "s", 1), L = int(a, "L", 1), d_h = int(a, "d_h", 1), H = int(a, "d", 1) / d_h;
    const gqa = kvHeadsBig(Object.assign({}, a, { H_kv: N(H), H_kv_new: a.H_kv }));
    const tokens = int(a, "B", 1, 1) * int(a, "S", 0);
    const step = (n, heads) => N(n * s + tokens * 2n * L * heads * d_h * s);
    return step(int(a, "N_params", 1), H) / step(gqa, int(a, "H_kv", 1));
  };
  C.FIT_RESERVE = 0.1; // vLLM's default gpu_memory_utilization = 0.9 (minigpt.costs.memory.FIT_RESERVE)
  C.chips_needed = function (a) {
    const b = budget(Object.assign({}, a, { reserve: a.reserve === undefined ? C.FIT_RESERVE : a.reserve }));
    if (b < 1n) throw new RangeError("memory_bytes·(1 − reserve) must be at least 1 byte");
    const used = stepBytes(a);
    return N(used <= b ? 1n : ceilDiv(used, b));
  };

  // ---- Chapter 20: tensor parallelism counted (Eqs. 20.1-20.7) ----
  C.tp_collectives_per_step = function (a) {
    const L = int(a, "L", 1);
    return int(a, "W", 1) === 1n ? 0 : N(2n * L + 2n);
  };
  C.tp_collective_bytes = function (a) {
    if (int(a, "W", 1) === 1n) return 0;
    const tokens = int(a, "B", 1) * int(a, "T", 1, 1), s = int(a, "s", 1);
    return N((2n * int(a, "L", 1) + 1n) * tokens * int(a, "d", 1) * s + tokens * int(a, "V", 1) * s);
  };
  function kvPerRank(a) {
    const H_kv = int(a, "H_kv", 1), W = int(a, "W", 1);
    if (H_kv % W !== 0n && W % H_kv !== 0n) {
      throw new RangeError("W=" + W + " and H_kv=" + H_kv + ": one must divide the other");
    }
    return H_kv / W > 1n ? H_kv / W : 1n;
  }
  C.tp_kv_heads_per_rank = (a) => N(kvPerRank(a));
  C.tp_kv_cache_bytes = function (a) {
    const kv = kvPerRank(a);
    return N(2n * int(a, "L", 1) * int(a, "B", 1) * int(a, "S", 0) * kv * int(a, "d_h", 1) * int(a, "s", 1));
  };
  C.allreduce_time = (a) => num(a, "coll_latency", 0) + N(int(a, "nbytes", 0)) / num(a, "coll_bandwidth", 0, true);
  C.ring_allreduce_beta = function (a) {
    const W = N(int(a, "W", 2));
    return (num(a, "link_bandwidth", 0, true) * W) / (2 * (W - 1));
  };
  C.tp_alpha_beta_step_time = function (a) {
    const tFixed = a.t_fixed === undefined ? 0 : num(a, "t_fixed", 0);
    const alpha = num(a, "coll_latency", 0), coll = num(a, "coll_bytes", 0);
    const beta = num(a, "coll_bandwidth", 0, true);
    const memory = N(int(a, "weight_bytes", 0)) / (N(int(a, "W", 1)) * num(a, "bandwidth", 0, true));
    return tFixed + memory + N(int(a, "n_coll", 0)) * (alpha + coll / beta);
  };
  C.tp_per_gpu_bandwidth = (a) =>
    N(int(a, "weight_bytes", 0)) / N(int(a, "W", 1)) / num(a, "step_time", 0, true);
  C.tp_replay_step_time = function (a) {
    const n = C.tp_collectives_per_step(a);
    if (n === 0) return N(int(a, "weight_bytes", 0)) / num(a, "bandwidth", 0, true);
    const payload = C.tp_collective_bytes(a);
    const beta = C.ring_allreduce_beta(a);
    return C.tp_alpha_beta_step_time(Object.assign({}, a, { n_coll: n, coll_bytes: payload / n, coll_bandwidth: beta }));
  };
  C.pipeline_time = function (a) {
    const W = N(int(a, "W", 1)), m = N(int(a, "m", 1));
    return (num(a, "t_one", 0, true) / W) * (m + W - 1) / m;
  };

  // ---- Presets: generated from minigpt/costs/presets.py by scripts/book/sync_presets_js.py; do not edit ----
  C.MODELS = {
    "MiniGPT": {"name": "MiniGPT", "L": 4, "H": 4, "H_kv": 4, "d_h": 16, "d_ffn": 256, "V": 600, "N_params": 246656, "source": "this book's companion package, minigpt.config.ModelConfig defaults (the MiniGPT of the course page 'Prefill vs Decode: two phases of one forward')", "ffn_matrices": 2, "tied": true, "norm_params": 2, "biases": true, "S_pos": 128, "S_max": 128, "experts": 1, "active_experts": 1, "window": 0},
    "Llama-2-7B": {"name": "Llama-2-7B", "L": 32, "H": 32, "H_kv": 32, "d_h": 128, "d_ffn": 11008, "V": 32000, "N_params": 6740000000, "source": "Touvron et al. 2023, Llama 2 (arXiv:2307.09288); https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json", "ffn_matrices": 3, "tied": false, "norm_params": 1, "biases": false, "S_pos": 0, "S_max": 4096, "experts": 1, "active_experts": 1, "window": 0},
    "Llama-3-8B": {"name": "Llama-3-8B", "L": 32, "H": 32, "H_kv": 8, "d_h": 128, "d_ffn": 14336, "V": 128256, "N_params": 8030000000, "source": "Meta Llama 3 model card and config; https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json", "ffn_matrices": 3, "tied": false, "norm_params": 1, "biases": false, "S_pos": 0, "S_max": 8192, "experts": 1, "active_experts": 1, "window": 0},
    "Llama-3-70B": {"name": "Llama-3-70B", "L": 80, "H": 64, "H_kv": 8, "d_h": 128, "d_ffn": 28672, "V": 128256, "N_params": 70600000000, "source": "Meta Llama 3 model card and config; https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json", "ffn_matrices": 3, "tied": false, "norm_params": 1, "biases": false, "S_pos": 0, "S_max": 8192, "experts": 1, "active_experts": 1, "window": 0},
    "Mistral-7B": {"name": "Mistral-7B", "L": 32, "H": 32, "H_kv": 8, "d_h": 128, "d_ffn": 14336, "V": 32000, "N_params": 7240000000, "source": "Jiang et al. 2023, Mistral 7B (arXiv:2310.06825), Table 1 (window_size 4096, a rolling buffer cache of W = 4,096 tokens); https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json", "ffn_matrices": 3, "tied": false, "norm_params": 1, "biases": false, "S_pos": 0, "S_max": 32768, "experts": 1, "active_experts": 1, "window": 4096},
    "GPT-3 175B": {"name": "GPT-3 175B", "L": 96, "H": 96, "H_kv": 96, "d_h": 128, "d_ffn": 49152, "V": 50257, "N_params": 175000000000, "source": "Brown et al. 2020, Language Models are Few-Shot Learners (arXiv:2005.14165), Table 2.1; GPT-2 tokenizer (V = 50,257)", "ffn_matrices": 2, "tied": true, "norm_params": 2, "biases": true, "S_pos": 2048, "S_max": 2048, "experts": 1, "active_experts": 1, "window": 0},
    "Llama-2-13B": {"name": "Llama-2-13B", "L": 40, "H": 40, "H_kv": 40, "d_h": 128, "d_ffn": 13824, "V": 32000, "N_params": 13000000000, "source": "Touvron et al. 2023, Llama 2 (arXiv:2307.09288), Table 1 (13B); https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json", "ffn_matrices": 3, "tied": false, "norm_params": 1, "biases": false, "S_pos": 0, "S_max": 4096, "experts": 1, "active_experts": 1, "window": 0},
  };
  C.HARDWARE = {
    "T4": {"name": "T4", "memory_bytes": 17179869184, "bandwidth": 320000000000.0, "peak_flops": 65000000000000.0, "peak_flops_dtype": "fp16", "source": "NVIDIA T4 Tensor Core GPU datasheet (mixed-precision FP16/FP32 tensor cores); https://www.nvidia.com/en-us/data-center/tesla-t4/"},
    "A100 40GB": {"name": "A100 40GB", "memory_bytes": 42949672960, "bandwidth": 1555000000000.0, "peak_flops": 312000000000000.0, "peak_flops_dtype": "bf16", "source": "NVIDIA A100 Tensor Core GPU datasheet (BF16 tensor core, dense; HBM2 1,555 GB/s); https://www.nvidia.com/en-us/data-center/a100/"},
    "A100 80GB": {"name": "A100 80GB", "memory_bytes": 85899345920, "bandwidth": 2039000000000.0, "peak_flops": 312000000000000.0, "peak_flops_dtype": "bf16", "source": "NVIDIA A100 Tensor Core GPU datasheet (SXM, HBM2e 2,039 GB/s; BF16 dense); https://www.nvidia.com/en-us/data-center/a100/"},
    "H100 SXM": {"name": "H100 SXM", "memory_bytes": 85899345920, "bandwidth": 3350000000000.0, "peak_flops": 989000000000000.0, "peak_flops_dtype": "bf16", "source": "NVIDIA H100 Tensor Core GPU datasheet (SXM; BF16 1,979 TFLOP/s with sparsity, 989 dense); https://www.nvidia.com/en-us/data-center/h100/"},
    "H200": {"name": "H200", "memory_bytes": 150754820096, "bandwidth": 4800000000000.0, "peak_flops": 989000000000000.0, "peak_flops_dtype": "bf16", "source": "NVIDIA H200 Tensor Core GPU datasheet (SXM; BF16 1,979 TFLOP/s with sparsity, 989 dense); https://www.nvidia.com/en-us/data-center/h200/"},
    "RTX 4090": {"name": "RTX 4090", "memory_bytes": 25769803776, "bandwidth": 1008000000000.0, "peak_flops": 165200000000000.0, "peak_flops_dtype": "bf16", "source": "NVIDIA Ada GPU Architecture whitepaper, Appendix A (BF16 tensor, FP32 accumulate, dense: 165.2 TFLOP/s; GDDR6X 1,008 GB/s); https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"},
    "Laptop GPU 8 GB": {"name": "Laptop GPU 8 GB", "memory_bytes": 8589934592, "bandwidth": 400000000000.0, "peak_flops": 20000000000000.0, "peak_flops_dtype": "fp16", "source": "illustrative, not a product: the 8 GB card of the guide 'Prefill vs decode: how generation runs' with ~400 GB/s effective bandwidth; ~20 TFLOP/s is an assumed round figure for a mid-range laptop GPU"},
    "TPU v5e": {"name": "TPU v5e", "memory_bytes": 17179869184, "bandwidth": 819000000000.0, "peak_flops": 197000000000000.0, "peak_flops_dtype": "bf16", "source": "Google Cloud TPU v5e documentation (per chip: 197 TFLOP/s bf16, 819 GB/s HBM2 bandwidth, 16 GiB HBM2); https://cloud.google.com/tpu/docs/v5e"},
  };
  // ---- end of presets ----

  root.MiniGPTCosts = C;
  if (typeof module !== "undefined" && module.exports) module.exports = C;
})(typeof globalThis !== "undefined" ? globalThis : this);
