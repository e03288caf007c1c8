"""Workers for tests/test_tensor_parallel.py: the sharded MiniGPT against the single-process one,
on several checkpoints and random shapes, in one launch per W (starting processes is the slow part)."""

from __future__ import annotations

import torch

from minigpt.distributed.collectives import Collectives
from minigpt.distributed.tensor_parallel import TensorParallelMiniGPT
from minigpt.runtime.checkpoint import load_pretrained


def _run(model, tp, prompt: torch.Tensor, steps: int) -> dict:
    """Prefill then `steps` greedy decode steps on both models; the max |Δ logits| of each forward,
    the collectives each TP forward recorded, and the last step's (max, index) greedy token."""
    B, P = prompt.shape
    ref_cache, cache = model.new_cache(B, S_max=P + steps), tp.new_cache(B, S_max=P + steps)
    diffs, records, agree = [], [], True
    x = prompt
    with torch.no_grad():
        for _ in range(steps + 1):
            ref = model(x, ref_cache)
            tp.comm.reset()
            out = tp(x, cache)
            records.append(list(tp.comm.record))
            diffs.append(float((out - ref).abs().max()))
            x = ref[:, -1].argmax(dim=-1, keepdim=True)
            agree &= bool(torch.equal(out[:, -1].argmax(dim=-1, keepdim=True), x))
    v, r = tp.local.V, tp.comm.rank
    tp.comm.reset()
    pair = tp.greedy_token(out[:, -1, r * v:(r + 1) * v])
    return dict(diffs=diffs, records=records, agree=agree, cache_bytes=cache.nbytes, held_bytes=_held_bytes(tp),
                pair_ok=bool(torch.equal(pair, out[:, -1].argmax(dim=-1))),
                pair_record=list(tp.comm.record))


def _held_bytes(tp: TensorParallelMiniGPT) -> int:
    """Bytes of every tensor the rank's shard holds: its layers, the embedding, the positions, the final norm."""
    tensors = [tp.tok_emb, tp.pos_emb, *tp.ln_f]
    for p in tp.layers:
        for v in p.values():
            tensors += list(v) if isinstance(v, tuple) else [v]
    return sum(t.numel() * t.element_size() for t in tensors)


def _prompt(V: int, W: int, B: int, P: int, seed: int) -> torch.Tensor:
    """Random token ids, the first row starting with the first id of each rank's vocabulary shard (k·V/W: where
    a rank's local index is 0, the edge of its "outside my shard" test)."""
    prompt = torch.randint(0, V, (B, P), generator=torch.Generator().manual_seed(seed))
    starts = torch.arange(W) * (V // W)
    prompt[0, : min(P, W)] = starts[: min(P, W)]
    return prompt


def equivalence(rank: int, W: int, cases: list[tuple[str, int, int, int, int]], mutants: bool) -> list[dict]:
    """For each case (checkpoint, B, P, steps, seed): the comparison of `_run`. With `mutants`, the
    first case again with one extra all-reduce in the MLP, and with the MLP's all-reduce forgotten."""
    out = []
    for name, B, P, steps, seed in cases:
        model = load_pretrained(name=name).model
        prompt = _prompt(model.config.V, W, B, P, seed)
        out.append(_run(model, TensorParallelMiniGPT(model, Collectives(rank, W)), prompt, steps))
    if mutants:
        name, B, P, steps, seed = cases[0]
        model = load_pretrained(name=name).model
        prompt = _prompt(model.config.V, W, B, P, seed)
        for kind in ("extra", "forgotten"):
            tp = TensorParallelMiniGPT(model, Collectives(rank, W))
            tp.block = _mutated_block(tp, kind)
            out.append(dict(_run(model, tp, prompt, steps), mutant=kind))
    return out


def _mutated_block(tp: TensorParallelMiniGPT, kind: str):
    """A copy of `block` with one all-reduce too many or too few (the bugs the count must catch)."""
    import torch.nn.functional as F

    from minigpt.runtime.model import attention, causal_visible

    def block(p, x, cache, S):
        c, n = tp.local, tp.config
        B, T, _ = x.shape
        h = F.layer_norm(x, (n.d,), *p["ln1"])
        q, k, v = F.linear(h, p["qkv_w"], p["qkv_b"]).split(
            [c.H * c.d_h, c.H_kv * c.d_h, c.H_kv * c.d_h], dim=-1)
        q = q.view(B, T, c.H, c.d_h).transpose(1, 2)
        k, v = (t.view(B, T, c.H_kv, c.d_h).transpose(1, 2) for t in (k, v))
        k, v = cache.update(p["layer"], k, v)
        a = attention(q, k, v, causal_visible(S, T, x.device)).transpose(1, 2).reshape(B, T, -1)
        x = x + tp.comm.all_reduce(a @ p["out_w"].T) + p["out_b"]
        h = F.gelu(F.linear(F.layer_norm(x, (n.d,), *p["ln2"]), p["up_w"], p["up_b"]))
        partial = h @ p["down_w"].T
        if kind == "extra":  # reduced twice: W times the sum
            partial = tp.comm.all_reduce(tp.comm.all_reduce(partial))
        return x + partial + p["down_b"]  # "forgotten": this rank's partial sum only
    return block
