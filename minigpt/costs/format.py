"""Numbers for the prose: bytes, FLOPs and counts as the book prints them (and costs.js does)."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal


def _fixed(x: float, decimals: int) -> str:
    """`x` with `decimals` decimals, ties away from zero on the exact binary value (as JS toFixed)."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


def _scaled(n: float, base: int, units: list[str], whole: str) -> str:
    """n in the largest unit of `units` (powers of `base`) that keeps it >= 1."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n < 0:
        raise ValueError(f"n must be a finite number >= 0, got {n!r}")
    if n < base:
        return whole
    value, unit = float(n), 0
    while value >= base and unit < len(units) - 1:
        value, unit = value / base, unit + 1
    return f"{_fixed(value, 1 if value < 100 else 0)} {units[unit]}"


def fmt_bytes(n: float, binary: bool = True) -> str:
    """Bytes for Ch. 2 prose: "512 KiB", "2.0 GiB". The book uses binary units (KiB, MiB, GiB) for memory
    and SI units (GB/s) for bandwidth; binary=False gives SI ("1.6 GB")."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] if binary else ["B", "kB", "MB", "GB", "TB", "PB"]
    whole = f"{_fixed(n, 0) if isinstance(n, float) else n} B"
    return _scaled(n, 1024 if binary else 1000, units, whole)


def fmt_flops(n: float) -> str:
    """FLOPs for Ch. 1 prose, SI prefixes: "393.2 kFLOP", "5.73 TFLOP" (2 decimals below 10, else 1)."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n < 0:
        raise ValueError(f"n must be a finite number >= 0, got {n!r}")
    prefixes = ["", "k", "M", "G", "T", "P", "E", "Z"]
    value, unit = float(n), 0
    while value >= 1000 and unit < len(prefixes) - 1:
        value, unit = value / 1000, unit + 1
    if unit == 0:
        return f"{_fixed(value, 0)} FLOP"
    return f"{_fixed(value, 2 if value < 10 else 1)} {prefixes[unit]}FLOP"


def fmt_count(n: float) -> str:
    """Counts for prose: exact below a million ("196,608"), else "6.74 B", "70.6 B", "175 B"."""
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n < 0:
        raise ValueError(f"n must be a finite number >= 0, got {n!r}")
    if n < 1_000_000:
        return f"{round(n):,}"
    value, unit = float(n), 0
    suffixes = ["", "K", "M", "B", "T"]
    while value >= 1000 and unit < len(suffixes) - 1:
        value, unit = value / 1000, unit + 1
    decimals = 2 if value < 10 else 1 if value < 100 else 0
    return f"{_fixed(value, decimals)} {suffixes[unit]}"


def fmt_sig(x: float, digits: int = 6) -> float:
    """`x` rounded to `digits` significant digits, for glued values: nbval compares them exactly, and the
    last bits of a float differ between BLAS builds and devices."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"x must be a finite number, got {x!r}")
    if isinstance(digits, bool) or not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits must be an integer >= 1, got {digits!r}")
    return float(f"{x:.{digits}g}")
