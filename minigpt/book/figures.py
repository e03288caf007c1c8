"""The book's conceptual figures, drawn by code from a model's shape (Chapters 1, 2 and 6).

Each function returns a matplotlib `Figure` whose suptitle states what it shows; the shapes printed
on it are computed from the `ModelConfig` given (``ModelConfig()``, MiniGPT, by default). matplotlib is
imported inside the functions, so ``import minigpt`` stays light.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from minigpt.config import ModelConfig

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Suptitles, one per figure (the chapters' captions refer to them; the unit test checks them).
DATAFLOW_TITLE = "One forward, two shapes: prefill multiplies P rows by each weight, decode one row against the cache"
CACHE_TITLE = "The KV cache fills one row per token: the prefill writes P rows at once, each decode step one more"
MASK_TITLE = "A chunk appended to a cache sees every cached key: its mask is the prefill's, shifted by S"


def causal_mask(T: int, S: int = 0) -> list[list[bool]]:
    """Which keys each of T new queries may see after S cached tokens: key j for query i iff j <= S + i.

    The rule of `minigpt.runtime.model` (``future = j > S + i``); S = 0 is the prefill's lower triangle
    and T = 1 a decode step, which sees every key.
    """
    for name, value, minimum in (("T", T, 1), ("S", S, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return [[j <= S + i for j in range(S + T)] for i in range(T)]


def _box(ax, x: float, y: float, w: float, h: float, text: str, color: str) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", fc=color, ec="black", lw=0.8))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=8)


def _arrow(ax, x0: float, y0: float, x1: float, y1: float, text: str = "") -> None:
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops=dict(arrowstyle="->", lw=0.9))
    if text:
        ax.text((x0 + x1) / 2 + 0.02, (y0 + y1) / 2, text, fontsize=8, va="center", color="dimgray")


def dataflow_figure(config: ModelConfig | None = None, *, P: int = 2, S: int = 2, B: int = 1) -> Figure:
    """Prefill of P tokens beside one decode step at S cached tokens: one layer's tensors and their shapes."""
    import matplotlib.pyplot as plt

    c = config or ModelConfig()
    for name, value in (("P", P), ("S", S), ("B", B)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if P > c.S_max or S + 1 > c.S_max:
        raise ValueError(f"P and S + 1 must fit the cache's S_max = {c.S_max}; got P={P}, S={S}")
    fig, axes = plt.subplots(2, 1, figsize=(6.6, 10.4))  # one phase above the other: 8 pt text stays 11 px
    phases = [
        (f"Prefill: T = P = {P} tokens, empty cache", P, 0, "#cfe3f5"),
        (f"Decode step: T = 1 token, S = {S} cached", 1, S, "#fde2c8"),
    ]
    for ax, (title, T, S0, color) in zip(axes, phases, strict=True):
        ax.set(xlim=(0, 1), ylim=(0, 1), title=title)
        ax.axis("off")
        keys = S0 + T
        _box(ax, 0.25, 0.88, 0.5, 0.08, f"X: [B={B}, T={T}, d={c.d}]", color)
        _box(ax, 0.02, 0.68, 0.3, 0.09, f"Q = X W_Q\n[B, H={c.H}, T={T}, d_h={c.d_h}]", color)
        _box(ax, 0.36, 0.68, 0.3, 0.09, f"K, V = X W_K, X W_V\n[B, H_kv={c.H_kv}, T={T}, d_h={c.d_h}]", color)
        for x in (0.17, 0.51):
            _arrow(ax, 0.5, 0.88, x, 0.77)
        write = "write P rows" if S0 == 0 else f"append 1 row at position {S0}"
        _box(ax, 0.68, 0.44, 0.29, 0.17,
             f"KV cache, layer l\nk, v: [B, H_kv={c.H_kv},\nS_max={c.S_max}, d_h={c.d_h}]\nfilled: {keys} rows",
             "#e8e8e8")
        _arrow(ax, 0.66, 0.70, 0.82, 0.61)
        ax.text(0.99, 0.66, write, fontsize=8, ha="right", color="dimgray")
        attn = (f"scores = Q K^T / sqrt(d_h)\n[B, H, T={T}, S+T={keys}]"
                + ("\ncausal mask (lower triangle)" if T > 1 else "\nno mask: every key is in the past"))
        _box(ax, 0.10, 0.42, 0.5, 0.14, attn, color)
        _arrow(ax, 0.17, 0.68, 0.25, 0.56)
        _arrow(ax, 0.68, 0.49, 0.60, 0.49)
        ax.text(0.825, 0.40, f"attention reads all {keys} rows\nof keys and values", fontsize=8, ha="center",
                va="top", color="dimgray")
        _box(ax, 0.10, 0.24, 0.5, 0.1, f"softmax(scores) V, then W_O, FFN\n[B, T={T}, d={c.d}]", color)
        _arrow(ax, 0.35, 0.42, 0.35, 0.34)
        _box(ax, 0.10, 0.05, 0.5, 0.1, f"LM head on the last position\nlogits [B, V={c.V}]", color)
        _arrow(ax, 0.35, 0.24, 0.35, 0.15, f"x L={c.L} layers")
        ax.text(0.82, 0.1, "weights read once,\napplied to " + ("P rows" if T > 1 else "1 row"),
                ha="center", fontsize=8, style="italic")
    fig.suptitle(DATAFLOW_TITLE.replace(": ", ":\n", 1), fontsize=10)
    fig.tight_layout()
    return fig


def cache_layout_figure(config: ModelConfig | None = None, *, P: int = 16, steps: tuple[int, ...] = (0, 8, 48),
                        B: int = 2) -> Figure:
    """The keys of one layer and one sequence, [H_kv, S_max, d_h], after the prefill and after decode steps."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import ListedColormap

    c = config or ModelConfig()
    if isinstance(P, bool) or not isinstance(P, int) or P < 1:
        raise ValueError(f"P must be an integer >= 1, got {P!r}")
    if not steps or any(not isinstance(t, int) or t < 0 for t in steps) or P + max(steps) > c.S_max:
        raise ValueError(f"steps must be integers >= 0 with P + step <= S_max = {c.S_max}; got P={P}, {steps}")
    gap = max(1, c.d_h // 4)
    width = c.H_kv * c.d_h + (c.H_kv - 1) * gap
    cmap = ListedColormap(["#f2f2f2", "#4c8bc7", "#e8893a", "white"])  # empty, prefill, decode, gap
    fig, axes = plt.subplots(1, len(steps), figsize=(2.3 * len(steps), 5.2), sharey=True)
    axes = np.atleast_1d(axes)
    for ax, t in zip(axes, steps, strict=True):
        S = P + t
        grid = np.zeros((c.S_max, width))
        for h in range(c.H_kv):
            x0 = h * (c.d_h + gap)
            grid[:P, x0:x0 + c.d_h] = 1
            grid[P:S, x0:x0 + c.d_h] = 2
            if h < c.H_kv - 1:
                grid[:, x0 + c.d_h:x0 + c.d_h + gap] = 3
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=3, aspect="auto", interpolation="nearest")
        ax.set_xticks([h * (c.d_h + gap) + c.d_h / 2 for h in range(c.H_kv)], [str(h) for h in range(c.H_kv)],
                      fontsize=8)
        ax.axhline(S - 0.5, color="black", lw=0.8)
        steps_line = f"\nand {t} decode steps" if t else ""
        ax.set_title(f"after the prefill{steps_line}\nS = {S} of S_max = {c.S_max}", fontsize=9)
        ax.set_xlabel(f"head (H_kv = {c.H_kv})\nx d_h = {c.d_h} values", fontsize=9)
    axes[0].set_ylabel("position in the sequence (row of S_max)", fontsize=9)
    note = (f"k[l, b] for one layer l and one sequence b; the cache holds L = {c.L} layers x B = {B} "
            f"sequences of these, and the same for v: [L, B, H_kv, S_max, d_h] = "
            f"[{c.L}, {B}, {c.H_kv}, {c.S_max}, {c.d_h}]. Blue: prefill rows; orange: one row per decode step.")
    fig.text(0.5, 0.01, textwrap.fill(note, 30 * len(steps)), ha="center", fontsize=8)
    fig.suptitle(CACHE_TITLE.replace(": ", ":\n", 1), fontsize=10)
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


def causal_mask_figure(*, P: int = 6, S: int = 6, T: int = 3) -> Figure:
    """The mask of a prefill of P tokens, of a chunk of T tokens after S cached ones, and of a decode step."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import ListedColormap

    panels = [
        (f"prefill:\nT = P = {P}, S = 0", causal_mask(P, 0), 0),
        (f"chunk: T = {T}\nafter S = {S} cached", causal_mask(T, S), S),
        (f"decode step:\nT = 1 after S = {S + T}", causal_mask(1, S + T), S + T),
    ]
    widths = [len(mask[0]) for _, mask, _ in panels]
    fig, axes = plt.subplots(1, 3, figsize=(6.8, 3.3), gridspec_kw=dict(width_ratios=widths))
    cmap = ListedColormap(["#f2f2f2", "#4c8bc7"])
    for ax, (title, mask, S0) in zip(axes, panels, strict=True):
        grid = np.array(mask, dtype=float)
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=1, aspect="equal", interpolation="nearest")
        rows, cols = grid.shape
        ax.set_xticks(range(cols), [str(j) for j in range(cols)], fontsize=8)
        ax.set_yticks(range(rows), [str(S0 + i) for i in range(rows)], fontsize=8)
        ax.set_xticks(np.arange(-0.5, cols), minor=True)
        ax.set_yticks(np.arange(-0.5, rows), minor=True)
        ax.grid(which="minor", color="white", lw=1)
        ax.tick_params(which="minor", length=0)
        if S0:
            ax.axvline(S0 - 0.5, color="black", lw=1.2)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("key position j\n(cached | new)" if S0 else "key position j", fontsize=9)
    axes[0].set_ylabel("query position S + i", fontsize=9)
    fig.suptitle(MASK_TITLE.replace(": ", ":\n", 1) + "\n(blue: visible, j <= S + i)", fontsize=10)
    fig.tight_layout()
    return fig
