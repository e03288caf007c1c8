"""Model and hardware presets: shapes agree with published parameter counts and the book's figures."""

from __future__ import annotations

import dataclasses

import pytest

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.costs.preset_types import PRECISIONS, HardwarePreset, ModelPreset
from minigpt.costs.presets import ALL_HARDWARE, HARDWARE, LATENT_MODELS, MODELS, MOE_MODELS, RECENT_HARDWARE
from minigpt.runtime.model import MiniGPT

KiB, MiB = 1024, 1024**2


def test_expected_presets_exist():
    assert set(MODELS) == {"MiniGPT", "Llama-2-7B", "Llama-2-13B", "Llama-3-8B", "Llama-3-70B", "Mistral-7B",
                           "GPT-3 175B"}
    assert set(HARDWARE) == {
        "T4",
        "A100 40GB",
        "A100 80GB",
        "H100 SXM",
        "H200",
        "RTX 4090",
        "Laptop GPU 8 GB",
        "TPU v5e",
    }
    assert all(name == preset.name for name, preset in {**MODELS, **HARDWARE}.items())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_shape_reproduces_published_parameter_count(name):
    m = MODELS[name]
    assert m.H % m.H_kv == 0
    assert m.estimated_params == pytest.approx(m.N_params, rel=0.005), name
    assert m.source


def test_minigpt_preset_is_the_package_model():
    cfg = ModelConfig()
    m = MODELS["MiniGPT"]
    assert m.symbols() == cfg.symbols()
    model = MiniGPT(cfg)
    assert m.N_params == m.estimated_params == sum(p.numel() for p in model.parameters()) == 246_656
    assert m.matrix_params == costs.non_embedding_matrix_params(L=cfg.L, d=cfg.d) == 196_608


def test_swiglu_models_have_three_ffn_matrices():
    llama = MODELS["Llama-2-7B"]
    assert llama.ffn_matrices == 3 and not llama.tied
    assert llama.matrix_params == 32 * (4 * 4096**2 + 3 * 4096 * 11008)
    assert MODELS["GPT-3 175B"].matrix_params == 12 * 96 * 12288**2


@pytest.mark.parametrize(
    ("name", "per_token"),
    [
        ("Llama-2-7B", 512 * KiB),
        ("Llama-3-8B", 128 * KiB),
        ("Llama-3-70B", 320 * KiB),
        ("Mistral-7B", 128 * KiB),
        ("GPT-3 175B", 4.5 * MiB),
        ("MiniGPT", 1 * KiB),
    ],
)
def test_kv_bytes_per_token_bf16(name, per_token):
    m = MODELS[name]
    assert costs.kv_bytes_per_token(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2) == per_token


#: Every GPU preset's capacity as `nvidia-smi` reports it (memory.total, MiB), with where it was read; the
#: others are not NVIDIA GPUs (TPU v5e: 16 GiB per chip, Google's documentation), an illustrative card
#: (the guide's 8 GB laptop GPU), or not checked against a printout (RTX 4090: 24 GiB, its datasheet's).
#: The bug this catches: a datasheet's "16 GB" taken for what the card offers; a Colab T4 has 15,360 MiB,
#: 1 GiB less, and an H100 80GB 81,559 MiB, 361 MiB less than 80 GiB.
NVIDIA_SMI_MIB = {"T4": 15_360, "A100 40GB": 40_960, "A100 80GB": 81_920, "H100 SXM": 81_559, "H200": 143_771}
UNREPORTED = {"TPU v5e": 16 * 1024, "Laptop GPU 8 GB": 8 * 1024, "RTX 4090": 24 * 1024}


#: The recent chips' capacities as their drivers report them, MiB: the B200's nvidia-smi total, the MI300X's
#: rocm-smi VRAM total (205,822,885,888 B), and Metal's working-set limit on a 192 GB M2 Ultra (3/4 of it).
#: The bug this catches: the marketing "192 GB" taken for what a B200 (179 GiB) or a Mac's GPU (144 GiB) offers.
RECENT_MIB = {"B200": 183_359, "MI300X": 196_288, "M2 Ultra 192GB": 144 * 1024}


def test_recent_chips_capacities_and_low_precision_peaks():
    assert set(RECENT_MIB) == set(RECENT_HARDWARE), "a new preset: pin its capacity here"
    assert not set(RECENT_HARDWARE) & set(HARDWARE) and ALL_HARDWARE == {**HARDWARE, **RECENT_HARDWARE}
    for name, mib in RECENT_MIB.items():
        assert RECENT_HARDWARE[name].memory_bytes == mib * MiB, name
    assert RECENT_HARDWARE["MI300X"].memory_bytes == 205_822_885_888
    b200, mi300x, h100 = RECENT_HARDWARE["B200"], RECENT_HARDWARE["MI300X"], HARDWARE["H100 SXM"]
    # Dense peaks double with each halving of the format: the ridge doubles while the bandwidth stays.
    assert (b200.peak("16-bit"), b200.peak("fp8"), b200.peak("fp4")) == (2.25e15, 4.5e15, 9.0e15)
    assert mi300x.peak("fp8") == pytest.approx(2 * mi300x.peak("16-bit"), rel=1e-4)
    assert h100.peak("fp8") == pytest.approx(2 * h100.peak("16-bit"), rel=1e-3)
    with pytest.raises(ValueError, match="precision='fp4': the MI300X preset has no fp4 peak"):
        mi300x.peak("fp4")
    with pytest.raises(ValueError, match="precision='fp8': the A100 80GB preset has no fp8 peak"):
        HARDWARE["A100 80GB"].peak("fp8")
    with pytest.raises(ValueError, match="precision='int8': allowed are 16-bit, fp8, fp4"):
        h100.peak("int8")
    for hw in ALL_HARDWARE.values():
        assert hw.peak("16-bit") == hw.peak_flops and set(PRECISIONS) == {"16-bit", "fp8", "fp4"}
        assert 0 <= hw.peak_flops_fp8 and 0 <= hw.peak_flops_fp4 and hw.source


def test_capacities_are_what_nvidia_smi_reports():
    assert set(NVIDIA_SMI_MIB) | set(UNREPORTED) == set(HARDWARE), "a new preset: pin its capacity here"
    for name, mib in {**NVIDIA_SMI_MIB, **UNREPORTED}.items():
        assert HARDWARE[name].memory_bytes == mib * MiB, f"{name}: {HARDWARE[name].memory_bytes / MiB:,.0f} MiB"
    for name in ("T4", "H100 SXM"):
        assert "nvidia-smi reports" in HARDWARE[name].source


def test_hardware_figures():
    h100 = HARDWARE["H100 SXM"]
    assert costs.ridge_point(peak_flops=h100.peak_flops, bandwidth=h100.bandwidth) == pytest.approx(
        295.2, abs=0.1
    )
    laptop = HARDWARE["Laptop GPU 8 GB"]
    assert "illustrative" in laptop.source
    # The course page: 8 GB of weights (decimal, as it writes them) on ~400 GB/s is a 50 tok/s ceiling.
    assert costs.decode_tok_s_ceiling(bandwidth=laptop.bandwidth, bytes_per_step=8 * 10**9) == 50.0
    for hw in HARDWARE.values():
        assert isinstance(hw.memory_bytes, int) and hw.bandwidth > 1e11 and hw.peak_flops > 1e12
        assert hw.peak_flops_dtype in {"fp16", "bf16", "fp32"} and hw.source


def test_presets_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        MODELS["MiniGPT"].L = 5  # type: ignore[misc]
    assert dataclasses.is_dataclass(ModelPreset) and dataclasses.is_dataclass(HardwarePreset)


def test_mixture_of_experts_preset_reproduces_total_and_active_counts():
    """Mixtral 8x7B: 46.7 B parameters in memory, 12.9 B used per token (Mistral AI's figures)."""
    m = MOE_MODELS["Mixtral-8x7B"]
    assert (m.experts, m.active_experts) == (8, 2)
    assert m.estimated_params == pytest.approx(m.N_params, rel=0.005)
    assert m.active_params == pytest.approx(12.9e9, rel=0.005)
    assert MODELS["Llama-2-7B"].active_params == MODELS["Llama-2-7B"].N_params  # dense: every parameter
    assert MODELS["Llama-2-7B"].read_params(B=64) == MODELS["Llama-2-7B"].N_params
    assert m.read_params(B=1) == pytest.approx(m.active_params) and m.read_params(B=64) < m.N_params


def test_sliding_window_and_latent_presets():
    assert MODELS["Mistral-7B"].window == 4096
    assert all(m.window == 0 for name, m in MODELS.items() if name != "Mistral-7B")
    v3 = LATENT_MODELS["DeepSeek-V3"]
    assert (v3.L, v3.d_c, v3.d_rope) == (61, 512, 64) and v3.source
    # DeepSeek-V2's comparison: the latent cache equals GQA with 2.25 groups, (d_c + d_rope) = 4.5·d_h.
    assert (v3.d_c + v3.d_rope) / v3.d_h == 4.5
    assert v3.kv_bytes_per_token(s=2) == 61 * 576 * 2 and v3.mha_kv_bytes_per_token(s=2) == 2 * 61 * 128 * 128 * 2
