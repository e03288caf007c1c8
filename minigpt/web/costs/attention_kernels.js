// MiniGPTCosts, attention_kernels: the browser twin of minigpt/costs/attention_kernels.py.
// Attention kernels, Part III: what tiling, splitting the cache and speculating save, as pure formulas.
// needs: core
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/attention_kernels.js");
  const { int, num, N, ceilDiv } = C._;

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
})(typeof globalThis !== "undefined" ? globalThis : this);
