// MiniGPTCosts, parallel: the browser twin of minigpt/costs/parallel.py.
// Decode split over GPUs: tensor parallelism (Eqs. 3.7-3.8, 20.1-20.7) and a pipeline's bubble.
// needs: core
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/parallel.js");
  const { int, num, N } = C._;

  // ---- Chapter 3: tensor-parallel decode (Eqs. 3.7, 3.8) ----
  C.tp_allreduce_bytes = (a) => N(2n * int(a, "L", 1) * int(a, "B", 1) * int(a, "d", 1) * int(a, "s", 1));
  C.tp_decode_step_time = function (a) {
    const n = N(int(a, "n_gpus", 1));
    const memory = N(int(a, "bytes_per_step", 1)) / (n * num(a, "bandwidth", 0, true));
    const link = ((2 * (n - 1)) / n) * N(int(a, "allreduce_bytes", 0)) / num(a, "link_bandwidth", 0, true);
    return memory + link;
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
})(typeof globalThis !== "undefined" ? globalThis : this);
