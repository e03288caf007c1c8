"""One-off: append Chapter 22's cells after the skeleton's three (not part of the book; deleted after use)."""

import json
import sys

path = sys.argv[1]
nb = json.load(open(path))
cells = nb["cells"][:3]


def md(text):
    cells.append({"cell_type": "markdown", "metadata": {}, "source": text.strip("\n")})


def code(text):
    cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                  "source": text.strip("\n")})


md(r"""
GQA, quantization and latent attention ([Chapters 9](09_gqa_mqa.ipynb), [10](10_quantized_kv_cache.ipynb),
[21](21_latent_attention.ipynb)) shrink each token's entry; the cache still grows by one entry per token.
This chapter stops the growth. Three policies keep a bounded set of tokens: a **sliding window** of the
last $W$ tokens in a ring buffer (Mistral 7B {cite}`jiang2023mistral`), the window plus the first $k$
tokens kept forever as **attention sinks** (StreamingLLM {cite}`xiao2024streamingllm`), and **eviction by
score**, which keeps the tokens attention has used most (H2O {cite}`zhang2023h2o`) or that the end of the
prompt looks at (SnapKV {cite}`li2024snapkv`). Each is built into MiniGPT behind the book's cache
interface, checked against a reference where it is exact, and measured where it loses.

**Symptom (Chapter 1's traffic table, row "KV-cache bytes").** A decode step reads
$B \cdot S \cdot b_\text{token}$ bytes of cache ([Eq. (3.5)](#eq-3-5)), growing with every token. A cache
that keeps at most `budget` tokens turns $S$ into $\min(S, \text{budget})$:

(eq-22-1)=
$$
M_\text{KV} = B \cdot \min(S, k + W) \cdot b_\text{token}, \qquad
\text{bytes}_\text{step} = N s + B \cdot \min(S, \text{budget}) \cdot b_\text{token} \tag{22.1}
$$

(budget $= k + W$ for a window with sinks, $b + 1$ for an eviction cache holding $b$ tokens that evicts after
the step; `costs.streaming_kv_cache_bytes`, `costs.bounded_decode_step_bytes`).
""")

code(r"""
import copy

import matplotlib.pyplot as plt
import torch

from minigpt import costs, load_pretrained
from minigpt.book import glue
from minigpt.corpus import fidelity
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.measure import sweeps
from minigpt.runtime.eviction import H2OCache, SnapKVCache
from minigpt.runtime.model import attention
from minigpt.runtime.window_cache import WindowKVCache

torch.set_num_threads(1)  # tiny matmuls: one thread is faster, and steadier
fmt = costs.fmt_bytes
base = load_pretrained()
tok, model = base.tokenizer, base.model
cfg = model.config
per_token = costs.kv_bytes_per_token(L=cfg.L, H_kv=cfg.H_kv, d_h=cfg.d_h, s=4)
mistral = MODELS["Mistral-7B"]
m_token = costs.kv_bytes_per_token(L=mistral.L, H_kv=mistral.H_kv,
                                   d_h=mistral.d_h, s=2)
m_full = costs.kv_cache_bytes(L=mistral.L, H_kv=mistral.H_kv,
                              d_h=mistral.d_h, s=2, S=mistral.S_max)
m_win = costs.streaming_kv_cache_bytes(
    L=mistral.L, H_kv=mistral.H_kv, d_h=mistral.d_h, s=2, S=mistral.S_max,
    window=mistral.window, sinks=4)
print(f"Mistral-7B, one sequence of {mistral.S_max:,} tokens, bf16:")
print(f"  {fmt(m_full)} full, {fmt(m_win)} with W = {mistral.window:,} + 4")
glue("ch22_mistral_S", f"{mistral.S_max:,}")
glue("ch22_mistral_full", fmt(m_full))
glue("ch22_mistral_win", fmt(m_win))
""")

md(r"""
## The mechanisms

**A ring with sinks.** `WindowKVCache` stores `[L, B, H_kv, k + W, d_h]`: slots $0..k-1$ hold the first $k$
tokens, slots $k..k+W-1$ a ring where token $t \ge k$ lives in slot $k + (t - k) \bmod W$, overwriting the
token at $t - W$, which has just left the window. A decode step writes its key and value into its slot
*first* and attends over the filled slots; attention does not care about their order, which is Mistral's
rolling buffer. A chunk ($T > 1$) attends over the held slots and its own tokens with a mask built from
each slot's position, then stores the tokens that stay:

```{literalinclude} ../minigpt/runtime/window_cache.py
:language: python
:pyobject: WindowKVCache.update
```

**Positions: where MiniGPT differs.** StreamingLLM re-indexes positions *within the cache*: a key's rotary
position is its slot's rank, applied when attention reads it, so the relative distances stay those of a
short sequence however long the stream. MiniGPT's positions are learned and added to the input; a token's
position is baked into its cached key and value in every layer and cannot be changed afterwards. The
cache offers two policies. `positions="absolute"` gives token $t$ position $t$, as the full model does:
exact, within $S_\text{max}$. `positions="cache"` gives a *new* token the position of its place in the
cache, $\min(t, k + W - 1)$, so positions never pass $k + W - 1$ and the stream can run past $S_\text{max}$;
the keys already cached keep the positions they were written with. That is as close as learned absolute
positions allow, and the measurement below shows what it costs.

**Eviction by score.** `H2OCache` accumulates, for each cached key, the attention weight it received
(summed over the queries and over the query heads of its group); past $b$ tokens it keeps the `recent`
newest and the highest-scoring rest, per layer and key/value head. `SnapKVCache` scores the prompt's keys
once, by the attention of the prompt's last `window` queries (smoothed by a max-pool over neighbouring
positions), keeps the best $b - \text{window}$ plus the window, and then lets the cache grow during decode.
Both need the attention weights, which fused kernels never write out: the cache's `observe` recomputes them
from $q$ and $K$ (`MiniGPT` calls it when a cache has one), as the papers' eager-attention code does.

```{literalinclude} ../minigpt/runtime/eviction.py
:language: python
:pyobject: H2OCache._evict
```

```{literalinclude} ../minigpt/runtime/eviction.py
:language: python
:pyobject: ScoredKVCache._keep
```

The ring's slots after 23 tokens of a stream ($k$ = 2 sinks, $W$ = 8), drawn from a real cache:
""")

code(r"""
ring = WindowKVCache(cfg, 1, window=8, sinks=2, positions="cache")
with torch.no_grad():
    for t in range(23):
        model(torch.tensor([[tok.id_of(".") if t % 6 == 5 else 20]]), ring)
slots = ring.slot_pos.tolist()
fig, ax = plt.subplots(figsize=(8, 1.9))
for j, p in enumerate(slots):
    sink = j < ring.sinks
    newest = p == ring.t - 1
    color = "tab:purple" if sink else ("tab:red" if newest else "tab:blue")
    ax.add_patch(plt.Rectangle((j, 0), 0.92, 1, color=color, alpha=0.8))
    ax.text(j + 0.46, 0.5, f"t={p}", ha="center", va="center", fontsize=8,
            color="white")
ax.set(xlim=(0, len(slots)), ylim=(0, 1.05), yticks=[],
       xticks=[j + 0.46 for j in range(len(slots))],
       xticklabels=[f"slot {j}" for j in range(len(slots))])
ax.tick_params(labelsize=7)
ax.set_title(f"After {ring.t} tokens the cache holds {ring.held}: sinks "
             f"(purple) and a ring of the last {ring.window}; the newest "
             "(red) overwrote t - W", fontsize=9)
glue("ch22_fig_ring", fig)
plt.close(fig)
newest_slot = ring.slot_of(ring.t - 1)
assert slots[:2] == [0, 1] and slots[newest_slot] == ring.t - 1
assert sorted(slots[2:]) == list(range(ring.t - 8, ring.t))
""")

md(r"""
```{glue:figure} ch22_fig_ring
:name: fig-ch22-ring

The slots of a `WindowKVCache` with two sinks and a window of eight after a stream of 23 tokens: each slot
labelled with the position of the token it holds, read from the cache. The newest token went to slot
$k + (t - k) \bmod W$.
```

## Equivalence where it is exact

A window cache with absolute positions must give the logits of the full model whose attention mask is
causal and windowed (and open on the sinks). `tests/test_window_cache.py` checks it over random windows,
sinks, prompt lengths and batches (hypothesis, $B > 1$); its mutant check compares against a window one
token wider and must fail. `tests/test_eviction.py` checks that H2O and SnapKV with a budget that holds
everything change nothing, and that H2O keeping only its recent tokens *is* a sliding window of $b + 1$.
On the shipped model:
""")

code(r"""
windows = fidelity.held_out_windows(tok, n=4, T=cfg.S_max)


def windowed(W: int, k: int):
    # the reference: the full model with a sliding-window mask and k sinks
    ref = copy.deepcopy(model)

    def kernel(q, kk, v, visible):
        K = kk.shape[2]
        i, j = torch.arange(K).view(K, 1), torch.arange(K).view(1, K)
        mask = (j <= i) & ((j > i - W) | (j < k))
        return attention(q, kk, v, mask.unsqueeze(0))
    for block in ref.blocks:
        block.attn.kernel = kernel
    return ref


def stream(cache, P: int = 16) -> torch.Tensor:
    with torch.no_grad():
        out = [model(windows[:, :P], cache)]
        out += [model(windows[:, t : t + 1], cache)
                for t in range(P, cfg.S_max)]
    return torch.cat(out, dim=1)


with torch.no_grad():
    want = windowed(24, 4)(windows)
got = stream(WindowKVCache(cfg, 4, window=24, sinks=4))
d_window = (got - want).abs().max().item()
h2o = stream(H2OCache(cfg, 4, budget=23, recent=23), P=1)
win = stream(WindowKVCache(cfg, 4, window=24), P=1)
d_h2o = (h2o - win).abs().max().item()
assert d_window < 1e-4 and d_h2o < 1e-4
print(f"window cache (W = 24, k = 4) vs windowed full model: max |Δ logit| "
      f"< 1e-4")
print(f"H2O with b = recent = 23 vs a window of 24: max |Δ logit| < 1e-4")
""")

md(r"""
## Prediction, then measurement: the bytes stop growing

Every cache counts the bytes of the keys and values its `update` hands to attention (`bytes_read`). A
stream of 200 tokens, past $S_\text{max} = 128$ for the re-indexed window, against
[Eq. (22.1)](#eq-22-1):
""")

code(r"""
B = 4
caches = {
    "window 28 + 4 sinks": WindowKVCache(cfg, B, window=28, sinks=4,
                                         positions="cache"),
    "H2O, b = 32": H2OCache(cfg, B, budget=32),
    "full cache": model.new_cache(B),
}
budgets = {"window 28 + 4 sinks": 32, "H2O, b = 32": 33}
reads = {name: [] for name in caches}
steps = {"window 28 + 4 sinks": 200, "H2O, b = 32": cfg.S_max,
         "full cache": cfg.S_max}
for name, cache in caches.items():
    x = windows[:B, :1]
    with torch.no_grad():
        for t in range(steps[name]):
            before = getattr(cache, "bytes_read", 0)
            logits = model(x, cache)
            if name in budgets:
                read = cache.bytes_read - before
                assert read == costs.bounded_decode_step_bytes(
                    weight_bytes=0, kv_bytes_per_token=per_token, S=t + 1,
                    budget=budgets[name], B=B)
            else:
                read = B * (t + 1) * per_token  # Eq. (3.5): S = t + 1
            reads[name].append(read)
            x = logits[:, -1:].argmax(-1)
fig, ax = plt.subplots(figsize=(7, 3.4))
for name, r in reads.items():
    ax.plot(range(1, len(r) + 1), [x / 1024 for x in r], label=name)
ax.axvline(cfg.S_max, color="k", ls=":", lw=1)
ax.text(cfg.S_max + 3, 5, "S_max", fontsize=8)
ax.set(xlabel="tokens in the stream", ylabel="KV bytes read per step (KiB)")
ax.set_title("Each step's cache read stops growing at the budget; the "
             "re-indexed window streams past S_max", fontsize=9)
ax.legend(fontsize=8)
glue("ch22_fig_bytes", fig)
plt.close(fig)
print(f"window + sinks, step 200: {fmt(reads['window 28 + 4 sinks'][-1])} "
      f"read; the full cache at S = 128: {fmt(reads['full cache'][-1])}")
""")

md(r"""
```{glue:figure} ch22_fig_bytes
:name: fig-ch22-bytes

KV bytes each decode step read, counted on the tensors attention received, for $B$ = 4 streams (every
point also asserted equal to [Eq. (22.1)](#eq-22-1)). The full cache grows until $S_\text{max}$ and stops
there because the model cannot go further; the window with sinks (positions re-indexed) keeps going.
```

## Quality: does MiniGPT need attention sinks?

StreamingLLM's finding {cite}`xiao2024streamingllm`: with a plain window, perplexity explodes as soon as the
first tokens leave the cache, because trained models dump a large share of attention on them (they are
visible to every query, so softmax learns to park unused probability there); keeping four of them as
"sinks" restores the full model's perplexity. `scripts/measure_cache_memory.py streaming` measures it on
MiniGPT in two settings: within $S_\text{max}$ with absolute positions ($128$ held-out windows, the loss at
every position, pairs of configurations with equal budgets), and past $S_\text{max}$ with positions
re-indexed (64 streams of 512 tokens decoded one at a time, and 64 sampled streams of 512 tokens judged
by the grammar checker).
""")

code(r"""
st = sweeps.read_json("data/streaming_quality.json")
inside, past = st["inside"], st["past"]


def order(kv):
    r = kv[1]
    return (r.get("window", 999) + r.get("sinks", 0), r.get("sinks", 0))



inside = dict(sorted(inside.items(), key=order))
past = dict(sorted(past.items(), key=order))
print("within S_max (absolute positions): perplexity, Δ log ppl vs full")
print(f"{'':<11} {'perplexity':>10} {'Δ log ppl (95 %)':>18}")
for name, r in inside.items():
    delta = (f"{round(r['delta_log_ppl'], 3) + 0.0:+.3f}"
             f"±{r['delta_log_ppl_ci']:.3f}"
             if "delta_log_ppl" in r else "")
    print(f"{name:<11} {r['perplexity']:>10.3f} {delta:>18}")
    glue(f"ch22_in_{name.replace('=', '').replace(',', '_')}",
         f"{r['perplexity']:.2f}")
print("\npast S_max (positions re-indexed in the cache), 512-token streams")
print(f"{'':<11} {'ppl < 128':>9} {'ppl >= 128':>10} {'gramm. < 128':>12} "
      f"{'gramm. >= 128':>13}")
for name, r in past.items():
    g = r["grammatical_by_start"]
    early, late = g[0], g[1:]
    late_ok = sum(b["grammatical"] for b in late)
    late_n = sum(b["sentences"] for b in late)
    print(f"{name:<11} {r['inside_S_max']['perplexity']:>9.2f} "
          f"{r['past_S_max']['perplexity']:>10.2f} "
          f"{early['grammatical'] / early['sentences']:>12.1%} "
          f"{late_ok / late_n:>13.1%}")
    key = name.replace("=", "").replace(",", "_")
    glue(f"ch22_past_{key}", f"{r['past_S_max']['perplexity']:.1f}")
    glue(f"ch22_past_in_{key}", f"{r['inside_S_max']['perplexity']:.1f}")
    glue(f"ch22_gram_late_{key}", f"{late_ok / late_n:.0%}")
glue("ch22_full_ppl", f"{inside['full']['perplexity']:.2f}")
""")

code(r"""
# Where does MiniGPT's attention go? The mean weight that queries at
# positions >= 64 give to position 0, per layer, over 32 held-out windows.
sink_weight = []


def recording(q, k, v, visible):
    w = torch.softmax((q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5
                      + (~visible[:, None]) * -1e9, dim=-1)
    sink_weight.append(w[:, :, 64:, 0].mean().item())
    return attention(q, k, v, visible)


probe = copy.deepcopy(model)
for block in probe.blocks:
    block.attn.kernel = recording
with torch.no_grad():
    probe(fidelity.held_out_windows(tok, n=32, T=cfg.S_max))
uniform = sum(1 / (t + 1) for t in range(64, cfg.S_max)) / (cfg.S_max - 64)
print("attention on position 0 from queries at t >= 64, per layer:")
print("  " + ", ".join(f"{w:.3f}" for w in sink_weight)
      + f" (uniform: {uniform:.3f})")
glue("ch22_sink_max", f"{max(sink_weight):.1%}")
glue("ch22_sink_uniform", f"{uniform:.1%}")
""")

code(r"""
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
pos = range(1, cfg.S_max)
smooth = 8
for name, r in inside.items():
    y = torch.tensor(r["per_position"])
    y = y.unfold(0, smooth, smooth).mean(1).exp()
    style = "k-" if name == "full" else ("--" if "k=0" in name else "-")
    ax1.plot([smooth * (i + 0.5) for i in range(len(y))], y, style, lw=1.2,
             label=name)
ax1.set(xlabel="position", ylabel=f"perplexity (bins of {smooth})",
        title="within S_max: no collapse when token 0 leaves the window")
ax1.legend(fontsize=7)
for name, r in past.items():
    y = r["perplexity_by_bin"]
    ax2.plot([r["bin"] * (i + 0.5) for i in range(len(y))], y,
             "--" if "k=0" in name else "-", label=name)
ax2.axvline(cfg.S_max, color="k", ls=":", lw=1)
ax2.set(xlabel="position in the stream", ylabel="perplexity (bins of 32)",
        title="re-indexed positions: the loss rises once the window fills")
ax2.legend(fontsize=7)
for ax in (ax1, ax2):
    ax.title.set_fontsize(9)
glue("ch22_fig_sinks", fig)
plt.close(fig)
""")

md(r"""
```{glue:figure} ch22_fig_sinks
:name: fig-ch22-sinks

Left: held-out perplexity by position (bins of 8) with a window of $W$ tokens and $k$ sinks, absolute
positions, against the full cache. Right: perplexity by position (bins of 32) over 512-token streams with
positions re-indexed in the cache; the dotted line is $S_\text{max}$.
```

**MiniGPT shows a weak form of StreamingLLM's finding within $S_\text{max}$, and none past it.** A window
loses perplexity smoothly as it shrinks; there is no collapse when token 0 leaves it. Four sinks in place of
four window slots help at a budget of 32 tokens ({glue:text}`ch22_in_W28_k4` with sinks,
{glue:text}`ch22_in_W32_k0` without, against {glue:text}`ch22_full_ppl` for the full cache; the paired
intervals in the table do not overlap) and do not help at 16 or 8. MiniGPT parks little attention on its first
token: queries past position 64 give position 0 at most {glue:text}`ch22_sink_max` of their weight in any
layer, no more than a uniform spread would give ({glue:text}`ch22_sink_uniform`), where StreamingLLM's
models give it most of theirs. Those models learned sinks because every training sequence began with the same kind of token;
MiniGPT's training windows start at a random sentence's first word, and its sentences are short, so the
last sentence or two is most of the context the grammar needs. With positions re-indexed
the loss rises as soon as the window is full (at $t = k + W$, before $S_\text{max}$ for the small windows,
right panel) and stays high past $S_\text{max}$: {glue:text}`ch22_past_W28_k4` with sinks and
{glue:text}`ch22_past_W32_k0` without. The failure is the positions, not the sinks. Every token written after the window fills carries
the same learned position $k + W - 1$, and the model, trained on distinct positions, cannot tell their
order apart; a rotary model re-rotates its cached keys by their slots at each step and keeps the relative
distances right, which is what StreamingLLM relies on.

## Quality against the budget: H2O, SnapKV and windows

`scripts/measure_cache_memory.py eviction`: $128$ held-out windows, a prompt of 64 tokens, then 63 teacher-
forced decode steps; the loss on the continuation with every cache holding $b$ tokens (H2O: $b$ with half
recent; SnapKV: the prompt compressed to $b$, then growing; a window of $b + 1$ with or without 4 sinks),
paired against the full cache; and the grammar checker on 1,000 sentences sampled with the budget enforced
during decode (SnapKV, which only compresses prompts, is left out there). The last column is the measured
KV bytes of the last decode step for 4 sequences.
""")

code(r"""
ev = sweeps.read_json("data/eviction_quality.json")["results"]
ev = dict(sorted(ev.items(), key=lambda kv: (kv[1].get("budget", 0), kv[0])))
print(f"{'cache':<20} {'perplexity':>10} {'Δ log ppl (95 %)':>17} "
      f"{'gramm.':>7} {'KV read':>8}")
for name, r in ev.items():
    delta = (f"{round(r['delta_log_ppl'], 3) + 0.0:+.3f}"
             f"±{r['delta_log_ppl_ci']:.3f}"
             if "delta_log_ppl" in r else "")
    gram = (f"{r['grammatical'] / r['sentences']:.1%}"
            if "grammatical" in r else "")
    read = fmt(r["kv_bytes_last_step_measured"]) if "budget" in r else ""
    print(f"{name:<20} {r['perplexity']:>10.3f} {delta:>17} {gram:>7} "
          f"{read:>8}")
    if "budget" in r:
        kind = "snap" if r is ev.get(f"SnapKV b={r['budget']}") else None
        step = costs.bounded_decode_step_bytes(
            weight_bytes=0, kv_bytes_per_token=per_token, S=cfg.S_max - 1,
            budget=(r["budget"] + 1 if kind is None else cfg.S_max), B=4)
        if kind is None:
            assert r["kv_bytes_last_step_measured"] == step
        if r["budget"] == 16:
            glue("ch22_snap_read_16" if kind else "ch22_win_read_16",
                 fmt(r["kv_bytes_last_step_measured"]))
    key = name.replace(" ", "_").replace("+", "").replace("=", "").lower()
    glue(f"ch22_ev_ppl_{key}", f"{r['perplexity']:.2f}")
    if "grammatical" in r:
        glue(f"ch22_ev_gram_{key}", f"{r['grammatical'] / r['sentences']:.1%}")
""")

code(r"""
fig, ax = plt.subplots(figsize=(7.5, 3.8))
kinds = {"H2O": "o-", "SnapKV": "s-", "window": "v--", "window+4 sinks": "^-"}
for kind, style in kinds.items():
    rows = [r for n, r in ev.items() if n.startswith(kind + " b=")]
    ax.errorbar([r["budget"] for r in rows],
                [r["delta_log_ppl"] for r in rows],
                yerr=[r["delta_log_ppl_ci"] for r in rows], fmt=style,
                capsize=2, label=kind)
ax.axhline(0, color="k", lw=1)
ax.set(xscale="log", xlabel="tokens kept b", ylabel="Δ log perplexity "
       "vs the full cache")
ax.set_xscale("log", base=2)
ax.set_title("SnapKV keeps the prompt best (its cache then grows); H2O "
             "trails a plain window below b = 48", fontsize=9)
ax.legend(fontsize=8)
glue("ch22_fig_budget", fig)
plt.close(fig)
""")

md(r"""
```{glue:figure} ch22_fig_budget
:name: fig-ch22-budget

The loss on the 63-token continuation of a 64-token prompt, paired against the full cache, with 95 %
intervals over $128$ windows, for each policy against the tokens it keeps.
```

Three findings, each against the paired intervals. **SnapKV** loses least at every budget (at $b$ = 16:
{glue:text}`ch22_ev_ppl_snapkv_b16` against {glue:text}`ch22_ev_ppl_full` for the full cache), but it
only compresses the prompt: its cache grows again during decode, and its last step read
{glue:text}`ch22_snap_read_16` where the bounded caches read {glue:text}`ch22_win_read_16`. **H2O** trails
a plain window of the same size below $b$ = 48 ({glue:text}`ch22_ev_ppl_h2o_b16` against
{glue:text}`ch22_ev_ppl_window_b16` at $b$ = 16): its accumulated scores favour tokens that many queries
have already seen, which on this grammar are the previous sentences, while the next word depends on the
current one; at $b$ = 48 it overtakes the window. **Sinks** help a window at $b$ = 32 (perplexity
{glue:text}`ch22_ev_ppl_window4_sinks_b32` against {glue:text}`ch22_ev_ppl_window_b32`, and
{glue:text}`ch22_ev_gram_window4_sinks_b32` of sampled sentences grammatical against
{glue:text}`ch22_ev_gram_window_b32`), the same budget where they helped above. Every bounded cache's last
step read exactly [Eq. (22.1)](#eq-22-1)'s bytes (the cell asserts it).

## What real systems do

* **Mistral 7B** {cite}`jiang2023mistral` used a 4,096-token window in every layer with the rolling
  buffer above; information still travels $L \cdot W$ tokens through the layers.
* **Gemma 2** {cite}`gemmateam2024gemma2` alternates local layers (a 4,096-token window) with global ones,
  so only half the layers' caches grow with $S$; later Gemma models use more local layers per global one.
  **Character.AI** {cite}`characterai2024inference` runs most layers local too and shares one cache across
  adjacent layers. Serving engines support such hybrids with a separate pool per kind of layer.
* **Eviction** (H2O, SnapKV and their successors) lives mostly in research code built on eager attention,
  because it needs the attention weights; production engines prefer the policies that need none (windows,
  sinks) or compress instead of dropping (quantization, [Chapter 10](10_quantized_kv_cache.ipynb); latents,
  [Chapter 21](21_latent_attention.ipynb)).

## Explore: a window with sinks on a real model

Pick a model, the context, the tokens the cache keeps ($k + W$), the batch and a chip; the outputs are the cache per batch
([Eq. (22.1)](#eq-22-1)), the step bytes with and without the window, and Chapter 3's one-chip ceiling for
each.
""")

code(r"""
from minigpt.book import Output, Slider, chip_value, explorer, preset_value

step = dict(weight_bytes="w", kv_bytes_per_token="kv", S="S", B="B")
explorer(
    "ch22-window",
    "A window with attention sinks: bytes and the decode ceiling",
    sliders=[
        Slider("m", "model",
               options=[(n, preset_value(p)) for n, p in MODELS.items()],
               value=preset_value(mistral)),
        Slider("S", "context <i>S</i> (tokens)", 1024, 1048576, value=131072,
               log=True),
        Slider("W", "tokens kept <i>k</i> + <i>W</i>", 256, 32768, value=4100,
               log=True),
        Slider("B", "batch <i>B</i>", 1, 256, value=8, log=True),
        Slider("hw", "chip",
               options=[(n, chip_value(h)) for n, h in HARDWARE.items()],
               value=chip_value(HARDWARE["H100 SXM"])),
    ],
    outputs=[
        Output("w", "weights (bf16)", fn="weight_bytes",
               args=dict(N_params="m.N_params", s=2), fmt="fmt_bytes"),
        Output("kv", "KV per token, Eq. (2.1)", fn="kv_bytes_per_token",
               model="m", args=dict(s=2), fmt="fmt_bytes"),
        Output("full", "full cache, B·S tokens", fn="kv_cache_bytes",
               model="m", args=dict(s=2, S="S", B="B"), fmt="fmt_bytes"),
        Output("kept", "window + sinks, Eq. (22.1)",
               fn="streaming_kv_cache_bytes", model="m",
               args=dict(s=2, S="S", B="B", window="W"),
               fmt="fmt_bytes"),
        Output("step_full", "step bytes, full cache, Eq. (3.5)",
               fn="decode_step_bytes", args=step, fmt="fmt_bytes"),
        Output("step_win", "step bytes, window + sinks",
               fn="bounded_decode_step_bytes",
               args=dict(step, budget="W"), fmt="fmt_bytes"),
        Output("tok_full", "ceiling, full cache, Eq. (3.4)",
               fn="decode_tok_s_ceiling",
               args=dict(bandwidth="hw.bandwidth", bytes_per_step="step_full",
                         B="B"),
               fmt=("fmt_fixed", {"decimals": 0, "suffix": " tok/s"})),
        Output("tok_win", "ceiling, window + sinks",
               fn="decode_tok_s_ceiling",
               args=dict(bandwidth="hw.bandwidth", bytes_per_step="step_win",
                         B="B"),
               fmt=("fmt_fixed", {"decimals": 0, "suffix": " tok/s"})),
    ],
)
""")

md(r"""
```{admonition} A common misreading: "re-indexing positions lets any model stream forever"
:class: warning
:name: misreading-reindex-positions
StreamingLLM's re-indexing works because rotary positions are applied when attention reads a key, so a
cached key can be given a new position at every step. With learned absolute positions, as in MiniGPT (and
GPT-2), the position is added to the input and carried into every layer's keys and values; re-indexing can
only place the *new* token, and on MiniGPT the stream's perplexity past $S_\text{max}$ rises to
{glue:text}`ch22_past_W28_k4` (window 28 + 4 sinks) from {glue:text}`ch22_past_in_W28_k4` before it. A
window bounds the cache for any model; streaming past the trained context needs relative positions.
```

## Summary

A window with sinks holds Mistral-7B's {glue:text}`ch22_mistral_S`-token sequence in {glue:text}`ch22_mistral_win` of bf16
cache instead of {glue:text}`ch22_mistral_full`, and every step's cache read stops growing at $k + W$
tokens ([Eq. (22.1)](#eq-22-1), measured equal). On MiniGPT the sinks help only at a 32-token budget (it
learned no strong sink), re-indexed learned positions fail past $S_\text{max}$, and at a budget of 16 tokens
after a 64-token prompt SnapKV loses least ({glue:text}`ch22_ev_ppl_snapkv_b16`, with a cache that grows
again), then a window ({glue:text}`ch22_ev_ppl_window_b16`), then H2O ({glue:text}`ch22_ev_ppl_h2o_b16`),
against {glue:text}`ch22_ev_ppl_full` for the full cache.
""")


for n, cell in enumerate(cells[3:]):
    if cell["cell_type"] == "code" and "\nexplorer(" in cell["source"]:
        cell["metadata"] = {"tags": ["hide-input"]}
    cell["id"] = f"c22-{n:02d}"
nb["cells"] = cells
json.dump(nb, open(path, "w"), indent=1, ensure_ascii=False)
open(path, "a").write("\n")
