// MiniGPTCosts, text_rates: the browser twin of minigpt/costs/text_rates.py.
// Characters per token: what a fixed decode rate in tok/s means as text per second (Chapter 4).
// needs: core
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/text_rates.js");

  C.chars_per_second = function (a) {
    if (!(a.tok_s >= 0) || !(a.chars_per_token >= 0)) {
      throw new RangeError("tok_s and chars_per_token must be >= 0, got " + a.tok_s + " and " + a.chars_per_token);
    }
    return a.tok_s * a.chars_per_token;
  };
})(typeof globalThis !== "undefined" ? globalThis : this);
