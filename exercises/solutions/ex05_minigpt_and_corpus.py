"""Reference solutions for exercises/ex05_minigpt_and_corpus.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""


import torch
import torch.nn.functional as F


# %% solution:q1
def param_count(L, d, V, S_max, d_ffn):
    """Parameters of the GPT-2-style MiniGPT (biases, tied LM head)."""
    embeddings = V * d + S_max * d
    attention = (3 * d * d + 3 * d) + (d * d + d)
    mlp = (d * d_ffn + d_ffn) + (d_ffn * d + d)
    norms = 2 * 2 * d
    return embeddings + L * (attention + mlp + norms) + 2 * d


# %% solution:q2
@torch.no_grad()
def next_token(model, tokens):
    """Greedy next token after `tokens`."""
    logits = model(torch.tensor([tokens]))  # [1, T, V]
    return int(logits[0, -1].argmax())


# %% solution:q3
@torch.no_grad()
def sequence_loss(model, tokens):
    """Mean next-token cross-entropy in nats."""
    x = torch.tensor([tokens])
    logits = model(x[:, :-1])[0]  # [T-1, V]
    return float(F.cross_entropy(logits, x[0, 1:]))


# %% solution:q4
def top_k_probs(logits, k, temperature):
    """The distribution sampled from: temperature, then top-k, then softmax."""
    scaled = logits / temperature
    kth = torch.topk(scaled, k).values[-1]
    return torch.softmax(scaled.masked_fill(scaled < kth, float("-inf")), dim=-1)
