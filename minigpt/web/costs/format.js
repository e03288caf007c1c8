// MiniGPTCosts, format: the browser twin of minigpt/costs/format.py.
// Numbers as the book prints them: bytes, FLOPs, counts, durations (the same strings as Python).
// needs: core
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/format.js");
  const { finite } = C._;

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
})(typeof globalThis !== "undefined" ? globalThis : this);
