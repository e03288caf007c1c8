"""Attention kernels, Part III: what tiling, splitting the cache and speculating save, as pure formulas.

- `tiled_attention_flops`: the FLOPs a tiled (FlashAttention) kernel computes, with the tiles above the causal
  diagonal skipped, tile by tile as `minigpt.runtime.attention.flash_attention` visits them.
- `standard_attention_hbm_bytes`, `flash_attention_hbm_bytes`: the model of HBM accesses of Dao et al. 2022
  (FlashAttention, arXiv:2205.14135), Algorithm 0 against Algorithm 1, whose orders are Theorem 2's
  Θ(N·d + N²) and Θ(N²·d²/M) with N = P, d = d_h and M the on-chip SRAM in values; `flash_attention_hbm_saving`
  their ratio.
- `flash_decoding_work_items`, `flash_decoding_speedup`: the occupancy model of a decode step (Dao, Haziza,
  Massa, Sizov 2023, "Flash-Decoding for long-context inference"): B·H_kv independent work items, ×splits;
  `flash_decoding_best_splits` the chunk count it favours.
- `speculative_tokens_per_pass`, `speculative_speedup`, `speculative_best_gamma`: Leviathan, Kalman, Matias 2023
  (arXiv:2211.17192), Eq. (1) and Theorem 3.8, with acceptance rate alpha, gamma drafted tokens and draft/target
  cost ratio; the best gamma is the argmax of the speedup over gamma = 1 .. gamma_max.
"""

from __future__ import annotations

from minigpt.costs._check import _fraction, _int, _positive

H100_SMS = 132  # streaming multiprocessors of an H100 SXM5: NVIDIA, "NVIDIA H100 Tensor Core GPU Architecture" (2022)


def tiled_attention_flops(
    *, T: int, S: int = 0, d_h: int, H: int = 1, B: int = 1, block_q: int = 16, block_k: int = 16,
    causal: bool = True,
) -> int:
    """FLOPs of tiled attention: 4·B·H·d_h·Σ over query tiles of rows·keys visited; causal skips key tiles
    past S + i1 (a query tile's last row), non-causal visits all S+T keys (= Eq. (1.1)'s 4·T·(S+T)·d_h per head)."""
    _int("T", T, 1), _int("S", S), _int("d_h", d_h, 1), _int("H", H, 1), _int("B", B, 1)
    bq, bk = _int("block_q", block_q, 1), _int("block_k", block_k, 1)
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True (skip tiles above the diagonal) or False, got {causal!r}")
    keys = S + T
    total = 0
    for i0 in range(0, T, bq):
        i1 = min(i0 + bq, T)
        seen = min(-(-(S + i1) // bk) * bk, keys) if causal else keys  # whole key tiles up to the diagonal
        total += (i1 - i0) * seen
    return 4 * B * H * d_h * total


def standard_attention_hbm_bytes(*, P: int, d_h: int, s: int, H: int = 1, B: int = 1) -> int:
    """HBM bytes of standard attention (Dao et al. 2022, Algorithm 0): read Q, K, write S = QKᵀ, read S, write
    P = softmax(S), read P, V, write O: (4·P·d_h + 4·P²)·s per head, Θ(N·d + N²)."""
    P, d_h = _int("P", P, 1), _int("d_h", d_h, 1)
    return _int("B", B, 1) * _int("H", H, 1) * (4 * P * d_h + 4 * P * P) * _int("s", s, 1)


def flash_attention_hbm_bytes(*, P: int, d_h: int, s: int, sram_bytes: int, H: int = 1, B: int = 1) -> int:
    """HBM bytes of FlashAttention (Dao et al. 2022, Algorithm 1) with M = sram_bytes/s values of SRAM:
    blocks B_c = ⌈M/4d⌉, B_r = min(B_c, d), T_c = ⌈N/B_c⌉ passes; O, ℓ, m initialised (N·d + 2N), K and V read
    once (2N·d), and each pass reads Q, O, ℓ, m and writes O, ℓ, m (3N·d + 4N): Θ(N²·d²/M) per head."""
    N, d = _int("P", P, 1), _int("d_h", d_h, 1)
    s = _int("s", s, 1)
    M = _int("sram_bytes", sram_bytes, 1) // s
    if M < 4 * d:
        raise ValueError(f"sram_bytes must hold at least 4·d_h values ({4 * d * s} bytes), got {sram_bytes}")
    B_c = -(-M // (4 * d))
    T_c = -(-N // B_c)
    elements = (N * d + 2 * N) + 2 * N * d + T_c * (3 * N * d + 4 * N)
    return _int("B", B, 1) * _int("H", H, 1) * elements * s


def flash_attention_hbm_saving(*, P: int, d_h: int, s: int, sram_bytes: int) -> float:
    """How many times fewer HBM bytes FlashAttention moves than standard attention (Dao et al. 2022, Theorem 2):
    `standard_attention_hbm_bytes` over `flash_attention_hbm_bytes` (the same for every head and sequence)."""
    return standard_attention_hbm_bytes(P=P, d_h=d_h, s=s) / flash_attention_hbm_bytes(
        P=P, d_h=d_h, s=s, sram_bytes=sram_bytes)


def flash_decoding_work_items(*, B: int, H_kv: int, splits: int = 1) -> int:
    """Independent work items of one decode step's attention: B·H_kv (one per sequence and K/V head), ×splits."""
    return _int("B", B, 1) * _int("H_kv", H_kv, 1) * _int("splits", splits, 1)


def flash_decoding_speedup(*, B: int, H_kv: int, S: int, splits: int, n_sm: int = H100_SMS) -> float:
    """Predicted speedup of splitting the cache into `splits` chunks: waves ⌈W/n_sm⌉ of ⌈S/splits⌉ keys each,
    W = B·H_kv·splits items; speedup = (⌈B·H_kv/n_sm⌉·S) / (⌈W/n_sm⌉·⌈S/splits⌉), with splits capped at S (an
    empty chunk is not launched); the combine step is not counted."""
    S, n_sm = _int("S", S, 1), _int("n_sm", n_sm, 1)
    splits = min(_int("splits", splits, 1), S)
    one = flash_decoding_work_items(B=B, H_kv=H_kv)
    split = flash_decoding_work_items(B=B, H_kv=H_kv, splits=splits)
    return (-(-one // n_sm) * S) / (-(-split // n_sm) * -(-S // splits))


def flash_decoding_best_splits(*, B: int, H_kv: int, S: int, n_sm: int = H100_SMS, max_splits: int = 64) -> int:
    """The chunk count K in 1..min(max_splits, S) with the largest `flash_decoding_speedup`, i.e. the fewest
    ⌈B·H_kv·K/n_sm⌉·⌈S/K⌉ key-steps (waves × keys per chunk); the smallest such K on a tie."""
    S, n_sm = _int("S", S, 1), _int("n_sm", n_sm, 1)
    one = flash_decoding_work_items(B=B, H_kv=H_kv)
    top = min(_int("max_splits", max_splits, 1), S)
    return min(range(1, top + 1), key=lambda k: (-(-one * k // n_sm) * -(-S // k), k))


def speculative_tokens_per_pass(*, alpha: float, gamma: int) -> float:
    """Expected tokens per target pass, Eq. (17.1) (Leviathan et al. 2023's Eq. 1): (1 − α^(γ+1))/(1 − α); γ + 1
    at α = 1."""
    g = _int("gamma", gamma, 0)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be a number in [0, 1] (the acceptance rate), got {alpha!r}")
    if alpha == 1:
        return float(g + 1)
    return (1 - _fraction("alpha", alpha) ** (g + 1)) / (1 - alpha)


def speculative_batch_tokens_per_pass(*, alpha: float, gamma: int, B: int) -> float:
    """Expected tokens per sequence per target pass when B sequences share one cache length and a round keeps the
    batch's minimum accepted prefix, Eq. (17.4): 1 + Σ_{k=1..γ} α^(k·B) (each sequence accepts its first k drafts
    with probability α^k, independently; the minimum reaches k only if all B do). Eq. (17.1) at B = 1."""
    g, b = _int("gamma", gamma, 0), _int("B", B, 1)
    speculative_tokens_per_pass(alpha=alpha, gamma=g)  # checks alpha
    return 1.0 + sum(alpha ** (k * b) for k in range(1, g + 1))


def speculative_speedup(*, alpha: float, gamma: int, cost_ratio: float, verify_ratio: float = 1.0) -> float:
    """Wall-clock speedup of speculative decoding, Eq. (17.2) (Leviathan et al. 2023, Theorem 3.8): tokens per pass over
    the cost of one round, γ·c + v target-step times, c = cost_ratio (a draft step over a target step) and
    v = verify_ratio (the verify pass over γ+1 tokens over one decode step; the paper's 1)."""
    c, v = _positive("cost_ratio", cost_ratio), _positive("verify_ratio", verify_ratio)
    return speculative_tokens_per_pass(alpha=alpha, gamma=gamma) / (gamma * c + v)


GAMMA_MAX_LIMIT = 1024  # the largest gamma_max searched (the search is one speedup per gamma)


def speculative_best_gamma(*, alpha: float, cost_ratio: float, verify_ratio: float = 1.0, gamma_max: int = 16) -> int:
    """The best number of drafts per round, Eq. (17.3): the γ in 1 .. gamma_max with the largest speedup of
    Eq. (17.2), the smallest one within a relative 1e-12 of the best (ties broken towards fewer drafts). The
    speedup is unimodal in γ; at α = 1 with v > c it grows without end, so gamma_max bounds the search."""
    top = _int("gamma_max", gamma_max, 1)
    if top > GAMMA_MAX_LIMIT:
        raise ValueError(f"gamma_max must be an integer in [1, {GAMMA_MAX_LIMIT}], got {gamma_max}")
    gains = [speculative_speedup(alpha=alpha, gamma=g, cost_ratio=cost_ratio, verify_ratio=verify_ratio)
             for g in range(1, top + 1)]
    best = max(gains)
    return next(g for g, gain in enumerate(gains, start=1) if gain >= best * (1 - 1e-12))
