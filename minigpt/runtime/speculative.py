"""Speculative decoding (Leviathan et al. 2023; Chen et al. 2023): a small draft model proposes γ tokens one
by one, the target checks all of them in one forward over γ + 1 tokens with its KV cache, the accepted
prefix is kept and both caches are rewound (`KVCache.truncate`) past the first rejected token.

Greedy (`temperature=0`): a draft token is accepted when it is the target's argmax, so the output is the
target's own greedy output. Sampling: token x drafted with probability q(x) is accepted with probability
min(1, p(x)/q(x)); on the first rejection the token is drawn from norm(max(0, p − q)); after γ acceptances
a bonus token is drawn from p. Each emitted token is then distributed as the target's p.

With B > 1 one cache length serves the batch, so a round keeps n = min over sequences of the accepted
prefixes and each sequence's token n+1 (its accepted draft token where it accepted more, else its
correction): every sequence still gets exactly its own target-distributed tokens, only fewer per round.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from minigpt.runtime.model import MiniGPT


@dataclass
class SpeculativeResult:
    """Tokens `[B, D]` and what the rounds cost: target passes, draft steps, accepted drafts per round."""

    tokens: torch.Tensor
    target_passes: int = 0
    draft_steps: int = 0
    accepted: list[int] = field(default_factory=list)  # per round: draft tokens kept (n)
    proposed: list[int] = field(default_factory=list)  # per round: draft tokens proposed (γ, less at the end)
    beta: list[float] = field(default_factory=list)  # per verified position: Σ_x min(p, q), Leviathan's β
    drafted: list[torch.Tensor] = field(default_factory=list)  # per round: the draft tokens `[B, g]`, kept or not

    @property
    def tokens_per_pass(self) -> float:
        """Tokens emitted per target forward: (1 − α^(γ+1))/(1 − α) in expectation (Leviathan et al. Eq. 1)."""
        return self.tokens.shape[1] / self.target_passes

    @property
    def alpha_counted(self) -> float:
        """Acceptance rate from the counts: accepted / (accepted + rejections), the per-token α of Eq. (1)."""
        rejected = sum(1 for n, g in zip(self.accepted, self.proposed, strict=True) if n < g)
        kept = sum(self.accepted)
        return kept / (kept + rejected) if kept + rejected else float("nan")

    @property
    def alpha_expected(self) -> float:
        """α as Leviathan et al. define it: the mean of β = Σ_x min(p(x), q(x)) over the verified positions."""
        return sum(self.beta) / len(self.beta) if self.beta else float("nan")


def _check(target: MiniGPT, draft: MiniGPT, prompt: torch.Tensor, D: int, gamma: int, temperature: float) -> None:
    if target.config.V != draft.config.V:
        raise ValueError(f"draft and target must share the vocabulary, got V={draft.config.V} and {target.config.V}")
    if not isinstance(prompt, torch.Tensor) or prompt.dim() != 2 or prompt.dtype != torch.long or prompt.shape[1] < 1:
        raise ValueError("prompt must be a torch.long tensor of shape [B, P] with P >= 1")
    if isinstance(D, bool) or not isinstance(D, int) or D < 1:
        raise ValueError(f"D must be an integer >= 1 (new tokens), got {D!r}")
    if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1:
        raise ValueError(f"gamma must be an integer >= 1 (draft tokens per round), got {gamma!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature < 1e30:
        raise ValueError(f"temperature must be a finite number >= 0 (0 is greedy), got {temperature!r}")
    S_max = min(target.config.S_max, draft.config.S_max)
    if prompt.shape[1] + D - 1 > S_max:
        raise ValueError(f"P + D - 1 = {prompt.shape[1] + D - 1} tokens exceed S_max={S_max}")


def _probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T) in fp32, or the one-hot argmax at T = 0 (greedy as a distribution)."""
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    return torch.softmax(logits.float() / temperature, dim=-1)


def _draw(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row of `probs` `[B, V]` (the argmax when a row is one-hot, without using the generator)."""
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).view(probs.shape[:-1])


def _coin(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """True with probability `probs`, element by element: u < probs for u uniform on [0, 1)."""
    return torch.rand(probs.shape, generator=generator, device=probs.device) < probs


def acceptance_probability(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """min(1, p(x)/q(x)): the chance that a token x drafted with probability q(x) is kept (Leviathan et al. 2023)."""
    return (p_x / q_x).clamp(max=1.0)


def residual_distribution(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p − q)) over the last axis, where the token comes from at the first rejection (p where p = q:
    a draft that matches the target is never rejected)."""
    residual = (p - q).clamp_min(0)
    total = residual.sum(-1, keepdim=True)
    return torch.where(total > 0, residual / total.clamp_min(torch.finfo(residual.dtype).tiny), p)


def speculative_generate(
    target: MiniGPT, draft: MiniGPT, prompt: torch.Tensor, D: int, *, gamma: int = 4, temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> SpeculativeResult:
    """D new tokens per sequence of `prompt` `[B, P]`, drafted γ at a time; `costs.speculative_tokens_per_pass`."""
    with torch.no_grad():
        _check(target, draft, prompt, D, gamma, temperature)
        B, P = prompt.shape
        S_max = min(target.config.S_max, draft.config.S_max, P + D - 1 + gamma)  # room to draft γ past the end
        t_cache, d_cache = target.new_cache(B, S_max=S_max), draft.new_cache(B, S_max=S_max)
        if P > 1:  # both caches hold the sequence but its last token, which the next round feeds
            target(prompt[:, :-1], t_cache)
            draft(prompt[:, :-1], d_cache)
        result = SpeculativeResult(tokens=prompt.new_empty(B, 0))
        seq = prompt  # every committed token; the target's cache holds all but the last, the draft's a prefix
        greedy = temperature == 0
        while result.tokens.shape[1] < D:
            g = min(gamma, S_max - seq.shape[1])  # the verify pass writes g + 1 rows after the seq_len − 1 cached
            drafts, q = [], []
            feed = seq[:, d_cache.S :]  # what the draft has not seen: the last token, or the last two
            for _ in range(g):  # the draft proposes g tokens, one decode step each
                q_j = _probs(draft(feed, d_cache, last_only=True)[:, -1], temperature)
                feed = q_j.argmax(-1, keepdim=True) if greedy else _draw(q_j, generator)[:, None]
                drafts.append(feed)
                q.append(q_j)
                result.draft_steps += 1
            proposal = torch.cat([seq[:, -1:], *drafts], dim=1)  # [B, g+1]
            p = _probs(target(proposal, t_cache), temperature)  # [B, g+1, V]: one pass verifies every draft
            result.target_passes += 1
            n, nxt = accept_drafts(p, q, drafts, greedy, generator, result)
            result.drafted.append(torch.cat(drafts, dim=1) if drafts else seq.new_empty(B, 0))  # g = 0 at S_max
            new = torch.cat([*drafts[:n], nxt], dim=1)  # [B, n+1]
            result.tokens = torch.cat([result.tokens, new], dim=1)
            result.accepted.append(n)
            result.proposed.append(g)
            seq = torch.cat([seq, new], dim=1)
            t_cache.truncate(seq.shape[1] - 1)  # rewind past the rejected drafts: all but `nxt` stays
            d_cache.truncate(min(d_cache.S, seq.shape[1] - 1))
        result.tokens = result.tokens[:, :D]
        return result


def accept_drafts(
    p: torch.Tensor, q: list[torch.Tensor], drafts: list[torch.Tensor], greedy: bool,
    generator: torch.Generator | None = None, result: SpeculativeResult | None = None,
) -> tuple[int, torch.Tensor]:
    """The rejection rule on the target's `p` `[B, g+1, V]`, the draft's `q` (g × `[B, V]`) and the drafts (g ×
    `[B, 1]`): n (accepted drafts, the batch's minimum) and each sequence's token n+1 `[B, 1]`; Σ min(p, q) of each
    verified position is appended to `result.beta` when a result is given."""
    B, g = p.shape[0], len(drafts)
    if g == 0:
        return 0, (p[:, 0].argmax(-1) if greedy else _draw(p[:, 0], generator)).view(B, 1)
    x = torch.cat(drafts, dim=1)  # [B, g]
    q_all = torch.stack(q, dim=1)  # [B, g, V]
    p_x = p[:, :g].gather(-1, x[..., None])[..., 0]  # p(x_j) at each drafted position
    q_x = q_all.gather(-1, x[..., None])[..., 0]
    if result is not None:
        result.beta += torch.minimum(p[:, :g], q_all).sum(-1).flatten().tolist()
    if greedy:
        ok = p_x > 0.5  # one-hot p: the draft token is the target's argmax
    else:
        ok = _coin(acceptance_probability(p_x, q_x), generator)  # u < min(1, p(x)/q(x))
    n_b = torch.cumprod(ok.int(), dim=1).sum(1)  # [B]: accepted prefix per sequence
    n = int(n_b.min())
    if n == g:  # every draft accepted by every sequence: the bonus token from p after the last draft
        bonus = p[:, g].argmax(-1) if greedy else _draw(p[:, g], generator)
        return n, bonus.view(B, 1)
    residual = residual_distribution(p[:, n], q_all[:, n])  # at the first rejection
    corrected = residual.argmax(-1) if greedy else _draw(residual, generator)
    keep = n_b > n  # these sequences accepted draft n+1 as well: it is their token
    return n, torch.where(keep, x[:, n], corrected).view(B, 1)
