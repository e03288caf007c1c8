// MiniGPTCosts, disaggregation: the browser twin of minigpt/costs/disaggregation.py.
// Prefill and decode apart, Chapter 19: what the K/V transfer moves and costs, and goodput.
// needs: core, serving
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/disaggregation.js");
  const { int, num, N, finite, kvToken } = C._;

  // ---- Chapter 19: prefill and decode apart (Eqs. 19.1-19.4) ----
  C.kv_transfer_bytes = (a) => N(int(a, "P", 0) * kvToken(a));
  C.kv_transfer_time = function (a) {
    const lat = a.link_latency === undefined ? 0 : a.link_latency;
    if (typeof lat !== "number" || !Number.isFinite(lat) || lat < 0) {
      throw new RangeError("link_latency must be a finite number >= 0 (seconds), got " + lat);
    }
    return lat + C.kv_transfer_bytes(a) / num(a, "link_bandwidth", 0, true);
  };
  // A layer-by-layer transfer behind the prefill (Chapter 19, Mooncake's layer-wise store): layer l's message
  // starts at max(ready_l, the link's previous end); what is left after the prefill's end.
  C.layerwise_transfer_exposed = function (a) {
    const ls = a.layer_s;
    if (!Array.isArray(ls) || ls.length === 0) throw new RangeError("layer_s must be a non-empty list of seconds (one per layer), got " + ls);
    if (ls.some((t) => typeof t !== "number" || !Number.isFinite(t) || t < 0)) {
      throw new RangeError("layer_s must hold finite numbers >= 0 (seconds), got " + ls);
    }
    const lat = a.link_latency === undefined ? 0 : a.link_latency;
    if (typeof lat !== "number" || !Number.isFinite(lat) || lat < 0) {
      throw new RangeError("link_latency must be a finite number >= 0 (seconds), got " + lat);
    }
    const send = lat + N(int(a, "layer_bytes", 0)) / num(a, "link_bandwidth", 0, true);
    let ready = 0, done = 0;
    for (const t of ls) {
      ready += t;
      done = Math.max(ready, done) + send;
    }
    return done - ready;
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
      best = B / ((D - 1) * step);  // a decode chip emits D - 1 tokens per request
    }
    if (tPre > ttft || best === 0) return 0;
    const n = N(int(a, "prefill_chips", 1)), m = N(int(a, "decode_chips", 1));
    return C.disagg_rate({ prefill_chips: n, decode_chips: m, prefill_rate: 1 / tPre, decode_rate: best }) / (n + m);
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
