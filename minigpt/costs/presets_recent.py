"""Accelerators of 2024–25 beside the book's H100: NVIDIA's B200, AMD's MI300X and Apple's M2 Ultra, with the
FP8 and FP4 peaks that move their ridge points (Chapter 3, "Newer chips, lower precision").

Capacities follow `minigpt.costs.presets`: what the driver reports, in binary units, pinned by
``tests/test_presets.py``. They are kept out of `presets.HARDWARE`, whose chips the explorers offer and the
exercises draw from; `presets.ALL_HARDWARE` holds both.
"""

from __future__ import annotations

from minigpt.costs.preset_types import HardwarePreset, by_name

MiB = 2**20
GiB = 2**30

RECENT_HARDWARE: dict[str, HardwarePreset] = by_name(
    HardwarePreset(
        "B200", memory_bytes=183_359 * MiB, bandwidth=8.0e12, peak_flops=2.25e15, peak_flops_dtype="bf16",
        peak_flops_fp8=4.5e15, peak_flops_fp4=9.0e15,
        source="NVIDIA Blackwell architecture technical brief (HGX B200, per GPU, dense: half the sparse "
        "figures; BF16 2.25, FP8 4.5, FP4 9 PFLOP/s; HBM3e 8 TB/s), as pytorch/ao's "
        "torchao/testing/training/roofline_utils.py reads it (commit 0598012); the driver's 7,680-bit bus "
        "at 3,996 MHz gives 7.67 TB/s (pytorch/ao pull request 4002, 2026-03-05); nvidia-smi reports "
        "183,359 MiB (NVIDIA/TensorRT-LLM issue 10278, 2025-12-24, driver 580.95.05)",
    ),
    HardwarePreset(
        "MI300X", memory_bytes=196_288 * MiB, bandwidth=5.3e12, peak_flops=1307.4e12, peak_flops_dtype="bf16",
        peak_flops_fp8=2614.9e12,
        source="AMD Instinct MI300X data sheet (dense: BF16 1,307.4, FP8 2,614.9 TFLOP/s; 192 GB HBM3 at "
        "5.3 TB/s; no FP4); "
        "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
        "amd-instinct-mi300x-data-sheet.pdf; rocm-smi reports VRAM Total Memory 205,822,885,888 B = "
        "196,288 MiB (the total in the public rocm-smi and HIP device-property printouts of MI300X "
        "instances read on 2026-12-05)",
    ),
    HardwarePreset(
        "M2 Ultra 192GB", memory_bytes=144 * GiB, bandwidth=800e9, peak_flops=27.2e12, peak_flops_dtype="fp16",
        source="Apple newsroom, 'Apple introduces M2 Ultra' (2023-06-05): up to 192GB of unified memory at "
        "800GB/s, a GPU of up to 76 cores; Metal's recommendedMaxWorkingSetSize on a 192 GB Mac is "
        "154,618,822,656 B = 144 GiB, three quarters of the memory (apache/tvm pull request 16398, "
        "2024-01-14); the peak is derived, not published by Apple: 76 cores x 128 ALUs x 2 FLOP x "
        "a third-party 1.398 GHz clock, fp16 at the fp32 rate",
    ),
)
