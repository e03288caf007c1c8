"""Measurement: `timing` (one timer, the device choice, sync), `probes` (bandwidth and peak FLOP/s),
`counting` (FLOPs and bytes of real calls), `environment` (one record of the machine), `sweeps`
(Chapters 7 and 8's experiments and the sweep scripts' command line), `cost_curve` (Chapter 6), `overhead`
(Chapter 18: `op_count`, `overhead_floor`, `step_breakdown`, `op_timeline`)."""

from minigpt.measure.counting import count_flops, count_flops_by_op, counted, module_bytes, tensor_bytes
from minigpt.measure.environment import environment
from minigpt.measure.probes import MiB, probe, probe_bandwidth, probe_peak_flops
from minigpt.measure.timing import Clock, Timing, default_device, sync, time_fn

__all__ = [
    "Clock", "MiB", "Timing", "count_flops", "count_flops_by_op", "counted", "default_device", "environment",
    "module_bytes", "probe", "probe_bandwidth", "probe_peak_flops", "sync", "tensor_bytes", "time_fn",
]
