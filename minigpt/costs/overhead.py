"""The overhead floor, Chapter 18: a decode step costs at least its operators times the cost of one.

A step dispatches n_ops operators, each paying a fixed t_op (Python, the dispatcher, a kernel launch)
whatever bytes it moves. Its time is at least the larger of that floor and the traffic time of
Eq. (7.2), max(bytes / BW, F / π) (Eq. 18.1: the host launches ahead of the device, so the two
overlap), or their sum where one thread both dispatches and runs each operator (Eq. 18.2: eager
PyTorch on a CPU). The two terms are equal at the model size of Eq. (18.3): below it a step is
overhead-bound, and no saving of bytes makes it faster.
"""

from __future__ import annotations

from minigpt.costs._check import _int, _positive
from minigpt.costs.roofline import decode_step_time


def overhead_floor_s(*, n_ops: int, t_op: float) -> float:
    """The overhead floor of one step, Eq. (18.1)'s second term: n_ops · t_op seconds."""
    return _int("n_ops", n_ops, 1) * _positive("t_op", t_op)


def overhead_step_time(
    *, L: int, S: int, d: int, N_params: int, s: float, bandwidth: float, peak_flops: float, n_ops: int,
    t_op: float, H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0, B: int = 1,
    ffn_matrices: int = 2, s_kv: int | None = None, overlap: bool = True,
) -> float:
    """Predicted decode step, Eq. (18.1) max(t_traffic, n_ops·t_op) (`overlap=True`, launches run ahead of the
    device) or Eq. (18.2) t_traffic + n_ops·t_op (`overlap=False`, one thread dispatches and runs each operator),
    with t_traffic = Eq. (7.2)'s max(bytes/BW, F/π)."""
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True (Eq. 18.1's max) or False (Eq. 18.2's sum), got {overlap!r}")
    floor = overhead_floor_s(n_ops=n_ops, t_op=t_op)
    traffic = decode_step_time(L=L, S=S, d=d, N_params=N_params, s=s, bandwidth=bandwidth, peak_flops=peak_flops,
                               H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices, s_kv=s_kv)
    return max(traffic, floor) if overlap else traffic + floor


def overhead_bound(
    *, L: int, S: int, d: int, N_params: int, s: float, bandwidth: float, peak_flops: float, n_ops: int,
    t_op: float, H_kv: int | None = None, d_h: int | None = None, d_ffn: int | None = None, V: int = 0, B: int = 1,
    ffn_matrices: int = 2, s_kv: int | None = None,
) -> str:
    """Which term of Eq. (18.1) is larger: "overhead" (n_ops·t_op, ties included) or "traffic" (Eq. 7.2)."""
    floor = overhead_floor_s(n_ops=n_ops, t_op=t_op)
    traffic = decode_step_time(L=L, S=S, d=d, N_params=N_params, s=s, bandwidth=bandwidth, peak_flops=peak_flops,
                               H_kv=H_kv, d_h=d_h, d_ffn=d_ffn, V=V, B=B, ffn_matrices=ffn_matrices, s_kv=s_kv)
    return "overhead" if floor >= traffic else "traffic"


def overhead_crossover_params(
    *, n_ops: int, t_op: float, bandwidth: float, s: float, kv_bytes_per_token: int = 0, S: int = 0, B: int = 1,
) -> float:
    """The model size where Eq. (18.1)'s terms meet, Eq. (18.3): N* = (n_ops·t_op·BW − B·S·b_token) / s
    parameters; 0.0 when the cache alone takes longer to read than the floor."""
    floor_bytes = overhead_floor_s(n_ops=n_ops, t_op=t_op) * _positive("bandwidth", bandwidth)
    cache = _int("B", B, 1) * _int("S", S) * _int("kv_bytes_per_token", kv_bytes_per_token)
    return max(0.0, (floor_bytes - cache) / _positive("s", s))



def overhead_step_model(
    *, n_ops: int, t_op: float, kernel_s: float, t_call: float = 0.0, kernel_slowdown: float = 0.0,
) -> float:
    """Eq. (18.4), the step as a sum of measured parts: t_call + n_ops·t_op + (1 + ρ)·t_matmul seconds.

    t_matmul (`kernel_s`) is the time of the kernels that read the weights and the cache (the
    matmuls, timed alone at the step's shapes); n_ops·t_op everything each operator costs besides
    (dispatch, module calls, Python, the small kernels), t_op the mean of one such operator; t_call a
    fixed cost per step (a compiled step's guards and wrapper, with n_ops = 0); ρ (`kernel_slowdown`)
    how much longer the matmuls take inside the step than alone, as a fraction (0: the same).
    """
    t_call = float(t_call)
    if not t_call >= 0:
        raise ValueError(f"t_call must be >= 0 seconds, got {t_call!r}")
    kernel_s = float(kernel_s)
    if not kernel_s >= 0:
        raise ValueError(f"kernel_s must be >= 0 seconds, got {kernel_s!r}")
    rho = float(kernel_slowdown)
    if not rho >= 0 or rho == float("inf"):
        raise ValueError(f"kernel_slowdown must be a finite fraction >= 0, got {kernel_slowdown!r}")
    return t_call + _int("n_ops", n_ops) * _positive("t_op", t_op) + (1 + rho) * kernel_s
