"""What an answer may look like: a returned value (as plain data) checked against the shape of the package's
answer (`conforms`), by the grading parent only (nothing of an expected answer enters the sandbox), and by
`check()` in a student's notebook.
"""

from __future__ import annotations

from typing import Any

from minigpt.exercises.wire_encode import MAX_INT_BITS, MAX_TEXT
from minigpt.exercises.wire_messages import (
    KIND_NUMBER,
    KIND_OTHER,
    KIND_SEQUENCE,
    KIND_TENSOR,
    NESTED,
    NO_KIND,
    NUMBER_GOT,
    SEQ_GOT,
    SEQ_GOT_LENGTH,
    SEQ_GOT_TENSOR,
    SHAPE_GOT,
    SHAPE_GOT_OTHER,
    SHAPE_GOT_SHAPE,
    TEXT_GOT,
)


def is_scalar(x: Any) -> bool:
    """A number the wire carries as one: a bool, a float, or an int of at most MAX_INT_BITS bits."""
    if type(x) is int:
        return x.bit_length() <= MAX_INT_BITS
    return type(x) in (bool, float)


def _rect(data: Any, shape: list[int]) -> bool:
    """Whether `data` is a nested list of exactly `shape` with scalar leaves (iterative, bounded by `shape`)."""
    todo = [(data, 0)]
    while todo:
        x, depth = todo.pop()
        if depth == len(shape):
            if not is_scalar(x):
                return False
            continue
        if type(x) is not list or len(x) != shape[depth]:
            return False
        todo.extend((item, depth + 1) for item in x)
    return True


def conforms(actual: Any, expected: Any, depth: int = 0) -> str | None:
    """Why `actual` (parsed, untrusted) cannot be an answer shaped like `expected` (the package's encoded answer),
    or None. Bounded by `expected`: nothing larger than the expected answer is walked, and no number beyond
    ±2**64 passes; reveals only types and shapes, which the inputs already determine.

    An answer may take another form than the package's where a comparison accepts it: a number for a number, a
    list for a tensor of the same shape (and a tensor for a list), an int token id for a vector of logits.
    """
    if depth > 8:
        return NESTED
    if isinstance(expected, dict) and "$tensor" in expected:
        shape = list(expected["shape"])
        if is_scalar(actual) and len(shape) == 1:
            return None  # an index into the expected vector (argmax questions)
        if type(actual) is dict:
            if set(actual) != {"$tensor", "shape"} or actual["shape"] != shape:
                got = actual.get("shape") if type(actual.get("shape")) is list else "?"
                return SHAPE_GOT_SHAPE.format(shape=shape, got=str(got)[:60])
            data = actual["$tensor"]
        elif type(actual) is list:
            data = actual
        else:
            return SHAPE_GOT.format(shape=shape, kind=kind_of(actual))
        return None if _rect(data, shape) else SHAPE_GOT_OTHER.format(shape=shape)
    if type(expected) is list:
        if type(actual) is dict and set(actual) == {"$tensor", "shape"}:
            shape = actual["shape"]
            if shape == [len(expected)] and all(is_scalar(e) for e in expected) and _rect(actual["$tensor"], shape):
                return None
            return SEQ_GOT_TENSOR.format(n=len(expected))
        if type(actual) is not list:
            return SEQ_GOT.format(n=len(expected), kind=kind_of(actual))
        if len(actual) != len(expected):
            return SEQ_GOT_LENGTH.format(n=len(expected), n_got=len(actual))
        for e, a in zip(expected, actual, strict=True):
            problem = conforms(a, e, depth + 1)
            if problem:
                return problem
        return None
    if is_scalar(expected):
        return None if is_scalar(actual) else NUMBER_GOT.format(kind=kind_of(actual))
    if expected is None or type(expected) is str:  # a name or nothing (str | None answers): small values only
        if actual is None or is_scalar(actual) or (type(actual) is str and len(actual) <= MAX_TEXT):
            return None
        return TEXT_GOT.format(kind=kind_of(actual))
    return NO_KIND


def kind_of(x: Any) -> str:
    """What `x` is, in words that hold nothing but its own kind and length (the feedback of a hidden case)."""
    if type(x) is dict:
        return KIND_TENSOR
    if type(x) is list:
        return KIND_SEQUENCE.format(n=len(x))
    if is_scalar(x):
        return KIND_NUMBER
    return KIND_OTHER if x is not None else "None"
