"""Mixed and ragged steps (issue 22): fused against unfused, paged against slots and a contiguous cache."""

from __future__ import annotations

from collections.abc import Callable

import torch

from minigpt import MiniGPT, measure
from minigpt.runtime.attention.paged import paged_attention, paged_decode_attention
from minigpt.runtime.model import attention
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.runtime.sequence_pool import SequencePoolBase
from minigpt.runtime.slot_cache import SlotKVCache
from minigpt.runtime.varlen import flatten, forward_varlen


def _filled(model: MiniGPT, pool: SequencePoolBase, lengths: list[int]) -> list[int]:
    """Sequences of `pool` holding `lengths` tokens each (prefilled one by one, random ids)."""
    seqs = [pool.add_sequence() for _ in lengths]
    with torch.no_grad():
        for seq, S in zip(seqs, lengths, strict=True):
            forward_varlen(model, pool, flatten(pool, [seq], [torch.randint(0, model.config.V, (S,)).tolist()]))
    return seqs


def _rewound(pool: SequencePoolBase, seqs: list[int], fn: Callable[[], object]) -> Callable[[], None]:
    """`fn`, then each sequence set back to its length now: a step repeated on the same state (blocks stay)."""
    lengths = {s: pool.length(s) for s in seqs}

    def step() -> None:
        with torch.no_grad():
            fn()
        for s, S in lengths.items():
            pool._lengths[s] = S

    return step


def _time(fn: Callable[[], None], repeats: int) -> dict[str, float]:
    t = measure.time_fn(fn, warmup=1, repeats=repeats, clock="thread")
    return {"median_ms": 1e3 * t.median_s, "min_ms": 1e3 * t.min_s, "max_ms": 1e3 * max(t.times)}


def fused_vs_unfused(model: MiniGPT, Bs: list[int], repeats: int, *, S: int = 60, chunk: int = 128,
                     S_prefix: int = 128) -> list[dict]:
    """A mixed step, B decodes at S plus a `chunk`-token prompt chunk after S_prefix: one fused forward
    (`forward_varlen`) against the unfused executor's two (`MiniGPT.forward` on a padded ragged batch per T)."""
    rows = [_fused_row(model, B, repeats, S, chunk, S_prefix) for B in Bs]
    return rows


def _fused_row(model: MiniGPT, B: int, repeats: int, S: int, chunk: int, S_prefix: int) -> dict:
    b = 16
    pool = PagedKVCache(model.config, num_blocks=B * -(-(S + 1) // b) + -(-(S_prefix + chunk) // b) + 1,
                        block_size=b)
    decodes = _filled(model, pool, [S] * B)
    prompt = _filled(model, pool, [S_prefix])[0]
    chunk_ids = torch.randint(0, model.config.V, (1, chunk))
    seqs = [*decodes, prompt]
    fused = _rewound(pool, seqs, lambda: forward_varlen(model, pool, flatten(
        pool, seqs, [[1]] * B + [chunk_ids[0].tolist()], [True] * B + [False])))

    def two_forwards() -> None:
        model(chunk_ids, pool.batch([prompt]), last_only=True)
        model(torch.ones(B, 1, dtype=torch.long), pool.batch(decodes))

    unfused = _rewound(pool, seqs, two_forwards)
    f, u = _time(fused, repeats), _time(unfused, repeats)
    row = {"B": B, "S": S, "chunk": chunk, "S_prefix": S_prefix, "fused": f, "unfused": u,
           "unfused_over_fused": u["median_ms"] / f["median_ms"]}
    print(f"  B={B:3d}: fused {f['median_ms']:7.1f} ms ({f['min_ms']:.1f}-{f['max_ms']:.1f}), unfused "
          f"{u['median_ms']:7.1f} ms ({u['min_ms']:.1f}-{u['max_ms']:.1f}): x{row['unfused_over_fused']:.2f}")
    return row


def paged_vs_slot(model: MiniGPT, repeats: int, workloads: dict[str, list[int]]) -> list[dict]:
    """A decode step (every sequence one token) and layer 0's attention alone, at each workload's lengths:
    fused through the block table, fused from slots, a contiguous `KVCache` (uniform lengths only), and the
    old padded ragged batches of both pools (`write_and_gather`)."""
    return [_paged_row(model, name, lengths, repeats) for name, lengths in workloads.items()]


def _paged_row(model: MiniGPT, name: str, lengths: list[int], repeats: int) -> dict:
    c, b = model.config, 16
    B = len(lengths)
    paged = PagedKVCache(c, num_blocks=sum(-(-(S + 1) // b) for S in lengths) + 1, block_size=b)
    slots = SlotKVCache(c, slots=B)
    p_ids, s_ids = _filled(model, paged, lengths), _filled(model, slots, lengths)
    one = torch.ones(B, 1, dtype=torch.long)
    step = {
        "fused_paged": _rewound(paged, p_ids, lambda: forward_varlen(model, paged, flatten(
            paged, p_ids, [[1]] * B))),
        "fused_slot": _rewound(slots, s_ids, lambda: forward_varlen(model, slots, flatten(
            slots, s_ids, [[1]] * B))),
        "padded_paged": _rewound(paged, p_ids, lambda: model(one, paged.batch(p_ids))),
        "padded_slot": _rewound(slots, s_ids, lambda: model(one, slots.batch(s_ids))),
    }
    # attention alone, one layer: the same queries against each layout's keys
    q = torch.randn(B, c.H, c.d_h)
    batch = flatten(paged, p_ids, [[1]] * B)
    d = batch.decode
    kb, vb = paged.read_kv(0, d.blocks, 0)
    views = [slots.read_kv(0, torch.tensor(slots.pages(s)), S + 1) for s, S in zip(s_ids, lengths, strict=True)]
    attn = {
        "fused_paged": lambda: paged_decode_attention(q, *paged.read_kv(0, d.blocks, 0), d.owner, d.key_start,
                                                      d.seq_lens),
        "fused_slot": lambda: [paged_attention(q[i : i + 1], *views[i], lengths[i]) for i in range(B)],
    }
    del kb, vb
    if len(set(lengths)) == 1:
        cache = model.new_cache(B)
        with torch.no_grad():
            model(torch.randint(0, c.V, (B, lengths[0])), cache)
        step["contiguous"] = _rewound(slots, [], lambda: (model(one, cache), cache.truncate(lengths[0])))
        kc, vc = cache.k[0, :, :, : lengths[0] + 1], cache.v[0, :, :, : lengths[0] + 1]
        attn["contiguous"] = lambda: attention(q.view(B, c.H, 1, c.d_h), kc, vc, None)
    row = {"workload": name, "lengths": lengths, "sum_S": sum(lengths), "B": B,
           "step": {k: _time(f, repeats) for k, f in step.items()},
           "attention": {k: _time(f, repeats * 3) for k, f in attn.items()}}
    for part in ("step", "attention"):
        base = row[part]["fused_slot"]["median_ms"]
        text = ", ".join(f"{k} {v['median_ms']:.2f} ms (x{v['median_ms'] / base:.2f})"
                         for k, v in row[part].items())
        print(f"  {name} Σ S_b={sum(lengths)}, {part}: {text}")
    return row
