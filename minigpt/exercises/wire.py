"""The grader's wire format: JSON input descriptions -> objects, and returned values -> JSON.

Shared by both sides of the grader and by the student-side `check`: the trusted parent describes a
question's inputs as plain JSON (``{"$randn": [2, 3], "seed": 7}``, ``{"$uniform": [4], "seed": 7, "low": 1,
"high": 9}``, ``{"$long": [[1, 2]]}``, ``{"$config": {...}}``, ``{"$model": {...}, "seed": 5}``,
``{"$record": "ModelPreset", "fields": {...}}``)
and the sandboxed child turns them into tensors, configs, small MiniGPTs and read-only records. The
child's copy of `minigpt` holds this module and the runtime (model, cache), never the answer
functions: a preset reaches it as a `Record` of its fields, not as an object with formula methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from minigpt.config import ModelConfig

# The sandbox runs this module too: it holds no catalog, so its messages stay English there and are
# translated where they are shown (`check`, the grader).
from minigpt.i18n import N_

Lookup = Callable[[dict[str, Any]], Any]


# Every message of this module (templates): `minigpt.i18n.translate_known` recognises them in a text made here.
NO_FIELD = N_("{record} has no field {name}; its fields are {fields}")
READ_ONLY = N_("{record} is read-only")
RAGGED = N_("the returned tensor is ragged")
TOO_MANY = N_("the returned tensor has {n} elements (too many)")
COMPLEX = N_("the returned tensor is complex")
TOO_DEEP = N_("the returned value is nested too deeply")
TOO_LARGE = N_("the returned integer is too large")
OBJECTS = N_("the returned array holds Python objects")
TOO_LONG = N_("the returned sequence is too long")
RETURNED = N_("returned a {type}, expected a number, bool, list or tensor")
NESTED = N_("nested too deeply")
SHAPE_GOT_SHAPE = N_("expected a tensor of shape {shape}, got shape {got}")
SHAPE_GOT_OTHER = N_("expected a tensor of shape {shape}, got another shape")
SHAPE_GOT = N_("expected a tensor of shape {shape}, got {kind}")
SEQ_GOT_TENSOR = N_("expected a sequence of {n} values, got a tensor")
SEQ_GOT_LENGTH = N_("expected a sequence of {n} values, got {n_got}")
SEQ_GOT = N_("expected a sequence of {n} values, got {kind}")
NUMBER_GOT = N_("expected a number, got {kind}")
TEXT_GOT = N_("expected a short text or None, got {kind}")
NO_KIND = N_("expected no value of this kind")
KIND_TENSOR = N_("a tensor")
KIND_SEQUENCE = N_("a sequence of {n} values")
KIND_NUMBER = N_("a number")
KIND_OTHER = N_("a value of another kind")
MESSAGES: tuple[str, ...] = (NO_FIELD, READ_ONLY, RAGGED, TOO_MANY, COMPLEX, TOO_DEEP, TOO_LARGE, OBJECTS, TOO_LONG,
                             RETURNED, NESTED, SHAPE_GOT_SHAPE, SHAPE_GOT_OTHER, SHAPE_GOT, SEQ_GOT_TENSOR,
                             SEQ_GOT_LENGTH, SEQ_GOT, NUMBER_GOT, TEXT_GOT, NO_KIND, KIND_TENSOR, KIND_SEQUENCE,
                             KIND_NUMBER, KIND_OTHER)
SYMBOLS = ("L", "H_kv", "d_h", "d", "d_ffn", "V", "ffn_matrices")  # what ModelPreset.symbols() returns


class Record:
    """A read-only bag of named fields (a preset as the grader sends it: its fields, no methods)."""

    __slots__ = ("_kind", "_fields")

    def __init__(self, kind: str, fields: dict[str, Any]) -> None:
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_fields", dict(fields))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(NO_FIELD.format(record=self._kind, name=repr(name),
                                                 fields=sorted(self._fields))) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(READ_ONLY.format(record=self._kind))

    def symbols(self) -> dict[str, Any]:
        """The model symbols `minigpt.costs.evaluate` reads (the fields of a ModelPreset's ``symbols()``)."""
        return {k: self._fields[k] for k in SYMBOLS if k in self._fields}

    def __repr__(self) -> str:
        return f"{self._kind}(" + ", ".join(f"{k}={v!r}" for k, v in self._fields.items()) + ")"


def records(kind: str, table: dict[str, dict[str, Any]]) -> dict[str, Record]:
    """A name -> Record table (the presets the grading sandbox offers as `MODELS` / `HARDWARE`)."""
    return {name: Record(kind, fields) for name, fields in table.items()}


def build_model(spec: dict[str, Any]) -> torch.nn.Module:
    """The small random MiniGPT a `{"$model": config, "seed": n}` describes (its own generator, not the global RNG)."""
    from minigpt import MiniGPT

    with torch.random.fork_rng(devices=[]):
        model = MiniGPT(ModelConfig(**spec["$model"]))
    g = torch.Generator().manual_seed(spec["seed"])
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return model.eval()


def build(value: Any, lookup: Lookup | None = None) -> Any:
    """Turn a JSON input description into the object passed to the student's function.

    `lookup` resolves the named presets (``{"$preset": name}``, ``{"$hardware": name}``) on the trusted
    side; the sandbox receives them already resolved, as ``{"$record": ...}``.
    """
    if isinstance(value, list):
        return [build(v, lookup) for v in value]
    if not isinstance(value, dict):
        return value
    if "$randn" in value:
        g = torch.Generator().manual_seed(value["seed"])
        return torch.randn(value["$randn"], generator=g) * value.get("scale", 1.0)
    if "$uniform" in value:
        g = torch.Generator().manual_seed(value["seed"])
        return value["low"] + (value["high"] - value["low"]) * torch.rand(value["$uniform"], generator=g)
    if "$long" in value:
        return torch.tensor(value["$long"], dtype=torch.long)
    if "$record" in value:
        return Record(str(value["$record"]), value["fields"])
    if lookup is not None and ("$preset" in value or "$hardware" in value):
        return lookup(value)
    if "$config" in value:
        return ModelConfig(**value["$config"])
    if "$model" in value:
        return build_model(value)
    return {k: build(v, lookup) for k, v in value.items()}


def build_case(case: dict[str, Any], lookup: Lookup | None = None) -> dict[str, Any]:
    """Keyword arguments for the student's function (fresh objects on every call)."""
    return {name: build(value, lookup) for name, value in case.items()}


class UnsupportedOutput(TypeError):
    """The student's function returned something that is not a number, bool, list or tensor."""


MAX_ELEMENTS = 1_000_000  # numbers in one returned value
MAX_INT_BITS = 64  # an int beyond ±2**64 is not an answer to any question
MAX_TEXT = 200  # characters of a returned string (a name: some answers are str | None)


def _shape_of(data: Any) -> list[int]:
    """The shape of a rectangular nested list of numbers (UnsupportedOutput when ragged)."""
    shape, level = [], data
    while isinstance(level, list):
        shape.append(len(level))
        level = level[0] if level else None
    def walk(x: Any, depth: int) -> None:
        if depth == len(shape):
            if isinstance(x, list):
                raise UnsupportedOutput(RAGGED)
            return
        if not isinstance(x, list) or len(x) != shape[depth]:
            raise UnsupportedOutput(RAGGED)
        for item in x:
            walk(item, depth + 1)
    walk(data, 0)
    return shape


def _encode_tensor(value: torch.Tensor) -> dict[str, Any]:
    t = torch.Tensor.as_subclass(value, torch.Tensor)
    numel = torch.Tensor.numel(t)
    if numel > MAX_ELEMENTS:
        raise UnsupportedOutput(TOO_MANY.format(n=numel))
    t = torch.Tensor.cpu(torch.Tensor.detach(t))
    if torch.Tensor.is_complex(t):
        raise UnsupportedOutput(COMPLEX)
    if torch.Tensor.is_floating_point(t):
        t = torch.Tensor.double(t)
    elif t.dtype != torch.bool:
        t = torch.Tensor.long(t)
    data = torch.Tensor.tolist(t)
    return {"$tensor": data, "shape": _shape_of(data)}


def encode(value: Any, depth: int = 0) -> Any:
    """Plain data (exact bool, int, float, list; a tensor as ``{"$tensor": nested list, "shape": its shape}``) for a
    returned value.

    Nothing of the value's own class is trusted: subclasses of int/float/tensor are read through the base class
    (a tensor subclass that reports another ``.shape`` or overrides ``tolist`` is converted by
    ``torch.Tensor``'s own methods, and the shape is measured on the converted data).
    """
    if depth > 8:
        raise UnsupportedOutput(TOO_DEEP)
    if value is None or isinstance(value, str):
        return None if value is None else str.__str__(value)[:MAX_TEXT]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        if int.bit_length(value) > MAX_INT_BITS:
            raise UnsupportedOutput(TOO_LARGE)
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunction():  # a subclass's __torch_function__ is not consulted
            return _encode_tensor(value)
    if type(value).__module__ == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise UnsupportedOutput(OBJECTS)
            return encode(torch.from_numpy(np.array(value, copy=True)), depth + 1)
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return encode(int(value), depth + 1)
        if isinstance(value, np.floating):
            return float(value)
    if isinstance(value, (list, tuple)):
        items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        n = list.__len__(value) if isinstance(value, list) else tuple.__len__(value)
        if n > 100_000:
            raise UnsupportedOutput(TOO_LONG)
        return [encode(v, depth + 1) for v in items]
    raise UnsupportedOutput(RETURNED.format(type=type(value).__name__))


# ---------------------------------------------------------------------------------------------
# What an answer may look like: checked in the sandbox (a clear message) and again by the parent (a bound)


def _leaves(value: Any) -> int:
    if isinstance(value, dict) and "$tensor" in value:
        n = 1
        for size in value["shape"]:
            n *= size
        return n
    if isinstance(value, list):
        return sum(_leaves(v) for v in value)
    return 1


def _is_scalar(x: Any) -> bool:
    if type(x) is int:
        return x.bit_length() <= MAX_INT_BITS
    return type(x) in (bool, float)


def _rect(data: Any, shape: list[int]) -> bool:
    """Whether `data` is a nested list of exactly `shape` with scalar leaves (iterative, bounded by `shape`)."""
    todo = [(data, 0)]
    while todo:
        x, depth = todo.pop()
        if depth == len(shape):
            if not _is_scalar(x):
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
        if _is_scalar(actual) and len(shape) == 1:
            return None  # an index into the expected vector (argmax questions)
        if type(actual) is dict:
            if set(actual) != {"$tensor", "shape"} or actual["shape"] != shape:
                got = actual.get("shape") if type(actual.get("shape")) is list else "?"
                return SHAPE_GOT_SHAPE.format(shape=shape, got=str(got)[:60])
            data = actual["$tensor"]
        elif type(actual) is list:
            data = actual
        else:
            return SHAPE_GOT.format(shape=shape, kind=_kind(actual))
        return None if _rect(data, shape) else SHAPE_GOT_OTHER.format(shape=shape)
    if type(expected) is list:
        if type(actual) is dict and set(actual) == {"$tensor", "shape"}:
            shape = actual["shape"]
            if shape == [len(expected)] and all(_is_scalar(e) for e in expected) and _rect(actual["$tensor"], shape):
                return None
            return SEQ_GOT_TENSOR.format(n=len(expected))
        if type(actual) is not list:
            return SEQ_GOT.format(n=len(expected), kind=_kind(actual))
        if len(actual) != len(expected):
            return SEQ_GOT_LENGTH.format(n=len(expected), n_got=len(actual))
        for e, a in zip(expected, actual, strict=True):
            problem = conforms(a, e, depth + 1)
            if problem:
                return problem
        return None
    if _is_scalar(expected):
        return None if _is_scalar(actual) else NUMBER_GOT.format(kind=_kind(actual))
    if expected is None or type(expected) is str:  # a name or nothing (str | None answers): small values only
        if actual is None or _is_scalar(actual) or (type(actual) is str and len(actual) <= MAX_TEXT):
            return None
        return TEXT_GOT.format(kind=_kind(actual))
    return NO_KIND


def _kind(x: Any) -> str:
    if type(x) is dict:
        return KIND_TENSOR
    if type(x) is list:
        return KIND_SEQUENCE.format(n=len(x))
    if _is_scalar(x):
        return KIND_NUMBER
    return KIND_OTHER if x is not None else "None"


def skeleton(expected: Any) -> Any:
    """`expected` with every number replaced by 0 (tensors keep their shape): what `conforms` needs, no answer."""
    if isinstance(expected, dict) and "$tensor" in expected:
        return {"$tensor": [], "shape": list(expected["shape"])}
    if isinstance(expected, list):
        return [skeleton(e) for e in expected]
    if isinstance(expected, bool):
        return False
    if isinstance(expected, str):
        return ""
    return 0 if isinstance(expected, int) else 0.0 if isinstance(expected, float) else None
