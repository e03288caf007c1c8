"""Per-request meters, like the log line a real engine prints after each request."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestMeters:
    """The two rates of Chapter 4: prefill (time to first token) and decode (the stream).

    `prefill_s` runs from the request's start to its first sampled token (TTFT, Eq. 4.1);
    `decode_s` covers the `decode_steps` forward passes that produced the other tokens.
    """

    prompt_tokens: int
    prefill_s: float
    generated_tokens: int
    decode_steps: int
    decode_s: float
    B: int = 1

    @property
    def ttft_s(self) -> float:
        """Time to first token."""
        return self.prefill_s

    @property
    def total_s(self) -> float:
        return self.prefill_s + self.decode_s

    @property
    def prefill_tok_s(self) -> float:
        """Prompt tokens processed per second (all B sequences)."""
        return self.B * self.prompt_tokens / self.prefill_s if self.prefill_s > 0 else float("nan")

    @property
    def decode_tok_s(self) -> float:
        """Tokens produced per second by the decode steps (all B sequences)."""
        return self.B * self.decode_steps / self.decode_s if self.decode_s > 0 else float("nan")

    def __str__(self) -> str:
        batch = f" x B={self.B}" if self.B > 1 else ""
        return (
            f"prompt: {self.prompt_tokens} tokens{batch} in {self.prefill_s * 1e3:.2f} ms "
            f"({self.prefill_tok_s:,.0f} tok/s) = TTFT | generated: {self.generated_tokens} tokens, "
            f"{self.decode_steps} decode steps in {self.decode_s * 1e3:.2f} ms ({self.decode_tok_s:,.0f} tok/s)"
        )
