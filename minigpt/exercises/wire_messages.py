"""The wire format's messages (templates): what a record, `encode` or `conforms` says about a value.
"""

from __future__ import annotations

# The sandbox runs this module too: it holds no catalog, so its messages stay English there and are
# translated where they are shown (`check`, the grader).
from minigpt.i18n import N_

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
