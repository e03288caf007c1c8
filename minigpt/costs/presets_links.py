"""Interconnects, each with its public source: GPU to GPU (`LINKS`, `KV_LINKS`, a small all-reduce's α in
`ALLREDUCE_ALPHA`) and GPU to host (`HOST_LINKS` at their nominal rates, `ACHIEVED_HOST_LINKS` at what a copy
achieves). Re-exported by `minigpt.costs.presets`, where the book's code reads them.
"""

from __future__ import annotations

from minigpt.costs.preset_types import LinkPreset, by_name

#: Interconnects of the tensor-parallel example in Chapter 3 (`minigpt.costs.parallel`).
LINKS: dict[str, LinkPreset] = by_name(
    LinkPreset(
        "NVLink 4 (H100 SXM)", bandwidth_per_direction=450e9,
        source="NVIDIA H100 Tensor Core GPU datasheet: NVLink 900 GB/s per GPU, the total of both "
        "directions (18 links), so 450 GB/s each way; https://www.nvidia.com/en-us/data-center/h100/",
    ),
    LinkPreset(
        "NVLink 3 (A100 SXM)", bandwidth_per_direction=300e9,
        source="NVIDIA A100 Tensor Core GPU datasheet: NVLink 600 GB/s per GPU, the total of both "
        "directions (12 links), so 300 GB/s each way; https://www.nvidia.com/en-us/data-center/a100/",
    ),
)


#: Links a request's K/V can take from a prefill GPU to a decode GPU (Chapter 19): NVLink inside a node,
#: then PCIe, InfiniBand and Ethernet between GPUs without it.
KV_LINKS: dict[str, LinkPreset] = by_name(
    LINKS["NVLink 4 (H100 SXM)"],
    LinkPreset(
        "InfiniBand NDR 400 Gb/s", bandwidth_per_direction=50e9,
        source="NVIDIA ConnectX-7 / Quantum-2 InfiniBand NDR: 400 Gb/s per port each way = 50 GB/s "
        "(one NIC per GPU in a DGX H100); https://www.nvidia.com/en-us/networking/infiniband-adapters/",
    ),
    LinkPreset(
        "PCIe Gen5 x16 (peer)", bandwidth_per_direction=64e9,
        source="PCI-SIG PCIe 5.0: 32 GT/s per lane, x16 = 63 GB/s each way, GPU to GPU through a PCIe switch "
        "without NVLink; NVIDIA H100 PCIe datasheet 'PCIe Gen5: 128GB/s' (both directions); "
        "https://www.nvidia.com/en-us/data-center/h100/",
    ),
    LinkPreset(
        "100 GbE", bandwidth_per_direction=12.5e9,
        source="IEEE 802.3 100 Gigabit Ethernet: 100 Gb/s each way = 12.5 GB/s before protocol overhead "
        "(RoCE or TCP between two servers); https://standards.ieee.org/ieee/802.3/",
    ),
)


#: A small all-reduce's fixed cost α in seconds (Chapter 20's α–β model, `costs.allreduce_time`), by link.
ALLREDUCE_ALPHA: dict[str, tuple[float, str]] = {
    "NVLink 4 (H100 SXM)": (
        10e-6,
        "sgl-project/sglang pull request #2904 (2025), unit test on H100 without CUDA graphs: vLLM's custom "
        "all-reduce of 512 bytes took 0.0095/0.0091/0.0101 ms at TP 2/4/8, and NCCL is no faster on small "
        "messages (the reason vLLM wrote that kernel, vllm-project/vllm pull request #2192); "
        "https://github.com/sgl-project/sglang/pull/2904",
    ),
}


#: Host links: how fast a GPU's KV blocks reach host memory and come back (swap, Chapter 12).
HOST_LINKS: dict[str, LinkPreset] = by_name(
    LinkPreset(
        "PCIe Gen4 x16", bandwidth_per_direction=32e9,
        source="PCI-SIG PCIe 4.0: 16 GT/s per lane, 128b/130b, x16 = 31.5 GB/s each way; NVIDIA A100 datasheet "
        "lists 'PCIe Gen4: 64GB/s' (both directions); https://www.nvidia.com/en-us/data-center/a100/",
    ),
    LinkPreset(
        "PCIe Gen5 x16", bandwidth_per_direction=64e9,
        source="PCI-SIG PCIe 5.0: 32 GT/s per lane, x16 = 63 GB/s each way; NVIDIA H100 datasheet lists "
        "'PCIe Gen5: 128GB/s' (both directions); https://www.nvidia.com/en-us/data-center/h100/",
    ),
    LinkPreset(
        "NVLink-C2C (GH200)", bandwidth_per_direction=450e9,
        source="NVIDIA GH200 Grace Hopper Superchip datasheet: NVLink-C2C 900 GB/s between the Grace CPU's "
        "memory and the Hopper GPU, both directions together, so 450 GB/s each way; "
        "https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/",
    ),
)


_GEN5_ACHIEVED = 50e9
_SHARE = _GEN5_ACHIEVED / HOST_LINKS["PCIe Gen5 x16"].bandwidth_per_direction

#: The same host links at the rate a host-device copy achieves, which Chapter 12 prices swap at and its paging
#: replay uses: about 50 GB/s one way between an H100 and host memory over PCIe Gen5 (vLLM's offloading
#: benchmark), Gen4 taken at the same share of its nominal rate, NVLink-C2C at its nominal rate.
ACHIEVED_HOST_LINKS: dict[str, LinkPreset] = by_name(
    LinkPreset(
        "PCIe Gen4 x16", bandwidth_per_direction=HOST_LINKS["PCIe Gen4 x16"].bandwidth_per_direction * _SHARE,
        source="derived: PCIe Gen4's nominal 32 GB/s each way at the share of its nominal rate (50 of 64 GB/s) "
        "a copy achieves over PCIe Gen5; not measured",
    ),
    LinkPreset(
        "PCIe Gen5 x16", bandwidth_per_direction=_GEN5_ACHIEVED,
        source="Ozeri and Harnik, 'Inside vLLM's New Offloading Connector' (vLLM blog, 2026-01-08): about "
        "50 GB/s one way between an H100's memory and the host's over PCIe Gen5, by the connector's copies; "
        "https://blog.vllm.ai/2026/01/08/kv-offloading-connector.html",
    ),
    HOST_LINKS["NVLink-C2C (GH200)"],
)
