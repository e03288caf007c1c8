"""The overhead floor (Chapter 18): how many operators one decode step dispatches, what one costs, and the
time they explain; the names a chapter or a script uses, from the four modules that hold them.

- `op_count`        operators counted (a dispatch mode) and sorted: kernel, view or sync
- `overhead_floor`  t_op, the floor n_ops · t_op beside the measured step, the static and compiled steps
- `step_breakdown`  the step cut into parts, each timed in situ
- `op_timeline`     the profiled time line of one call's top-level operators
"""

from minigpt.measure.op_count import (
    ALIAS_OPS,
    ALLOC_OPS,
    HOST_SYNC_OP,
    OP_KINDS,
    OpCounter,
    OpRecorder,
    count_ops,
    decode_step_ops,
    kind_counts,
    op_kind,
)
from minigpt.measure.op_timeline import OpSpan, op_timeline
from minigpt.measure.overhead_floor import (
    OverheadFloor,
    measure_overhead,
    overhead_floor,
    per_op_seconds,
    time_static_step,
)
from minigpt.measure.step_breakdown import BREAKDOWN_PARTS, MATMUL_OPS, StepBreakdown, step_breakdown

__all__ = [
    "ALIAS_OPS", "ALLOC_OPS", "BREAKDOWN_PARTS", "HOST_SYNC_OP", "MATMUL_OPS", "OP_KINDS", "OpCounter", "OpRecorder",
    "OpSpan", "OverheadFloor", "StepBreakdown", "count_ops", "decode_step_ops", "kind_counts", "measure_overhead",
    "op_kind", "op_timeline", "overhead_floor", "per_op_seconds", "step_breakdown", "time_static_step",
]
