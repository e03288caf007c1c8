"""The mechanism questions of Exercises 6, 9, 11, 12, 13, 14, 16, 17 and 18 fail the plausible wrong answers: each
mutant below is the reference solution with one line changed the way a student gets it wrong, and it must FAIL on fresh
random cases (two seeds each). Also: the questions' hints say what to do in words, never the answer's code, and the
oracle of Exercise 13's split (`ex13._partials`) merged by the package is the package's Flash-Decoding, and the
oracle of Exercise 18's absorbed decode (the package's naive path) is the package's absorbed path too."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import torch

from minigpt.config import ModelConfig
from minigpt.exercises import EXERCISES, ex13, ex18, ex18_h2o, ex18_latent, ex18_snapkv, run_check
from minigpt.exercises.spec import build_case
from minigpt.grading.review import review_cell
from minigpt.runtime.attention import combine_chunks, flash_decode
from minigpt.runtime.mla import LatentAttention, LatentCache

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = {eid: next((ROOT / "exercises" / "solutions").glob(f"{eid}_*.py"))
             for eid in ("ex06", "ex09", "ex11", "ex12", "ex13", "ex14", "ex16", "ex17", "ex18")}

# (question, function, the line as the reference solution has it, the mutant's line, the bug it stands for)
MUTANTS = [
    # Exercise 6 Q1: a chunk after S cached tokens, the causal mask aligned bottom-right (tests/test_ex06_chunk.py)
    *(("ex06.q1", "chunk_attention", old, new, bug) for old, new, bug in (
        (".tril(S)  # row i", ".tril()  # row i", "the mask aligned top-left (query i sees keys 0..i)"),
        (".tril(S)  # row i", ".tril(S - 1)  # row i", "a strict mask: a query's own key hidden"),
        ('torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1) @ v', "torch.softmax(scores, dim=-1) @ v",
         "no mask: the chunk's queries see their future"),
        ('out = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1) @ v',
         "out = F.scaled_dot_product_attention(q, k, v, is_causal=True)", "SDPA with is_causal=True (top-left)"),
        ('out = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1) @ v',
         "out = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1)", "SDPA with is_causal=T > 1"),
        ("/ math.sqrt(q.shape[-1])  # [B, H, T, S+T]", "/ q.shape[-1]  # [B, H, T, S+T]", "the scale 1/d_h"),
        ("k_cache[:, :, S : S + T] = k_new\n    v_cache[:, :, S : S + T] = v_new",
         "k_cache[:, :, :T] = k_new\n    v_cache[:, :, :T] = v_new", "the new rows written at row 0"),
        ("k_cache[:, :, S : S + T] = k_new", "k_cache[:, :, S] = k_new[:, :, 0]", "only the first new row written"),
        ("return out, k, v\n", "return out, k_cache, v_cache\n", "the whole preallocated cache returned"),
    )),
    # Exercise 6 Q3: one decode step from the cache and the weights (tests/test_ex06_decode.py)
    *(("ex06.q3", "decode_from_cache", old, new, bug) for old, new, bug in (
        ('params["pos_emb.weight"][P]', 'params["pos_emb.weight"][P - 1]', "the token at position P - 1"),
        ('params["pos_emb.weight"][P]', 'params["pos_emb.weight"][0]', "the token at position 0"),
        ("k = torch.cat([k_cache[layer], k.view(B, H_kv, 1, d_h)], dim=2)  # [B, H_kv, P + 1, d_h]\n"
         "        v = torch.cat([v_cache[layer], v.view(B, H_kv, 1, d_h)], dim=2)",
         "k, v = k.view(B, H_kv, 1, d_h), v.view(B, H_kv, 1, d_h)", "the cache ignored: the token attends to itself"),
        ("k = torch.cat([k_cache[layer], k.view(B, H_kv, 1, d_h)], dim=2)  # [B, H_kv, P + 1, d_h]\n"
         "        v = torch.cat([v_cache[layer], v.view(B, H_kv, 1, d_h)], dim=2)",
         "k, v = k_cache[layer], v_cache[layer]", "the token's own key and value left out"),
        ("k = k.repeat_interleave(g, dim=1)  # [B, H, S, d_h]\n    v = v.repeat_interleave(g, dim=1)",
         "k = k.repeat(1, g, 1, 1)\n    v = v.repeat(1, g, 1, 1)", "KV heads tiled instead of interleaved"),
        ("a = attend(q.view(B, H, d_h), k, v).reshape(B, d)",
         "a = F.scaled_dot_product_attention(q.view(B, H, 1, d_h), k.repeat_interleave(H // H_kv, 1),\n"
         "            v.repeat_interleave(H // H_kv, 1), is_causal=True).reshape(B, d)",
         "SDPA with is_causal=True: the one query sees the first key alone"),
        ('x = x + a @ w["attn.out.weight"].T', 'x = h + a @ w["attn.out.weight"].T',
         "the residual added to the normed input"),
        ('h = F.layer_norm(x, (d,), w["ln2.weight"], w["ln2.bias"])', "h = x",
         "the LayerNorm before the MLP left out"),
        ("a = attend(q.view(B, H, d_h), k, v)", "a = attend(q.view(B, H, d_h) * math.sqrt(d_h / d), k, v)",
         "scores scaled by sqrt(d) instead of sqrt(d_h)"),
        ('x = F.layer_norm(x, (d,), params["ln_f.weight"], params["ln_f.bias"])', "x = x",
         "the final LayerNorm left out"),
        ("a = attend(q.view(B, H, d_h), k, v)", "a = attend(q.view(B, d_h, H).transpose(1, 2), k, v)",
         "the query's heads read across the width"),
        ("q, k, v = (h @", "k, q, v = (h @", "the qkv rows split as k, q, v"),
        ('x = x + F.gelu(h @ w["mlp.up.weight"].T', 'x = x + F.relu(h @ w["mlp.up.weight"].T',
         "ReLU instead of GELU"),
        ('w["mlp.up.bias"]) @ w["mlp.down.weight"]', 'w["mlp.up.bias"], approximate="tanh") @ w["mlp.down.weight"]',
         "GPT-2's tanh GELU instead of the exact one"),
    )),
    # Exercise 6 Q4: greedy generation from the weights with a cache (tests/test_ex06_generate.py)
    *(("ex06.q4", "generate_from_weights", old, new, bug) for old, new, bug in (
        ("for i in range(1, D):", "for i in range(1, max(D, 2)):", "a loop that decodes once before checking D"),
        ("return torch.stack(out, dim=1).tolist()", "return torch.cat([prompt, torch.stack(out, dim=1)], 1).tolist()",
         "the prompt returned with the new tokens"),
        ('a = torch.softmax(scores.masked_fill(~visible, float("-inf")) / math.sqrt(d_h), dim=-1)',
         "a = torch.softmax(scores / math.sqrt(d_h), dim=-1)", "the prefill without the causal mask"),
        ("ks[layer], vs[layer] = kc, vc", "ks[layer], vs[layer] = (kc, vc) if S == 0 else (ks[layer], vs[layer])",
         "the decode's new key and value not appended"),
        ('params["pos_emb.weight"][S : S + T]', 'params["pos_emb.weight"][max(S - 1, 0) : max(S - 1, 0) + T]',
         "each decode step one position early"),
        ("F.layer_norm(x[:, -1], (d,)", "F.layer_norm(x[:, 0], (d,)", "token 1 from the prefill's first position"),
        ("F.layer_norm(x[:, -1], (d,)", "F.layer_norm(x[:, -2 if T > 1 else -1], (d,)",
         "token 1 from the prefill's second-to-last position"),
        ("token = step(prompt, 0).argmax(dim=-1)", "token = step(prompt, 0).argmax().repeat(B) % config['V']",
         "one argmax over the flattened [B, V] for every sequence"),
        ("B, P = prompt.shape", "prompt = prompt[:1]\n    B, P = prompt.shape", "B = 1 assumed"),
        ("token = step(token.view(B, 1), P + i - 1).argmax(dim=-1)",
         "token = step(torch.cat([prompt, torch.stack(out, dim=1)], dim=1), 0).argmax(dim=-1)",
         "the whole prefix recomputed at every step"),
    )),
    ("ex11.q1", "pool_slack", "return len(filled) * block_size - sum(filled.values())",
     "return sum(map(len, tables)) * block_size - sum(filled.values())", "a shared block reserved once per holder"),
    ("ex11.q1", "pool_slack", "return len(filled) * block_size - sum(filled.values())",
     "return len(filled) * block_size - sum(lengths)", "the tokens of a shared block counted once per holder"),
    ("ex11.q1", "pool_slack", "filled[block] = min(block_size, S - i * block_size)",
     "filled[block] = S % block_size", "every block filled as the sequence's last"),
    ("ex11.q1", "pool_slack", "filled[block] = min(block_size, S - i * block_size)",
     "filled[block] = filled.get(block, 0) + min(block_size, S - i * block_size)",
     "a shared block's tokens added up over its holders"),
    ("ex11.q2", "slot_mapping", "for p in range(S, S + T):", "for p in range(T):",
     "the new tokens at positions 0 … T − 1, the cached ones forgotten"),
    ("ex11.q2", "slot_mapping", "for p in range(S, S + T):", "for p in range(S + 1, S + T + 1):",
     "the first new token at S + 1"),
    ("ex11.q2", "slot_mapping", "table[p // block_size] * block_size + p % block_size", "p",
     "the logical slot, the table not consulted"),
    ("ex11.q2", "slot_mapping", "table[p // block_size] * block_size + p % block_size",
     "table[p // block_size] + p % block_size", "the block id not multiplied by b"),
    ("ex11.q2", "slot_mapping", "table[p // block_size] * block_size + p % block_size",
     "table[S // block_size] * block_size + p - S // block_size * block_size",
     "a chunk's slots laid on from its first block, as if the next block were numbered next"),
    ("ex11.q2", "slot_mapping", "zip(tables, lengths, counts,", "zip(tables, [lengths[0]] * len(tables), counts,",
     "one start for the whole step"),
    ("ex11.q2", "slot_mapping", "for p in range(S, S + T):", "for p in range(S, S + 1):",
     "one slot per sequence, as if every sequence decoded"),
    # Exercise 11 Q3: the requests a continuous-batching scheduler runs per step (tests/test_ex11_running.py)
    *(("ex11.q3", "running_per_step", old, new, bug) for old, new, bug in (
        ("victim = running.pop()  #", "victim = running.pop(0)  #", "the oldest running request preempted"),
        ("waiting.insert(0, victim)  #", "waiting.append(victim)  #", "the preempted request requeued at the tail"),
        ("waiting.insert(0, victim)  #", "generated[victim] = 0\n                waiting.insert(0, victim)  #",
         "the preempted request starting over, its tokens forgotten"),
        ("tokens = P + generated[r] if paged", "tokens = P if paged", "the recompute prefilling its prompt alone"),
        ("else P + D - 1", "else P + D", "max_tokens reserving P + D tokens"),
        ("break  # nobody overtakes", "continue  # nobody overtakes", "the head of the queue skipped"),
        ('paged = reservation == "paged"', "paged = False", "every request given P + D - 1 tokens on admission"),
        ('paged = reservation == "paged"', "paged = True", "every request grown on demand"),
        ("need = -(-(P + generated[r]) // b)", "need = -(-(P + generated[r] + 1) // b)",
         "a decode's new block taken one token early"),
    )),
    # Exercise 11 Q4: the blocks a beam search over shared blocks holds (tests/test_ex11_beam.py)
    *(("ex11.q4", "beam_blocks", old, new, bug) for old, new, bug in (
        ("new = [(list(beams[p][0]), beams[p][1]) for p in step]", "new = [([take() for _ in beams[p][0]], "
         "beams[p][1]) for p in step]", "a fork copying its parent's blocks"),
        ("owners[block] -= 1", "pass", "the old beams never freed"),
        ("elif owners[table[-1]] > 1:", "elif False:", "a shared, partly filled block written without a copy"),
        ("owners[table[-1]] -= 1\n", "", "a copy that keeps its reference to the old block"),
        ("for _ in range(-(-P // b))], P)]", "for _ in range(-(-(P + 1) // b))], P + 1)]",
         "every position one token later: a new block one token early"),
        ("for _ in range(-(-P // b))], P)]", "for _ in range(-(-(P - 1) // b))], P - 1)]",
         "every position one token earlier: a new block one token late"),
    )),
    ("ex11.q5", "grow_block_tables", "free.extend(tables[k])  # first", "free[:0] = tables[k][::-1]  # first",
     "a FIFO free list where the check's is a stack"),
    ("ex11.q5", "grow_block_tables", "free.extend(tables[k])  # first", "free.extend(tables[k][::-1])  # first",
     "blocks freed last to first"),
    ("ex11.q5", "grow_block_tables",
     "            if new <= len(free):  # all or nothing\n"
     "                tables[k] += [free.pop() for _ in range(new)]",
     "            if True:\n                tables[k] += [free.pop() for _ in range(min(new, len(free)))]",
     "a refused append that still takes the blocks it can"),
    ("ex11.q5", "grow_block_tables", "new = -(-(lengths[k] + T) // block_size) - len(tables[k])",
     "new = -(-T // block_size)", "new blocks for every append, ignoring the room left in the last block"),
    ("ex11.q5", "grow_block_tables", "free.extend(tables[k])  # first", "pass  # first",
     "a finished sequence's blocks never return"),
    ("ex11.q6", "fork_and_write", "shared_tail = S % b != 0 and refs[table[-1]] > 1", "shared_tail = False",
     "no copy-on-write: a fork writes into the shared block"),
    ("ex11.q6", "fork_and_write", "pool[copy] = list(pool[old])", "pool[copy] = [None] * b",
     "the copy takes a block but not the rows"),
    ("ex11.q6", "fork_and_write", "shared_tail = S % b != 0 and refs[table[-1]] > 1", "shared_tail = S % b != 0",
     "a copy even when the block is not shared"),
    ("ex11.q6", "fork_and_write", "shared_tail = S % b != 0 and refs[table[-1]] > 1",
     "shared_tail = bool(table) and refs[table[-1]] > 1", "a copy of a full shared block too"),
    ("ex11.q6", "fork_and_write", "            for block in tables[op[1]]:\n                release(block)",
     "            for block in tables[op[1]]:\n                refs[block] = 1\n                release(block)",
     "free returns shared blocks to the pool"),
    ("ex11.q6", "fork_and_write", "                refs[block] += 1\n", "                pass\n",
     "a fork that does not count its references"),
    ("ex11.q6", "fork_and_write", "                    release(old)\n", "",
     "the old block keeps the copier's reference"),
    ("ex11.q6", "fork_and_write", "new = -(-(S + len(tokens)) // b) - len(table) + shared_tail",
     "new = -(-(S + len(tokens)) // b) - len(table)", "the copy not counted among the blocks an append needs"),
    ("ex13.q3", "online_softmax_attention", "acc = rescale.unsqueeze(-1) * acc + p", "acc = acc + p",
     "the accumulator not rescaled when the max rises"),
    ("ex13.q3", "online_softmax_attention", "l = rescale * l + p.sum(dim=-1)", "l = l + p.sum(dim=-1)",
     "the running sum not rescaled"),
    ("ex13.q3", "online_softmax_attention", "m_new = torch.maximum(m, s.amax(dim=-1))",
     "m_new = torch.zeros_like(m)", "a naive exp of the raw scores (overflows)"),
    ("ex13.q3", "online_softmax_attention", "return acc / l.unsqueeze(-1), m + torch.log(l)",
     "return acc / l.unsqueeze(-1), torch.log(l)", "the log-sum-exp without the max"),
    ("ex13.q3", "online_softmax_attention", "scale = 1 / math.sqrt(q.shape[-1])", "scale = 1.0",
     "scores not scaled by 1/sqrt(d_h)"),
    ("ex13.q3", "online_softmax_attention",
     "acc = rescale.unsqueeze(-1) * acc + p @ v[..., j0:j0 + block_k, :]",
     "acc = rescale.unsqueeze(-1) * acc + (p @ v[..., j0:j0 + block_k, :]) / p.sum(-1, keepdim=True)",
     "each tile normalised on its own"),
    ("ex13.q4", "split_kv_partials", "m[:, h, j] = s.amax(dim=-1)",
     "m[:, h, j] = (k[:, h // g] @ q[:, h].unsqueeze(-1)).squeeze(-1).amax(-1) / math.sqrt(d_h)",
     "the global max where each chunk needs its own"),
    ("ex13.q4", "split_kv_partials", " / l[:, h, j].unsqueeze(-1)\n", "\n", "chunk outputs not normalised"),
    ("ex13.q4", "split_kv_partials", "c = math.ceil(S / splits)", "c = max(1, S // splits)",
     "chunks of ⌊S/splits⌋ keys"),
    ("ex13.q4", "split_kv_partials", "kh, vh = k[:, h // g], v[:, h // g]", "kh, vh = k[:, h % H_kv], v[:, h % H_kv]",
     "query heads mapped to K/V heads round-robin"),
    ("ex13.q4", "split_kv_partials", "p = torch.exp(s - m[:, h, j].unsqueeze(-1))", "p = torch.exp(s)",
     "a naive exp of the raw scores"),
    ("ex09.q3", "gqa_decode_gain", "step(N_mha, model.H)", "step(model.N_params, model.H)",
     "the MHA twin given the GQA model's weights"),
    ("ex09.q4", "max_batch_with_heads", "free = math.floor(hardware.memory_bytes * (1 - 0.1)) - N * 2",
     "free = math.floor(hardware.memory_bytes * (1 - 0.1)) - model.N_params * 2",
     "the weights' size not following H_kv"),
    ("ex12.q4", "preemption_costs", "flops / (mfu * hw.peak_flops)", "flops / hw.peak_flops",
     "recompute priced at the chip's peak"),
    ("ex12.q4", "preemption_costs", "swap = 2 * S * kv_per_token", "swap = S * kv_per_token",
     "the swap priced one way only"),
    ("ex16.q1", "layerwise_transfer", "layer_bytes = P * 2 * model.H_kv * model.d_h * 2",
     "layer_bytes = P * 2 * model.H * model.d_h * 2", "every query head's K/V sent (H for H_kv)"),
    ("ex16.q1", "layerwise_transfer", "free = max(ready, free) + send", "free = ready + send",
     "a layer's message started while the link still sends the one before"),
    ("ex16.q3", "route_requests", "            if end > t:", "            if end >= t:",
     "a prefill that ends at the arrival's time still counted"),
    ("ex16.q3", "route_requests", "                d_load[d] += 1", "                d_load[d] += n",
     "decode workers loaded by prompt tokens, not by requests held"),
    ("ex16.q3", "route_requests", "out.append([p, d, end - t])", "out.append([p, d, end - start])",
     "the wait for a busy worker left out of the time to first token"),
    ("ex16.q4", "receive_kv", "table = list(free_blocks[: -(-P // b)])",
     "table = sorted(free_blocks)[: -(-P // b)]", "the free blocks taken in id order, not the list's"),
    ("ex16.q4", "receive_kv", "table = list(free_blocks[: -(-P // b)])", "table = list(free_blocks)",
     "every free block taken"),
    ("ex16.q4", "receive_kv", "        out[:, :, table[t // b], :, t % b] = kv[:, :, :, t]",
     "        out[:, :, table[t // b], :, t % b] = kv[:, :, :, t].transpose(2, 3).reshape(kv[:, :, :, t].shape)",
     "the heads and the head dimension mixed up"),
    ("ex17.q1", "row_parallel_partials", "cols = slice(r * k, (r + 1) * k)", "cols = slice(r, None, W)",
     "the input features dealt round-robin instead of in blocks"),
    ("ex17.q1", "row_parallel_partials", "parts.append(x[..., cols] @ w[:, cols].T)",
     "parts.append(x @ w.T / W)", "every rank computing the whole product"),
    ("ex17.q2", "qkv_rows_for_rank", "first = rank * kv if H_kv >= W else rank * H_kv // W",
     "first = rank * kv if H_kv >= W else rank % H_kv", "replicas dealt round-robin, not by query group"),
    ("ex17.q2", "qkv_rows_for_rank", "first = rank * kv if H_kv >= W else rank * H_kv // W",
     "first = rank * kv", "no replica: a rank past the last K/V head"),
    ("ex17.q2", "qkv_rows_for_rank", "v = [i + H_kv * d_h for i in k]", "v = [i + H * d_h for i in k]",
     "the values placed after H query-sized heads"),
    ("ex17.q3", "collectives_of_forward",
     "        if kind == \"local\" and have == \"partial\":\n            need = \"whole\"", "        pass",
     "a value-wise layer fed partial sums"),
    ("ex17.q3", "collectives_of_forward", "record.append([\"reduce_scatter\", nbytes])",
     "record.append([\"all_reduce\", nbytes])", "partial sums reduced whole where a split is needed"),
    ("ex17.q3", "collectives_of_forward", "record.append([\"all_gather\", nbytes])",
     "record.append([\"all_gather\", nbytes // W])", "the gather's payload counted as one rank's block"),
    ("ex17.q3", "collectives_of_forward", "    for kind, out_width in layers + [[\"output\", None]]:",
     "    for kind, out_width in layers:", "the output left split or as partial sums"),
    ("ex17.q3", "collectives_of_forward", "    if W == 1:\n        return []\n", "",
     "collectives counted with one rank"),
    ("ex17.q4", "rank_bytes", "kv = max(1, H_kv // W)  # a whole", "kv = H_kv / W  # a whole",
     "K/V replicas not counted when H_kv < W"),
    ("ex17.q4", "rank_bytes", '"mlp.down.weight", "tok_emb.weight"):', '"mlp.down.weight", "tok_emb.weight", '
     '"attn.out.bias", "mlp.down.bias"):', "the row-parallel biases split"),
    ("ex17.q4", "rank_bytes", '"mlp.down.weight", "tok_emb.weight"):', '"mlp.down.weight"):',
     "the embedding whole on every rank"),
    ("ex17.q4", "rank_bytes", "    return total * s\n", "    return math.prod([sum(math.prod(v) for v in "
     "shapes.values()), s]) // W\n", "the model's bytes over W"),
    # Exercise 18 Q1: an absorbed MLA decode step with DeepSeek's decoupled RoPE key (tests/test_ex18_latent.py)
    *(("ex18.q1", "absorbed_decode", old, new, bug) for old, new, bug in (
        ("angle = (S - 1) *", "angle = S *", "the query rotated at position S, one past the new token"),
        ("angle = (S - 1) *", "angle = 0 *", "the query's RoPE part not rotated"),
        ("a, b = qr[0::2], qr[1::2]  # DeepSeek's pairs (2i, 2i + 1)\n"
         "        q_rot = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(d_rope)",
         "a, b = qr[:half], qr[half:]\n        q_rot = torch.cat([a * cos - b * sin, a * sin + b * cos])",
         "GPT-NeoX's halves instead of DeepSeek's interleaved pairs"),
        ("[a * cos - b * sin, a * sin + b * cos]", "[a * cos + b * sin, b * cos - a * sin]",
         "the query rotated backwards"),
        ("torch.arange(half) / d_rope)", "torch.arange(half) / (d_h + d_rope))",
         "the frequencies over the whole query head, not d_rope"),
        ("math.sqrt(d_h + d_rope)", "math.sqrt(d_h)", "scores scaled by the latent part's head width alone"),
        ("math.sqrt(d_h + d_rope)", "math.sqrt(d_c)", "scores scaled by the latent's width"),
        ("(c @ q_lat + k_rope @ q_rot)", "(c @ q_lat)", "the RoPE key ignored"),
        ("w_qr[h * d_rope:(h + 1) * d_rope]", "w_qr[h::H]", "the RoPE query's rows dealt round-robin"),
        ("out = out + w_o[:, rows] @ (w_uv[h] @ o_lat)", "out = out + w_o[:, rows] @ (w_uk[h] @ o_lat)",
         "values brought back with the key up-projection"),
        ("weights = torch.softmax(scores, dim=-1)", "weights = torch.exp(scores)", "the weights not normalised"),
        ("rows = slice(h * d_h, (h + 1) * d_h)", "rows = slice(h, None, H)",
         "heads' rows dealt round-robin, not in blocks"),
    )),
    ("ex18.q2", "snapkv_keep", "for i in range(T - w, T):", "for i in range(T - 1, T):",
     "the last query's votes alone, not the window's"),
    ("ex18.q2", "snapkv_keep", "k[: i + 1] @ q[i]", "k @ q[i]", "a window query voting for keys after it"),
    ("ex18.q2", "snapkv_keep", "votes[max(0, j - half): min(before, j + half + 1)]",
     "votes[max(0, j - half): j + half + 1]", "the window's votes pooled onto the keys just before it"),
    ("ex18.q2", "snapkv_keep", "pooled = [max(", "pooled = [min(", "a min-pool: the quietest neighbour"),
    ("ex18.q2", "snapkv_keep", "key=lambda j: pooled[j], reverse=True", "key=lambda j: votes[j], reverse=True",
     "ranked by the raw votes, no pooling"),
    ("ex18.q2", "snapkv_keep", "key=lambda j: pooled[j], reverse=True", "key=lambda j: pooled[j]",
     "the lowest pooled votes kept"),
    ("ex18.q2", "snapkv_keep", "[: budget - w]", "[:budget]", "budget keys on top of the window"),
    ("ex18.q2", "snapkv_keep", "k[: i + 1] @ q[i] / math.sqrt(d_h)", "k[: i + 1] @ q[i] / d_h",
     "scores scaled by 1/d_h"),
    ("ex18.q3", "h2o_decode_reads", "reads.append(list(held))", "reads.append(list(held)[-budget:])",
     "the step reads only the budget: evicted before it attends"),
    ("ex18.q3", "h2o_decode_reads", "score[p] += w", "score[p] = w", "the last step's weights, not accumulated"),
    ("ex18.q3", "h2o_decode_reads", "old, new = held[: len(held) - recent], held[len(held) - recent:]",
     "old, new, recent = held, [], 0", "no recent window: the budget highest scores kept"),
    ("ex18.q3", "h2o_decode_reads", "score[p] += w", "score[p] += w if p != t else 0.0",
     "a new key's own weight left out of its score"),
    ("ex18.q3", "h2o_decode_reads", "/ math.sqrt(q.shape[1])", "/ q.shape[1]", "scores scaled by 1/d_h"),
    # Exercise 14 Q1 and Q3, Exercise 16 Q2, Exercise 18 Q4
    ("ex14.q1", "greedy_round", "    return out",
     "    m = min(len(t) for t, _ in out) - 1\n"
     "    return [[t[:m + 1], length + m] for (t, _), length in zip(out, lengths)]",
     "the batch's minimum"),
    ("ex14.q1", "greedy_round", "[best[n]], length", "([best[n]] if n < len(row) else []), length",
     "the bonus left out"),
    ("ex14.q1", "greedy_round", "[best[n]], length", "[row[n] if n < len(row) else best[n]], length",
     "the rejected draft as the correction"),
    ("ex14.q1", "greedy_round", "        while n < len(row) and row[n] == best[n]:\n            n += 1",
     "        n = sum(x == t for x, t in zip(row, best))", "every match counted"),
    ("ex14.q1", "greedy_round", "        while n < len(row) and row[n] == best[n]:\n            n += 1",
     "        while n < len(row):\n            n += 1\n"
     "            if row[n - 1] != best[n - 1]:\n                break",
     "one draft past the mismatch"),
    ("ex14.q1", "greedy_round", "while n < len(row) and", "while n < len(row) - 1 and",
     "the last draft never accepted"),
    ("ex14.q1", "greedy_round", "length + n]", "length + n + 1]", "the emitted token cached"),
    ("ex14.q1", "greedy_round", "length + n]", "length + len(row)]", "no rewind"),
    ("ex14.q1", "greedy_round", "length + n]", "length + n - 1]", "the last committed row left out"),
    ("ex14.q1", "greedy_round", "length + n]", "n + 1]", "the committed length left out"),
    ("ex14.q3", "speculative_round", "if u[j] < lam * min(", "if u[j] < min(", "λ left out of the coin"),
    ("ex14.q3", "speculative_round", "replacement = (p[j] - kept_mass) / (1 - kept_mass.sum())",
     "replacement = (p[j] - q[j]).clamp_min(0)", "the chapter's residual"),
    ("ex14.q3", "speculative_round", "[inverse_cdf(replacement, u[gamma])]",
     "[min(int((torch.cumsum(p[j] - kept_mass, 0) <= u[gamma]).sum()), len(p[j]) - 1)]",
     "the replacement's denominator left out"),
    ("ex14.q3", "speculative_round", "kept_mass = lam * torch.minimum(p[j], q[j])", "kept_mass = lam * q[j]",
     "λ·q kept, not λ·min(p, q)"),
    ("ex14.q3", "speculative_round", "kept_mass = lam * torch.minimum(p[j], q[j])",
     "kept_mass = torch.minimum(p[j], q[j])", "λ left out of the replacement"),
    ("ex14.q3", "speculative_round", "inverse_cdf(replacement, u[gamma])", "inverse_cdf(p[j], u[gamma])",
     "the replacement drawn from p"),
    ("ex14.q3", "speculative_round", "inverse_cdf(p[gamma], u[gamma])", "inverse_cdf(p[gamma - 1], u[gamma])",
     "the bonus from the last draft's row"),
    ("ex14.q3", "speculative_round", "inverse_cdf(p[gamma], u[gamma])", "inverse_cdf(q[gamma - 1], u[gamma])",
     "the bonus from q"),
    ("ex16.q2", "split_goodput", "ttft_ok = first - t <= ttft_slo", "ttft_ok = first - begin <= ttft_slo",
     "the TTFT from the prefill's start: the queue left out"),
    ("ex16.q2", "split_goodput", "begin = max(t, busy_until[worker])", "begin = t",
     "a prefill started at its arrival, its worker busy or not"),
    ("ex16.q2", "split_goodput", "worker = tokens_on.index(min(tokens_on))",
     "worker = busy_until.index(min(busy_until))", "the prefill worker that frees first"),
    ("ex16.q2", "split_goodput", "if w == k and end > t)", "if w == k and end >= t)",
     "a prefill ending at the arrival still counted"),
    ("ex16.q2", "split_goodput", "sum(n for w, end, n in prefills", "sum(1 for w, end, n in prefills",
     "prefill workers loaded by requests, not prompt tokens"),
    ("ex16.q2", "split_goodput", "(last - first) / (D - 1) <= tpot_slo", "(last - first) / D <= tpot_slo",
     "TPOT over D tokens, not D - 1 gaps"),
    ("ex16.q2", "split_goodput", "tpot_ok = D == 1 or", "tpot_ok = D > 1 and", "a one-token request counted as a miss"),
    ("ex16.q2", "split_goodput", "first - t <= ttft_slo", "first - t < ttft_slo", "a TTFT at its objective a miss"),
    ("ex16.q2", "split_goodput", "(D - 1) <= tpot_slo", "(D - 1) < tpot_slo", "a TPOT at its objective a miss"),
    ("ex16.q2", "split_goodput", "if a < 0.9:", "if a <= 0.9:", "a run at exactly 90 % a miss"),
    ("ex16.q2", "split_goodput", "            break\n        best", "            continue\n        best",
     "the highest passing rate, past a failing one"),
    ("ex16.q2", "split_goodput", "ordered = sorted(runs, key=lambda r: r[\"rate\"])", "ordered = runs",
     "the runs in the given order"),
    ("ex16.q2", "split_goodput", "best / (prefill_workers + decode_workers)", "best", "the goodput not per chip"),
    ("ex16.q2", "split_goodput", "best / (prefill_workers + decode_workers)", "best / prefill_workers",
     "the goodput per prefill chip"),
    ("ex16.q2", "split_goodput", "ok / len(run[\"arrivals_ms\"])",
     "ok / max(1, sum(D > 1 for D in run[\"new_tokens\"]))", "the share over the requests that have a TPOT"),
    ("ex18.q4", "window_chunk_keys", "p > t - window)", "p >= t - window)", "the window one key too wide"),
    ("ex18.q4", "window_chunk_keys", "p > t - window)", "p > t - window + 1)", "the window one key too narrow"),
    ("ex18.q4", "window_chunk_keys", "(p < sinks or p > t - window)", "(p > t - window)", "no sink rule in the mask"),
    ("ex18.q4", "window_chunk_keys", "if p <= t and (p < sinks", "if (p < sinks",
     "no causal mask: a query sees the chunk's later tokens"),
    ("ex18.q4", "window_chunk_keys", "sinks + (p - sinks) % window", "sinks + p % window",
     "the ring not offset by the sinks"),
    ("ex18.q4", "window_chunk_keys", "if p < sinks or p >= S + n - window:", "if p >= S + n - window:",
     "a chunk's sinks dropped"),
    ("ex18.q4", "window_chunk_keys", "keys = [p for p in slots if p >= 0]", "keys = slots",
     "the empty slots read as keys"),
    ("ex18.q4", "window_chunk_keys", "keys = [p for p in slots if p >= 0]",
     "keys = sorted(p for p in slots if p >= 0)", "the held slots in position order"),
    ("ex18.q4", "window_chunk_keys", "keys = [p for p in slots if p >= 0] + list(range(S, S + T))",
     "keys = list(range(S, S + T)) + [p for p in slots if p >= 0]", "the chunk's keys before the held slots"),
    ("ex18.q4", "window_chunk_keys", "rows.append([j for j, p in enumerate(keys)",
     "rows.append([p for j, p in enumerate(keys)", "positions returned instead of indices"),
]


def mutant(qid: str, function: str, old: str, new: str):
    text = SOLUTIONS[qid.split(".")[0]].read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the reference solution no longer has {old!r}"
    namespace: dict = {}
    exec(compile(text.replace(old, new), str(SOLUTIONS[qid.split(".")[0]]), "exec"), namespace)  # noqa: S102
    return namespace[function]


# ids in plain ASCII words (qid-the-bug): mutmut selects tests by node id, and pytest cannot select an id
# with non-ASCII characters or brackets back from the command line.
@pytest.mark.parametrize("qid,function,old,new,bug", MUTANTS,
                         ids=[re.sub(r"[^A-Za-z0-9.]+", "-", f"{m[0]}-{m[4]}").strip("-") for m in MUTANTS])
def test_plausible_wrong_answer_fails(qid: str, function: str, old: str, new: str, bug: str) -> None:
    fn = mutant(qid, function, old, new)
    for seed in (0, 1):
        result = run_check(qid, fn, seed=seed)
        assert result.status == "fail", f"{bug}: {result.message}"
        assert "hint:" in result.message


CODE = re.compile(r"torch\.|costs\.|np\.|\w\.\w+\(|repeat_interleave|unflatten|\[:, :")


@pytest.mark.parametrize("eid", ["ex06", "ex09", "ex11", "ex12", "ex13", "ex16", "ex17", "ex18"])
def test_hints_are_words_not_code(eid: str) -> None:
    for q in EXERCISES[eid].questions:
        assert not CODE.search(q.hint), f"{eid}.{q.id}'s hint shows code: {q.hint}"


def test_split_partials_merge_into_flash_decoding() -> None:
    """The oracle of ex13.q4, merged by the package's `combine_chunks` (the oracle of q1), is `flash_decode`."""
    for case in ex13.EXERCISE.question("q4").cases(random.Random(5)):
        args = build_case(case)
        merged = combine_chunks(*ex13._partials(**args))
        expected = flash_decode(args["q"].unsqueeze(2), args["k"], args["v"], splits=args["splits"]).squeeze(2)
        torch.testing.assert_close(merged, expected, atol=1e-4, rtol=1e-4)


def test_sampled_round_oracle_is_thread_safe() -> None:
    """The grader prepares submissions' expected values in threads (`--jobs`): ex14 q3's oracle patches the
    speculative module's draws for the length of one call, so two threads must never see each other's u
    (that race once scored a correct reference 3/4)."""
    import random
    from concurrent.futures import ThreadPoolExecutor

    from minigpt.exercises.wire import build_case

    q = EXERCISES["ex14"].question("q3")
    cases = [build_case(c) for seed in range(12) for c in q.cases(random.Random(seed))]
    serial = [q.oracle(**c) for c in cases]
    for _ in range(3):
        with ThreadPoolExecutor(max_workers=4) as pool:
            assert list(pool.map(lambda c: q.oracle(**c), cases)) == serial


def test_absorbed_oracle_is_the_packages_absorbed_path() -> None:
    """ex18.q1's oracle, with the RoPE key and query taken away (d_rope = 0), is `LatentAttention` folded (`fold`,
    the package's absorbed path) on the same latents and weights, so the question checks an absorption the package
    itself performs (with RoPE, `tests/test_ex18_latent.py` checks it against Hugging Face's DeepSeek-V3)."""
    for case in ex18.EXERCISE.question("q1").cases(random.Random(3)):
        args = build_case(case)
        S = args["c"].shape[0]
        args.update(k_rope=torch.zeros(S, 0), w_qr=torch.zeros(0, args["x"].shape[0]))
        oracle = ex18_latent._mla_decode(**args)
        H, d_h, d_c = args["w_uk"].shape
        config = ModelConfig(L=1, H=H, H_kv=H, d_h=d_h, d_ffn=1, V=1, S_max=S)
        attn = LatentAttention(config, 0, d_c)
        with torch.no_grad():
            attn.q.weight.copy_(args["w_q"])
            attn.q.bias.zero_()
            attn.up.weight.copy_(torch.cat([args["w_uk"].reshape(-1, d_c), args["w_uv"].reshape(-1, d_c)]))
            attn.out.weight.copy_(args["w_o"])
            attn.out.bias.zero_()
            attn.down.weight.copy_(torch.outer(args["c"][-1], args["x"]) / (args["x"] @ args["x"]))
            attn.fold()
            attn.path = "absorbed"
            cache = LatentCache(config, d_c, 1, S_max=S)
            cache.c[0, 0, : S - 1] = args["c"][:-1]
            cache.advance(S - 1)
            absorbed = attn(args["x"].view(1, 1, -1), cache, S=S - 1)[0, 0]
        torch.testing.assert_close(absorbed, oracle, atol=1e-4, rtol=1e-4)
        assert not torch.allclose(oracle, torch.zeros_like(oracle))


def test_review_lists_exercise_18s_oracles() -> None:
    """The modules that compute ex18's answers (the MLA layer, H2O, the window ring) and Eq. 22.1, where Q3
    leads, are listed for
    the instructor when a submission imports them (they are absent from the grading sandbox anyway)."""
    cell = ("from minigpt.runtime.mla import LatentAttention\nfrom minigpt.runtime.eviction import H2OCache\n"
            "from minigpt.runtime.window_cache import WindowKVCache\n"
            "from minigpt.costs.latent import bounded_decode_step_bytes\n")
    assert [f.category for f in review_cell(0, cell)] == ["answer"] * 4




def test_ex18_q3_replay_is_the_packages_h2o() -> None:
    """ex18 Q3's case generator picks its edge cases with a plain replay of H2O (`ex18_h2o._replay`): it must
    read what the package's `H2OCache` reads (the oracle), or the edges would separate another rule; and in
    each of cases 0-3 the named neighbour must read other keys, with no eviction on a near tie."""
    for seed in range(4):
        cases = ex18.EXERCISE.question("q3").cases(random.Random(seed))
        for i, case in enumerate(cases):
            args = build_case(case)
            right, gap = ex18_h2o._replay(**args)
            assert right == ex18_h2o._h2o_reads(**args)
            assert gap >= ex18_h2o.TIE_GAP
            assert all(len(r) == min(t + 1, args["budget"] + 1) for t, r in enumerate(right))
            if i < len(ex18_h2o._NEIGHBOURS):
                assert ex18_h2o._replay(**args, wrong=ex18_h2o._NEIGHBOURS[i])[0] != right


def test_ex11_q1_pool_slack_worked_by_hand() -> None:
    """ex11.q1's oracle is the package's own count (blocks in use × b − `tokens_held`) on a pool set up from the
    tables. By hand, b = 4: a prompt of 6 tokens in blocks [0, 1], forked twice and not yet written: blocks 0
    (4 tokens) and 1 (2 tokens), one of each, 2·4 − 6 = 2 empty slots (Eq. (11.1) summed over the three sequences
    says 6). Then one fork writes 3 tokens: it copies block 1 into block 2 and grows into block 3, so its table
    is [0, 2, 3] with 9 tokens (block 2 full, block 3 holding 1); blocks 0, 1, 2, 3 hold 4 + 2 + 4 + 1 = 11 of 16
    slots, 5 empty. The bug it catches: a pool that counts a shared block once per table (or fills it twice)."""
    from minigpt.exercises.ex11_slack import _pool_slack

    assert _pool_slack([[0, 1], [0, 1], [0, 1]], [6, 6, 6], block_size=4) == 2
    assert _pool_slack([[0, 1], [0, 1], [0, 2, 3]], [6, 6, 9], block_size=4) == 5
    assert _pool_slack([[5], []], [4, 0], block_size=4) == 0  # a full block, an empty sequence: nothing empty


def test_ex11_q1_states_are_a_real_pools() -> None:
    """ex11.q1's cases are pools the package's `PagedKVCache` reached by operations: each table holds
    ⌈S / b⌉ blocks, a block shared by several sequences is filled alike in each (copy-on-write leaves no shared
    block half-written by one of them), and the count by distinct last blocks (only a last block can be partly
    filled) agrees with the oracle. The bug it catches: a generator whose states no engine reaches."""
    from minigpt.exercises.ex11_slack import _pool_slack

    for seed in range(200):
        for case in EXERCISES["ex11"].question("q1").cases(random.Random(seed)):
            b, fill = case["block_size"], {}
            for table, S in zip(case["tables"], case["lengths"], strict=True):
                assert len(table) == -(-S // b), (seed, case)
                for i, block in enumerate(table):
                    assert fill.setdefault(block, min(b, S - i * b)) == min(b, S - i * b), (seed, case)
            last = {table[-1]: -S % b for table, S in zip(case["tables"], case["lengths"], strict=True) if table}
            assert _pool_slack(**case) == sum(last.values()) == len(fill) * b - sum(fill.values()), (seed, case)


def test_ex11_q2_oracle_is_the_engines_step_worked_by_hand() -> None:
    """ex11.q2's oracle is the engine's `flatten` over a pool set up to hold the given tables; worked by hand, b = 2:
    sequence 0 holds 3 tokens and decodes token 3, in logical block 1 (its table's 3), row 1: slot 3·2 + 1 = 7;
    sequence 1 holds 2 and feeds a chunk of 4, tokens 2 … 5: logical blocks 1, 1, 2, 2 are 9, 9, 2, 2, rows
    0, 1, 0, 1: slots 18, 19, 4, 5 (the chunk crosses from block 9 into block 2). Then the oracle equals the
    step written from scratch on 2,400 drawn cases. The bug it catches: a set-up whose free list hands `reserve`
    other blocks than the tables name (the engine would then write elsewhere than the question says)."""
    from minigpt.exercises.ex11_step import _step_slots

    assert _step_slots([[7, 3], [5, 9, 2]], [3, 2], [1, 4], block_size=2) == [7, 18, 19, 4, 5]
    assert _step_slots([[0], [1, 2]], [0, 1], [1, 2], block_size=2) == [0, 3, 4]  # a new sequence: S = 0
    long = list(range(9, 23))  # 14 blocks of 16: a sequence past the 128 positions of MiniGPT's default S_max
    assert _step_slots([long], [209], [2], block_size=16) == [22 * 16 + 1, 22 * 16 + 2]
    q = EXERCISES["ex11"].question("q2")
    for seed in range(300):
        for case in q.cases(random.Random(seed)):
            b = case["block_size"]
            scratch = [table[p // b] * b + p % b
                       for table, S, T in zip(case["tables"], case["lengths"], case["counts"], strict=True)
                       for p in range(S, S + T)]
            assert _step_slots(**case) == scratch, (seed, case)


def test_ex18_q2_replay_is_the_packages_snapkv() -> None:
    """ex18 Q2's case generator picks its edge cases with a plain replay of SnapKV (`ex18_snapkv._select`): it
    must keep what the package's `SnapKVCache` keeps (the oracle), or the edges would separate another rule;
    case 0 holds the whole prompt, each later edge case's named neighbour keeps other keys, and no case has a
    near tie at the cut."""
    for seed in range(6):
        cases = ex18.EXERCISE.question("q2").cases(random.Random(seed))
        for i, case in enumerate(cases):
            args = build_case(case)
            right, gap = ex18_snapkv._select(**args)
            assert right == ex18_snapkv._snapkv_keep(**args)
            assert gap >= ex18_snapkv.TIE_GAP
            T = args["k"].shape[0]
            assert len(right) == min(T, args["budget"]) and (T <= args["budget"]) == (i == 0)
            assert right[-min(args["window"], T):] == list(range(T - min(args["window"], T), T))
            if 1 <= i <= len(ex18_snapkv._NEIGHBOURS):
                assert ex18_snapkv._select(**args, wrong=ex18_snapkv._NEIGHBOURS[i - 1])[0] != right


def test_ex18_q3_replay_by_hand() -> None:
    """`ex18_h2o._replay` on a case worked by hand: every query zero, so each step's weights are uniform. Budget
    2, one recent key: after step 2 the scores are 1 + 1/2 + 1/3, 1/2 + 1/3 and 1/3; key 2 stays as the recent
    one, key 0 as the heavier old one, and the gap between the old keys is exactly 1 (a near tie would be under
    `TIE_GAP`). Step 3 then reads keys 0, 2 and 3. The bugs: the gap computed with a sum or the wrong rank, or
    not computed when one heavy hitter is kept."""
    q, k = torch.zeros(4, 2), torch.randn(4, 2, generator=torch.Generator().manual_seed(0))
    reads, gap = ex18_h2o._replay(q, k, budget=2, recent=1)
    assert reads == [[0], [0, 1], [0, 1, 2], [0, 2, 3]]
    assert gap == pytest.approx(1.0)


def test_ex18_q3_generator_refuses_a_near_tie(monkeypatch) -> None:
    """A case whose eviction cuts between two scores closer than `TIE_GAP` is drawn again (a float32 and a float64
    answer could evict different keys there): with the gap required raised above any score difference, no case
    that evicts is accepted."""
    case = ex18.EXERCISE.question("q3").cases(random.Random(0))[4]
    assert ex18_h2o._separates(case, None)
    monkeypatch.setattr(ex18_h2o, "TIE_GAP", 100.0)
    assert not ex18_h2o._separates(case, None)
