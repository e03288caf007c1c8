"""Chapter 13's figure: the hash chains of prompts that share prefixes, and the radix tree they form.

Drawn from the real mechanism: the prompts (characters as token ids) go through a `PrefixCache` on a small
`PagedKVCache`, the finished requests release their sequences, and the eviction order is found by
evicting one block at a time. matplotlib is imported inside the function.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minigpt.config import ModelConfig
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.serving.prefix_cache import ROOT, BlockKey, PrefixCache, block_hashes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PREFIX_TREE_TITLE = ("Equal keys are one shared block: the hash chains of three prompts form a radix tree, "
                     "and eviction frees its leaves first")
PROMPTS = ("Be terse. Capital of Peru?", "Be terse. Capital of Chad?", "Be terse. Translate hi")


@dataclass
class PrefixState:
    """The cache after serving `prompts`: each prompt's keys, which blocks a running request holds, and the
    order in which `evict` would free the rest (digest -> 1, 2, ...)."""

    keys: list[list[BlockKey]]
    held: set[bytes]
    evict_order: dict[bytes, int]
    children: dict[bytes, list[bytes]]


def prefix_state(prompts: tuple[str, ...] = PROMPTS, *, block_size: int = 4, running: tuple[int, ...] = (2,)
                 ) -> PrefixState:
    """Serve `prompts` one after the other through a prefix cache (each from the longest cached prefix);
    the requests not in `running` finish and release their blocks. Returns the state the figure draws."""
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}")
    tokens = [[ord(ch) for ch in p] for p in prompts]
    config = ModelConfig(L=1, H=1, H_kv=1, d_h=1, d_ffn=1, V=max(max(t) for t in tokens) + 1, S_max=512)
    pool = PagedKVCache(config, num_blocks=sum(len(t) // block_size + 1 for t in tokens), block_size=block_size)
    cache = PrefixCache(pool)
    keys = []
    for i, t in enumerate(tokens):
        k = block_hashes(t, block_size)
        found = cache.match(k)
        seq = pool.add_sequence_from(found, len(found) * block_size)
        pool.reserve([seq], len(t) - len(found) * block_size)
        for key, block in zip(k[len(found):], pool.block_table(seq)[len(found):], strict=False):
            cache.insert(key, block)
        if i not in running:
            pool.free_sequence(seq)
        keys.append(k)
    held = {key.digest for key, block in cache.items() if pool.allocator.refcount(block) > 1}
    children: dict[bytes, list[bytes]] = {}
    for chain in keys:
        for key in chain:
            kids = children.setdefault(key.parent, [])
            if key.digest not in kids:
                kids.append(key.digest)
    order: dict[bytes, int] = {}
    while cache.evictable:
        before = {key.digest for key, _ in cache.items()}
        cache.evict(1)
        (gone,) = before - {key.digest for key, _ in cache.items()}
        order[gone] = len(order) + 1
    return PrefixState(keys, held, order, children)


def _runs(state: PrefixState) -> list[tuple[list[bytes], bytes | None]]:
    """The radix tree's nodes: maximal runs of blocks with one child each, and each run's parent run's head."""
    text = {}
    for chain in state.keys:
        for key in chain:
            text[key.digest] = key
    runs = []

    def walk(digest: bytes, parent_run: bytes | None) -> None:
        run = [digest]
        while len(state.children.get(run[-1], [])) == 1:
            run.append(state.children[run[-1]][0])
        runs.append((run, parent_run))
        for child in state.children.get(run[-1], []):
            walk(child, run[0])

    for head in state.children.get(ROOT, []):
        walk(head, None)
    return runs


def prefix_tree_figure(prompts: tuple[str, ...] = PROMPTS, *, block_size: int = 4, running: tuple[int, ...] = (2,)
                       ) -> Figure:
    """Left: each prompt's chain of block keys (h_i = SHA-256(h_{i-1}, block i), first 4 hex digits), equal keys
    in equal colours. Right: the same keys as SGLang's radix tree (runs without a branch merged into one node),
    leaves that only the cache holds marked evictable, with the order `evict` frees blocks in."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    state = prefix_state(prompts, block_size=block_size, running=running)
    key_of = {k.digest: k for chain in state.keys for k in chain}
    sharers = {d: sum(d in {k.digest for k in chain} for chain in state.keys) for d in key_of}
    shade = {1: "#f2f2f2", 2: "#cfe3f5", 3: "#9cc3e6"}
    # one panel above the other, 6.8 in wide: shown unshrunk, 8 pt text is 11 px on the page
    fig, (left, right) = plt.subplots(2, 1, figsize=(6.8, 9.6), gridspec_kw={"height_ratios": [1, 1.25]})

    def label(key: BlockKey) -> str:
        return "".join(chr(t) for t in key.tokens).replace(" ", "␣")

    n = len(prompts)
    for row, (prompt, chain) in enumerate(zip(prompts, state.keys, strict=True)):
        y = n - 1 - row
        left.text(-0.2, y + 0.35, f"prompt {row + 1}" + (" (running)" if row in running else " (finished)"),
                  ha="right", va="center", fontsize=8.5)
        for i, key in enumerate(chain):
            fc = shade.get(sharers[key.digest], "#9cc3e6")
            left.add_patch(FancyBboxPatch((i, y), 0.86, 0.7, boxstyle="round,pad=0.02", fc=fc, ec="black", lw=0.7))
            left.text(i + 0.43, y + 0.47, label(key), ha="center", va="center", fontsize=8, family="monospace")
            left.text(i + 0.43, y + 0.17, key.digest[:2].hex(), ha="center", va="center", fontsize=8,
                      color="dimgray", family="monospace")
            if i:
                left.annotate("", xy=(i, y + 0.35), xytext=(i - 0.14, y + 0.35),
                              arrowprops=dict(arrowstyle="->", lw=0.7))
        tail = prompt[len(chain) * block_size:]
        if tail:
            x = len(chain)
            left.add_patch(FancyBboxPatch((x, y), 0.86, 0.7, boxstyle="round,pad=0.02", fc="white", ec="gray",
                                          lw=0.7, ls="--"))
            left.text(x + 0.43, y + 0.35, tail.replace(" ", "␣"), ha="center", va="center", fontsize=8,
                      family="monospace", color="gray")
    width = max(len(c) for c in state.keys) + 1
    left.set_xlim(-2.2, width)
    left.set_ylim(-0.3, n)
    left.set_title(f"Hash chains, b = {block_size} (key: first hex digits of SHA-256);\n"
                   "dashed: a partial block, never cached; darker: shared by more prompts", fontsize=8.5)
    left.axis("off")

    runs = _runs(state)
    # layout: leaves left to right, a parent centred over its children, depth downward
    kids: dict[bytes | None, list[bytes]] = {}
    for run, parent in runs:
        kids.setdefault(parent, []).append(run[0])
    by_head = {run[0]: run for run, _ in runs}
    xs: dict[bytes, float] = {}
    depth: dict[bytes, int] = {}
    counter = [0.0]

    def place(head: bytes, d: int) -> float:
        depth[head] = d
        below = kids.get(head, [])
        if not below:
            xs[head] = counter[0]
            counter[0] += 1.0
        else:
            xs[head] = sum(place(c, d + 1) for c in below) / len(below)
        return xs[head]

    roots = kids.get(None, [])
    for r in roots:
        place(r, 1)
    root_x = sum(xs[r] for r in roots) / len(roots)
    right.add_patch(FancyBboxPatch((root_x - 0.2, -0.25), 0.4, 0.4, boxstyle="round,pad=0.02", fc="white", ec="black"))
    right.text(root_x, -0.05, "root", ha="center", va="center", fontsize=8)
    for head, run in by_head.items():
        x, y = xs[head], depth[head] * 1.3
        leaf = not kids.get(head)
        held = any(d in state.held for d in run)
        fc = "#f6c9a8" if held else ("#c8e6c9" if leaf else "#cfe3f5")
        w = 0.92
        right.add_patch(FancyBboxPatch((x - w / 2, y - 0.32), w, 0.92, boxstyle="round,pad=0.02", fc=fc, ec="black",
                                       lw=0.7))
        right.text(x, y - 0.16, "|".join(label(key_of[d]) for d in run), ha="center", va="center", fontsize=8,
                   family="monospace")
        orders = [state.evict_order[d] for d in run if d in state.evict_order]
        status = "in use (running)" if held else ("evictable leaf" if leaf else "inner: after its children")
        if orders:
            status += ";\nevicted " + ", ".join(f"#{o}" for o in sorted(orders))
        right.text(x, y + 0.02, status.replace(": ", ":\n"), ha="center", va="top", fontsize=8, color="dimgray")
        parent = next(p for r, p in runs if r[0] == head)
        px, py = (root_x, 0.15) if parent is None else (xs[parent], depth[parent] * 1.3 + 0.62)
        right.annotate("", xy=(x, y - 0.34), xytext=(px, py),
                       arrowprops=dict(arrowstyle="->", lw=0.7))
    right.set_xlim(min(xs.values()) - 0.7, max(xs.values()) + 0.7)
    right.set_ylim(max(depth.values()) * 1.3 + 0.7, -0.5)
    right.set_title("The radix tree (RadixAttention): one node per unbranched run of blocks;\n"
                    "green: evictable leaf, orange: held by a running request; #k: eviction order", fontsize=8.5)
    right.axis("off")
    fig.suptitle(textwrap.fill(PREFIX_TREE_TITLE, 80), fontsize=10)
    fig.tight_layout()
    return fig
