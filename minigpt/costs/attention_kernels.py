"""Attention kernels, Part III: what tiling, splitting the cache and speculating save, as pure formulas.

- `tiled_attention_flops`: the FLOPs a tiled (FlashAttention) kernel computes, with the tiles above the causal
  diagonal skipped, tile by tile as `minigpt.runtime.attention.flash_attention` visits them.
- `standard_attention_hbm_bytes`, `flash_attention_hbm_bytes`: the model of HBM accesses of Dao et al. 2022
  (FlashAttention, arXiv:2205.14135), Algorithm 0 against Algorithm 1, whose orders are Theorem 2's
  Θ(N·d + N²) and Θ(N²·d²/M) with N = P, d = d_h and M the on-chip SRAM in values; `flash_attention_hbm_saving`
  their ratio.
- `tiled_attention_hbm_bytes`: Eq. (15.1), the same count in both loop orders with any tiles: K/V outer
  (FlashAttention-1) and Q outer (FlashAttention-2/3 and `flash_attention`); `FA2_TILES` the tiles
  FlashAttention-2's forward uses.
- `flash_decoding_work_items`, `flash_decoding_speedup`: the occupancy model of a decode step (Dao, Haziza,
  Massa, Sizov 2023, "Flash-Decoding for long-context inference"): B·H_kv independent work items, ×splits;
  `flash_decoding_best_splits` the chunk count it favours. `flash_decoding_time`, Eq. (16.1), adds the HBM
  ceiling, the partials and the merge; `flash_decoding_num_splits`, Eq. (16.2), is FlashAttention-2's own
  choice of the chunk count (`num_splits_heuristic`).
- `speculative_tokens_per_pass`, `speculative_speedup`, `speculative_best_gamma`: Leviathan, Kalman, Matias 2023
  (arXiv:2211.17192), Eq. (1) and Theorem 3.8, with acceptance rate alpha, gamma drafted tokens and draft/target
  cost ratio; the best gamma is the argmax of the speedup over gamma = 1 .. gamma_max.
"""

from __future__ import annotations

import math

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


#: FlashAttention-2's forward tiles (B_r query rows × B_c keys) on A100/H100 without dropout, by head dimension:
#: `run_mha_fwd_hdim*` in csrc/flash_attn/src/flash_fwd_launch_template.h (github.com/Dao-AILab/flash-attention).
FA2_TILES = {32: (128, 128), 64: (128, 128), 96: (128, 64), 128: (128, 64), 192: (128, 64), 256: (64, 64)}


def tiled_attention_hbm_bytes(
    *, P: int, d_h: int, s: int, block_q: int, block_k: int, kv_outer: bool = False, causal: bool = False,
    H: int = 1, B: int = 1,
) -> int:
    """The HBM bytes of one tiled attention forward over P tokens, Eq. (15.1), in either loop order (every
    access counted as HBM traffic: no L2 cache reuse).

    Q outer (FlashAttention-2/3, and `minigpt.runtime.attention.flash_attention`): each of ⌈P/B_r⌉ query tiles
    reads its Q rows, re-reads K and V for every key it sees (all P; causal: whole key tiles up to its last row)
    and writes O and one log-sum-exp per row: 2·P·d + P + Σ_i 2·d·keys_i values per head.
    K/V outer (FlashAttention-1, Dao et al. 2022 Algorithm 1): O, ℓ, m written once (P·d + 2P), K and V read
    once (2P·d), and each of ⌈P/B_c⌉ key tiles reads Q, O, ℓ, m and writes O, ℓ, m for every query row that
    sees it (causal: the query tiles whose last row reaches the key tile): Σ_j rows_j·(3d + 4).
    """
    N, d = _int("P", P, 1), _int("d_h", d_h, 1)
    bq, bk = _int("block_q", block_q, 1), _int("block_k", block_k, 1)
    for name, flag in (("kv_outer", kv_outer), ("causal", causal)):
        if not isinstance(flag, bool):
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    q_tiles = [(i0, min(i0 + bq, N)) for i0 in range(0, N, bq)]
    if kv_outer:
        elements = N * d + 2 * N + 2 * N * d
        for j0 in range(0, N, bk):
            rows = sum(i1 - i0 for i0, i1 in q_tiles if not causal or i1 - 1 >= j0)
            elements += rows * (3 * d + 4)
    else:
        elements = 2 * N * d + N
        for _, i1 in q_tiles:
            keys = min(-(-i1 // bk) * bk, N) if causal else N  # whole key tiles up to the diagonal
            elements += 2 * d * keys
    return _int("B", B, 1) * _int("H", H, 1) * elements * _int("s", s, 1)


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


A100_SMS = 108  # streaming multiprocessors of an A100: NVIDIA, "NVIDIA A100 Tensor Core GPU Architecture" (2020)
PARTIAL_BYTES = 4  # a split's partial output and log-sum-exp are fp32 (FlashAttention-2's oaccum, lse_accum)


def flash_decoding_time(
    *, B: int, H_kv: int, S: int, d_h: int, s: int, splits: int, bandwidth: float, n_sm: int = H100_SMS,
    H: int | None = None, sm_bandwidth: float | None = None, launch_s: float = 0.0,
) -> float:
    """Seconds of one decode step's attention split into K = `splits` chunks, Eq. (16.1):
    t = max(⌈W/n_sm⌉·b_item/r_sm, b_all/BW) + [K > 1]·(b_merge/BW + launch_s).

    W = B·H_kv·K work items (one per sequence, K/V head and chunk: the g = H/H_kv query heads (default H = H_kv)
    that share a K/V head
    are rows of one item, so its keys and values are read once); b_item = 2·⌈S/K⌉·d_h·s bytes of K and V
    plus, when K > 1, g·(d_h + 1)·4 bytes of fp32 partial output and log-sum-exp written; the merge reads
    every partial and writes the output, b_merge = B·H_kv·g·(K·(d_h + 1)·4 + d_h·s), as a second kernel
    (`launch_s` its launch and tail). Items run in waves of n_sm, each as long as its longest item (a chunk of
    ⌈S/K⌉ keys); an SM streams at most r_sm = `sm_bandwidth` (default BW/n_sm, its share of the chip's
    bandwidth), and all SMs together at most BW, the HBM ceiling on the bytes actually moved,
    b_all = B·H_kv·(2·S·d_h·s + [K > 1]·K·g·(d_h + 1)·4).
    """
    B, H_kv, S, d = _int("B", B, 1), _int("H_kv", H_kv, 1), _int("S", S, 1), _int("d_h", d_h, 1)
    s, n_sm, g = _int("s", s, 1), _int("n_sm", n_sm, 1), _group(H, H_kv)
    K = min(_int("splits", splits, 1), S)
    bw = _positive("bandwidth", bandwidth)
    r_sm = bw / n_sm if sm_bandwidth is None else _positive("sm_bandwidth", sm_bandwidth)
    if isinstance(launch_s, bool) or not isinstance(launch_s, (int, float)) or not 0 <= launch_s < float("inf"):
        raise ValueError(f"launch_s must be a finite number >= 0 (seconds), got {launch_s!r}")
    items = flash_decoding_work_items(B=B, H_kv=H_kv, splits=K)
    partial = g * (d + 1) * PARTIAL_BYTES if K > 1 else 0
    item_bytes = 2 * -(-S // K) * d * s + partial
    moved = B * H_kv * (2 * S * d * s + K * partial)
    kernel = max(-(-items // n_sm) * item_bytes / r_sm, moved / bw)
    if K == 1:
        return kernel
    merge_bytes = B * H_kv * g * (K * (d + 1) * PARTIAL_BYTES + d * s)
    return kernel + merge_bytes / bw + launch_s


def _group(H: int | None, H_kv: int) -> int:
    """g = H/H_kv query heads per K/V head (1 when H is not given)."""
    if H is None:
        return 1
    if _int("H", H, 1) % H_kv:
        raise ValueError(f"H must be a multiple of H_kv = {H_kv}, got H={H}")
    return H // H_kv


def flash_decoding_num_splits(
    *, B: int, H_kv: int, S: int, d_h: int, n_sm: int = H100_SMS, H: int | None = None,
) -> int:
    """The split count FlashAttention-2's `num_splits_heuristic` picks, Eq. (16.2) (csrc/flash_attn/flash_api.cpp): with
    n = B·H_kv·⌈g/64⌉ blocks (a decode step's g = H/H_kv query heads per K/V head are packed as rows, FA2's
    `seqlenq_ngroups_swapped`), 2·n_sm CTA slots
    (128-thread blocks, two per SM) and ⌈S/block_n⌉ key blocks (block_n = 256, 128, 64 for d_h ≤ 64, ≤ 128,
    more): 1 if n ≥ 0.8·2·n_sm, else the fewest splits K whose wave efficiency (n·K/slots) / ⌈n·K/slots⌉ is
    within 85 % of the best, over K ≤ min(128, slots, key blocks) that change the blocks per split."""
    n = _int("B", B, 1) * _int("H_kv", H_kv, 1) * -(-_group(H, H_kv) // 64)
    slots = 2 * _int("n_sm", n_sm, 1)
    d = _int("d_h", d_h, 1)
    block_n = 256 if d <= 64 else 128 if d <= 128 else 64
    n_blocks = -(-_int("S", S, 1) // block_n)
    if n >= 0.8 * slots:
        return 1
    top = min(128, slots, n_blocks)

    def eligible(k: int) -> bool:
        return k == 1 or -(-n_blocks // k) != -(-n_blocks // (k - 1))

    def efficiency(k: int) -> float:
        waves = n * k / slots
        return waves / math.ceil(waves)

    effs = {k: efficiency(k) for k in range(1, top + 1) if eligible(k)}
    best = max(effs.values())
    return next(k for k, e in effs.items() if e >= 0.85 * best)


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


def speculative_speedup(*, alpha: float, gamma: int, cost_ratio: float, verify_ratio: float = 1.0, B: int = 1
                        ) -> float:
    """Wall-clock speedup of speculative decoding, Eq. (17.2) (Leviathan et al. 2023, Theorem 3.8): tokens per pass over
    the cost of one round, γ·c + v target-step times, c = cost_ratio (a draft step over a target step) and
    v = verify_ratio (the verify pass over γ+1 tokens over one decode step; the paper's 1). With B > 1 sequences
    that share one cache length (the batch-minimum rule), Eq. (17.4)'s tokens per sequence per pass replace
    Eq. (17.1)'s; v stays what it is given (it grows with B on a real chip)."""
    c, v = _positive("cost_ratio", cost_ratio), _positive("verify_ratio", verify_ratio)
    if _int("B", B, 1) == 1:
        return speculative_tokens_per_pass(alpha=alpha, gamma=gamma) / (gamma * c + v)
    return speculative_batch_tokens_per_pass(alpha=alpha, gamma=gamma, B=B) / (gamma * c + v)


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
