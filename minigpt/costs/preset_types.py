"""The records of `minigpt.costs.presets`: a published model's shape (`ModelPreset`, with the counts its shape
implies), an accelerator's datasheet figures (`HardwarePreset`), a latent-attention model (`LatentPreset`) and an
interconnect (`LinkPreset`). The presets themselves, each with its public source, are in `presets`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from minigpt.costs.memory import (
    kv_bytes_per_token,
    latent_kv_bytes_per_token,
    moe_active_params,
    moe_decode_params,
)


@dataclass(frozen=True)
class ModelPreset:
    """A published decoder's shape in the book's notation, with its published parameter count N_params.

    ``ffn_matrices`` is 2 for a GELU MLP (GPT) and 3 for SwiGLU (Llama, Mistral); ``tied`` says whether
    the LM head reuses the token embedding; ``norm_params`` is 2·d per norm for LayerNorm, d for RMSNorm
    (written as the multiplier 2 or 1); ``biases`` says whether Linear layers have biases; ``S_pos`` is
    the number of learned position embeddings (0 for rotary embeddings); ``S_max`` the context length.
    A mixture of experts has ``experts`` FFNs per layer of which each token uses ``active_experts`` (1 and 1
    for a dense model); ``window`` is a sliding-window attention span in tokens (0: every token attends
    to the whole context).
    """

    name: str
    L: int
    H: int
    H_kv: int
    d_h: int
    d_ffn: int
    V: int
    N_params: int
    source: str
    ffn_matrices: int = 2
    tied: bool = True
    norm_params: int = 2
    biases: bool = True
    S_pos: int = 0
    S_max: int = 0
    experts: int = 1
    active_experts: int = 1
    window: int = 0

    @property
    def d(self) -> int:
        """Model width d = H·d_h."""
        return self.H * self.d_h

    def symbols(self) -> dict[str, int]:
        """The symbols `minigpt.costs` formulas take (`costs.MODEL_SYMBOLS`)."""
        return dict(L=self.L, H_kv=self.H_kv, d_h=self.d_h, d=self.d, d_ffn=self.d_ffn, V=self.V,
                    ffn_matrices=self.ffn_matrices)

    @property
    def matrix_params(self) -> int:
        """Weight-matrix parameters of the L blocks: Q, K, V, O projections, ffn_matrices FFN matrices per
        expert, and the router (d·experts) of a mixture of experts."""
        d, kv = self.d, self.H_kv * self.d_h
        router = d * self.experts if self.experts > 1 else 0
        return self.L * (d * (d + 2 * kv) + d * d + self.experts * self.ffn_matrices * d * self.d_ffn + router)

    @property
    def active_params(self) -> int:
        """Parameters one token uses: N_params for a dense model, Eq. (2.6) for a mixture of experts."""
        if self.experts == 1:
            return self.N_params
        return moe_active_params(N_params=self.N_params, L=self.L, d=self.d, d_ffn=self.d_ffn, experts=self.experts,
                                 active_experts=self.active_experts, ffn_matrices=self.ffn_matrices)

    def read_params(self, B: int = 1) -> float:
        """Parameters a decode step of B tokens reads: N_params if dense, Eq. (2.8) for a mixture of experts."""
        if self.experts == 1:
            return float(self.N_params)
        return moe_decode_params(N_params=self.N_params, L=self.L, d=self.d, d_ffn=self.d_ffn, experts=self.experts,
                                 active_experts=self.active_experts, B=B, ffn_matrices=self.ffn_matrices)

    @property
    def estimated_params(self) -> int:
        """All parameters from the shape: matrices, biases, norms, embeddings (for checking N_params)."""
        d, kv = self.d, self.H_kv * self.d_h
        biases = self.L * ((d + 2 * kv) + d + (self.ffn_matrices - 1) * self.d_ffn + d) if self.biases else 0
        norms = (2 * self.L + 1) * self.norm_params * d
        embeddings = self.V * d * (1 if self.tied else 2) + self.S_pos * d
        return self.matrix_params + biases + norms + embeddings


#: The precisions `HardwarePreset.peak` answers for: the preset's 16-bit peak, and its FP8 and FP4 peaks.
PRECISIONS = ("16-bit", "fp8", "fp4")


@dataclass(frozen=True)
class HardwarePreset:
    """An accelerator's memory (bytes, binary capacity), bandwidth (bytes/s) and dense peak (FLOP/s) in one dtype.

    ``peak_flops_fp8`` and ``peak_flops_fp4`` are the dense tensor-core peaks in those formats, 0 where the
    chip has no such units (or the book does not price them).
    """

    name: str
    memory_bytes: int
    bandwidth: float
    peak_flops: float
    peak_flops_dtype: str
    source: str
    peak_flops_fp8: float = 0.0
    peak_flops_fp4: float = 0.0

    def peak(self, precision: str) -> float:
        """The dense peak (FLOP/s) for ``precision``: "16-bit" (``peak_flops``), "fp8" or "fp4"."""
        if precision not in PRECISIONS:
            raise ValueError(f"precision={precision!r}: allowed are {', '.join(PRECISIONS)}")
        value = {"16-bit": self.peak_flops, "fp8": self.peak_flops_fp8, "fp4": self.peak_flops_fp4}[precision]
        if not value:
            raise ValueError(f"precision={precision!r}: the {self.name} preset has no {precision} peak")
        return value


@dataclass(frozen=True)
class LatentPreset:
    """A model with multi-head latent attention (MLA): per token and layer it caches one compressed latent
    of d_c values and one decoupled RoPE key of d_rope values, shared by its H heads of dimension d_h."""

    name: str
    L: int
    H: int
    d_h: int
    d_c: int
    d_rope: int
    N_params: int
    N_active: int
    S_max: int
    source: str

    def kv_bytes_per_token(self, s: int) -> int:
        """Bytes one token leaves in the cache, Eq. (2.5): L·(d_c + d_rope)·s."""
        return latent_kv_bytes_per_token(L=self.L, d_c=self.d_c, d_rope=self.d_rope, s=s)

    def mha_kv_bytes_per_token(self, s: int) -> int:
        """What its H heads would cache per token as multi-head attention, Eq. (2.1) with H_kv = H."""
        return kv_bytes_per_token(L=self.L, H_kv=self.H, d_h=self.d_h, s=s)


@dataclass(frozen=True)
class LinkPreset:
    """An interconnect (GPU to GPU, or GPU to host): bytes/s each end can send (and, at the same time, receive)."""

    name: str
    bandwidth_per_direction: float
    source: str


P = TypeVar("P", ModelPreset, HardwarePreset, LatentPreset, LinkPreset)


def by_name(*presets: P) -> dict[str, P]:
    """A table of presets keyed by their `name`, in the order given (how `presets` builds every table)."""
    return {preset.name: preset for preset in presets}
