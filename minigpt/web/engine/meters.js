// MiniGPTEngine, meters: the twin of minigpt/serving/meters.py. TTFT runs from arrival to the first token,
// TPOT is a request's mean gap between its later tokens, ITL every single gap, end-to-end from arrival to
// the last token; percentiles interpolate linearly (numpy's default); throughput is generated tokens over
// the span from the first arrival to the last token. A record here is the scheduler's `tracked`.
// needs: core
(function (root) {
  "use strict";
  const E = root.MiniGPTEngine;
  if (!E || !E._) throw new Error("engine/core.js must load before engine/meters.js");

  const ttft = (t) => t.token_s[0] - t.request.arrival_s;
  function timePerOutputToken(ts) {
    const n = ts.length;
    return n > 1 ? (ts[n - 1] - ts[0]) / (n - 1) : NaN;
  }
  const e2e = (t) => t.token_s[t.token_s.length - 1] - t.request.arrival_s;
  function itl(t) {
    const out = [];
    for (let i = 1; i < t.token_s.length; i++) out.push(t.token_s[i] - t.token_s[i - 1]);
    return out;
  }
  function percentile(values, q) {
    const xs = Float64Array.from(values.filter((v) => !Number.isNaN(v))).sort();  // a typed array sorts by value
    if (!xs.length) return NaN;
    const k = (xs.length - 1) * q / 100, lo = Math.floor(k), hi = Math.ceil(k);
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo);
  }
  const fsum = (xs) => xs.reduce((a, b) => a + b, 0);

  function latencySummary(done) {
    if (!done.length) throw new RangeError("no finished request to summarise");
    const start = Math.min.apply(null, done.map((t) => t.request.arrival_s));
    const end = Math.max.apply(null, done.map((t) => t.token_s[t.token_s.length - 1]));
    const tokens = fsum(done.map((t) => t.token_s.length));
    const out = {
      requests: done.length, output_tokens: tokens, prompt_tokens: fsum(done.map((t) => t.request.prompt.length)),
      span_s: end - start, output_tok_s: end > start ? tokens / (end - start) : NaN,
      requests_per_s: end > start ? done.length / (end - start) : NaN,
    };
    const series = {
      ttft_s: done.map(ttft), tpot_s: done.map((t) => timePerOutputToken(t.token_s)),
      itl_s: [].concat(...done.map(itl)), e2e_s: done.map(e2e),
    };
    for (const name of Object.keys(series)) {
      const values = series[name], stem = name.slice(0, -2);
      for (const q of [50, 99]) out[stem + "_p" + q + "_s"] = percentile(values, q);
      const finite = values.filter((v) => !Number.isNaN(v));
      out[stem + "_mean_s"] = finite.length ? fsum(finite) / finite.length : NaN;
    }
    return out;
  }

  Object.assign(E, { ttft, timePerOutputToken, e2e, itl, percentile, latencySummary });
})(typeof globalThis !== "undefined" ? globalThis : this);
