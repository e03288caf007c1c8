"""One forward per engine step: every token the step schedules, flattened into one `[ΣT, d]` batch.

Orca's selective batching, vLLM and Sarathi-Serve run a step's prefill chunks (any lengths) and decodes
(T = 1) as one forward. Each sequence b of the step feeds T_b tokens after its S_b cached ones; the step's
ΣT_b tokens are laid end to end, each with its position S_b + i and its sequence. The embeddings, the
LayerNorms, the QKV and output projections, the MLP and the LM head are per token, so they run once over
the `[ΣT, d]` rows: one read of each weight matrix for the whole step. Only attention is per sequence:
sequence b's T_b queries attend to its own S_b + T_b keys with the offset causal mask (a *varlen*
attention), read through its block table (`minigpt.runtime.attention.paged`): on a paged pool the
decodes of the step in one call over all their blocks, each prompt chunk in its own call. The new keys and values
are written at their slots first (`reshape_and_cache`, by `slot_mapping`), so a query sees its own token.
The LM head runs only at the rows where a token is sampled (`logits_indices`).

The names are vLLM's and FlashAttention's: `input_ids`, `positions`, `cu_seqlens_q` (vLLM's
`query_start_loc`: where each sequence's rows start), `seq_lens` (S_b + T_b, FlashAttention's
`cu_seqlens_k` differenced), `context_lens` (S_b), `slot_mapping`, `block_tables`, `logits_indices`.
Where MiniGPT simplifies: the prompt chunks' attention is a Python loop over those sequences (a GPU
kernel launches one grid over all of them), and so is every sequence's on a slot cache.
`MiniGPT.forward` with its `[B, T]` batches is left as the rest of the book uses it; this module reads
the same weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from minigpt.runtime.attention.paged import paged_attention, paged_decode_attention
from minigpt.runtime.model import MiniGPT
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.runtime.sequence_pool import SequencePoolBase


@dataclass
class FlatBatch:
    """One step's tokens, flattened (see the module docstring); built by `flatten`, read by `forward_varlen`."""

    seqs: list[int]  # the pool's sequence ids, one per scheduled sequence b
    query_lens: list[int]  # T_b: tokens sequence b feeds in this step
    context_lens: list[int]  # S_b: tokens it holds before the step
    cu_seqlens_q: list[int]  # [B + 1]: sequence b's rows are cu_seqlens_q[b]:cu_seqlens_q[b+1]
    input_ids: torch.Tensor  # [ΣT] token ids
    positions: torch.Tensor  # [ΣT] S_b + i
    seq_index: torch.Tensor  # [ΣT] b of each row (what cu_seqlens_q says, per row)
    slot_mapping: torch.Tensor  # [ΣT] where each row's key and value are written
    block_tables: list[torch.Tensor]  # sequence b's pages holding its S_b + T_b keys (a slot cache: its slot)
    logits_indices: torch.Tensor  # rows whose logits are sampled, in order
    looped: list[int]  # the sequences whose attention runs one by one (prompt chunks; every one on a slot cache)
    decode: DecodeBlocks | None  # the decodes (T = 1) of a paged pool, attended all at once
    keys_read: int = 0  # key positions attention read (all layers), counted by `forward_varlen`

    @property
    def B(self) -> int:
        return len(self.seqs)

    @property
    def num_tokens(self) -> int:
        """ΣT_b, the rows of every per-token matmul of the step."""
        return self.cu_seqlens_q[-1]

    @property
    def seq_lens(self) -> list[int]:
        """S_b + T_b: the keys sequence b attends to."""
        return [S + T for S, T in zip(self.context_lens, self.query_lens, strict=True)]


@dataclass(frozen=True)
class DecodeBlocks:
    """The decoding sequences of a step on a paged pool, for `paged_decode_attention`: their rows, and all their
    blocks laid end to end (I = Σ ⌈(S_b + 1)/b⌉), each with its owner and the position of its first key."""

    rows: torch.Tensor  # [B_d] the decodes' rows in the step
    blocks: torch.Tensor  # [I] block ids
    owner: torch.Tensor  # [I] which decode (0..B_d−1) each block belongs to
    key_start: torch.Tensor  # [I] position of the block's first key
    seq_lens: torch.Tensor  # [B_d] S_b + 1


def flatten(pool: SequencePoolBase, seqs: Sequence[int], tokens: Sequence[Sequence[int]],
            samples: Sequence[bool] | None = None) -> FlatBatch:
    """The step in which sequence `seqs[b]` of `pool` feeds `tokens[b]`; logits at the last row of each b with
    `samples[b]` (all when None). Reserves the room (all or nothing); nothing is written until the forward."""
    seqs, tokens = list(seqs), [list(t) for t in tokens]
    samples = [True] * len(seqs) if samples is None else list(samples)
    if not seqs:
        raise ValueError("a step needs at least one sequence")
    if len(tokens) != len(seqs) or len(samples) != len(seqs):
        raise ValueError(f"seqs, tokens and samples must have one entry per sequence, got {len(seqs)}, "
                         f"{len(tokens)} and {len(samples)}")
    if len(set(seqs)) != len(seqs):
        raise ValueError(f"a sequence may appear once per step, got {seqs}")
    c = pool.config
    context_lens = [pool.length(s) for s in seqs]
    query_lens = [len(t) for t in tokens]
    for seq, S, T, ids in zip(seqs, context_lens, query_lens, tokens, strict=True):
        if T == 0:
            raise ValueError(f"sequence {seq} feeds no token; each sequence of a step feeds T >= 1")
        if min(ids) < 0 or max(ids) >= c.V:
            bad = min(ids) if min(ids) < 0 else max(ids)
            raise ValueError(f"token id {bad} is out of range: ids must be in 0..{c.V - 1} (V={c.V})")
        if S + T > c.S_max:
            raise ValueError(f"sequence {seq} of {S + T} tokens exceeds S_max={c.S_max} (the model's position table)")
    pool.reserve_each(seqs, query_lens)
    cu = [0]
    for T in query_lens:
        cu.append(cu[-1] + T)
    dev, long = pool.device, torch.long
    b = pool.page_size
    slots, tables, pages = [], [], []
    for seq, S, T in zip(seqs, context_lens, query_lens, strict=True):
        slots += pool.slot_mapping(seq, S, T)
        pages.append(pool.pages(seq)[: -(-(S + T) // b)])
        tables.append(torch.tensor(pages[-1], dtype=long, device=dev))
    decodes = [i for i, T in enumerate(query_lens) if T == 1] if isinstance(pool, PagedKVCache) else []
    decode = None
    if decodes:
        owner = [j for j, i in enumerate(decodes) for _ in pages[i]]
        decode = DecodeBlocks(
            rows=torch.tensor([cu[i] for i in decodes], dtype=long, device=dev),
            blocks=torch.tensor([p for i in decodes for p in pages[i]], dtype=long, device=dev),
            owner=torch.tensor(owner, dtype=long, device=dev),
            key_start=torch.tensor([k * b for i in decodes for k in range(len(pages[i]))], dtype=long, device=dev),
            seq_lens=torch.tensor([context_lens[i] + 1 for i in decodes], dtype=long, device=dev))
    return FlatBatch(
        seqs=seqs, query_lens=query_lens, context_lens=context_lens, cu_seqlens_q=cu,
        input_ids=torch.tensor([i for t in tokens for i in t], dtype=long, device=dev),
        positions=torch.tensor([S + i for S, T in zip(context_lens, query_lens, strict=True) for i in range(T)],
                               dtype=long, device=dev),
        seq_index=torch.repeat_interleave(torch.arange(len(seqs), device=dev),
                                          torch.tensor(query_lens, device=dev)),
        slot_mapping=torch.tensor(slots, dtype=long, device=dev), block_tables=tables,
        logits_indices=torch.tensor([cu[i + 1] - 1 for i, s in enumerate(samples) if s], dtype=long, device=dev),
        looped=sorted(set(range(len(seqs))) - set(decodes)), decode=decode,
    )


def forward_varlen(model: MiniGPT, pool: SequencePoolBase, batch: FlatBatch) -> torch.Tensor:
    """Logits `[len(logits_indices), V]` of one fused step; writes the step's K/V and advances every sequence.

    Every per-token layer runs once over the `[ΣT, d]` rows; attention runs per sequence over its own S_b + T_b
    keys, read through its block table (`paged_attention`). Token for token it computes what `MiniGPT.forward`
    computes for each sequence alone (to fp32 rounding: the matmuls' row counts differ).
    """
    c = model.config
    if pool.config != c:
        raise ValueError(f"pool was built for {pool.config}, but the model is {c}")
    if pool.dtype != model.dtype or pool.device != model.device:
        raise ValueError(f"pool is {pool.dtype} on {pool.device} but the model is {model.dtype} on {model.device}")
    N = batch.num_tokens
    x = model.tok_emb(batch.input_ids) + model.pos_emb(batch.positions)  # [ΣT, d]
    for layer, block in enumerate(model.blocks):
        attn = block.attn
        q, k, v = attn.qkv(block.ln1(x)).split([c.H * c.d_h, c.H_kv * c.d_h, c.H_kv * c.d_h], dim=-1)
        q = q.view(N, c.H, c.d_h)  # [ΣT, H, d_h]
        pool.reshape_and_cache(layer, batch.slot_mapping, k.view(N, c.H_kv, c.d_h), v.view(N, c.H_kv, c.d_h))
        a = torch.empty_like(q)
        d = batch.decode
        if d is not None:  # every decode at once, each over its own blocks
            k_blocks, v_blocks = pool.read_kv(layer, d.blocks, 0)  # [I, H_kv, b, d_h]
            batch.keys_read += k_blocks.shape[0] * k_blocks.shape[2]
            a[d.rows] = paged_decode_attention(q[d.rows], k_blocks, v_blocks, d.owner, d.key_start, d.seq_lens)
        for i in batch.looped:
            lo, hi = batch.cu_seqlens_q[i], batch.cu_seqlens_q[i + 1]
            S = batch.context_lens[i]
            k_blocks, v_blocks = pool.read_kv(layer, batch.block_tables[i], S + hi - lo)  # [n, H_kv, b, d_h]
            batch.keys_read += k_blocks.shape[0] * k_blocks.shape[2]
            a[lo:hi] = paged_attention(q[lo:hi], k_blocks, v_blocks, S)
        x = x + attn.out(a.view(N, c.d))
        x = x + block.mlp(block.ln2(x))
    for seq, T in zip(batch.seqs, batch.query_lens, strict=True):
        pool.advance([seq], T)
    x = x[batch.logits_indices]  # [samples, d]: the LM head only where a token is drawn
    return model.ln_f(x) @ model.tok_emb.weight.T  # [samples, V]
