"""Model and hardware presets for the book's worked examples, each with its public source.

Memory capacities are what `nvidia-smi` (memory.total) and `torch.cuda.mem_get_info` report, in binary units:
an "80 GB" A100 reports 81,920 MiB = 80 GiB, but an "80GB" H100 81,559 MiB and a "16 GB" T4 with ECC on (as in
Colab and the clouds) 15,360 MiB, and the "141 GB" H200 about 143,771 MiB (the A100, H100 and T4 totals as
nvidia-smi prints them: modal-labs/modal-client pull request 2797, 2025-01-23; for the H100 also NVIDIA/nccl
issue 1264; tests/test_presets.py pins each). Usable memory is lower still: the driver, the CUDA context and
the framework's allocator reserve some, so a budget leaves a `reserve` (`costs.max_batch`). Bandwidths are
bytes/s (SI, as datasheets state them) and peak rates FLOP/s, dense (no structured sparsity). The records'
types are in `minigpt.costs.preset_types`. ``minigpt/web/costs/presets.js`` carries a copy for the browser
sliders; ``tests/test_costs_js.py`` checks the two are equal. """

from __future__ import annotations

from minigpt.config import ModelConfig
from minigpt.costs.params import config_param_count
from minigpt.costs.preset_types import HardwarePreset, LatentPreset, ModelPreset, by_name
from minigpt.costs.presets_links import (  # noqa: F401 (the links are presets too)
    ACHIEVED_HOST_LINKS,
    ALLREDUCE_ALPHA,
    HOST_LINKS,
    KV_LINKS,
    LINKS,
)
from minigpt.costs.presets_recent import RECENT_HARDWARE

MiB = 2**20
GiB = 2**30
#: Where the reported capacities come from: nvidia-smi's totals as printed on those GPUs.
NVIDIA_SMI_SOURCE = ("nvidia-smi memory.total as reported: H100 81559MiB, A100 80GB 81920MiB, A100 40GB 40960MiB, "
                     "T4 15360MiB (modal-labs/modal-client pull request 2797, 2025-01-23, "
                     "https://github.com/modal-labs/modal-client/pull/2797; H100 also NVIDIA/nccl issue 1264, "
                     "https://github.com/NVIDIA/nccl/issues/1264)")


def _minigpt() -> ModelPreset:
    cfg = ModelConfig()
    return ModelPreset(
        name="MiniGPT", L=cfg.L, H=cfg.H, H_kv=cfg.H_kv, d_h=cfg.d_h, d_ffn=cfg.d_ffn, V=cfg.V,
        N_params=config_param_count(cfg),
        source="this book's companion package, minigpt.config.ModelConfig defaults (the MiniGPT of the course page "
        "'Prefill vs Decode: two phases of one forward')",
        S_pos=cfg.S_max, S_max=cfg.S_max,
    )


_LLAMA = dict(ffn_matrices=3, tied=False, norm_params=1, biases=False, S_pos=0)

MODELS: dict[str, ModelPreset] = by_name(
    _minigpt(),
    ModelPreset(
        "Llama-2-7B", L=32, H=32, H_kv=32, d_h=128, d_ffn=11008, V=32000, N_params=6_740_000_000,
        source="Touvron et al. 2023, Llama 2 (arXiv:2307.09288); "
        "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json",
        S_max=4096, **_LLAMA,
    ),
    ModelPreset(
        "Llama-3-8B", L=32, H=32, H_kv=8, d_h=128, d_ffn=14336, V=128256, N_params=8_030_000_000,
        source="Meta Llama 3 model card and config; "
        "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
        S_max=8192, **_LLAMA,
    ),
    ModelPreset(
        "Llama-3-70B", L=80, H=64, H_kv=8, d_h=128, d_ffn=28672, V=128256, N_params=70_600_000_000,
        source="Meta Llama 3 model card and config; "
        "https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json",
        S_max=8192, **_LLAMA,
    ),
    ModelPreset(
        "Mistral-7B", L=32, H=32, H_kv=8, d_h=128, d_ffn=14336, V=32000, N_params=7_240_000_000,
        source="Jiang et al. 2023, Mistral 7B (arXiv:2310.06825), Table 1 (window_size 4096, a rolling "
        "buffer cache of W = 4,096 tokens); https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json",
        S_max=32768, window=4096, **_LLAMA,
    ),
    ModelPreset(
        "GPT-3 175B", L=96, H=96, H_kv=96, d_h=128, d_ffn=49152, V=50257, N_params=175_000_000_000,
        source="Brown et al. 2020, Language Models are Few-Shot Learners (arXiv:2005.14165), Table 2.1; "
        "GPT-2 tokenizer (V = 50,257)",
        S_pos=2048, S_max=2048,
    ),
    ModelPreset(
        "Llama-2-13B", L=40, H=40, H_kv=40, d_h=128, d_ffn=13824, V=32000, N_params=13_000_000_000,
        source="Touvron et al. 2023, Llama 2 (arXiv:2307.09288), Table 1 (13B); "
        "https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json",
        S_max=4096, **_LLAMA,
    ),
)

#: Mixtures of experts: the dense formulas of Chapters 1–3 do not apply as they stand (Chapter 2, Eq. 2.6).
MOE_MODELS: dict[str, ModelPreset] = by_name(
    ModelPreset(
        "Mixtral-8x7B", L=32, H=32, H_kv=8, d_h=128, d_ffn=14336, V=32000, N_params=46_700_000_000,
        source="Jiang et al. 2024, Mixtral of Experts (arXiv:2401.04088), Table 1 (8 experts, top 2); "
        "46.7 B total and 12.9 B active parameters: Mistral AI, 'Mixtral of experts' (2023), "
        "https://mistral.ai/news/mixtral-of-experts/; "
        "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json",
        S_max=32768, experts=8, active_experts=2, **_LLAMA,
    ),
)


#: Latent-attention models (Chapter 2, Eq. 2.5).
LATENT_MODELS: dict[str, LatentPreset] = by_name(
    LatentPreset(
        "DeepSeek-V3", L=61, H=128, d_h=128, d_c=512, d_rope=64, N_params=671_000_000_000,
        N_active=37_000_000_000, S_max=131_072,
        source="DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv:2412.19437), Sec. 4.2 (61 layers, 128 "
        "heads of 128, d_c = 512, decoupled RoPE key of 64; 671 B parameters, 37 B active; 128K context); "
        "MLA: DeepSeek-AI 2024, DeepSeek-V2 (arXiv:2405.04434), Sec. 2.1",
    ),
)

#: Models replayed only in Part IV (Chapter 20 sets gpt-fast's published Llama-2-70B figures against
#: Eq. 20.5); kept out of MODELS so the explorers' model lists stay as they are.
REPLAY_MODELS: dict[str, ModelPreset] = by_name(
    ModelPreset(
        "Llama-2-70B", L=80, H=64, H_kv=8, d_h=128, d_ffn=28672, V=32000, N_params=68_976_648_192,
        source="Touvron et al. 2023, Llama 2 (arXiv:2307.09288), Table 1 (70B, GQA); "
        "https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json (N counted from its shapes)",
        S_max=4096, **_LLAMA,
    ),
)

HARDWARE: dict[str, HardwarePreset] = by_name(
    HardwarePreset(
        "T4", memory_bytes=15_360 * MiB, bandwidth=320e9, peak_flops=65e12, peak_flops_dtype="fp16",
        source="NVIDIA T4 Tensor Core GPU datasheet (mixed-precision FP16/FP32 tensor cores); "
        "https://www.nvidia.com/en-us/data-center/tesla-t4/; 16 GB GDDR6 of which nvidia-smi reports "
        "15,360 MiB with ECC on",
    ),
    HardwarePreset(
        "A100 40GB", memory_bytes=40 * GiB, bandwidth=1555e9, peak_flops=312e12,
        peak_flops_dtype="bf16",
        source="NVIDIA A100 Tensor Core GPU datasheet (BF16 tensor core, dense; HBM2 1,555 GB/s); "
        "https://www.nvidia.com/en-us/data-center/a100/",
    ),
    HardwarePreset(
        "A100 80GB", memory_bytes=80 * GiB, bandwidth=2039e9, peak_flops=312e12,
        peak_flops_dtype="bf16",
        source="NVIDIA A100 Tensor Core GPU datasheet (SXM, HBM2e 2,039 GB/s; BF16 dense); "
        "https://www.nvidia.com/en-us/data-center/a100/",
    ),
    HardwarePreset(
        "H100 SXM", memory_bytes=81_559 * MiB, bandwidth=3.35e12, peak_flops=989e12,
        peak_flops_dtype="bf16", peak_flops_fp8=1979e12,
        source="NVIDIA H100 Tensor Core GPU datasheet (SXM; BF16 1,979 TFLOP/s with sparsity, "
        "989 dense; FP8 3,958 with sparsity, 1,979 dense); https://www.nvidia.com/en-us/data-center/h100/; "
        "nvidia-smi reports 81,559 MiB",
    ),
    HardwarePreset(
        "H200", memory_bytes=143_771 * MiB, bandwidth=4.8e12, peak_flops=989e12,
        peak_flops_dtype="bf16", peak_flops_fp8=1979e12,
        source="NVIDIA H200 Tensor Core GPU datasheet (SXM; BF16 1,979 TFLOP/s with sparsity, "
        "989 dense; FP8 3,958 with sparsity, 1,979 dense); https://www.nvidia.com/en-us/data-center/h200/",
    ),
    HardwarePreset(
        "RTX 4090", memory_bytes=24 * GiB, bandwidth=1008e9, peak_flops=165.2e12,
        peak_flops_dtype="bf16",
        source="NVIDIA Ada GPU Architecture whitepaper, Appendix A (BF16 tensor, FP32 accumulate, "
        "dense: 165.2 TFLOP/s; GDDR6X 1,008 GB/s); "
        "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf",
    ),
    HardwarePreset(
        "Laptop GPU 8 GB", memory_bytes=8 * GiB, bandwidth=400e9, peak_flops=20e12,
        peak_flops_dtype="fp16",
        source="illustrative, not a product: the 8 GB card of the guide 'Prefill vs decode: how generation "
        "runs' with ~400 GB/s effective bandwidth; "
        "~20 TFLOP/s is an assumed round figure for a mid-range laptop GPU",
    ),
    HardwarePreset(
        "TPU v5e", memory_bytes=16 * GiB, bandwidth=819e9, peak_flops=197e12, peak_flops_dtype="bf16",
        source="Google Cloud TPU v5e documentation (per chip: 197 TFLOP/s bf16, 819 GB/s HBM2 bandwidth, "
        "16 GiB HBM2); https://cloud.google.com/tpu/docs/v5e",
    ),
)

#: Every chip preset: the explorers' `HARDWARE` and the `RECENT_HARDWARE` of Chapter 3's low-precision table.
ALL_HARDWARE: dict[str, HardwarePreset] = {**HARDWARE, **RECENT_HARDWARE}


# ---------------------------------------------------------------------------------------------
# MiniGPT-family configs of the book's measurements (Chapters 6–8, `make bench`)

#: The scaled model of Chapter 7 (and `make bench`): L=8, d=512, about 25.8 M parameters.
SCALED = ModelConfig(L=8, H=8, H_kv=8, d_h=64, d_ffn=2048, V=600, S_max=512)

#: Chapter 8's family of sizes, from the book's MiniGPT to about 200 M parameters (d_ffn = 4d, V = 600).
FAMILY: dict[str, ModelConfig] = {
    "MiniGPT": ModelConfig(),
    "L4-d128": ModelConfig(L=4, H=4, H_kv=4, d_h=32, d_ffn=512, V=600, S_max=256),
    "L6-d256": ModelConfig(L=6, H=4, H_kv=4, d_h=64, d_ffn=1024, V=600, S_max=256),
    "L8-d512": ModelConfig(L=8, H=8, H_kv=8, d_h=64, d_ffn=2048, V=600, S_max=256),
    "L12-d768": ModelConfig(L=12, H=12, H_kv=12, d_h=64, d_ffn=3072, V=600, S_max=256),
    "L16-d1024": ModelConfig(L=16, H=16, H_kv=16, d_h=64, d_ffn=4096, V=600, S_max=256),
}

#: Added on a GPU only: about 1.2 B parameters (2.4 GB in bf16), too slow for a shared CPU.
GPU_EXTRA: dict[str, ModelConfig] = {
    "L24-d2048": ModelConfig(L=24, H=16, H_kv=16, d_h=128, d_ffn=8192, V=600, S_max=256),
}
