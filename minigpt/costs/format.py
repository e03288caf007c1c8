"""Numbers for the prose: bytes, FLOPs and counts as the book prints them (and costs/format.js does)."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal


def _fixed(x: float, decimals: int) -> str:
    """`x` with `decimals` decimals, ties away from zero on the exact binary value (as JS toFixed)."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


def _check(n: object) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n < 0:
        raise ValueError(f"n must be a finite number >= 0, got {n!r}")


def _scaled(n: float, base: int, units: list[str], whole: str) -> str:
    """n in the largest unit of `units` (powers of `base`) that keeps it >= 1 (n checked by the caller)."""
    if n < base:
        return whole
    value, unit = float(n), 0
    while value >= base and unit < len(units) - 1:
        value, unit = value / base, unit + 1
    return f"{_fixed(value, 1 if value < 100 else 0)} {units[unit]}"


def fmt_bytes(n: float, binary: bool = True, suffix: str = "") -> str:
    """Bytes for Ch. 2 prose: "512 KiB", "2.0 GiB". The book uses binary units (KiB, MiB, GiB) for memory
    and SI units (GB/s) for bandwidth; binary=False gives SI ("1.6 GB"), suffix="/s" a rate ("2.0 TB/s")."""
    _check(n)  # before `whole`: _fixed of an infinity raises decimal's InvalidOperation
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] if binary else ["B", "kB", "MB", "GB", "TB", "PB"]
    whole = f"{_fixed(n, 0) if isinstance(n, float) else n} B"
    return _scaled(n, 1024 if binary else 1000, units, whole) + suffix


def fmt_flops(n: float, exact: bool = False, suffix: str = "") -> str:
    """FLOPs for Ch. 1 prose, SI prefixes: "393.2 kFLOP", "5.73 TFLOP" (2 decimals below 10, else 1);
    exact=True puts the whole count first ("393,216 (393.2 kFLOP)", below 2^53); suffix="/s" for a rate."""
    _check(n)
    prefixes = ["", "k", "M", "G", "T", "P", "E", "Z"]
    value, unit = float(n), 0
    while value >= 1000 and unit < len(prefixes) - 1:
        value, unit = value / 1000, unit + 1
    if unit == 0:
        text = f"{_fixed(value, 0)} FLOP{suffix}"
    else:
        text = f"{_fixed(value, 2 if value < 10 else 1)} {prefixes[unit]}FLOP{suffix}"
    if exact and float(n).is_integer() and n < 2**53:
        return f"{int(n):,} ({text})"
    return text


def fmt_count(n: float) -> str:
    """Counts for prose: exact below a million ("196,608"), else "6.74 B", "70.6 B", "175 B"."""
    _check(n)
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
# Formatters of the browser explorers (minigpt.book.explorers); each has a twin in costs/format.js that prints
# the same string, so the value a page shows before its script runs is the one it shows after.


def _number(x: object) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"x must be a finite number, got {x!r}")
    return float(x)  # the double the browser holds: the same digits as costs/format.js prints


def _grouped(text: str) -> str:
    whole, dot, frac = text.partition(".")
    sign = "-" if whole.startswith("-") else ""
    return f"{sign}{int(whole.lstrip('-')):,}{dot}{frac}"


def fmt_fixed(x: float, decimals: int = 1, suffix: str = "") -> str:
    """A number with `decimals` decimals and thousands separators, then `suffix`: "12.3×", "1,024.0 FLOP/byte"."""
    return _grouped(_fixed(_number(x), decimals)) + suffix


def fmt_int(x: float, suffix: str = "") -> str:
    """A number rounded to a whole one (ties away from zero), with thousands separators: "12,345 tokens"."""
    return fmt_fixed(x, 0, suffix)


def fmt_percent(x: float, decimals: int = 1) -> str:
    """A fraction as a percentage: 0.857 -> "85.7%"."""
    return fmt_fixed(100 * _number(x), decimals, "%")


def fmt_duration(seconds: float) -> str:
    """A duration in the unit that keeps it in [1, 1000): "850 ns", "4.98 ms", "12.3 s" (3 significant digits)."""
    _check(seconds)
    value, unit = float(seconds), "s"
    for smaller in ("ms", "µs", "ns"):
        if value >= 1 or value == 0:
            break
        value, unit = value * 1000, smaller
    return f"{_fixed(value, 2 if value < 10 else 1 if value < 100 else 0)} {unit}"


def fmt_memory_fit(fit: object) -> str:
    """A device row of Chapter 2 (a `costs.MemoryFit` or its dict): "fits; longest context 1,024, largest batch 3"."""
    get = fit.get if isinstance(fit, dict) else lambda k: getattr(fit, k)
    if not get("weights_fit"):
        return "weights alone do not fit"
    verdict = "fits" if get("fits") else "does not fit"
    return f"{verdict}; longest context {get('max_context'):,}, largest batch {get('max_batch'):,}"
