"""How a question's output is compared with the package's, in JSON form (tensors as nested lists): each
comparison says what differs, in the student's language, or None.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from minigpt.i18n import _, fmt_num, language

Compare = Callable[[Any, Any], "str | None"]


def _show(value: Any, literal: bool = False) -> str:
    """A returned value in a message: numbers as the language writes them (`fmt_num`), or as Python literals when
    `literal` (the items of a list outside English, where a decimal comma would read as a separator)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return str(value) if literal else fmt_num(value)
    if isinstance(value, float):
        return format(value, ".8g") if literal else fmt_num(value, ".8g")
    if isinstance(value, dict) and "$tensor" in value:
        flat = torch.tensor(value["$tensor"], dtype=torch.float64).flatten()[:6].tolist()
        return _("tensor of shape {shape}, first values {values}").format(shape=value["shape"],
                                                                          values=[round(x, 5) for x in flat])
    if isinstance(value, list):
        literal = literal or language() != "en"
        text = "[" + ", ".join(_show(v, literal) for v in value[:8]) + (", ...]" if len(value) > 8 else "]")
        return text
    return repr(value)[:200]


def returned(value: Any) -> str:
    """A value the student's function returned, echoed as Python writes it (`repr`) in every language: "3.5",
    "12345", never the Spanish "3,5" (which reads as a tuple) or "12 345"; lists of at most 8 items, a tensor as
    its shape and first values. The package's own numbers (the expected ones) are written the language's way."""
    if isinstance(value, dict) and "$tensor" in value:
        return _show(value)
    if isinstance(value, list):
        return "[" + ", ".join(returned(v) for v in value[:8]) + (", ...]" if len(value) > 8 else "]")
    return repr(value)[:200]


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def exact_int(expected: Any, actual: Any) -> str | None:
    """The same integer (an integer-valued float is accepted only if it is exactly equal)."""
    if not _is_number(actual):
        return _("expected the integer {expected}, got {actual}").format(expected=_show(expected),
                                                                         actual=returned(actual))
    if isinstance(actual, float) and (not math.isfinite(actual) or not actual.is_integer()):
        return _("expected {expected}, got {actual} (not an integer)").format(expected=_show(expected),
                                                                             actual=returned(actual))
    if int(actual) != expected:
        return _("expected {expected}, got {actual}").format(expected=_show(expected), actual=returned(actual))
    return None


def close(rel: float = 1e-9, abs_: float = 0.0) -> Compare:
    """A number within `rel` relative (or `abs_` absolute) tolerance."""

    def compare(expected: Any, actual: Any) -> str | None:
        if not _is_number(actual):
            return _("expected a number close to {expected}, got {actual}").format(expected=_show(expected),
                                                                                  actual=returned(actual))
        if not (isinstance(actual, int) or math.isfinite(actual)):
            return _("expected {expected}, got {actual}").format(expected=_show(expected), actual=returned(actual))
        if not math.isclose(float(actual), float(expected), rel_tol=rel, abs_tol=abs_):
            return _("expected {expected}, got {actual} (tolerance: relative {rel})").format(
                expected=_show(expected), actual=returned(actual), rel=fmt_num(rel, "g"))
        return None

    return compare


def boolean(expected: Any, actual: Any) -> str | None:
    """The same truth value, as a bool."""
    if not isinstance(actual, bool):
        return _("expected a bool ({expected}), got {actual}").format(expected=expected, actual=returned(actual))
    return None if actual == expected else _("expected {expected}, got {actual}").format(expected=expected,
                                                                                        actual=actual)


def int_list(expected: Any, actual: Any) -> str | None:
    """The same list of integers."""
    if not isinstance(actual, list) and not (isinstance(actual, dict) and "$tensor" in actual):
        return _("expected a list of ints {expected}, got {actual}").format(expected=_show(expected),
                                                                           actual=returned(actual))
    values = actual["$tensor"] if isinstance(actual, dict) else actual
    if values != expected:
        return _("expected {expected}, got {actual}").format(expected=_show(expected), actual=returned(values))
    return None


def tensor(atol: float = 1e-5, rtol: float = 1e-5) -> Compare:
    """A tensor (or nested list) of the expected shape whose values are allclose."""

    def compare(expected: Any, actual: Any) -> str | None:
        if isinstance(actual, list):
            try:
                actual = {"$tensor": actual, "shape": list(torch.tensor(actual).shape)}
            except (ValueError, TypeError):
                return _("expected a tensor, got a ragged list")
        if not isinstance(actual, dict) or "$tensor" not in actual:
            return _("expected a tensor of shape {shape}, got {actual}").format(shape=expected["shape"],
                                                                               actual=returned(actual))
        if actual["shape"] != expected["shape"]:
            return _("expected a tensor of shape {shape}, got shape {got}").format(shape=expected["shape"],
                                                                                  got=actual["shape"])
        e = torch.tensor(expected["$tensor"], dtype=torch.float64)
        a = torch.tensor(actual["$tensor"], dtype=torch.float64)
        if not torch.allclose(a, e, atol=atol, rtol=rtol):
            diff = (a - e).abs()
            diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
            i = int(diff.flatten().argmax())
            index = tuple(int(x) for x in torch.unravel_index(torch.tensor(i), e.shape)) if e.dim() else ()
            message = _("values differ: at index {index} expected {expected}, got {actual} (tolerance {tolerance})")
            return message.format(
                index=list(index), expected=fmt_num(e.flatten()[i].item(), ".6g"),
                actual=format(a.flatten()[i].item(), ".6g"), tolerance=f"atol={atol:g}, rtol={rtol:g}")
        return None

    return compare


def pair(first: Compare, second: Compare, names: tuple[str, str]) -> Compare:
    """A 2-tuple whose items compare with `first` and `second`."""

    def compare(expected: Any, actual: Any) -> str | None:
        if not isinstance(actual, list) or len(actual) != 2:
            return _("expected a tuple ({first}, {second}), got {actual}").format(first=names[0], second=names[1],
                                                                                 actual=returned(actual))
        for name, cmp, e, a in zip(names, (first, second), expected, actual, strict=True):
            message = cmp(e, a)
            if message:
                return f"{name}: {message}"
        return None

    return compare


def triple(names: tuple[str, str, str], compares: tuple[Compare, Compare, Compare]) -> Compare:
    """A 3-tuple whose items compare with `compares` (ex06 Q1's (out, k_valid, v_valid), ex13 Q4's (m, l, o))."""

    def compare(expected: Any, actual: Any) -> str | None:
        if not isinstance(actual, list) or len(actual) != 3:
            return _("expected a tuple {names}, got {type}").format(names=f"({', '.join(names)})",
                                                                   type=type(actual).__name__)
        for name, cmp, e, a in zip(names, compares, expected, actual, strict=True):
            message = cmp(e, a)
            if message:
                return f"{name}: {message}"
        return None

    return compare


def argmax_of(tol: float = 1e-4) -> Compare:
    """An integer index whose value in the expected list is the maximum (within `tol`, for near ties)."""

    def compare(expected: Any, actual: Any) -> str | None:
        values = expected["$tensor"]
        best = max(range(len(values)), key=values.__getitem__)
        if isinstance(actual, bool) or not isinstance(actual, int):
            return _("expected the token id {best} (an int), got {actual}").format(best=best, actual=returned(actual))
        if not 0 <= actual < len(values):
            return _("expected the token id {best}, got {actual} (out of range {first}..{last})").format(
                best=best, actual=actual, first=0, last=len(values) - 1)
        if values[actual] < values[best] - tol:
            return _("expected the token id {best} (logit {best_logit}), got {actual} (logit {logit})").format(
                best=best, best_logit=fmt_num(values[best], ".5f"), actual=actual,
                logit=fmt_num(values[actual], ".5f"))
        return None

    return compare
