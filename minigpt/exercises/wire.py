"""The grader's wire format: JSON input descriptions -> objects, and returned values -> JSON.

Shared by both sides of the grader and by the student-side `check`: the trusted parent describes a
question's inputs as plain JSON (``{"$randn": [2, 3], "seed": 7}``, ``{"$uniform": [4], "seed": 7, "low": 1,
"high": 9}``, ``{"$long": [[1, 2]]}``, ``{"$float64": [0.25, 0.75]}``, ``{"$config": {...}}``,
``{"$model": {...}, "seed": 5}``, ``{"$weights": {...}, "seed": 5}``, ``{"$record": "ModelPreset", "fields":
{...}}``) and the sandboxed child turns them into tensors, configs, small MiniGPTs, their state dicts and
read-only records. The child's copy of `minigpt` holds this module and the runtime (model, cache), never
the answer functions: a preset reaches it as a `Record` of its fields, not as an object with formula methods.

It re-exports the four modules that hold it (all staged into the sandbox):

- `wire_messages`  the messages (templates) a record, `encode` or `conforms` makes; `MESSAGES`, all of them
- `wire_inputs`    JSON input descriptions -> objects (`build`, `build_case`, `build_model`,
                   `build_weights`, `Record`, `records`)
- `wire_encode`    returned values -> plain data (`encode`, `UnsupportedOutput`, the bounds `MAX_*`)
- `wire_shapes`    plain data checked against the answer's shape (`conforms`, by the grading parent)
"""

from minigpt.exercises.wire_encode import MAX_ELEMENTS, MAX_INT_BITS, MAX_TEXT, UnsupportedOutput, encode
from minigpt.exercises.wire_inputs import (
    SYMBOLS,
    Lookup,
    Record,
    build,
    build_case,
    build_model,
    build_weights,
    records,
    weight_shapes,
)
from minigpt.exercises.wire_messages import MESSAGES
from minigpt.exercises.wire_shapes import conforms

__all__ = [
    "MAX_ELEMENTS", "MAX_INT_BITS", "MAX_TEXT", "MESSAGES", "SYMBOLS", "Lookup", "Record", "UnsupportedOutput",
    "build", "build_case", "build_model", "build_weights", "conforms", "encode", "records", "weight_shapes",
]
