"""The fused step (`minigpt.runtime.varlen`): one forward over every token of a step equals each sequence run
alone; attention reads each sequence's own blocks (work follows Σ S_b, not B·max S_b); the engine runs one
forward per step."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import MiniGPT, ModelConfig
from minigpt.runtime.attention.paged import paged_attention, paged_decode_attention
from minigpt.runtime.model import attention, causal_visible
from minigpt.runtime.paged_cache import OutOfBlocks, PagedKVCache
from minigpt.runtime.slot_cache import SlotKVCache
from minigpt.runtime.varlen import flatten, forward_varlen
from minigpt.serving import Engine, EngineConfig, Request
from minigpt.serving.executor import ModelExecutor

CONFIG = ModelConfig(L=2, H=4, H_kv=2, d_h=8, d_ffn=64, V=40, S_max=48)
torch.manual_seed(0)
MODEL = MiniGPT(CONFIG).eval()
ATOL = 1e-5  # fp32: the fused matmuls have ΣT rows, a lone forward T, and attention merges blocks by log-sum-exp

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def pool_of(kind: str, block_size: int, n: int):
    if kind == "paged":
        return PagedKVCache(CONFIG, num_blocks=n * -(-CONFIG.S_max // block_size), block_size=block_size)
    return SlotKVCache(CONFIG, slots=n)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["paged", "slot"]), block_size=st.integers(1, 6), seed=st.integers(0, 2**16),
       B=st.integers(2, 5), steps=st.integers(1, 3), data=st.data())
def test_a_fused_step_equals_each_sequence_alone(kind, block_size, seed, B, steps, data):
    """Steps of ragged prompt chunks and decodes (T_b of 1..9 after S_b of 0..): the logits at every sampled row
    equal the lone sequence's forward at that position, and greedy tokens agree exactly.
    Catches: a wrong position or offset mask, a K/V written to the wrong slot, a row attending to another
    sequence's keys, logits taken at the wrong row."""
    g = torch.Generator().manual_seed(seed)
    pool = pool_of(kind, block_size, B)
    seqs = [pool.add_sequence() for _ in range(B)]
    history: list[list[int]] = [[] for _ in range(B)]
    for _ in range(steps):
        Ts = data.draw(st.lists(st.sampled_from([1, 1, 2, 3, 5, 9]), min_size=B, max_size=B))
        samples = data.draw(st.lists(st.booleans(), min_size=B, max_size=B))
        run = [b for b in range(B) if len(history[b]) + Ts[b] <= CONFIG.S_max]
        if not run:
            break
        tokens = [torch.randint(0, CONFIG.V, (Ts[b],), generator=g).tolist() for b in run]
        batch = flatten(pool, [seqs[b] for b in run], tokens, [samples[b] for b in run])
        with torch.no_grad():
            got = forward_varlen(MODEL, pool, batch)
        assert got.shape == (sum(samples[b] for b in run), CONFIG.V)
        assert batch.seq_index.tolist() == [i for i, b in enumerate(run) for _ in range(Ts[b])]
        row = 0
        for b, t in zip(run, tokens, strict=True):
            history[b] += t
            assert pool.length(seqs[b]) == len(history[b])
            if samples[b]:
                with torch.no_grad():
                    alone = MODEL(torch.tensor([history[b]]))[0, -1]
                torch.testing.assert_close(got[row], alone, rtol=0, atol=ATOL)
                assert int(got[row].argmax()) == int(alone.argmax())
                row += 1


def test_paged_attention_equals_the_plain_kernel():
    """Block by block with a log-sum-exp merge = softmax over the whole row (prefill chunk and decodes).
    Catches: a block's max or sum taken over invisible keys, a wrong merge weight, heads of a group mixed up."""
    g = torch.Generator().manual_seed(3)
    H, H_kv, d_h, b = 4, 2, 8, 3
    for S, T in ((0, 7), (5, 4), (10, 1)):
        K = S + T
        n = -(-K // b)
        k = torch.randn(n, H_kv, b, d_h, generator=g)
        v = torch.randn(n, H_kv, b, d_h, generator=g)
        q = torch.randn(T, H, d_h, generator=g)
        flat_k = k.permute(1, 0, 2, 3).reshape(1, H_kv, n * b, d_h)[:, :, :K]
        flat_v = v.permute(1, 0, 2, 3).reshape(1, H_kv, n * b, d_h)[:, :, :K]
        plain = attention(q.transpose(0, 1)[None], flat_k, flat_v, causal_visible(S, T, q.device))[0].transpose(0, 1)
        torch.testing.assert_close(paged_attention(q, k, v, S), plain, rtol=0, atol=1e-6)
    lens = [1, 7, 3]  # three decodes: their blocks end to end
    ks = [torch.randn(-(-L // b), H_kv, b, d_h, generator=g) for L in lens]
    vs = [torch.randn_like(x) for x in ks]
    q = torch.randn(3, H, d_h, generator=g)
    owner = torch.tensor([i for i, x in enumerate(ks) for _ in range(x.shape[0])])
    start = torch.tensor([j * b for x in ks for j in range(x.shape[0])])
    got = paged_decode_attention(q, torch.cat(ks), torch.cat(vs), owner, start, torch.tensor(lens))
    for i, L in enumerate(lens):
        torch.testing.assert_close(got[i], paged_attention(q[i : i + 1], ks[i], vs[i], L - 1)[0], rtol=0, atol=1e-6)


def test_paged_decode_is_the_same_whatever_torchs_default_dtype() -> None:
    """The decode kernel's float32 merge buffers take their dtype from the scores, not from torch's default: a
    reader who set `torch.set_default_dtype(torch.float64)` got "scatter(): Expected self.dtype to be equal to
    src.dtype" from every paged decode. Catches a buffer built with the default dtype."""
    g = torch.Generator().manual_seed(5)
    H, H_kv, d_h, b, lens = 4, 2, 8, 3, [2, 5]
    ks = [torch.randn(-(-L // b), H_kv, b, d_h, generator=g) for L in lens]
    vs = [torch.randn_like(x) for x in ks]
    q = torch.randn(len(lens), H, d_h, generator=g)
    owner = torch.tensor([i for i, x in enumerate(ks) for _ in range(x.shape[0])])
    start = torch.tensor([j * b for x in ks for j in range(x.shape[0])])
    args = (q, torch.cat(ks), torch.cat(vs), owner, start, torch.tensor(lens))
    want = paged_decode_attention(*args)
    default = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        got = paged_decode_attention(*args)
    finally:
        torch.set_default_dtype(default)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def ragged_step(pool, lengths: list[int], T: int):
    """Sequences holding `lengths` tokens, then one step feeding T tokens each; returns the step's batch."""
    seqs = [pool.add_sequence() for _ in lengths]
    with torch.no_grad():
        for seq, S in zip(seqs, lengths, strict=True):
            forward_varlen(MODEL, pool, flatten(pool, [seq], [[1] * S]))
        batch = flatten(pool, seqs, [[2] * T] * len(seqs))
        logits = forward_varlen(MODEL, pool, batch)
    return batch, logits


@pytest.mark.parametrize("T", [1, 4])
def test_attention_reads_follow_the_sum_of_lengths_not_the_longest(T):
    """One long sequence and seven short ones: the step reads L·Σ_b ⌈(S_b+T)/b⌉·b key positions (slot cache:
    L·Σ_b (S_b+T)), far below the L·B·(max S_b + T) of the padded batch. Catches a read padded to the longest."""
    lengths, b = [40, 3, 5, 2, 6, 1, 4, 3], 4
    batch, _ = ragged_step(PagedKVCache(CONFIG, num_blocks=64, block_size=b), lengths, T)
    per_layer = sum(-(-(S + T) // b) * b for S in lengths)
    assert batch.keys_read == CONFIG.L * per_layer
    padded = CONFIG.L * len(lengths) * (max(lengths) + T)
    assert batch.keys_read < padded / 3
    slot_batch, _ = ragged_step(SlotKVCache(CONFIG, slots=8), lengths, T)
    assert slot_batch.keys_read == CONFIG.L * sum(S + T for S in lengths)


def test_the_count_catches_a_read_padded_to_the_longest(monkeypatch):
    """The mutant reads every sequence's blocks padded to the longest block table (what `write_and_gather` does):
    its logits still agree, so only the count can tell, and it does."""
    lengths, b, T = [40, 3, 5, 2], 4, 3
    honest, logits = ragged_step(PagedKVCache(CONFIG, num_blocks=64, block_size=b), lengths, T)

    def padded_read(self, layer, pages, K):
        n = max(len(t) for t in self._tables.values())
        pages = torch.cat([pages, torch.zeros(n - len(pages), dtype=torch.long)])  # block 0: never visible
        return self.k[layer][pages], self.v[layer][pages]

    monkeypatch.setattr(PagedKVCache, "read_kv", padded_read)
    mutant, mutant_logits = ragged_step(PagedKVCache(CONFIG, num_blocks=64, block_size=b), lengths, T)
    torch.testing.assert_close(mutant_logits, logits, rtol=0, atol=1e-6)
    assert mutant.keys_read == CONFIG.L * len(lengths) * math.ceil((max(lengths) + T) / b) * b
    assert mutant.keys_read != honest.keys_read


def test_the_engine_runs_one_forward_per_step():
    """A mixed step (a long prompt's chunk and running decodes) calls each weight matrix once when fused, once per
    distinct chunk length when not; both give every request the same tokens."""
    reqs = [Request("short", (1, 2, 3), 12), Request("long", tuple(j % 37 + 1 for j in range(30)), 4, arrival_s=1e-9)]
    tokens, calls, counted = {}, {}, []
    for fused in (True, False):
        pool = PagedKVCache(CONFIG, num_blocks=32, block_size=4)
        e = Engine(ModelExecutor(MODEL, pool, fused=fused), pool, EngineConfig(chunk_size=8))
        hook = MODEL.blocks[0].mlp.up.register_forward_hook(lambda *_: counted.append(1))
        try:
            for r in reqs:
                e.submit(r)
            per_step = []
            while e.busy:
                before = len(counted)
                chunks = e.step()
                if chunks:
                    per_step.append((len({c.T for c in chunks}), len(counted) - before))
        finally:
            hook.remove()
        tokens[fused] = [e.requests[r.id].tokens for r in reqs]
        calls[fused] = per_step
    assert tokens[True] == tokens[False]
    assert all(n == 1 for _, n in calls[True])
    assert any(n == 2 for _, n in calls[False]) and all(n == k for k, n in calls[False])


def test_bad_steps_name_what_is_wrong():
    pool = PagedKVCache(CONFIG, num_blocks=3, block_size=4)
    a, b = pool.add_sequence(), pool.add_sequence()
    with pytest.raises(ValueError, match="at least one sequence"):
        flatten(pool, [], [])
    with pytest.raises(ValueError, match="one entry per sequence"):
        flatten(pool, [a, b], [[1]])
    with pytest.raises(ValueError, match="once per step"):
        flatten(pool, [a, a], [[1], [2]])
    with pytest.raises(ValueError, match="feeds no token"):
        flatten(pool, [a], [[]])
    with pytest.raises(ValueError, match="token id 40 is out of range"):
        flatten(pool, [a], [[1, 40]])
    with pytest.raises(ValueError, match="exceeds S_max=48"):
        flatten(pool, [a], [[1] * 49])
    with pytest.raises(OutOfBlocks, match="need 4 free KV blocks but only 3"):
        flatten(pool, [a, b], [[1] * 5, [1] * 5])
    assert pool.allocator.num_free == 3 and pool.block_table(a) == []  # all or nothing
    other = PagedKVCache(ModelConfig(L=1, H=4, H_kv=2, d_h=8, d_ffn=64, V=40, S_max=48), num_blocks=3)
    seq = other.add_sequence()
    with pytest.raises(ValueError, match="pool was built for"):
        forward_varlen(MODEL, other, flatten(other, [seq], [[1]]))


def count_sampling(engine: Engine) -> list[int]:
    """A list that gets, for each step the engine runs, how many of its chunks sample (read before the step
    runs them: a chunk's `samples` is computed from its request's progress, which the step moves on)."""
    counts: list[int] = []
    run = engine.executor.run

    def counting(chunks):
        counts.append(sum(c.samples for c in chunks))
        return run(chunks)

    engine.executor.run = counting
    return counts


def test_the_engine_the_book_builds_runs_one_fused_forward_reading_only_its_blocks(monkeypatch):
    """`Engine.for_model` (what the chapters and the server build): every step is one `forward_varlen`, each
    weight matrix is called once, and attention reads exactly L·Σ_b ⌈(S_b + T_b)/b⌉·b key positions, each
    sequence's own blocks. Catches an executor that defaults to the unfused path (one forward per chunk
    length) and a read padded to the longest sequence on the real engine, not only on a hand-built batch."""
    import minigpt.serving.executor as executor

    b = 4
    batches, counted = [], []
    real = executor.forward_varlen

    def recording(model, pool, batch):
        batches.append(batch)
        return real(model, pool, batch)

    monkeypatch.setattr(executor, "forward_varlen", recording)
    engine = Engine.for_model(MODEL, num_blocks=40, block_size=b, config=EngineConfig(chunk_size=8))
    sampling = count_sampling(engine)
    reqs = [Request("long", tuple(j % 37 + 1 for j in range(30)), 5), Request("short", (1, 2, 3), 9),
            Request("mid", tuple(range(1, 12)), 6, arrival_s=1e-9)]
    for r in reqs:
        engine.submit(r)
    linears = [m for m in MODEL.modules() if isinstance(m, torch.nn.Linear)]
    hooks = [m.register_forward_hook(lambda mod, *_: counted.append(mod)) for m in linears]
    steps = 0
    try:
        while engine.busy:
            before_batches, before_calls = len(batches), len(counted)
            if engine.step():
                steps += 1
                assert len(batches) - before_batches == 1, "more than one forward in a step"
                # the LM head runs at the rows that sample, and only there (not at a mid-prompt chunk's end)
                assert len(batches[-1].logits_indices) == sampling[-1]
                called = counted[before_calls:]
                assert len(called) == len(linears) and set(map(id, called)) == set(map(id, linears)), (
                    "each weight matrix is called exactly once per step")
                batch = batches[-1]
                blocks = sum(-(-(S + T) // b) for S, T in zip(batch.context_lens, batch.query_lens, strict=True))
                assert batch.keys_read == CONFIG.L * blocks * b
    finally:
        for hook in hooks:
            hook.remove()
    mixed = [bt for bt in batches if len(set(bt.query_lens)) > 1]
    assert steps == len(batches) and mixed, "no step mixed a prompt chunk with decodes: the case proves little"
    assert all(engine.requests[r.id].status.name == "FINISHED" for r in reqs)


def test_an_executor_refuses_a_pool_built_for_another_model():
    other = ModelConfig(L=1, H=4, H_kv=2, d_h=8, d_ffn=64, V=40, S_max=48)
    with pytest.raises(ValueError, match=r"pool was built for ModelConfig\(L=1.*but the model is ModelConfig\(L=2"):
        ModelExecutor(MODEL, PagedKVCache(other, num_blocks=4, block_size=4))



@pytest.mark.parametrize("fused", [True, False])
def test_a_step_where_nothing_samples_runs(fused):
    """A lone 30-token prompt in chunks of 8: its first three steps sample nothing (the prompt is not done), and
    both executors run them and then give the tokens `generate` gives. Catches a stack of no logits."""
    from minigpt import generate

    prompt = tuple(j % 37 + 1 for j in range(30))
    pool = PagedKVCache(CONFIG, num_blocks=16, block_size=4)
    engine = Engine(ModelExecutor(MODEL, pool, fused=fused), pool, EngineConfig(chunk_size=8))
    engine.submit(Request("alone", prompt, 5))
    sampled = count_sampling(engine)
    while engine.busy:
        engine.step()
    assert sampled[:4] == [0, 0, 0, 1]
    assert engine.requests["alone"].tokens == generate(MODEL, list(prompt), max_new_tokens=5).tokens[0]
