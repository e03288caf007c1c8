"""Model configuration: the notation table of the book as a frozen dataclass."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ModelConfig:
    """Shape of a MiniGPT-family decoder, named by the book's notation (Appendix: Notation).

    Defaults are the seed's MiniGPT: L=4, H=4, H_kv=4, d_h=16 (so d=64), d_ffn=256, V=600.
    """

    L: int = 4
    H: int = 4
    H_kv: int = 4
    d_h: int = 16
    d_ffn: int = 256
    V: int = 600
    S_max: int = 128

    def __post_init__(self) -> None:
        for name in ("L", "H", "H_kv", "d_h", "d_ffn", "V", "S_max"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.H_kv > self.H or self.H % self.H_kv != 0:
            raise ValueError(
                f"H_kv must divide H (H_kv=H is MHA, H_kv=1 is MQA); got H={self.H}, H_kv={self.H_kv}"
            )

    @property
    def d(self) -> int:
        """Model width d = H·d_h."""
        return self.H * self.d_h

    @property
    def ffn_matrices(self) -> int:
        """Weight matrices in the feed-forward block: 2, MiniGPT's GELU MLP (SwiGLU models have 3)."""
        return 2

    @property
    def group_size(self) -> int:
        """Query heads that share one key/value head, H / H_kv."""
        return self.H // self.H_kv

    def symbols(self) -> dict[str, int]:
        """The symbols `minigpt.costs` formulas take (`costs.MODEL_SYMBOLS`): L, H_kv, d_h, d, d_ffn, V, ffn_matrices.

        H and S_max are not among them (no formula takes H; S_max is a capacity, not a workload):
        ``costs.of(config).prefill_flops(P=16)`` or ``costs.evaluate(costs.prefill_flops, config, P=16)``.
        """
        return dict(L=self.L, H_kv=self.H_kv, d_h=self.d_h, d=self.d, d_ffn=self.d_ffn, V=self.V,
                    ffn_matrices=self.ffn_matrices)

    def to_dict(self) -> dict[str, int]:
        """The stored fields (no derived ones), for checkpoints."""
        return asdict(self)

    @classmethod
    def from_dict(cls, fields: dict[str, int]) -> ModelConfig:
        """Inverse of `to_dict`; unknown keys raise a clear error."""
        allowed = set(cls.__dataclass_fields__)
        fields = dict(fields)
        if "d" in fields:
            d = fields.pop("d")
            H, d_h = fields.get("H", cls.H), fields.get("d_h", cls.d_h)
            if d != H * d_h:
                raise ValueError(f"d must equal H·d_h = {H}·{d_h} = {H * d_h}, got d={d}")
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"unknown ModelConfig fields {sorted(unknown)}; allowed: {sorted(allowed)}")
        return cls(**fields)
