// MiniGPTCosts, kv_storage: the browser twin of minigpt/costs/kv_storage.py.
// How the KV cache is stored, Part III: quantized values and pages of tokens.
// needs: core
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/kv_storage.js");
  const { int, N } = C._;

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

  // ---- Chapter 11: blocks saved by n samples sharing one prompt (Eq. 11.3) ----
  C.paged_fork_saved_blocks = (a) =>
    N((int(a, "n", 1) - 1n) * (int(a, "P", 1) / int(a, "block_size", 1)));
})(typeof globalThis !== "undefined" ? globalThis : this);
