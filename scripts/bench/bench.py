"""`make bench`: speed and memory figures, reported (never asserted: the machines are shared and noisy).

One run prints one set of tables and writes them, with the environment, to a JSON file
(default `_build/bench/bench_<device>.json`) so that a later run can be compared:

* decode with and without the KV cache, against the FLOP model's prediction;
* batch-1 decode tok/s of the scaled config against the bandwidth ceiling (Eq. 3.4);
* the grammar checker's speed and the shipped checkpoint's load time;
* peers (issue 14): per model, greedy tok/s of MiniGPT eager, MiniGPT compiled (static cache +
  `torch.compile`), `transformers` GPT-2 `generate` and llama.cpp (issue 27: the f32 GGUF file,
  llama-cpp-python, when installed) on the same exported weights, interleaved repeats; the eager
  step's overhead floor; batch-1 achieved bandwidth / the probe's, eager and compiled;
* fused (issue 22): a mixed step (one prompt chunk and B decodes) as one fused forward against the
  unfused executor's one forward per chunk length, B = 1…64, on the scaled config;
* paged (issue 22): a decode step and its attention alone on a ragged batch (400 + 7×60 tokens) and a
  uniform one of equal Σ S_b, through the block table (fused, paged), from slots (fused, slot cache),
  contiguous (`KVCache`), and the old padded ragged paths.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from minigpt import MiniGPT, ModelConfig, costs, generate, load_pretrained, measure
from minigpt.corpus import generate_sentences, is_grammatical
from minigpt.costs.presets import FAMILY, SCALED
from minigpt.measure import overhead, sweeps
from minigpt.runtime.attention.paged import paged_attention, paged_decode_attention
from minigpt.runtime.compiled import StaticDecoder
from minigpt.runtime.model import attention
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.runtime.sequence_pool import SequencePoolBase
from minigpt.runtime.slot_cache import SlotKVCache
from minigpt.runtime.varlen import flatten, forward_varlen

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("cache", "bandwidth", "small", "peers", "fused", "paged")


def decode_seconds(model: MiniGPT, P: int, D: int, use_cache: bool, repeats: int) -> float:
    """Median wall time of the decode phase (D − 1 steps) of a greedy D-token generation."""
    prompt = torch.randint(0, model.config.V, (1, P), generator=torch.Generator().manual_seed(0)).to(model.device)
    return statistics.median(generate(model, prompt, D, use_cache=use_cache).meters.decode_s for _ in range(repeats))


def predicted_speedup(cfg: ModelConfig, P: int, D: int) -> float:
    """FLOP model: no-cache decode FLOPs over cached decode FLOPs (prefill excluded from both)."""
    c = costs.of(cfg)
    return (c.no_cache_flops(P=P, D=D) - c.prefill_flops(P=P)) / c.decode_flops(P=P, D=D)


def cache_speedups(models: dict[str, MiniGPT], P: int, Ds: list[int], repeats: int) -> list[dict]:
    print(f"{'model':<20} {'D':>5} {'no cache (s)':>13} {'cache (s)':>10} {'speedup':>8} {'FLOP model':>11}")
    rows = []
    for name, model in models.items():
        for D in Ds:
            if P + D - 1 > model.config.S_max:
                print(f"{name:<20} {D:>5}  skipped: P + D - 1 = {P + D - 1} > S_max = {model.config.S_max}")
                rows.append({"model": name, "D": D, "skipped": f"P + D - 1 > S_max = {model.config.S_max}"})
                continue
            generate(model, [[1] * P], 4)  # warm-up
            slow = decode_seconds(model, P, D, False, repeats)
            fast = decode_seconds(model, P, D, True, repeats)
            predicted = predicted_speedup(model.config, P, D)
            print(f"{name:<20} {D:>5} {slow:>13.4f} {fast:>10.4f} {slow / fast:>7.1f}x {predicted:>10.1f}x")
            rows.append({"model": name, "D": D, "no_cache_s": slow, "cache_s": fast, "speedup": slow / fast,
                         "predicted_speedup": predicted})
    return rows


def bandwidth_ceiling(model: MiniGPT, bandwidth: float) -> list[dict]:
    print(f"\nbandwidth probe: {bandwidth / 1e9:.1f} GB/s; scaled config weights "
          f"{measure.module_bytes(model) / 2**20:.1f} MiB")
    print(f"{'S':>5} {'bytes/step (MiB)':>17} {'ceiling tok/s':>14} {'measured tok/s':>15} {'of ceiling':>11}")
    rows = []
    for S in (16, 128, 256):
        t = sweeps.time_decode_step(model, B=1, S=S, warmup=3, repeats=20).median_s
        step_bytes = sweeps.model_decode_bytes(model, B=1, S=S)
        ceiling = costs.decode_tok_s_ceiling(bandwidth=bandwidth, bytes_per_step=step_bytes)
        print(f"{S:>5} {step_bytes / 2**20:>17.1f} {ceiling:>14.0f} {1 / t:>15.0f} {(1 / t) / ceiling:>10.0%}")
        rows.append({"S": S, "bytes_per_step": step_bytes, "ceiling_tok_s": ceiling, "measured_tok_s": 1 / t})
    return rows


def small_timings() -> dict[str, float]:
    sentences = generate_sentences(1000, seed=11)
    checker = measure.time_fn(lambda: all(is_grammatical(s) for s in sentences), warmup=1, repeats=5)
    load_pretrained()  # warm the imports
    start = time.perf_counter()
    load_pretrained()
    load_s = time.perf_counter() - start
    print(f"\ngrammar checker: {checker.median_s * 1e3:.0f} ms per 1,000 sentences; "
          f"checkpoint load: {load_s * 1e3:.0f} ms")
    return {"checker_s_per_1000": checker.median_s, "checkpoint_load_s": load_s}


def peer_models(device: torch.device) -> dict[str, MiniGPT]:
    """The shipped MiniGPT, the scaled config and Chapter 8's larger family members (random weights)."""
    models = {"MiniGPT (shipped)": load_pretrained(device=device).model,
              "scaled L=8 d=512": sweeps.random_model(SCALED, device=device)}
    for name, cfg in FAMILY.items():
        if cfg.d > ModelConfig().d and cfg.d != SCALED.d:
            models[name] = sweeps.random_model(cfg, device=device)
    return models


def _spread(times: list[float], D: int) -> dict[str, float]:
    rates = sorted(D / t for t in times)
    return {"tok_s": statistics.median(rates), "tok_s_min": rates[0], "tok_s_max": rates[-1]}


def peers(models: dict[str, MiniGPT], P: int, D: int, repeats: int, device: torch.device) -> list[dict]:
    """Greedy D-token generations (prefill included) per model: MiniGPT eager, compiled, transformers GPT-2."""
    import transformers

    from minigpt.interop.hf import export_gpt2

    print(f"\npeers: greedy, P={P}, D={D}, tok/s = D / (prefill + D-1 steps); median [min-max] of {repeats} "
          "interleaved repeats")
    from minigpt.interop import llamacpp

    why_not = llamacpp.unavailable() if device.type == "cpu" else "llama.cpp's wheel here is CPU-only"
    engine = "" if why_not else f" {'llama.cpp':>16}"
    print(f"{'model':<18} {'eager':>16} {'compiled':>16} {'transformers':>16}{engine} {'eager/hf':>9} "
          f"{'comp/eager':>11} {'compile s':>10} {'same':>5}")
    if why_not:
        print(f"(no llama.cpp column: {why_not})")
    gguf_dir = tempfile.TemporaryDirectory()  # llama.cpp maps its file: kept until the table is done
    rows = []
    for name, model in models.items():
        prompt = torch.randint(0, model.config.V, (1, P), generator=torch.Generator().manual_seed(0)).to(device)
        with tempfile.TemporaryDirectory() as tmp:
            hf = transformers.GPT2LMHeadModel.from_pretrained(export_gpt2(model, tmp), local_files_only=True)
        hf = hf.to(device).eval()
        decoder = StaticDecoder(model, 1, S_max=P + D - 1)
        mask = torch.ones_like(prompt)
        runs: dict[str, Callable[[], list[int]]] = {
            "eager": lambda m=model, p=prompt: generate(m, p, D).tokens[0],
            "compiled": lambda dec=decoder, p=prompt: dec.generate(p, D)[0].tolist(),
            "transformers": lambda h=hf, p=prompt, a=mask: h.generate(
                p, attention_mask=a, max_new_tokens=D, min_new_tokens=D, do_sample=False)[0, P:].tolist(),
        }
        if not why_not:  # llama.cpp on the same weights (f32 GGUF, its default f16 KV cache), torch's threads
            from minigpt.interop.gguf_write import export_gguf
            from minigpt.runtime.tokenizer import Tokenizer

            words = ["<pad>", *(f"w{i}" for i in range(1, model.config.V))]
            path = export_gguf(model, Path(gguf_dir.name) / f"{len(rows)}.gguf", Tokenizer(words))
            llm = llamacpp.open_gguf(path, n_threads=torch.get_num_threads(), logits_all=False)
            ids = prompt[0].tolist()
            runs["llama.cpp"] = lambda e=llm, p=ids: llamacpp.greedy(e, p, D)
        with torch.no_grad():
            tokens = {k: run() for k, run in runs.items()}  # warm-up; the compiled step compiles here
            times: dict[str, list[float]] = {k: [] for k in runs}
            for _ in range(repeats):
                for k, run in runs.items():
                    start = time.perf_counter()
                    run()
                    measure.sync(device)
                    times[k].append(time.perf_counter() - start)
        r = {k: _spread(v, D) for k, v in times.items()}
        same = tokens["eager"] == tokens["compiled"] == tokens["transformers"]
        if "llama.cpp" in runs:  # its GELU is the tanh form (minigpt.interop.gguf): a near tie may differ
            r["llama.cpp"]["tokens_agree"] = tokens["llama.cpp"] == tokens["eager"]
        row = {"model": name, "config": model.config.to_dict(), "P": P, "D": D, "repeats": repeats,
               **{k: {**v, "times_s": times[k]} for k, v in r.items()},
               "eager_over_transformers": r["eager"]["tok_s"] / r["transformers"]["tok_s"],
               "compiled_over_eager": r["compiled"]["tok_s"] / r["eager"]["tok_s"],
               "compile_s": decoder.compile_s, "tokens_agree": same,
               "overhead_floor": overhead.overhead_floor(model, S=P, repeats=10).to_record()}
        row["overhead_floor"]["kinds"] = overhead.kind_counts(row["overhead_floor"]["ops"])
        cells = " ".join(f"{r[k]['tok_s']:.0f} [{r[k]['tok_s_min']:.0f}-{r[k]['tok_s_max']:.0f}]".rjust(16)
                         for k in runs)
        print(f"{name:<18} {cells} {row['eager_over_transformers']:>8.2f}x {row['compiled_over_eager']:>10.2f}x"
              f" {decoder.compile_s:>10.1f} {'yes' if same else 'NO':>5}", flush=True)
        rows.append(row)
    gguf_dir.cleanup()
    print(f"\n{'model':<18} {'ops/step':>9} {'kernels':>8} {'views':>6} {'syncs':>6} {'t_op (us)':>10} "
          f"{'floor (ms)':>11} {'eager step (ms)':>16} {'explained':>10}")
    for row in rows:
        f = row["overhead_floor"]
        k = f["kinds"]
        print(f"{row['model']:<18} {f['n_ops']:>9} {k['kernel']:>8} {k['view']:>6} {k['sync']:>6} "
              f"{f['per_op_s'] * 1e6:>10.2f} {f['floor_s'] * 1e3:>11.3f} {f['measured_s'] * 1e3:>16.3f} "
              f"{f['explained']:>9.0%}")
    print("The floor is n_ops x the cheapest operator; where the rest of the step goes (module calls, the\n"
          "other operators' Python, the matmuls): scripts/sweeps/sweep_overhead.py --breakdown, Chapter 18 Step 2b.")
    return rows


def achieved_bandwidth(model: MiniGPT, name: str, bandwidth: float, S: int, repeats: int) -> dict:
    """Batch-1 decode at S cached tokens: bytes per step / step time, over the probe's bandwidth, eager and compiled."""
    kv = costs.of(model.config).kv_bytes_per_token(s=model.dtype.itemsize)
    weights = measure.module_bytes(model)
    eager_t = sweeps.time_decode_step(model, B=1, S=S, warmup=3, repeats=repeats).median_s
    decoder = StaticDecoder(model, 1, S_max=S + 1)
    compiled_t = overhead.time_static_step(decoder, S=S, repeats=repeats).median_s
    eager_bytes = costs.decode_step_bytes(weight_bytes=weights, kv_bytes_per_token=kv, S=S, B=1)
    static_bytes = costs.decode_step_bytes(weight_bytes=weights, kv_bytes_per_token=kv, S=S + 1, B=1)  # all rows
    row = {"model": name, "config": model.config.to_dict(), "S": S, "probe_bytes_s": bandwidth}
    print(f"\nbatch-1 decode bandwidth, {name} at S={S} (weights {weights / 2**20:.0f} MiB), "
          f"probe {bandwidth / 1e9:.1f} GB/s (gpt-fast's anchor: 0.82 of peak on an A100)")
    for k, t, nbytes in (("eager", eager_t, eager_bytes), ("compiled", compiled_t, static_bytes)):
        row[k] = {"step_s": t, "bytes": nbytes, "bytes_s": nbytes / t, "of_probe": nbytes / t / bandwidth}
        print(f"  {k:<9} step {t * 1e3:8.2f} ms  {nbytes / t / 1e9:6.2f} GB/s  {nbytes / t / bandwidth:6.0%} of probe")
    return row


#: Issue 14's targets, reported (never asserted): name -> target.
TARGETS = {
    "eager >= 2x transformers (MiniGPT)": 2.0,
    "compiled >= 5x eager (MiniGPT)": 5.0,
    "compiled batch-1 bandwidth >= 0.75 of probe (largest)": 0.75,
}


def targets(peer_rows: list[dict], bandwidth_row: dict) -> dict[str, dict]:
    """Each target with its measured value and measured / target (>= 1: met)."""
    mini = peer_rows[0]
    values = [mini["eager_over_transformers"], mini["compiled_over_eager"], bandwidth_row["compiled"]["of_probe"]]
    out = {}
    print("\ntargets (reported, not asserted):")
    for (name, target), value in zip(TARGETS.items(), values, strict=True):
        out[name] = {"target": target, "measured": value, "of_target": value / target, "met": value >= target}
        print(f"  {name:<55} measured {value:6.2f}  target {target:5.2f}  {'met' if value >= target else 'MISSED'}"
              f" ({value / target:.0%} of target)")
    return out


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--P", type=int, default=16)
    parser.add_argument("--D", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--peer-D", type=int, default=64, help="new tokens per generation in the peers table")
    parser.add_argument("--peer-repeats", type=int, default=5)
    args = parser.parse_args()
    device = measure.default_device()
    if device.type == "cpu":
        torch.set_num_threads(1)  # the CPU is shared: one thread per timed job
    torch.manual_seed(0)
    env = measure.environment(device, torch.float32)
    print(f"# make bench — {env}; P={args.P}; medians of {args.repeats}")
    models = {"MiniGPT (shipped)": load_pretrained(device=device).model,
              "scaled L=8 d=512": sweeps.random_model(SCALED, device=device)}
    result = {"script": "scripts/bench/bench.py", "environment": env, "sections": args.sections}
    if "cache" in args.sections:
        result["cache_speedup"] = cache_speedups(models, args.P, args.D, args.repeats)
    bandwidth = measure.probe_bandwidth(device=device)
    result["bandwidth_probe"] = bandwidth
    if "bandwidth" in args.sections:
        result["bandwidth_ceiling"] = bandwidth_ceiling(models["scaled L=8 d=512"], bandwidth)
    if "small" in args.sections:
        result["small"] = small_timings()
    if "peers" in args.sections:
        family = peer_models(device)
        result["peers"] = peers(family, args.P, args.peer_D, args.peer_repeats, device)
        largest = max(family, key=lambda k: measure.module_bytes(family[k]))  # all fit: 0.8 GB at most in fp32
        result["peer_bandwidth"] = achieved_bandwidth(family[largest], largest, bandwidth, S=args.P, repeats=10)
        result["targets"] = targets(result["peers"], result["peer_bandwidth"])
    if "fused" in args.sections:
        print("\n## fused vs unfused mixed step (scaled config, thread CPU time)")
        result["fused"] = fused_vs_unfused(models["scaled L=8 d=512"], [1, 4, 16, 64], args.repeats)
    if "paged" in args.sections:
        print("\n## paged vs slot vs contiguous decode step (scaled config, thread CPU time, x: over fused_slot)")
        result["paged"] = paged_vs_slot(models["scaled L=8 d=512"], args.repeats, {
            "ragged 400 + 7x60": [400] + [60] * 7, "uniform 8x102": [102] * 8})
    out = args.out or ROOT / "_build" / "bench" / f"bench_{device.type}.json"
    sweeps.write_json(out, result)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
