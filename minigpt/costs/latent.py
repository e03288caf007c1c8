"""The cache's memory, 2026 (Chapters 21-22): latent attention's two decode paths, and caches that stop growing.

Multi-head latent attention (MLA, DeepSeek-V2) caches a latent of d_c values (and a decoupled RoPE key of
d_rope) per token and layer, Eq. (2.5). Attention can decompress K and V from the latents ("naive") or run
over the latents with W_UK and W_UV absorbed into the query and output projections ("absorbed"); Eqs.
(21.1)-(21.3) count both. A sliding window with attention sinks, or an eviction budget, caps the tokens kept
at min(S, budget): Eq. (3.5) with S → min(S, budget), Eq. (22.1).
"""

from __future__ import annotations

from minigpt.costs._check import _int, _positive
from minigpt.costs.traffic import decode_step_bytes

MLA_PATHS = ("naive", "absorbed")


def _path(path: object) -> str:
    if path not in MLA_PATHS:
        raise ValueError(f"path must be one of {MLA_PATHS}, got {path!r}")
    return path  # type: ignore[return-value]


def latent_kv_cache_bytes(*, L: int, d_c: int, s: int, S: int, d_rope: int = 0, B: int = 1) -> int:
    """Latent cache bytes, Eq. (2.5) times the tokens: B·S·L·(d_c + d_rope)·s (what both paths of Eq. (21.3)
    read per layer, times L)."""
    return (_int("B", B, 1) * _int("S", S) * _int("L", L, 1) * (_int("d_c", d_c, 1) + _int("d_rope", d_rope))
            * _int("s", s, 1))


def mla_layer_flops(*, d: int, H: int, d_h: int, d_c: int, T: int, S: int, path: str, d_rope: int = 0,
                    B: int = 1) -> int:
    """FLOPs of one MLA attention block for T new tokens after S cached ones (K = S + T keys), Eq. (21.1).

    naive:    2BT·d·H(d_h+d_rope) + 2BT·d(d_c+d_rope) + 2BK·d_c·2H·d_h + 2BTK·H(2d_h+d_rope) + 2BT·H·d_h·d
    absorbed: 2BT·d·H(d_c+d_rope) + 2BT·d(d_c+d_rope) +                 2BTK·H(2d_c+d_rope) + 2BT·H·d_c·d

    (query, latent, decompression of K and V, scores and weighted sum over all T·K pairs, output). The
    absorbed path's query and output projections are the folded ones (d → H·d_c, H·d_c → d). Biases and the
    softmax are left out, as `FlopCounterMode` counts.
    """
    d, H, d_h, d_c = _int("d", d, 1), _int("H", H, 1), _int("d_h", d_h, 1), _int("d_c", d_c, 1)
    T, S, r, B = _int("T", T, 1), _int("S", S), _int("d_rope", d_rope), _int("B", B, 1)
    K = S + T
    latent = 2 * B * T * d * (d_c + r)
    if _path(path) == "naive":
        return (2 * B * T * d * H * (d_h + r) + latent + 2 * B * K * d_c * 2 * H * d_h
                + 2 * B * T * K * H * (2 * d_h + r) + 2 * B * T * H * d_h * d)
    return 2 * B * T * d * H * (d_c + r) + latent + 2 * B * T * K * H * (2 * d_c + r) + 2 * B * T * H * d_c * d


def mla_attention_flops(*, H: int, d_h: int, d_c: int, T: int, S: int, path: str, d_rope: int = 0,
                        B: int = 1) -> int:
    """Attention's part of Eq. (21.1), the terms that grow with the K = S + T keys (per layer):

    naive 2BK·d_c·2H·d_h + 2BTK·H(2d_h + d_rope); absorbed 2BTK·H(2d_c + d_rope). Per cached key the naive path
    pays the decompression (4H·d_h·d_c, whatever T) and the absorbed one 2T·H(2d_c + d_rope), Eq. (21.2).
    """
    H, d_h, d_c = _int("H", H, 1), _int("d_h", d_h, 1), _int("d_c", d_c, 1)
    T, S, r, B = _int("T", T, 1), _int("S", S), _int("d_rope", d_rope), _int("B", B, 1)
    K = S + T
    if _path(path) == "naive":
        return 2 * B * K * d_c * 2 * H * d_h + 2 * B * T * K * H * (2 * d_h + r)
    return 2 * B * T * K * H * (2 * d_c + r)


def mla_attention_bytes(*, H: int, d_h: int, d_c: int, T: int, S: int, path: str, s: int, d_rope: int = 0,
                        B: int = 1) -> int:
    """HBM bytes of attention's part of Eq. (21.1) per layer, Eq. (21.3): both paths read the K = S + T cached
    latents, B·K·(d_c + d_rope)·s; the naive path also writes its decompressed K and V and reads them back,
    2·2·B·K·H·d_h·s (vLLM's prefill path does, into a workspace; a fused kernel would not)."""
    H, d_h, d_c = _int("H", H, 1), _int("d_h", d_h, 1), _int("d_c", d_c, 1)
    K = _int("S", S) + _int("T", T, 1)
    B, r, s = _int("B", B, 1), _int("d_rope", d_rope), _int("s", s, 1)
    latents = B * K * (d_c + r) * s
    if _path(path) == "naive":
        return latents + 4 * B * K * H * d_h * s
    return latents


def mla_attention_time(*, H: int, d_h: int, d_c: int, T: int, S: int, path: str, s: int, peak_flops: float,
                       bandwidth: float, d_rope: int = 0, B: int = 1) -> float:
    """Roofline time (s) of attention's part for one layer, each side of Eq. (21.4):
    max(Eq. (21.2) / peak, Eq. (21.3) / bandwidth)."""
    args = dict(H=H, d_h=d_h, d_c=d_c, T=T, S=S, path=path, d_rope=d_rope, B=B)
    flops = mla_attention_flops(**args)
    moved = mla_attention_bytes(**args, s=s)
    return max(flops / _positive("peak_flops", peak_flops), moved / _positive("bandwidth", bandwidth))


def mla_absorb_crossover_T(*, H: int, d_h: int, d_c: int, S: int, s: int, peak_flops: float, bandwidth: float,
                           d_rope: int = 0, T_max: int = 1 << 20) -> int:
    """The smallest number of query tokens T per sequence at which the naive path's roofline time is at most
    the absorbed path's, Eq. (21.4); below it absorption pays. T_max + 1 if absorption pays up to T_max.

    The absorbed path reads less (latents only) but does 2T·H(2d_c + d_rope) FLOPs per cached key against
    the naive path's 4H·d_h·d_c + 2T·H(2d_h + d_rope): as T grows the decompression is shared by more queries.
    """
    _int("T_max", T_max, 1)
    args = dict(H=H, d_h=d_h, d_c=d_c, S=S, s=s, peak_flops=peak_flops, bandwidth=bandwidth, d_rope=d_rope)

    def naive_wins(T: int) -> bool:
        return mla_attention_time(**args, T=T, path="naive") <= mla_attention_time(**args, T=T, path="absorbed")

    if not naive_wins(T_max):
        return T_max + 1
    low, high = 0, T_max  # naive_wins(high) holds; find the first T that wins (the gap only narrows with T)
    while high - low > 1:
        mid = (low + high) // 2
        if naive_wins(mid):
            high = mid
        else:
            low = mid
    return high


def streaming_kv_cache_bytes(*, L: int, H_kv: int, d_h: int, s: int, S: int, window: int, sinks: int = 0,
                             B: int = 1) -> int:
    """A sliding window of `window` tokens plus `sinks` attention sinks (StreamingLLM), Eq. (22.1):
    B·min(S, sinks + window)·2·L·H_kv·d_h·s: the cache stops growing at sinks + window tokens."""
    kept = min(_int("S", S), _int("sinks", sinks) + _int("window", window, 1))
    return (_int("B", B, 1) * kept * 2 * _int("L", L, 1) * _int("H_kv", H_kv, 1) * _int("d_h", d_h, 1)
            * _int("s", s, 1))


def bounded_decode_step_bytes(*, weight_bytes: int, kv_bytes_per_token: int, S: int, budget: int,
                              B: int = 1) -> int:
    """Bytes of a decode step that reads at most `budget` tokens' K/V, Eq. (22.1): Eq. (3.5) with S → min(S, budget):
    weights + B·min(S, budget)·(KV bytes per token). S counts the step's own token; `budget` is k + W for a
    window with sinks (the new token overwrites the oldest), b + 1 for an eviction cache of b (it evicts after
    the step)."""
    kept = min(_int("S", S), _int("budget", budget, 1))
    return decode_step_bytes(weight_bytes=weight_bytes, kv_bytes_per_token=kv_bytes_per_token, S=kept, B=B)
