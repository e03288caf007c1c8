"""How the KV cache is stored, Part III: quantized values and pages of tokens.

`quantized_kv_bytes` is Eq. (2.2) with s replaced by the bits of a code plus the fp16 scales (int8
with one scale per d_h-vector is `int8_kv_bytes`); `paged_blocks` and `paged_slack_tokens` are
what a paged cache (PagedAttention) reserves for a sequence of S tokens in blocks of b tokens, and
`paged_fork_saved_blocks` what n samples sharing one prompt save. `kivi_kv_bytes` is the layout with keys
quantized per channel (KIVI), `fp8_kv_bytes` FP8 E4M3 with per-layer scales (vLLM); `kv_storage_bytes` any of
the three by name (Chapter 10's explorer).
"""

from __future__ import annotations

from minigpt.costs._check import _int


def quantized_kv_bytes(
    *, L: int, H_kv: int, d_h: int, S: int, B: int = 1, bits: int = 8, group_size: int | None = None,
    s_scale: int = 2,
) -> int:
    """Quantized KV bytes: B·S·2·L·H_kv·(d_h·bits/8 + (d_h/group_size)·s_scale), codes plus one scale per group.

    group_size defaults to d_h (one scale per stored vector); bits is 8 or 4 (two codes per byte).
    """
    _int("d_h", d_h, 1)
    if bits not in (8, 4) or isinstance(bits, bool):
        raise ValueError(f"bits must be 8 or 4, got {bits!r}")
    g = d_h if group_size is None else _int("group_size", group_size, 1)
    if d_h % g:
        raise ValueError(f"group_size must divide d_h={d_h}, got {g}")
    if bits == 4 and (d_h % 2 or g % 2):
        raise ValueError(f"int4 packs two values per byte: d_h and group_size must be even, got {d_h}, {g}")
    per_vector = d_h * bits // 8 + (d_h // g) * _int("s_scale", s_scale)
    return _int("B", B, 1) * _int("S", S) * 2 * _int("L", L, 1) * _int("H_kv", H_kv, 1) * per_vector


def kivi_kv_bytes(
    *, L: int, H_kv: int, d_h: int, S: int, B: int = 1, bits: int = 8, group_size: int | None = None,
    token_group: int = 16, s_scale: int = 2, s: int = 4,
) -> int:
    """KV bytes with KIVI's layout, Eq. (10.2): values per token as in `quantized_kv_bytes`; keys per channel,
    one scale per channel and block of G = token_group tokens, the first ⌊S/G⌋·G tokens in whole blocks:

        B·L·H_kv·[S·(d_h·bits/8 + (d_h/g)·s_scale) + ⌊S/G⌋·G·d_h·bits/8 + ⌊S/G⌋·d_h·s_scale + (S mod G)·d_h·s]

    where the S mod G tokens of the unfilled block stay in the model's dtype (s bytes a value).
    """
    G = _int("token_group", token_group, 1)
    values = quantized_kv_bytes(L=L, H_kv=H_kv, d_h=d_h, S=S, B=B, bits=bits, group_size=group_size,
                                s_scale=s_scale) // 2
    blocks = _int("S", S) // G
    keys = blocks * G * d_h * bits // 8 + blocks * d_h * s_scale + (S % G) * d_h * _int("s", s, 1)
    return values + B * L * H_kv * keys


def fp8_kv_bytes(*, L: int, H_kv: int, d_h: int, S: int, B: int = 1, s_scale: int = 4) -> int:
    """FP8 (E4M3) KV bytes, Eq. (2.2) with s = 1 plus one fp32 scale per layer for keys and one for values:
    B·S·2·L·H_kv·d_h + 2·L·s_scale (vLLM's `--kv-cache-dtype fp8`)."""
    return (_int("B", B, 1) * _int("S", S) * 2 * _int("L", L, 1) * _int("H_kv", H_kv, 1) * _int("d_h", d_h, 1)
            + 2 * L * _int("s_scale", s_scale))


KV_LAYOUTS = ("per_token", "kivi", "fp8")


def kv_storage_bytes(
    *, L: int, H_kv: int, d_h: int, S: int, B: int = 1, layout: str = "per_token", bits: int = 8,
    group_size: int | None = None, token_group: int = 16, s: int = 4,
) -> int:
    """KV bytes of B sequences of S tokens in one of Chapter 10's layouts: "per_token", int8/int4 codes with one
    fp16 scale per group of g values (Eq. (10.1), `quantized_kv_bytes`); "kivi", keys per channel over blocks of
    G = token_group tokens, the unfilled block in s bytes a value (Eq. (10.2), `kivi_kv_bytes`); "fp8", E4M3
    with per-layer scales (`fp8_kv_bytes`; 8 bits, no groups)."""
    shape = dict(L=L, H_kv=H_kv, d_h=d_h, S=S, B=B)
    if layout == "per_token":
        return quantized_kv_bytes(**shape, bits=bits, group_size=group_size)
    if layout == "kivi":
        return kivi_kv_bytes(**shape, bits=bits, group_size=group_size, token_group=token_group, s=s)
    if layout == "fp8":
        if bits != 8 or group_size is not None:
            raise ValueError(f"fp8 stores 8 bits a value with per-layer scales: bits must be 8 and group_size "
                             f"None, got {bits!r}, {group_size!r}")
        return fp8_kv_bytes(**shape)
    raise ValueError(f"layout must be one of {list(KV_LAYOUTS)}, got {layout!r}")


def paged_blocks(*, S: int, block_size: int) -> int:
    """Blocks a paged cache holds for a sequence of S tokens: ⌈S / b⌉."""
    b = _int("block_size", block_size, 1)
    return -(-_int("S", S) // b)


def paged_slack_tokens(*, S: int, block_size: int) -> int:
    """Internal fragmentation of a paged sequence: ⌈S / b⌉·b − S token slots reserved but empty (≤ b − 1)."""
    return paged_blocks(S=S, block_size=block_size) * block_size - S


def paged_fork_saved_blocks(*, P: int, n: int, block_size: int) -> int:
    """Blocks n forked samples of a P-token prompt save over n copies, Eq. (11.3): (n − 1)·⌊P / b⌋.

    The prompt's full blocks stay shared; its partly filled last block is copied on each sample's first write.
    """
    return (_int("n", n, 1) - 1) * (_int("P", P, 1) // _int("block_size", block_size, 1))
