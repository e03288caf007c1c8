// MiniGPTCosts, overhead: the browser twin of minigpt/costs/overhead.py.
// The overhead floor, Chapter 18: a decode step costs at least its operators times the cost of one.
// needs: core, roofline
(function (root) {
  "use strict";
  const C = root.MiniGPTCosts;
  if (!C || !C._) throw new Error("costs/core.js must load before costs/overhead.js");
  const { int, num, N } = C._;

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
})(typeof globalThis !== "undefined" ? globalThis : this);
