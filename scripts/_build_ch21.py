"""One-off: append Chapter 21's cells after the skeleton's three (not part of the book; deleted after use)."""

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
GQA and a quantized cache shrink each token's keys and values by a constant factor
([Chapter 9](09_gqa_mqa.ipynb), [Chapter 10](10_quantized_kv_cache.ipynb)). DeepSeek-V2 went further
{cite}`deepseekai2024v2`: it caches, per token and layer, one *latent* vector $c$ of $d_c$ values, from
which every head's key and value are rebuilt by up-projections. [Chapter 2](02_kv_cache_memory.ipynb)
priced DeepSeek-V3's latent cache on paper ([Eq. (2.5)](#eq-2-5)); this chapter makes it real on
MiniGPT: a latent-attention variant, its cache, the two ways to decode from it (decompress, or absorb
the up-projections into the query and output projections), their equivalence, their FLOPs and bytes
counted against formulas, where absorption stops paying, and the quality at equal cache bytes against
MHA, GQA and MQA.

**Symptom (Chapter 1's traffic table, row "KV-cache bytes").** A decode step reads $B \cdot S$ tokens'
keys and values, $2 L H_\text{kv} d_h s$ bytes each ([Eq. (3.5)](#eq-3-5)). GQA divides that by
$H / H_\text{kv}$; multi-head latent attention (MLA) replaces it by [Eq. (2.5)](#eq-2-5)'s

$$
b_\text{token}^\text{latent} = L \cdot (d_c + d_\text{rope}) \cdot s, \qquad d_c \ll 2 H d_h .
$$
""")

code(r"""
import matplotlib.pyplot as plt
import torch

from minigpt import costs, load_pretrained
from minigpt.book import glue
from minigpt.corpus import fidelity
from minigpt.costs.presets import HARDWARE, LATENT_MODELS
from minigpt.measure import count_flops, sweeps
from minigpt.runtime.mla import LatentAttention, LatentCache, latent_from_mha

torch.set_num_threads(1)  # tiny matmuls: one thread is faster, and steadier
fmt = costs.fmt_bytes
base = load_pretrained()
tok, mha = base.tokenizer, base.model
cfg = mha.config
v3 = LATENT_MODELS["DeepSeek-V3"]
v3_latent = v3.kv_bytes_per_token(s=2)  # Eq. (2.5): L·(d_c + d_rope)·s
v3_mha = v3.mha_kv_bytes_per_token(s=2)  # its 128 heads as MHA, Eq. (2.1)
print(f"DeepSeek-V3, bf16: {fmt(v3_latent)} per token (latent "
      f"{v3.d_c} + RoPE key {v3.d_rope}, {v3.L} layers)")
print(f"  as MHA with {v3.H} heads of {v3.d_h}: {fmt(v3_mha)} per token, "
      f"{v3_mha / v3_latent:.0f}x more")
glue("ch21_v3_latent", fmt(v3_latent))
glue("ch21_v3_mha", fmt(v3_mha))
glue("ch21_v3_ratio", f"{v3_mha / v3_latent:.0f}")
""")

md(r"""
## The mechanism: a latent, two up-projections, two ways to decode

`LatentAttention` projects the queries as MHA does, and the keys and values through a bottleneck:
$c = W_\text{DKV} x$ ($d \to d_c$) is all the cache stores; $k_h = W_\text{UK}^{(h)} c$ and
$v_h = W_\text{UV}^{(h)} c$ ($d_c \to d_h$ per head) are rebuilt when attention needs them. The cache,
`LatentCache`, is `[L, B, S_max, d_c]`: no heads, no key/value pair. It keeps the interface of every cache in
the book (`S`, `B`, `update`, `advance`, `check_room`, `visible`), except that `update` takes the latents.

There are two ways to attend over cached latents, and vLLM's MLA backend names them in its docstring
{cite}`vllmmla2025`. The **naive** (compute-friendly) path decompresses every cached token's $K$ and $V$,
$[B, H, S, d_h]$, and runs ordinary multi-head attention. The **absorbed** (data-movement-friendly) path
uses $q_h \cdot (W_\text{UK}^{(h)} c) = (W_\text{UK}^{(h)\top} q_h) \cdot c$: fold $W_\text{UK}$ into the
query projection and $W_\text{UV}$ into the output projection once, and attention runs over the latents
themselves, like multi-query attention with a single "head" $c$ of width $d_c$:

```{literalinclude} ../minigpt/runtime/mla.py
:language: python
:pyobject: LatentAttention.forward
```

```{literalinclude} ../minigpt/runtime/mla.py
:language: python
:pyobject: LatentAttention.fold
```

**Where MiniGPT simplifies, and what DeepSeek adds for RoPE.** MiniGPT's positions are learned and added
to $x$ before attention, so the absorption above is exact. DeepSeek uses rotary embeddings: the key is
$R(t)\,W_\text{UK} c$, a rotation that depends on the key's position $t$ and sits *between* the query and
$W_\text{UK}$, so $W_\text{UK}$ can no longer be folded into a fixed query projection. DeepSeek's answer
is a *decoupled* RoPE key: a separate $k^R = \text{RoPE}(W_\text{KR} x)$ of $d_\text{rope} = 64$ values per
token, shared by all heads and cached beside $c$, while the latent part carries no position. That is the
$d_\text{rope}$ of [Eq. (2.5)](#eq-2-5): DeepSeek-V3 caches $d_c + d_\text{rope} = 512 + 64$ values per token
and layer. DeepSeek also compresses the queries through their own latent (it saves activation memory in
training, not cache); MiniGPT does not. MiniGPT's up-projections carry no bias: a key bias adds the same
$q \cdot b_k$ to every score of a query (softmax ignores it), and a value bias adds $b_v$ to every output
(the weights sum to one), which the output bias absorbs.

Where does an MLA MiniGPT come from? Like GQA ([Chapter 9](09_gqa_mqa.ipynb)), from the shipped MHA
checkpoint. The map $x \mapsto [k; v]$ is a matrix $M = [W_K; W_V]$ of $2 H d_h \times d$, of rank at most
$d$; a truncated SVD gives the best rank-$d_c$ factorisation $M \approx W_\text{UKV} W_\text{DKV}$, weighted
by the second moment of the layer's real inputs so that the error is small where the activations are:

```{literalinclude} ../minigpt/runtime/mla.py
:language: python
:pyobject: latent_from_mha
```

Since $2 H d_h = 2d$ exceeds $d$, MiniGPT's keys and values already live in a $d$-dimensional subspace:
at $d_c = d = 64$ (GQA-2's bytes) the copy is exact.
""")

md(r"""
## Equivalence: absorbed = naive, and the full-rank copy = MHA

`tests/test_mla.py` checks over random shapes (hypothesis, $B > 1$, prefill then decode steps) that the
absorbed path's logits equal the naive path's and a full forward's within $2 \cdot 10^{-5}$, fp32 rounding
of different matmul orders; its mutant check folds $W_\text{UK}$ without the $\sqrt{d_c / d_h}$ that keeps
attention's $1/\sqrt{d_h}$ scale (the kernel divides by $\sqrt{d_c}$) and must fail. It also checks that
the SVD copy at full rank computes the MHA model's function, biases included (the mutant that forgets to
move $b_V$ into the output bias fails). The same on the shipped models:
""")

code(r"""
windows = fidelity.held_out_windows(tok, n=8, T=cfg.S_max)
mla8 = load_pretrained(name="minigpt-mla8-uptrained").model
with torch.no_grad():
    naive = mla8.set_path("naive")(windows)
    mla8.set_path("absorbed")
    cache = mla8.new_cache(8)
    steps = [mla8(windows[:, :16], cache)]  # prefill 16, then decode
    steps += [mla8(windows[:, t : t + 1], cache) for t in range(16, cfg.S_max)]
    absorbed = torch.cat(steps, dim=1)
    exact = latent_from_mha(mha, cfg.d).eval()(windows)
    reference = mha(windows)
d_paths = (absorbed - naive).abs().max().item()
d_copy = (exact - reference).abs().max().item()
assert d_paths < 1e-4 and d_copy < 1e-4
assert torch.equal(absorbed.argmax(-1), naive.argmax(-1))
print(f"d_c = 8 model, absorbed decode vs naive forward: "
      f"max |Δ logit| < 1e-4")
print(f"  over {windows.numel():,} positions, argmax equal everywhere")
print(f"SVD copy with d_c = d = {cfg.d} vs the MHA model: max |Δ logit| "
      f"< 1e-4")
""")

md(r"""
## The cache's layout, drawn from the caches

Values stored per token and layer by each variant of MiniGPT (and, scaled down by 16, DeepSeek-V3),
read from the allocated caches:
""")

code(r"""
from minigpt.runtime.mla import MiniGPTMLA

variants = {"MHA (H_kv = 4)": "minigpt",
            "GQA (H_kv = 2)": "minigpt-gqa2-uptrained",
            "MQA (H_kv = 1)": "minigpt-mqa-uptrained"}
layout = {}
for label, name in variants.items():
    c = load_pretrained(name=name).model.new_cache(1)
    layout[label] = c.nbytes // (c.S_max * cfg.L * c.s)  # K and V values
for d_c in (8, 4):
    c = MiniGPTMLA(cfg, d_c=d_c).new_cache(1)
    layout[f"MLA (d_c = {d_c})"] = c.nbytes // (c.S_max * cfg.L * c.s)
fig, ax = plt.subplots(figsize=(9, 3.2))
for row, (label, n) in enumerate(layout.items()):
    kv = "MLA" not in label
    for i in range(n):
        half = "tab:blue" if i < n // 2 else "tab:orange"
        color = half if kv else "tab:green"
        ax.add_patch(plt.Rectangle((i, -row), 0.9, 0.8, color=color))
    ax.text(n + 1, -row + 0.2, f"{n} values", fontsize=8)
ax.set(xlim=(0, 140), ylim=(-len(layout) + 0.5, 1),
       yticks=[-r + 0.4 for r in range(len(layout))],
       yticklabels=list(layout), xlabel="values cached per token and layer")
ax.set_title("MLA caches one latent (green), not a key (blue) and a value "
             f"(orange) per head: {layout['MHA (H_kv = 4)'] // 8}x less at "
             "d_c = 8", fontsize=9)
glue("ch21_fig_layout", fig)
plt.close(fig)
assert layout["MLA (d_c = 8)"] * 16 == layout["MHA (H_kv = 4)"]
""")

md(r"""
```{glue:figure} ch21_fig_layout
:name: fig-ch21-layout

Values each variant caches per token and layer, counted on the allocated caches: MHA stores a key and a value
of $d_h$ = 16 per head, GQA and MQA share them between query heads, MLA stores one latent of $d_c$ values
whatever $H$.
```

## Prediction, then measurement: bytes and FLOPs of each path

Both paths read the same latents; they differ in work. For $T$ new tokens after $S$ cached ones
($K = S + T$ keys) and $B$ sequences, one attention block costs

(eq-21-1)=
$$
\begin{aligned}
F_\text{naive} &= 2BT d H (d_h + d_\text{rope}) + 2BTd(d_c + d_\text{rope}) + 2BK d_c \cdot 2Hd_h
  + 2BTK H (2d_h + d_\text{rope}) + 2BTHd_h d \\
F_\text{absorbed} &= 2BT d H (d_c + d_\text{rope}) + 2BTd(d_c + d_\text{rope})
  + 2BTK H (2d_c + d_\text{rope}) + 2BTHd_c d
\end{aligned} \tag{21.1}
$$

(queries, latent, decompression, scores and weighted sums, output; `costs.mla_layer_flops`). The terms
that grow with the cache are attention's (`costs.mla_attention_flops`):

(eq-21-2)=
$$
F^\text{attn}_\text{naive} = 2BK d_c \cdot 2Hd_h + 2BTKH(2d_h + d_\text{rope}), \qquad
F^\text{attn}_\text{absorbed} = 2BTKH(2d_c + d_\text{rope}) \tag{21.2}
$$

The naive path pays the decompression, $4 H d_h d_c$ per cached key whatever $T$; the absorbed path pays
$2 T H (2 d_c + d_\text{rope})$ per cached key, because each of its $H$ query "heads" now works in width
$d_c$ instead of $d_h$. In bytes, both read the latents; the naive path, as vLLM's prefill path does into a
workspace, also writes its decompressed $K$ and $V$ and reads them back (`costs.mla_attention_bytes`):

(eq-21-3)=
$$
\text{bytes}_\text{absorbed} = BK(d_c + d_\text{rope})\,s, \qquad
\text{bytes}_\text{naive} = \text{bytes}_\text{absorbed} + 4BKHd_h\,s \tag{21.3}
$$

`FlopCounterMode` on one block of MiniGPT, against [Eq. (21.1)](#eq-21-1); the bytes of the tensors its
attention moved (the block records them), against [Eq. (21.3)](#eq-21-3); and the latent cache's bytes
against [Eq. (2.5)](#eq-2-5):
""")

code(r"""
B, d_c = 4, 8
print(f"{'path':<9} {'T':>3} {'S':>4} {'FLOPs':>9} {'Eq. 21.1':>9} "
      f"{'bytes':>8} {'Eq. 21.3':>8}")
flops = {}
for path in ("naive", "absorbed"):
    for T, S in ((1, 0), (1, 100), (16, 100)):
        attn = LatentAttention(cfg, 0, d_c).eval()
        if path == "absorbed":
            attn.fold()
            attn.path = "absorbed"
        cache = LatentCache(cfg, d_c, B)
        cache.advance(S)  # S cached latents (zeros: the count is the same)
        x = torch.randn(B, T, cfg.d)
        with torch.no_grad():
            counted = count_flops(lambda: attn(x, cache, S))
        predicted = costs.mla_layer_flops(
            d=cfg.d, H=cfg.H, d_h=cfg.d_h, d_c=d_c, T=T, S=S, path=path, B=B)
        assert counted == predicted
        moved = costs.mla_attention_bytes(
            H=cfg.H, d_h=cfg.d_h, d_c=d_c, T=T, S=S, path=path, s=4, B=B)
        assert attn.bytes_moved == moved  # Eq. (21.3), on its tensors
        flops[path, T, S] = counted
        print(f"{path:<9} {T:>3} {S:>4} {counted:>9,} {predicted:>9,} "
              f"{attn.bytes_moved:>8,} {moved:>8,}")
cache = mla8.new_cache(B)
with torch.no_grad():
    mla8(windows[:B, :100], cache)
assert cache.bytes_used == costs.latent_kv_cache_bytes(
    L=cfg.L, d_c=d_c, s=4, S=100, B=B)
print(f"latent cache, B = {B}, S = 100: {fmt(cache.bytes_used)} "
      f"(an MHA cache: {fmt(mha.new_cache(B, S_max=100).nbytes)})")
glue("ch21_decode_ratio",
     f"{flops['naive', 1, 100] / flops['absorbed', 1, 100]:.1f}")
""")

md(r"""
At $d_c$ = 8, half of $d_h$ = 16, the absorbed path is cheaper in everything: a decode step's attention
block costs {glue:text}`ch21_decode_ratio`× fewer FLOPs than the naive one at $S$ = 100. DeepSeek's
latent is four times *wider* than a head ($d_c = 512$, $d_h = 128$): there, absorbing trades the smaller
read for more FLOPs per cached token, and the trade flips as the number of query tokens $T$ per sequence
grows, since the decompression is shared by all $T$ queries and the absorbed path's extra width is paid by
each. On the roofline, [Eq. (7.2)](#eq-7-2), the crossover is the smallest $T$ with

(eq-21-4)=
$$
\max\!\Big(\frac{F_\text{naive}}{\pi}, \frac{\text{bytes}_\text{naive}}{\beta}\Big) \le
\max\!\Big(\frac{F_\text{absorbed}}{\pi}, \frac{\text{bytes}_\text{absorbed}}{\beta}\Big)
\tag{21.4}
$$

(attention's part only, `costs.mla_absorb_crossover_T`). The prediction for DeepSeek-V3 on an H100, and
its absorbed decode step's arithmetic intensity against the chip's ridge point:
""")

code(r"""
h100 = HARDWARE["H100 SXM"]
chip = dict(peak_flops=h100.peak_flops, bandwidth=h100.bandwidth)
v3_attn = dict(H=v3.H, d_h=v3.d_h, d_c=v3.d_c, d_rope=v3.d_rope)
ridge = costs.ridge_point(**chip)
print(f"H100 SXM ridge point: {ridge:.0f} FLOP/byte")
for s, label in ((2, "bf16"), (1, "fp8")):
    one = dict(v3_attn, S=32768, T=1)
    intensity = (costs.mla_attention_flops(**one, path="absorbed")
                 / costs.mla_attention_bytes(**one, s=s, path="absorbed"))
    T_star = costs.mla_absorb_crossover_T(**v3_attn, S=32768, s=s, **chip)
    t_n = costs.mla_attention_time(**one, s=s, path="naive", **chip)
    t_a = costs.mla_attention_time(**one, s=s, path="absorbed", **chip)
    print(f"{label} latents: absorbed decode {intensity:.0f} FLOP/byte, "
          f"crossover T* = {T_star};")
    print(f"  naive/absorbed time at T = 1: {t_n / t_a:.0f}x")
    glue(f"ch21_v3_int_{label}", f"{intensity:.0f}")
    glue(f"ch21_v3_T_{label}", f"{T_star}")
    glue(f"ch21_v3_gain_{label}", f"{t_n / t_a:.0f}")
glue("ch21_ridge", f"{ridge:.0f}")
mini = dict(H=cfg.H, d_h=cfg.d_h, S=32, s=4, peak_flops=1e11, bandwidth=2e10)
T_64 = costs.mla_absorb_crossover_T(**mini, d_c=64)
T_8 = costs.mla_absorb_crossover_T(**mini, d_c=8, T_max=4096)
print(f"MiniGPT, d_c = 64: T* = {T_64}; d_c = 8: "
      f"{'never' if T_8 > 4096 else T_8} (any compute-bound chip)")
glue("ch21_mini_T64", f"{T_64}")
""")

md(r"""
For DeepSeek-V3 with a bf16 cache, absorbed decode has an intensity of {glue:text}`ch21_v3_int_bf16`
FLOP/byte, just under the H100's ridge point of {glue:text}`ch21_ridge`: MLA decode is no longer deeply
memory-bound, as MHA decode is (about 1 FLOP/byte per query head). With an fp8 cache it is
{glue:text}`ch21_v3_int_fp8`, past the ridge: compute-bound. At $T = 1$ the naive path would be
{glue:text}`ch21_v3_gain_bf16`× slower (it decompresses all $H = 128$ heads' keys and values for every
cached token at every step). Absorption pays up to $T^*$ = {glue:text}`ch21_v3_T_bf16` query tokens per sequence; beyond
that the naive path wins. This is vLLM's rule: the absorbed path for decode (and short speculative
chunks), the naive path with chunked decompression for prefill, where $T$ is in the thousands. For MiniGPT
with $d_c$ = 64 the same formula puts the crossover at $T^*$ = {glue:text}`ch21_mini_T64`; with $d_c$ = 8
there is none (the latent is narrower than a head).

Measured on this CPU (`scripts/measure_cache_memory.py paths`, one thread, $B$ = 8, $S$ = 32, the
forward of the whole model for $T$ new tokens, the fastest of 30 repeats, as in
[Chapter 9](09_gqa_mqa.ipynb); the medians are in the JSON and noisier on this shared machine):
""")

code(r"""
run = sweeps.read_json("data/mla_paths_cpu.json")
env = run["environment"]
print(f"recorded {env['date']} on {env['device']}, {env['cpu_threads']} "
      f"thread(s)")
print(f"{'d_c':>4} {'T':>3} {'naive ms':>9} {'absorbed ms':>12} "
      f"{'naive/absorbed':>15}")
ratio = {}
for r in run["rows"]:
    n, a = r["naive"]["min_s"], r["absorbed"]["min_s"]
    ratio[r["d_c"], r["T"]] = n / a
    print(f"{r['d_c']:>4} {r['T']:>3} {1e3 * n:>9.2f} {1e3 * a:>12.2f} "
          f"{n / a:>15.2f}")
measured_T = min((T for (d, T), x in ratio.items() if d == 64 and x < 1),
                 default=None)
print(f"d_c = 64: the naive path is first faster at T = {measured_T}")
print(f"  (Eq. 21.4's prediction: {T_64})")
glue("ch21_meas_T64", f"{measured_T}")
""")

md(r"""
On this CPU the $d_c$ = 64 model's naive path is first faster at $T$ = {glue:text}`ch21_meas_T64` new
tokens, near the predicted {glue:text}`ch21_mini_T64` (the prediction counts attention's FLOPs only; the
measured forward also carries the rest of the model and the CPU's per-operator costs), and the $d_c$ = 8
model's absorbed path stays ahead, as predicted. Both effects are small here: at $S$ = 32 attention is a
small part of MiniGPT's forward.
""")

md(r"""
## Cost in quality at equal cache bytes

`scripts/measure_cache_memory.py latent` measures every variant the way [Chapter 9](09_gqa_mqa.ipynb)
did: held-out perplexity over 64 windows (with the 95 % interval of its paired difference from MHA),
greedy agreement with MHA, and the grammar checker's verdict on 1,000 sampled sentences (MLA decoding
through the absorbed path). The MLA variants are SVD copies of the MHA checkpoint (no training) and two
uptrained with the GQA recipe, 300 steps from the SVD copy:

```
python -m minigpt.corpus.train --uptrain-from minigpt --latent 8 --steps 300 \
    --warmup 30 --threads 1 --name minigpt-mla8-uptrained
```
""")

code(r"""
quality = sweeps.read_json("data/latent_quality.json")
res = dict(sorted(quality["results"].items(),
                  key=lambda kv: (-kv[1]["values_per_token_layer"], kv[0])))
print(f"{'variant':<20} {'vals':>4} {'KV/tok':>7} {'ppl':>7} "
      f"{'Δ log ppl':>13} {'gramm.':>6} {'greedy':>6}")
for name, r in res.items():
    delta = (f"{round(r['delta_log_ppl'], 3) + 0.0:+.3f}"
             f"±{r['delta_log_ppl_ci']:.3f}"
             if "delta_log_ppl" in r else "")
    print(f"{name:<20} {r['values_per_token_layer']:>4} "
          f"{fmt(r['kv_bytes_per_token']):>7} {r['perplexity']:>7.3f} "
          f"{delta:>13} {r['grammatical'] / r['sentences']:>6.1%} "
          f"{r['greedy_equal'] / r['greedy_tokens']:>6.0%}")
for name, r in res.items():
    key = name.replace(" ", "_").replace("=", "").lower()
    glue(f"ch21_ppl_{key}", f"{r['perplexity']:.3f}")
    glue(f"ch21_gram_{key}", f"{r['grammatical'] / r['sentences']:.1%}")
""")

code(r"""
fig, ax = plt.subplots(figsize=(8, 4))
shapes = {"MHA": "s", "GQA": "o", "MQA": "D"}
for name, r in res.items():
    kind = name.split()[0]
    if kind == "MLA":
        marker = "^" if "uptrained" in name else "v"
        color = "tab:green" if "uptrained" in name else "tab:olive"
    else:
        marker, color = shapes[kind], {"MHA": "k", "GQA": "tab:blue",
                                        "MQA": "tab:red"}[kind]
    ax.errorbar(r["kv_bytes_per_token"], r["delta_log_ppl"],
                yerr=r["delta_log_ppl_ci"], fmt=marker, color=color, ms=6,
                capsize=2, label=name)
ax.set_xscale("log", base=2)
ax.set_yscale("symlog", linthresh=1e-3)
ax.set_ylim(-2e-3, 0.6)
ax.set(xlabel="KV-cache bytes per token (fp32)",
       ylabel="Δ log perplexity vs MHA (paired)")
ax.legend(fontsize=7, ncol=2, loc="upper right")
ax.set_title("MLA keeps MHA's perplexity down to d_c = 8, 1/16 of MHA's "
             "bytes; d_c = 4 needs uptraining", fontsize=9)
glue("ch21_fig_quality", fig)
plt.close(fig)
""")

md(r"""
```{glue:figure} ch21_fig_quality
:name: fig-ch21-quality

The change in held-out log perplexity against the MHA model (paired over the same 64 windows, with its
95 % interval; linear below $10^{-3}$, logarithmic above) for every variant, against its cache bytes per
token (fp32). Triangles: MLA (down: SVD copy, no training; up: uptrained 300 steps).
```

At GQA-2's bytes the SVD copy *is* the MHA model (perplexity {glue:text}`ch21_ppl_mla_d_c64_svd` against
{glue:text}`ch21_ppl_mha`); at MQA's bytes ($d_c$ = 32) it is still within rounding of it, where MQA
needed uptraining and lands at {glue:text}`ch21_ppl_mqa_uptrained`. The SVD copy holds up to $d_c$ = 8,
a sixteenth of MHA's cache; at $d_c$ = 4 it breaks ({glue:text}`ch21_ppl_mla_d_c4_svd`) and 300 steps
bring it back to the level of uptrained GQA and MQA ({glue:text}`ch21_ppl_mla_d_c4_uptrained`, grammatical
{glue:text}`ch21_gram_mla_d_c4_uptrained`) with an eighth of MQA's bytes. Uptraining the $d_c$ = 8 copy,
which needed none, moved it slightly away ({glue:text}`ch21_ppl_mla_d_c8_uptrained` against
{glue:text}`ch21_ppl_mla_d_c8_svd`): the GQA recipe's peak learning rate perturbs a model that was already
right, as it did for GQA in [Chapter 9](09_gqa_mqa.ipynb). The lesson generalises with a caveat: a trained model's keys and
values are strongly low-rank, and a latent that spans them loses nothing, where sharing heads (GQA, MQA)
throws away whatever differs between the heads of a group. DeepSeek-V2 reports MLA above MHA in quality
{cite}`deepseekai2024v2`; on MiniGPT the honest statement is "equal, at a fraction of the bytes", with a
grammar too easy to show more.

## What real systems do

* **vLLM** keeps one latent (plus the RoPE key) per token in its paged cache (a 576-wide "head" for
  DeepSeek) and switches path by phase, as its docstring explains {cite}`vllmmla2025`: prefill
  decompresses in chunks (compute-friendly), decode runs the absorbed path through an MLA kernel.
* **FlashMLA** {cite}`flashmla2025` is DeepSeek's absorbed-decode kernel for Hopper: 64-token pages, bf16
  or fp8 latents, and all 128 query heads of a sequence processed against each latent tile as it is read,
  which is where the intensity of {glue:text}`ch21_v3_int_bf16` FLOP/byte comes from.
* **DeepSeek-V3** {cite}`deepseekai2024v3` keeps the decoupled 64-wide RoPE key: the only part of the
  cache that carries position.
* **Character.AI** {cite}`characterai2024inference` reaches a similar reduction by other means: MQA,
  local attention in most layers, and one KV cache shared by several adjacent layers (cross-layer
  sharing), a factor MLA does not use. Windows are [Chapter 22](22_windows_and_eviction.ipynb)'s subject.

## Explore: the latent's width, the query chunk, the chip

DeepSeek-V3's shape ($H = 128$, $d_h = 128$, $L = 61$); change $d_c$, $d_\text{rope}$, the query tokens
per sequence $T$ and the chip. The outputs are the bytes per token ([Eq. (2.5)](#eq-2-5)) against MHA, both paths'
attention time per layer on the roofline for one sequence of $S$ tokens, and the crossover $T^*$
([Eq. (21.4)](#eq-21-4)).
""")

code(r"""
from minigpt.book import Output, Slider, chip_value, explorer

v3_shape = dict(H=v3.H, d_h=v3.d_h, d_c="d_c", d_rope="d_rope")
chip_args = dict(peak_flops="hw.peak_flops", bandwidth="hw.bandwidth")
attn = dict(v3_shape, T="T", S="S", s="s", **chip_args)
explorer(
    "ch21-mla",
    "Latent attention: bytes per token and the absorbed-decode crossover",
    constants={"naive": "naive", "absorbed": "absorbed"},
    sliders=[
        Slider("d_c", "latent width <i>d<sub>c</sub></i>", 64, 2048,
               value=v3.d_c, log=True),
        Slider("d_rope", "RoPE key <i>d</i><sub>rope</sub>", 0, 128,
               value=v3.d_rope),
        Slider("T", "query tokens per sequence <i>T</i>", 1, 4096, value=1,
               log=True),
        Slider("S", "context <i>S</i> (tokens)", 1024, 131072, value=32768,
               log=True),
        Slider("s", "bytes per cached value", options=[("bf16", 2),
                                                       ("fp8", 1)],
               value=2),
        Slider("hw", "chip",
               options=[(n, chip_value(h)) for n, h in HARDWARE.items()],
               value=chip_value(h100)),
    ],
    outputs=[
        Output("lat", "latent KV per token, Eq. (2.5)",
               fn="latent_kv_bytes_per_token",
               args=dict(L=v3.L, d_c="d_c", d_rope="d_rope", s="s"),
               fmt="fmt_bytes"),
        Output("mha", "as MHA, Eq. (2.1)", fn="kv_bytes_per_token",
               args=dict(L=v3.L, H_kv=v3.H, d_h=v3.d_h, s="s"),
               fmt="fmt_bytes"),
        Output("t_naive", "naive path, one layer (s)",
               fn="mla_attention_time", args=dict(attn, path="naive"),
               fmt="fmt_duration"),
        Output("t_abs", "absorbed path, one layer (s)",
               fn="mla_attention_time", args=dict(attn, path="absorbed"),
               fmt="fmt_duration"),
        Output("T_star", "crossover T*, Eq. (21.4)",
               fn="mla_absorb_crossover_T",
               args=dict(v3_shape, S="S", s="s", **chip_args),
               fmt="fmt_int"),
    ],
)
""")

md(r"""
```{admonition} A common misreading: "MLA decode is memory-bound, like MQA"
:class: warning
:name: misreading-mla-memory-bound
The absorbed path does read one latent per token, as MQA reads one key/value head, but every one of the
$H$ query heads works in width $d_c + d_\text{rope}$ (and $d_c$ for the values) instead of $d_h$. For
DeepSeek-V3 on an H100 that is {glue:text}`ch21_v3_int_bf16` FLOP per byte of bf16 latents, next to the
ridge point ({glue:text}`ch21_ridge`), and {glue:text}`ch21_v3_int_fp8` with fp8 latents, past it: the
decode step's attention is compute-bound, which is why FlashMLA is tuned for tensor-core throughput as much
as for bandwidth.
```

## Summary

| MiniGPT variant | values/token/layer | perplexity | grammatical |
|---|---|---|---|
| MHA | $128$ | {glue:text}`ch21_ppl_mha` | {glue:text}`ch21_gram_mha` |
| GQA, $H_\text{kv}$ = 2, uptrained | 64 | {glue:text}`ch21_ppl_gqa_h_kv2_uptrained` | {glue:text}`ch21_gram_gqa_h_kv2_uptrained` |
| MLA $d_c$ = 64, SVD | 64 | {glue:text}`ch21_ppl_mla_d_c64_svd` | {glue:text}`ch21_gram_mla_d_c64_svd` |
| MQA, uptrained | 32 | {glue:text}`ch21_ppl_mqa_uptrained` | {glue:text}`ch21_gram_mqa_uptrained` |
| MLA $d_c$ = 32, SVD | 32 | {glue:text}`ch21_ppl_mla_d_c32_svd` | {glue:text}`ch21_gram_mla_d_c32_svd` |
| MLA $d_c$ = 8, uptrained | 8 | {glue:text}`ch21_ppl_mla_d_c8_uptrained` | {glue:text}`ch21_gram_mla_d_c8_uptrained` |
| MLA $d_c$ = 4, uptrained | 4 | {glue:text}`ch21_ppl_mla_d_c4_uptrained` | {glue:text}`ch21_gram_mla_d_c4_uptrained` |

DeepSeek-V3 caches {glue:text}`ch21_v3_latent` per token, {glue:text}`ch21_v3_ratio`× less than its heads
would as MHA; its absorbed decode is near the H100's ridge point, and absorption pays up to
{glue:text}`ch21_v3_T_bf16` query tokens per sequence.
""")

for n, cell in enumerate(cells[3:]):
    if cell["cell_type"] == "code" and "\nexplorer(" in cell["source"]:
        cell["metadata"] = {"tags": ["hide-input"]}
    cell["id"] = f"c21-{n:02d}"
nb["cells"] = cells
json.dump(nb, open(path, "w"), indent=1, ensure_ascii=False)
open(path, "a").write("\n")
