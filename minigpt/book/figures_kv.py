"""Part III's figures of how the KV cache is laid out, drawn from the package's own mechanisms.

`gqa_figure` (Chapter 9): which query heads share which key/value head for several H_kv, found by running
`minigpt.runtime.model.attention`, and the rows of cache each layout stores per token. `scale_layout_figure`
(Chapter 10): which stored values share one quantization scale, found by probing `quantize` and
`quantize_per_channel`, for int8 per token, int4 in groups, KIVI's keys per channel, and FP8. matplotlib is
imported inside the functions, so ``import minigpt`` stays light.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from minigpt import costs
from minigpt.config import ModelConfig
from minigpt.costs.kv_storage import KV_LAYOUTS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

GQA_TITLE = ("Fewer K/V heads, the same query heads: each K/V head serves g = H / H_kv of them, "
             "and a token stores only 2·H_kv rows per layer")
SCALE_TITLE = ("Which values share a scale: a token's vector (int8), a group of it (int4), a channel over "
               "G tokens (KIVI's keys), or the whole layer (FP8)")
_COLORS = ["#4c8bc7", "#e8893a", "#5bb35b", "#c75a5a", "#9b7ec7", "#b38a5b", "#d98bc0", "#8c8c8c"]


def kv_head_of_query(H: int, H_kv: int) -> list[int]:
    """The K/V head each of the H query heads reads, found by running `attention` (one key, each K/V head's value
    vector filled with its index): query head h reads K/V head h // (H / H_kv)."""
    import torch

    from minigpt.runtime.model import attention

    for name, value in (("H", H), ("H_kv", H_kv)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if H % H_kv:
        raise ValueError(f"H_kv must divide H = {H}, got {H_kv}")
    q = torch.randn(1, H, 1, 2, generator=torch.Generator().manual_seed(0))  # [B, H, T, d_h]
    k = torch.zeros(1, H_kv, 1, 2)  # one key: every query gives it weight 1
    v = torch.arange(H_kv, dtype=torch.float32).view(1, H_kv, 1, 1).expand(1, H_kv, 1, 2)
    out = attention(q, k, v, None)  # [B, H, T, d_h]: each query head returns its K/V head's index
    return [round(float(x)) for x in out[0, :, 0, 0]]


def gqa_figure(config: ModelConfig | None = None, *, H_kv_values: tuple[int, ...] | None = None,
               s: int = 4) -> Figure:
    """One panel per H_kv (default H, 2 and 1: MHA, GQA, MQA): the H query heads, the H_kv K/V heads they read,
    and one token's rows in one layer of the cache (a key and a value row of d_h values per K/V head), with the
    bytes per token of Eq. (9.1) at s bytes a value."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    c = config or ModelConfig()
    values = H_kv_values or tuple(dict.fromkeys(h for h in (c.H, 2, 1) if h <= c.H and c.H % h == 0))
    if any(isinstance(h, bool) or not isinstance(h, int) or h < 1 or c.H % h for h in values):
        raise ValueError(f"H_kv_values must be integers that divide H = {c.H}, got {values!r}")
    fig, axes = plt.subplots(len(values), 1, figsize=(6.4, 2.7 * len(values)), squeeze=False)
    per_mha = costs.kv_bytes_per_token(L=c.L, H_kv=c.H, d_h=c.d_h, s=s)
    for ax, H_kv in zip(axes[:, 0], values, strict=True):
        g = c.H // H_kv
        reads = kv_head_of_query(c.H, H_kv)
        ax.set(xlim=(0, c.H), ylim=(-0.35, 3.3))
        ax.axis("off")
        for h, j in enumerate(reads):
            color = _COLORS[j % len(_COLORS)]
            ax.add_patch(Rectangle((h + 0.1, 2.5), 0.8, 0.5, fc=color, ec="black", lw=0.8, alpha=0.55, gid="q"))
            ax.text(h + 0.5, 2.75, f"q{h}", ha="center", va="center", fontsize=8)
            x_kv = (j + 0.5) * c.H / H_kv
            ax.plot([h + 0.5, x_kv], [2.5, 1.85], color=color, lw=1.2)
        width = c.H / H_kv
        for j in range(H_kv):
            x0 = j * width
            ax.add_patch(Rectangle((x0 + 0.1, 1.35), width - 0.2, 0.5, fc=_COLORS[j % len(_COLORS)], ec="black",
                                   lw=0.8, gid="kv"))
            ax.text(x0 + width / 2, 1.6, f"k{j}, v{j}", ha="center", va="center", fontsize=8)
            for r, part in enumerate(("k", "v")):  # one token's key and value row of this K/V head
                ax.add_patch(Rectangle((x0 + 0.1 + r * (width - 0.2) / 2, 0.45), (width - 0.2) / 2 - 0.04, 0.3,
                                       fc=_COLORS[j % len(_COLORS)], ec="black", lw=0.5,
                                       alpha=0.85 if part == "k" else 0.45, gid="row"))
        kind = "MHA" if H_kv == c.H else "MQA" if H_kv == 1 else "GQA"
        per_token = costs.kv_bytes_per_token(L=c.L, H_kv=H_kv, d_h=c.d_h, s=s)
        ax.text(c.H / 2, 0.2, f"one token, one layer: {2 * H_kv} rows of d_h = {c.d_h} (dark k, light v)\n"
                f"{costs.fmt_bytes(per_token)} per token over L = {c.L} (Eq. 9.1, s = {s}), "
                f"{per_mha // per_token}x less than MHA", ha="center", va="top", fontsize=8)
        ax.text(-0.05, 2.75, "query\nheads", ha="right", va="center", fontsize=8)
        ax.text(-0.05, 1.6, "K/V\nheads", ha="right", va="center", fontsize=8)
        ax.text(-0.05, 0.6, "cache\nrows", ha="right", va="center", fontsize=8)
        ax.set_title(f"{kind}: H = {c.H}, H_kv = {H_kv}, g = {g}", fontsize=9)
    fig.suptitle(textwrap.fill(GQA_TITLE, 80), fontsize=10)
    fig.tight_layout(rect=(0.08, 0, 1, 1))
    return fig


def scale_groups(layout: str, *, T: int, d_h: int, bits: int = 4, group_size: int | None = None,
                 token_group: int = 8) -> list[list[int]]:
    """Which of a `[T, d_h]` block of stored values share a scale, as a group id per value. Found by probing the
    package's quantizers: one value made large changes what comes back for exactly the values that share its
    scale. "per_token": `quantize` with groups of `group_size` (d_h by default); "kivi": `quantize_per_channel`
    over blocks of `token_group` tokens (KIVI's keys); "fp8": one scale per layer (`FP8KVCache.k_scale` is
    `[L]`), so every value of the block shares it."""
    import torch

    from minigpt.runtime.quantized_cache import (
        FP8KVCache,
        dequantize,
        dequantize_per_channel,
        quantize,
        quantize_per_channel,
    )

    for name, value in (("T", T), ("d_h", d_h), ("token_group", token_group)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if layout == "fp8":
        config = ModelConfig(L=2, H=1, H_kv=1, d_h=d_h, d_ffn=1, V=2, S_max=T)
        assert FP8KVCache(config, 1).k_scale.shape == (config.L,)  # one scale per layer, nothing finer
        return [[0] * d_h for _ in range(T)]
    if layout == "per_token":
        g = group_size or d_h

        def round_trip(x: torch.Tensor) -> torch.Tensor:
            codes, scales = quantize(x, bits=bits, group_size=g)
            return dequantize(codes, scales, bits=bits, group_size=g, dtype=torch.float32)
    elif layout == "kivi":
        if T % token_group:
            raise ValueError(f"T must be a multiple of token_group = {token_group}, got {T}")

        def round_trip(x: torch.Tensor) -> torch.Tensor:
            codes, scales = quantize_per_channel(x, bits=bits, token_group=token_group)
            return dequantize_per_channel(codes, scales, bits=bits, token_group=token_group, dtype=torch.float32)
    else:
        raise ValueError(f"layout must be one of {list(KV_LAYOUTS)}, got {layout!r}")
    ones = torch.ones(T, d_h)
    base = round_trip(ones)
    group = [[-1] * d_h for _ in range(T)]
    count = 0
    for t in range(T):
        for i in range(d_h):
            if group[t][i] >= 0:
                continue
            x = ones.clone()
            x[t, i] = 100.0
            shared = (round_trip(x) != base).nonzero().tolist()
            for tt, ii in shared:
                group[tt][ii] = count
            group[t][i] = count
            count += 1
    return group


def _colour_groups(groups):
    """A colour index per value such that neighbouring values of different groups differ (greedy, in group
    order), so every group of `groups` `[T, d_h]` reads as one patch."""
    import numpy as np

    colour: dict[int, int] = {}
    T, d_h = groups.shape
    for gid in sorted(set(groups.flatten().tolist())):
        near = set()
        for t, i in zip(*np.nonzero(groups == gid), strict=True):
            for tt, ii in ((t - 1, i), (t + 1, i), (t, i - 1), (t, i + 1)):
                if 0 <= tt < T and 0 <= ii < d_h and int(groups[tt, ii]) in colour:
                    near.add(colour[int(groups[tt, ii])])
        colour[gid] = min(c for c in range(len(_COLORS)) if c not in near)
    return np.vectorize(colour.get)(groups)


def scale_layout_figure(*, T: int = 16, d_h: int = 16, group_size: int = 8, token_group: int = 8,
                        L: int = 4, H_kv: int = 4) -> Figure:
    """Four `[T, d_h]` blocks of stored keys, each value coloured by the scale it shares: int8 with one scale per
    token vector, int4 in groups of `group_size`, int4 keys per channel over `token_group` tokens (KIVI), FP8
    with one scale per layer; under each, the bytes per token of that layout (`costs.kv_storage_bytes`) for a
    cache of L layers and H_kv heads."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import ListedColormap

    panels = [
        ("int8, one scale per token vector", "per_token", 8, None),
        (f"int4, groups of g = {group_size} values", "per_token", 4, group_size),
        (f"int4 keys per channel (KIVI), G = {token_group}", "kivi", 4, None),
        ("FP8 E4M3: no scale per token", "fp8", 8, None),
    ]
    fig, axes = plt.subplots(2, 2, figsize=(6.8, 8.2), sharey=True)  # two by two: 8 pt stays 11 px
    axes = axes.ravel()
    shape = dict(L=L, H_kv=H_kv, d_h=d_h)
    for ax, (title, layout, bits, g) in zip(axes, panels, strict=True):
        groups = np.array(scale_groups(layout, T=T, d_h=d_h, bits=bits, group_size=g, token_group=token_group))
        n = int(groups.max()) + 1
        colour = _colour_groups(groups)
        k = int(colour.max()) + 1
        ax.imshow(colour, cmap=ListedColormap(_COLORS[:k]), vmin=-0.5, vmax=k - 0.5, aspect="auto",
                  interpolation="nearest", alpha=0.8)
        ax.set_xticks(np.arange(-0.5, d_h), minor=True)
        ax.set_yticks(np.arange(-0.5, T), minor=True)
        ax.grid(which="minor", color="white", lw=0.6)
        ax.tick_params(which="minor", length=0)
        args = dict(layout=layout, bits=bits, group_size=g)
        if layout == "kivi":
            args["token_group"] = token_group
        if layout == "fp8":
            args = dict(layout="fp8")
        # bytes of G more tokens over G: the cost of a token (KIVI's in whole blocks; FP8's per-layer scales
        # are per cache, not per token)
        more = [costs.kv_storage_bytes(**shape, S=n_tok, **args) for n_tok in (token_group, 2 * token_group)]
        per_token = (more[1] - more[0]) / token_group
        bf16 = costs.kv_bytes_per_token(**shape, s=2)
        ax.set_title(f"{title}\n{n} scale{'s' if n > 1 else ''} for these {T} x {d_h} values", fontsize=9)
        ax.set_xlabel(f"channel (d_h = {d_h})\n{costs.fmt_bytes(per_token)} a token (K and V), L = {L}, "
                      f"H_kv = {H_kv}\n(bf16: {costs.fmt_bytes(bf16)})", fontsize=8)
    axes[0].set_ylabel("token")
    axes[2].set_ylabel("token")
    fig.suptitle(textwrap.fill(SCALE_TITLE, 80), fontsize=10)
    fig.tight_layout()
    return fig
