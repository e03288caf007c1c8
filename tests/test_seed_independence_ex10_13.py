"""A grade does not depend on the class seed (ex10 to ex13): a plausible wrong answer to each question, graded as
the grader grades under 40 seeds (`tests/seed_harness.py`), loses the question under every one.

Each wrong answer is named by the edge of `Question.edges` that catches it; its docstring names the bug, and says
so when the bug differs on every input (then the random cases catch it anyway).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from seed_harness import Make, seeds_passed

from minigpt import costs
from minigpt.costs.presets import HARDWARE, MODELS
from minigpt.exercises.case_inputs import build

# -- ex10: a quantized KV cache ----------------------------------------------------------------------------------


def _one_scale(x: torch.Tensor) -> torch.Tensor:
    """ex10 Q1 with one scale for the whole tensor (its largest |x|) instead of one per vector."""
    scale = (x.abs().amax() / 127).half().float()
    return (x / scale).round().clamp(-127, 127) * scale


def _fp32_scale(x: torch.Tensor) -> torch.Tensor:
    """ex10 Q1 with the scale kept in fp32 (no .half()); it differs on every input."""
    scale = x.abs().amax(-1, keepdim=True) / 127
    return (x / scale).round().clamp(-127, 127) * scale


def _bytes_per_vector_scale(L: int, H_kv: int, d_h: int, bits: int, group_size: int) -> int:
    """ex10 Q2 with one fp16 scale per vector instead of one per group of group_size values."""
    return 2 * L * H_kv * (d_h * bits // 8 + 2)


def _bytes_no_kv_factor(L: int, H_kv: int, d_h: int, bits: int, group_size: int) -> int:
    """ex10 Q2 with the factor 2 for K and V left out; it differs on every input."""
    return L * H_kv * (d_h * bits // 8 + d_h // group_size * 2)


def _kl_summed(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    """ex10 Q3 summed over the rows instead of averaged."""
    log_p, log_q = F.log_softmax(p_logits.double(), -1), F.log_softmax(q_logits.double(), -1)
    return (log_p.exp() * (log_p - log_q)).sum().item()


def _kl_reversed(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    """ex10 Q3 as KL(q‖p) (the cache's distribution as the reference); it differs on every input."""
    log_p, log_q = F.log_softmax(p_logits.double(), -1), F.log_softmax(q_logits.double(), -1)
    return (log_q.exp() * (log_q - log_p)).sum(-1).mean().item()


def _preset(model: Any) -> Any:
    """The harness hands a preset as its JSON name (`{"$preset": ...}`); the trusted side resolves it."""
    return build(model)


def _gain_one_sequence(oracle: Callable[..., Any]) -> Callable[..., Any]:
    """ex10 Q4 with one sequence's cache per step (B left out): the package's gain at B = 1."""
    def wrong(model: Any, S: int, B: int, bits: int, group_size: int) -> float:
        return oracle(model=_preset(model), S=S, B=1, bits=bits, group_size=group_size)
    return wrong


def _gain_no_scales(model: Any, S: int, B: int, bits: int, group_size: int) -> float:
    """ex10 Q4 with the quantized cache counted as its codes alone (the fp16 scales left out); it differs on every
    input."""
    m = _preset(model)
    weights = costs.weight_bytes(N_params=m.N_params, s=2)
    bf16 = costs.kv_bytes_per_token(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2)
    codes = 2 * m.L * m.H_kv * m.d_h * bits // 8
    step = [costs.decode_step_bytes(weight_bytes=weights, kv_bytes_per_token=kv, S=S, B=B) for kv in (bf16, codes)]
    return step[0] / step[1]


def _per_channel(k: torch.Tensor, token_group: int, outliers: list[int], factor: float, block: int | None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys with the outliers scaled, int8 absmax with one fp16 scale per channel over `block` tokens."""
    k = k.clone()
    k[..., outliers] *= factor
    H, T, d = k.shape
    G = T if block is None else block
    blocks = k.view(H, T // G, G, d)
    scales = (blocks.abs().amax(-2, keepdim=True) / 127).half().float()
    back = ((blocks / scales).round().clamp(-127, 127) * scales).view(H, T, d)
    return back, scales.squeeze(-2)


def _channel_whole_T(k: torch.Tensor, token_group: int, outliers: list[int], factor: float
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """ex10 Q5 with one scale per channel over all T tokens (token_group ignored)."""
    return _per_channel(k, token_group, outliers, factor, None)


def _channel_per_token(k: torch.Tensor, token_group: int, outliers: list[int], factor: float
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """ex10 Q5 with one scale per token's vector (q1's layout) instead of per channel; it differs on every input."""
    k = k.clone()
    k[..., outliers] *= factor
    scales = (k.abs().amax(-1, keepdim=True) / 127).half().float()
    return (k / scales).round().clamp(-127, 127) * scales, scales.squeeze(-1)


# -- ex11: PagedAttention ----------------------------------------------------------------------------------------


def _slack_per_sequence(tables: list[list[int]], lengths: list[int], block_size: int) -> int:
    """ex11 Q1 as Eq. (11.1) summed over the sequences: a shared, partly filled block's empty slots counted once
    per holder."""
    return sum(-(-S // block_size) * block_size - S for S in lengths)


def _filled(tables: list[list[int]], lengths: list[int], block_size: int) -> dict[int, int]:
    """Each distinct block's tokens (what the right answer counts)."""
    return {block: min(block_size, S - i * block_size)
            for table, S in zip(tables, lengths, strict=True) for i, block in enumerate(table)}


def _slack_blocks_per_holder(tables: list[list[int]], lengths: list[int], block_size: int) -> int:
    """ex11 Q1 with the blocks of every table reserved, a shared block once per holder (its tokens once)."""
    return sum(map(len, tables)) * block_size - sum(_filled(tables, lengths, block_size).values())


def _slack_tokens_per_holder(tables: list[list[int]], lengths: list[int], block_size: int) -> int:
    """ex11 Q1 with each block reserved once but the tokens counted once per holder (ΣS)."""
    return len(_filled(tables, lengths, block_size)) * block_size - sum(lengths)


def _slack_last_blocks(tables: list[list[int]], lengths: list[int], block_size: int, *, remainder: bool = False,
                       empty_block: bool = False) -> int:
    """ex11 Q1 over the distinct last blocks (only a last block can be partly filled; a shared one once), with
    `remainder`: b − S % b, a whole empty block when S is a multiple of b; with `empty_block`: an empty sequence
    holding one block."""
    last, total = set(), 0
    for table, S in zip(tables, lengths, strict=True):
        if not table:
            total += block_size if empty_block else 0
        elif table[-1] not in last:
            last.add(table[-1])
            total += block_size - S % block_size if remainder else -S % block_size
    return total


def _step(tables: list[list[int]], lengths: list[int], counts: list[int], block_size: int, *,
          start: Callable[[int, int], int] = lambda i, S: S, block: Callable[[int, int], int] = lambda p, b: p // b,
          slot: Callable[[int, int, int], int] = lambda blk, row, b: blk * b + row,
          one_per_sequence: bool = False, consecutive: bool = False) -> list[int]:
    """ex11 Q2 written from scratch, with a switch for each wrong neighbour below."""
    b, out = block_size, []
    for i, (table, S, T) in enumerate(zip(tables, lengths, counts, strict=True)):
        first = start(i, S)
        for j in range(1 if one_per_sequence else T):
            p = first + j
            if consecutive:
                out.append(table[first // b] * b + first % b + j)
            else:
                out.append(slot(table[block(p, b)], p % b, b))
    return out


def _step_from_zero(tables: list[list[int]], lengths: list[int], counts: list[int], block_size: int) -> list[int]:
    """ex11 Q2 with the new tokens at positions 0 … T − 1 of their sequence (the cached ones forgotten)."""
    return _step(tables, lengths, counts, block_size, start=lambda i, S: 0)


def _step_one_late(tables: list[list[int]], lengths: list[int], counts: list[int], block_size: int) -> list[int]:
    """ex11 Q2 with the first new token at S + 1 (the length taken for the last position)."""
    return _step(tables, lengths, counts, block_size, start=lambda i, S: S + 1)


def _step_ceil(tables: list[list[int]], lengths: list[int], counts: list[int], block_size: int) -> list[int]:
    """ex11 Q2 with the logical block rounded up, ⌈p / b⌉."""
    return _step(tables, lengths, counts, block_size, block=lambda p, b: -(-p // b))


def _step_logical(tables: list[list[int]], lengths: list[int], counts: list[int], block_size: int) -> list[int]:
    """ex11 Q2 returning the logical slot p, the table not consulted."""
    return [S + j for S, T in zip(lengths, counts, strict=True) for j in range(T)]


def _step_no_times_b(tables: list[list[int]], lengths: list[int], counts: list[int], block_size: int) -> list[int]:
    """ex11 Q2 as block id + row: the block's id not multiplied by b."""
    return _step(tables, lengths, counts, block_size, slot=lambda blk, row, b: blk + row)


def _step_consecutive(tables: list[list[int]], lengths: list[int], counts: list[int], block_size: int
                      ) -> list[int]:
    """ex11 Q2 with each sequence's slots laid consecutively from its first new token's, as if its blocks were
    numbered one after another (a contiguous cache's view of a paged one)."""
    return _step(tables, lengths, counts, block_size, consecutive=True)


def _step_common_start(tables: list[list[int]], lengths: list[int], counts: list[int], block_size: int
                       ) -> list[int]:
    """ex11 Q2 with one start for the whole step, the first sequence's length (a `[B, T]` batch's S)."""
    return _step(tables, lengths, counts, block_size, start=lambda i, S: lengths[0])


def _step_one_per_sequence(tables: list[list[int]], lengths: list[int], counts: list[int], block_size: int
                           ) -> list[int]:
    """ex11 Q2 with one slot per sequence, as if every sequence decoded (counts ignored)."""
    return _step(tables, lengths, counts, block_size, one_per_sequence=True)


def _schedule(requests: list[list[int]], num_blocks: int, block_size: int, reservation: str, *,
              reserve_all: bool | None = None, plus_one: int = 0, early: int = 0, oldest: bool = False,
              tail: bool = False, restart: bool = False, prompt_only: bool = False, skip: bool = False,
              late: bool = False) -> list[int]:
    """ex11 Q3 from scratch (each request a record; the batch and the queue hold records), with a switch for
    each wrong neighbour below; a neighbour that never finishes is cut after 2,000 steps, its counts ended by −1."""
    b = block_size
    paged = reservation == "paged" if reserve_all is None else not reserve_all
    reqs = [{"id": i, "P": P, "D": D, "g": 0, "blocks": 0} for i, (P, D) in enumerate(requests)]
    queue, batch, free, counts, freeing = list(reqs), [], num_blocks, [], 0

    def blocks(tokens: int) -> int:
        return -(-tokens // b)

    def size(req: dict) -> int:
        if not paged:
            return req["P"] + req["D"] - 1 + plus_one
        return req["P"] if prompt_only else req["P"] + req["g"] + early

    while (queue or batch) and len(counts) < 2000:
        stepped: list[dict] = []
        for req in list(batch):
            if all(r["id"] != req["id"] for r in batch):
                continue
            want = blocks(req["P"] + req["g"] + early) - req["blocks"] if paged else 0
            while want > free and any(r["id"] == req["id"] for r in batch):
                out = batch.pop(0 if oldest else -1)
                free, out["blocks"] = free + out["blocks"], 0
                stepped = [r for r in stepped if r["id"] != out["id"]]
                out["g"] = 0 if restart else out["g"]
                queue.insert(len(queue) if tail else 0, out)
            if any(r["id"] == req["id"] for r in batch):
                free, req["blocks"] = free - want, req["blocks"] + want
                stepped.append(req)
        i = 0
        while i < len(queue):
            need = blocks(size(queue[i]))
            if need > free:
                if not skip:
                    break
                i += 1
                continue
            req = queue.pop(i)
            batch.append(req)
            free, req["blocks"] = free - need, need
            stepped.append(req)
        counts.append(len(stepped))
        free, freeing = free + freeing, 0
        for req in stepped:
            req["g"] += 1
            if req["g"] == req["D"]:
                batch = [r for r in batch if r["id"] != req["id"]]
                if late:
                    freeing += req["blocks"]
                else:
                    free += req["blocks"]
                req["blocks"] = 0
    return counts if not (queue or batch) else [*counts, -1]


def _running_reserving(**case: Any) -> list[int]:
    """ex11 Q3 with every request given the blocks of P + D − 1 tokens on admission, paged or not."""
    return _schedule(**case, reserve_all=True)


def _running_growing(**case: Any) -> list[int]:
    """ex11 Q3 with every request grown on demand, max_tokens or not."""
    return _schedule(**case, reserve_all=False)


def _running_plus_one(**case: Any) -> list[int]:
    """ex11 Q3 with max_tokens reserving the blocks of P + D tokens (the last token counted as written)."""
    return _schedule(**case, plus_one=1)


def _running_early(**case: Any) -> list[int]:
    """ex11 Q3 with a paged request holding P + g tokens after g, not P + g − 1: each new block one token early."""
    return _schedule(**case, early=1)


def _running_oldest(**case: Any) -> list[int]:
    """ex11 Q3 with the oldest running request preempted instead of the youngest."""
    return _schedule(**case, oldest=True)


def _running_tail(**case: Any) -> list[int]:
    """ex11 Q3 with a preempted request put at the tail of the queue instead of its head."""
    return _schedule(**case, tail=True)


def _running_restart(**case: Any) -> list[int]:
    """ex11 Q3 with a preempted request starting over: its generated tokens forgotten, D tokens to generate again."""
    return _schedule(**case, restart=True)


def _running_prompt_only(**case: Any) -> list[int]:
    """ex11 Q3 with a recomputed request readmitted on the blocks of its prompt alone (P, not P + g)."""
    return _schedule(**case, prompt_only=True)


def _running_skip(**case: Any) -> list[int]:
    """ex11 Q3 admitting every waiting request that fits, the ones behind a head that does not fit included."""
    return _schedule(**case, skip=True)


def _running_late(**case: Any) -> list[int]:
    """ex11 Q3 with a finished request's blocks free one step late (not for the next step's decodes and
    admissions)."""
    return _schedule(**case, late=True)


def _beams(P: int, parents: list[list[int]], block_size: int, *, copy_fork: bool = False, keep_dead: bool = False,
           write_shared: bool = False, keep_copied: bool = False, shift: int = 0, free_first: bool = False
           ) -> list[int]:
    """ex11 Q4 from scratch: each block's set of owner beams (a block is in use while it has one), each beam a
    list of blocks and a length; a switch for each wrong neighbour below. `free_first` counts instead: +1 for a
    block taken, −1 when its last owner goes, with the old beams freed before the forks name their blocks."""
    b, owners, count = block_size, {}, [0]
    P += shift

    def new_block(beam: int) -> int:
        block = len(owners)  # a block keeps its (empty) set once free: ids are never reused
        owners[block] = {beam}
        count[0] += 1
        return block

    def drop(block: int, beam: int) -> None:
        owners[block].discard(beam)
        if not owners[block]:
            count[0] -= 1

    beams = {0: ([new_block(0) for _ in range(-(-P // b))], P)}
    out, next_id = [count[0]], 1
    for step in parents:
        old = dict(beams)
        if free_first:
            for beam, (blocks, _) in old.items():
                for block in blocks:
                    drop(block, beam)
        ids = list(old)
        beams = {}
        for p in step:
            blocks, S = old[ids[p]]
            if copy_fork:
                blocks = [new_block(next_id) for _ in blocks]
            else:
                for block in blocks:
                    owners[block].add(next_id)
            beams[next_id] = (list(blocks), S)
            next_id += 1
        if not (free_first or keep_dead):
            for beam, (blocks, _) in old.items():
                for block in blocks:
                    drop(block, beam)
        for beam, (blocks, S) in beams.items():
            if S % b == 0:
                blocks.append(new_block(beam))
            elif len(owners[blocks[-1]]) > 1 and not write_shared:
                shared = blocks[-1]
                blocks[-1] = new_block(beam)
                if not keep_copied:
                    drop(shared, beam)
            beams[beam] = (blocks, S + 1)
        out.append(count[0] if free_first else sum(1 for o in owners.values() if o))
    return out


def _beam_copy_fork(**case: Any) -> list[int]:
    """ex11 Q4 with a fork copying every block of its parent instead of sharing it."""
    return _beams(**case, copy_fork=True)


def _beam_keep_dead(**case: Any) -> list[int]:
    """ex11 Q4 with the beams of the step before never freed."""
    return _beams(**case, keep_dead=True)


def _beam_write_shared(**case: Any) -> list[int]:
    """ex11 Q4 with a beam writing into a shared, partly filled last block without copying it."""
    return _beams(**case, write_shared=True)


def _beam_keep_copied(**case: Any) -> list[int]:
    """ex11 Q4 with the copy keeping its owner on the old block: every owner copies it, the last one too, and the
    shared block is never freed."""
    return _beams(**case, keep_copied=True)


def _beam_early(**case: Any) -> list[int]:
    """ex11 Q4 with every position one token later: a new block taken one token early."""
    return _beams(**case, shift=1)


def _beam_late(**case: Any) -> list[int]:
    """ex11 Q4 with every position one token earlier: a new block taken one token late."""
    return _beams(**case, shift=-1)


def _beam_free_first(**case: Any) -> list[int]:
    """ex11 Q4 counting blocks as they are taken and given back, with the old beams freed before the forks: a
    block whose last owner went leaves the count, and the forks that name it again do not bring it back."""
    return _beams(**case, free_first=True)


def _grow(ops: list[list], num_blocks: int, block_size: int, partial_alloc: bool = False,
          floor_plus_one: bool = False, last_first: bool = False) -> list[list]:
    """ex11 Q5 from scratch, a stack of free blocks; `partial_alloc`: an append that lacks blocks takes what is
    free; `floor_plus_one`: (S + T) // b + 1 blocks; `last_first`: a sequence's blocks freed last to first."""
    free, tables, lengths, trace = list(range(num_blocks - 1, -1, -1)), [], [], []
    for op in ops:
        if op[0] == "add":
            tables.append([])
            lengths.append(0)
        elif op[0] == "free":
            free.extend(tables[op[1]][::-1] if last_first else tables[op[1]])
            tables[op[1]], lengths[op[1]] = [], 0
        else:
            table, S, T, b = tables[op[1]], lengths[op[1]], op[2], block_size
            need = ((S + T) // b + 1 if floor_plus_one else -(-(S + T) // b)) - len(table)
            if need <= len(free):
                table.extend(free.pop() for _ in range(need))
                lengths[op[1]] = S + T
            elif partial_alloc:
                table.extend(free.pop() for _ in range(len(free)))
        trace.append([[] if op[0] == "free" else list(tables[-1 if op[0] == "add" else op[1]]), len(free)])
    return trace


# -- ex12: serving many users ------------------------------------------------------------------------------------


def _hits(prompts: list[list[int]], block_size: int, chain: bool = True, cap: bool = True) -> list[int]:
    """ex12 Q1 from scratch; without `chain` a block is matched by its own tokens only, without `cap` a request may
    find all its P tokens."""
    b, cached, out = block_size, set(), []

    def key(p: list[int], i: int) -> tuple[int, ...]:
        return tuple(p[:(i + 1) * b]) if chain else tuple(p[i * b:(i + 1) * b])

    for p in prompts:
        n = 0
        while n < len(p) // b and key(p, n) in cached:
            n += 1
        out.append(min(n * b, len(p) - 1) if cap else n * b)
        cached.update(key(p, i) for i in range(len(p) // b))
    return out


def _hits_content_only(prompts: list[list[int]], block_size: int) -> list[int]:
    """ex12 Q1 with each block matched by its own tokens, not by the tokens before it as well."""
    return _hits(prompts, block_size, chain=False)


def _hits_uncapped(prompts: list[list[int]], block_size: int) -> list[int]:
    """ex12 Q1 without the cap at P − 1: a prompt of full blocks seen before finds all its tokens."""
    return _hits(prompts, block_size, cap=False)


def _continuous(D: list[int], max_batch: int) -> int:
    left, running, steps = list(D), [], 0
    while left or running:
        while left and len(running) < max_batch:
            running.append(left.pop(0))
        running = [d - 1 for d in running if d > 1]
        steps += 1
    return steps


def _steps_static_longest(max_new_tokens: list[int], max_batch: int) -> tuple[int, int]:
    """ex12 Q2 with every static batch as long as the longest request of all: ⌈n / max_batch⌉ · max D."""
    n = len(max_new_tokens)
    return -(-n // max_batch) * max(max_new_tokens), _continuous(max_new_tokens, max_batch)


def _steps_continuous_bound(max_new_tokens: list[int], max_batch: int) -> tuple[int, int]:
    """ex12 Q2 with continuous batching counted as max(longest request, ⌈total tokens / max_batch⌉): perfect
    packing, as if a request could run on several slots."""
    D, mb = max_new_tokens, max_batch
    static = sum(max(D[i:i + mb]) for i in range(0, len(D), mb))
    return static, max(max(D), -(-sum(D) // mb))


def _chunk_floor_plus_one(P: int, chunk_size: int, decodes: int) -> int:
    """ex12 Q3 as P // per_step + 1 steps instead of ⌈P / per_step⌉ (one step too many when it divides P)."""
    return P // (chunk_size - decodes) + 1


def _chunk_whole_budget(P: int, chunk_size: int, decodes: int) -> int:
    """ex12 Q3 with the whole chunk_size for the prompt, the decodes' tokens not taken from the budget."""
    return -(-P // chunk_size)


def _preempt_flops_only(oracle: Callable[..., Any]) -> Callable[..., Any]:
    """ex12 Q4 with the recompute's time as its FLOPs' time alone (the weights' bytes left out of the roofline)."""
    def wrong(model: str, S: int, mfu: float, link_bandwidth: float) -> tuple[float, float]:
        flops = costs.evaluate(costs.prefill_flops, MODELS[model], P=S)
        return flops / (mfu * HARDWARE["H100 SXM"].peak_flops), oracle(model, S, mfu, link_bandwidth)[1]
    return wrong


def _preempt_link_once(oracle: Callable[..., Any]) -> Callable[..., Any]:
    """ex12 Q4 with the K/V crossing the host link once instead of twice; it differs on every input."""
    def wrong(**kwargs: Any) -> tuple[float, float]:
        recompute, swap = oracle(**kwargs)
        return recompute, swap / 2
    return wrong


# -- ex13: FlashAttention and Flash-Decoding ---------------------------------------------------------------------


def _combine(m: torch.Tensor, l: torch.Tensor, o: torch.Tensor, raw: bool = False,  # noqa: E741
             with_l: bool = True) -> torch.Tensor:
    w = torch.exp(m) if raw else torch.exp(m - m.amax(-1, keepdim=True))
    w = w * l if with_l else w
    return (w.unsqueeze(-1) * o).sum(-2) / w.sum(-1, keepdim=True)


def _combine_raw_exp(m: torch.Tensor, l: torch.Tensor, o: torch.Tensor) -> torch.Tensor:  # noqa: E741
    """ex13 Q1 weighting each chunk by exp(m)·l: exp of a raw m, inf in fp32 once m is past about 88."""
    return _combine(m, l, o, raw=True)


def _combine_without_l(m: torch.Tensor, l: torch.Tensor, o: torch.Tensor) -> torch.Tensor:  # noqa: E741
    """ex13 Q1 weighting each chunk by exp(m − max) alone, its l left out; it differs on every input."""
    return _combine(m, l, o, with_l=False)


def _flops(T: int, S: int, d_h: int, block_q: int, block_k: int, causal: bool, clamp: bool = True,
           short_last: bool = True, with_S: bool = True) -> int:
    total = 0
    for i0 in range(0, T, block_q):
        i1 = min(i0 + block_q, T) if short_last else i0 + block_q
        seen = -(-((S if with_S else 0) + i1) // block_k) * block_k
        seen = (min(seen, S + T) if clamp else seen) if causal else S + T
        total += (i1 - i0) * seen
    return 4 * d_h * total


def _flops_unclamped(*args: Any, **kwargs: Any) -> int:
    """ex13 Q2 without the clamp at S + T keys: the last key tile counted whole past the keys that exist."""
    return _flops(*args, **kwargs, clamp=False)


def _flops_full_last_tile(*args: Any, **kwargs: Any) -> int:
    """ex13 Q2 with the last query tile counted as block_q rows even when T is not a multiple of block_q."""
    return _flops(*args, **kwargs, short_last=False)


def _flops_without_S(*args: Any, **kwargs: Any) -> int:
    """ex13 Q2 with the S cached keys left out of the causal diagonal (a row sees key tiles up to its own index)."""
    return _flops(*args, **kwargs, with_S=False)


def _online(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_k: int, rescale: bool = True,
            running_max: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """The tile loop; without `rescale` the sums keep the old max's weights; without `running_max`, exp(score)."""
    H, T, d = q.shape
    m, l, acc = torch.full((H, T), -math.inf), torch.zeros(H, T), torch.zeros(H, T, d)  # noqa: E741
    for j in range(0, k.shape[1], block_k):
        s = q @ k[:, j:j + block_k].transpose(-2, -1) / math.sqrt(d)
        new = torch.maximum(m, s.amax(-1)) if running_max else torch.zeros(H, T)
        p = torch.exp(s - new.unsqueeze(-1))
        alpha = torch.exp(m - new) if rescale and running_max else torch.ones(H, T)
        l, acc, m = alpha * l + p.sum(-1), alpha.unsqueeze(-1) * acc + p @ v[:, j:j + block_k], new  # noqa: E741
    return acc / l.unsqueeze(-1), m + torch.log(l)


def _online_not_rescaled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_k: int
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """ex13 Q3 without scaling the running sums by exp(old − new) when a tile raises the largest score."""
    return _online(q, k, v, block_k, rescale=False)


def _online_raw_exp(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_k: int
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """ex13 Q3 without a running max: exp(score) itself, inf once scores are past about 88."""
    return _online(q, k, v, block_k, running_max=False)


def _partials(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, splits: int, tiled: bool = False,
              floor: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = q.shape[1] // k.shape[1]
    k, v = (k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1)) if tiled else (k.repeat_interleave(g, 1),
                                                                      v.repeat_interleave(g, 1))
    c = k.shape[2] // splits if floor else -(-k.shape[2] // splits)
    ms, ls, os_ = [], [], []
    for j0 in range(0, k.shape[2], c):
        s = (q.unsqueeze(2) @ k[:, :, j0:j0 + c].transpose(-2, -1)).squeeze(2) / math.sqrt(q.shape[-1])
        ms.append(s.amax(-1))
        ls.append(torch.exp(s - ms[-1].unsqueeze(-1)).sum(-1))
        os_.append((torch.softmax(s, -1).unsqueeze(2) @ v[:, :, j0:j0 + c]).squeeze(2))
    return torch.stack(ms, -1), torch.stack(ls, -1), torch.stack(os_, -2)


def _partials_tiled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, splits: int
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ex13 Q4 with the K/V heads tiled: query head h reads K/V head h % H_kv instead of h // g."""
    return _partials(q, k, v, splits, tiled=True)


def _partials_floor(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, splits: int
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ex13 Q4 with ⌊S / splits⌋ keys per chunk instead of ⌈S / splits⌉ (more chunks, or none of size 0)."""
    return _partials(q, k, v, splits, floor=True)


def _fixed(fn: Callable[..., Any]) -> Make:
    """A wrong answer written from scratch: it ignores the oracle."""
    return lambda oracle: fn


WRONG: dict[str, list[tuple[str, Make]]] = {
    "ex10.q1": [("one scale for the whole tensor", _fixed(_one_scale)), ("fp32", _fixed(_fp32_scale))],
    "ex10.q2": [("one scale per vector", _fixed(_bytes_per_vector_scale)),
                ("the factor 2 for K and V", _fixed(_bytes_no_kv_factor))],
    "ex10.q3": [("the sum over rows", _fixed(_kl_summed)), ("KL(q‖p)", _fixed(_kl_reversed))],
    "ex10.q4": [("B left out", _gain_one_sequence), ("the scales left out", _fixed(_gain_no_scales))],
    "ex10.q5": [("over all T tokens", _fixed(_channel_whole_T)), ("one scale per token", _fixed(_channel_per_token))],
    "ex11.q1": [("Eq. (11.1) summed over the sequences", _fixed(_slack_per_sequence)),
                ("a shared block once per holder", _fixed(_slack_blocks_per_holder)),
                ("the tokens counted once per holder", _fixed(_slack_tokens_per_holder)),
                ("b − S % b", _fixed(partial(_slack_last_blocks, remainder=True))),
                ("an empty sequence holding one block", _fixed(partial(_slack_last_blocks, empty_block=True)))],
    "ex11.q2": [("0 … T − 1", _fixed(_step_from_zero)), ("one late", _fixed(_step_one_late)),
                ("⌈p / b⌉", _fixed(_step_ceil)), ("the logical slot p", _fixed(_step_logical)),
                ("not × b", _fixed(_step_no_times_b)), ("laid consecutively", _fixed(_step_consecutive)),
                ("one start for every sequence", _fixed(_step_common_start)),
                ("one slot per sequence", _fixed(_step_one_per_sequence))],
    "ex11.q3": [("not the blocks of P + D − 1 tokens on admission", _fixed(_running_reserving)),
                ("not grown on demand", _fixed(_running_growing)),
                ("the blocks of P + D tokens reserved", _fixed(_running_plus_one)),
                ("a new block one token early", _fixed(_running_early)),
                ("the oldest running request preempted", _fixed(_running_oldest)),
                ("requeued at the tail", _fixed(_running_tail)),
                ("its generated tokens forgotten", _fixed(_running_restart)),
                ("the blocks of P tokens", _fixed(_running_prompt_only)),
                ("the queue skipped", _fixed(_running_skip)), ("not one step late", _fixed(_running_late))],
    "ex11.q4": [("not copied", _fixed(_beam_copy_fork)), ("not kept", _fixed(_beam_keep_dead)),
                ("not written shared", _fixed(_beam_write_shared)),
                ("the shared block kept", _fixed(_beam_keep_copied)),
                ("taken one token early", _fixed(_beam_early)), ("taken one token late", _fixed(_beam_late)),
                ("before the old beams are freed", _fixed(_beam_free_first))],
    "ex11.q5": [("not all or nothing", _fixed(partial(_grow, partial_alloc=True))),
                ("(S + T) // b + 1", _fixed(partial(_grow, floor_plus_one=True))),
                ("freed last to first", _fixed(partial(_grow, last_first=True)))],
    "ex12.q1": [("not at most P − 1", _fixed(_hits_uncapped)), ("their own tokens only", _fixed(_hits_content_only))],
    "ex12.q2": [("the longest request of all", _fixed(_steps_static_longest)),
                ("max(longest, ⌈total tokens / max_batch⌉)", _fixed(_steps_continuous_bound))],
    "ex12.q3": [("P // per_step + 1", _fixed(_chunk_floor_plus_one)),
                ("the whole chunk_size", _fixed(_chunk_whole_budget))],
    "ex12.q4": [("the FLOPs' time alone", _preempt_flops_only), ("crossing the link once", _preempt_link_once)],
    "ex13.q1": [("exp of a raw m", _fixed(_combine_raw_exp)), ("its l left out", _fixed(_combine_without_l))],
    "ex13.q2": [("counted past the S + T keys", _fixed(_flops_unclamped)),
                ("a whole block_q rows", _fixed(_flops_full_last_tile)),
                ("S > 0 cached keys", _fixed(_flops_without_S))],
    "ex13.q3": [("not rescaled", _fixed(_online_not_rescaled)), ("without the running max", _fixed(_online_raw_exp))],
    "ex13.q4": [("h % H_kv", _fixed(_partials_tiled)), ("⌊S / splits⌋", _fixed(_partials_floor))],
}


@pytest.mark.parametrize(("qid", "index"), [(q, i) for q, v in sorted(WRONG.items()) for i in range(len(v))])
def test_a_named_wrong_answer_loses_under_every_seed(qid: str, index: int) -> None:
    name, make = WRONG[qid][index]
    assert not seeds_passed(qid, name, make), f"{qid}: the wrong answer ({name}) kept the question"
