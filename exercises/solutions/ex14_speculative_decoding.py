"""Reference solutions for exercises/ex14_speculative_decoding.ipynb (instructors only; not in the package or the
book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""


import torch


# %% solution:q1
def greedy_round(drafts, target_argmax, lengths):
    """Each sequence alone: its leading matches n_b, then the target's argmax at n_b (the correction, or the bonus
    after γ kept drafts); its cache held lengths[b] − 1 rows, the verify pass wrote γ + 1 more, and the rewind
    keeps the last committed token and the n_b accepted drafts: lengths[b] + n_b."""
    out = []
    for row, best, length in zip(drafts, target_argmax, lengths, strict=True):
        n = 0
        while n < len(row) and row[n] == best[n]:
            n += 1
        out.append([list(row[:n]) + [best[n]], length + n])
    return out


# %% solution:q2
def replacement_distribution(p, q, accept):
    """y comes out kept, q(y)·accept(y), or as the replacement after a rejection, R·r(y) with R = 1 − Σ q·accept;
    p(y) = q(y)·accept(y) + R·r(y) gives r = (p − q·accept) / R, a distribution only where p ≥ q·accept."""
    kept = q * accept
    if bool((kept - p > 1e-9).any()):
        return None
    return (p - kept) / (1 - kept.sum())


# %% solution:q3
def speculative_round(target_logits, draft_logits, drafts, u, lam):
    """Keep draft j while u[j] < λ·min(1, p(x)/q(x)); at the first rejection draw from Question 2's replacement
    for this rule, (p − λ·min(p, q)) / (1 − λ·Σ min(p, q)) at that position, after γ acceptances the bonus from
    the target's last row; both with u[γ] by the inverse CDF."""
    p = torch.softmax(target_logits, dim=-1)
    q = torch.softmax(draft_logits, dim=-1)
    gamma = len(drafts)

    def inverse_cdf(dist, v):
        cdf = torch.cumsum(dist / dist.sum(), dim=-1)
        return min(int((cdf <= v).sum()), len(dist) - 1)

    kept = []
    for j in range(gamma):
        x = int(drafts[j])
        if u[j] < lam * min(1.0, (p[j, x] / q[j, x]).item()):
            kept.append(x)
            continue
        kept_mass = lam * torch.minimum(p[j], q[j])  # q·accept, token by token
        replacement = (p[j] - kept_mass) / (1 - kept_mass.sum())
        return kept + [inverse_cdf(replacement, u[gamma])]
    return kept + [inverse_cdf(p[gamma], u[gamma])]


# %% solution:q4
def best_gamma_from_rounds(accepted, gamma_max, cost_ratio, verify_ratio):
    """Replay the logged rounds at every γ (min(n, γ) kept drafts + the target's token, γ·c + v steps a round);
    the first γ that reaches the most tokens per step."""
    rates = []
    for gamma in range(1, gamma_max + 1):
        tokens = sum(min(n, gamma) + 1 for n in accepted)
        rates.append(tokens / (len(accepted) * (gamma * cost_ratio + verify_ratio)))
    return 1 + rates.index(max(rates))
