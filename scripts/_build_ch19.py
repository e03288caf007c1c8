"""One-off: append Chapter 19's cells after the skeleton's three (run once; not part of the book)."""

import sys

import nbformat

PATH = "chapters/19_disaggregation.ipynb"
nb = nbformat.read(PATH, as_version=4)
nb.cells = nb.cells[:3]


def md(s: str) -> None:
    nb.cells.append(nbformat.v4.new_markdown_cell(s.strip("\n")))


def code(s: str, tags: list[str] | None = None) -> None:
    c = nbformat.v4.new_code_cell(s.strip("\n"))
    if tags:
        c.metadata["tags"] = tags
    nb.cells.append(c)


md(r"""
A colocated engine runs every request's prefill and decode on the same chip, in the same steps (Chapters
12–14). The two phases want different things: a prefill is a large matrix product, bound by the chip's
FLOP/s; a decode step reads every weight and the whole cache for one token per sequence, bound by its
bandwidth (Chapter 3). Put together, a prefill that joins a step makes every decode in that step wait
for it, and a batch of decodes leaves less room for the next prefill. DistServe {cite}`zhong2024distserve`
and Splitwise {cite}`patel2024splitwise` take the phases apart: a request is prefilled on one chip (a
*prefill instance*), its K/V cache is sent to another (a *decode instance*), and decoding continues there.
Mooncake {cite}`qin2025mooncake`, the serving system of Moonshot AI's Kimi, builds its whole design around
that transfer. The price is the transfer itself, a second pool to size, and chips that cannot help each
other when the load shifts between phases.

This chapter builds it on MiniGPT with `torch.distributed`: a driver, prefill workers and decode workers,
each a process running the serving engine of Chapter 12; it measures the K/V bytes on the wire against
[Eq. (2.1)](#eq-2-1), checks that every token is the colocated engine's, kills a decode worker on purpose,
and measures and replays *goodput*: the request rate that meets both latency objectives.
""")

code(r"""
import json
import time
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from minigpt import costs, load_pretrained
from minigpt.book import glue
from minigpt.costs.presets import HARDWARE, LINKS, MODELS
from minigpt.distributed import disagg
from minigpt.serving import Engine, EngineConfig, Request
from minigpt.serving.trace import poisson_trace

torch.set_num_threads(1)
model = load_pretrained().model
c = model.config
llama, h100 = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
""")

md(r"""
## The symptom: a prefill stalls every decode in its step

`costs.mixed_step_time` prices one fused step (Chapter 14) under the roofline: $B$ decodes over $S$ cached
tokens each, plus a prompt chunk of $T$ tokens. For Llama-2-7B on an H100, 32 requests decoding at
$S$ = 1024, and a 2048-token prompt that arrives:
""")

code(r"""
chip = dict(costs.model_args(costs.mixed_step_time, llama), s=2,
            N_params=llama.N_params,
            bandwidth=h100.bandwidth, peak_flops=h100.peak_flops)
alone = costs.mixed_step_time(**chip, B=32, S=1024)
joined = costs.mixed_step_time(**chip, B=32, S=1024, T=2048)
chunk = costs.mixed_step_time(**chip, B=32, S=1024, T=512)
print(f"decode step, B = 32:               {1e3 * alone:6.2f} ms")
print(f"... with the whole 2048-token prefill: {1e3 * joined:6.2f} ms")
print(f"... with a 512-token chunk of it:   {1e3 * chunk:6.2f} ms")
assert joined > 3 * alone and chunk >= alone
glue("sym_alone", f"{1e3 * alone:.1f}")
glue("sym_joined", f"{1e3 * joined:.1f}")
glue("sym_x", f"{joined / alone:.0f}")
glue("sym_chunk", f"{1e3 * chunk:.1f}")
""")

md(r"""
A decode step alone is bound by bandwidth ({glue:text}`sym_alone` ms: the weights and 32 caches read
once); the step that also runs the prefill is bound by FLOP/s and takes {glue:text}`sym_joined` ms, so
each of the 32 streams gets its token {glue:text}`sym_x`× later than usual. Chunked prefill (Chapter 14)
cuts the prompt into four chunks of 512 tokens, and at the roofline each chunk hides under the decode
step's memory time ({glue:text}`sym_chunk` ms, the step alone): the formulas say a colocated engine with
chunked prefill loses nothing, which makes it the baseline to beat. A real step is not at its roofline;
the *interference* DistServe measures on GPUs is what the roofline leaves out. On MiniGPT it shows in the engine's own
per-token times. Four requests decode, and a 100-token prompt arrives while they do (each step timed on
this thread's CPU clock):
""")

code(r"""
engine = Engine.for_model(model, num_blocks=64,
                          config=EngineConfig(max_batch=8),
                          clock=time.thread_time)
g = torch.Generator().manual_seed(0)
long_prompt = tuple(torch.randint(0, c.V, (100,), generator=g).tolist())
reqs = [Request(f"d{i}", (3 + i, 4, 5), 40) for i in range(4)]
reqs.append(Request("long", long_prompt, 2, arrival_s=1e-9))
out = engine.run(reqs)
t_long = out[-1].token_s[0]  # the end of the step that ran the prefill
gaps, stalled = [], []
for t in out[:4]:
    for a, b in zip(t.token_s[:-1], t.token_s[1:]):
        (stalled if b == t_long else gaps).append(b - a)
typical = sorted(gaps)[len(gaps) // 2]
print(f"decode gaps measured: {len(gaps)}; gaps that held the prefill: "
      f"{len(stalled)}")
print("the prefill's step was over twice the median decode step:",
      min(stalled) > 2 * typical)
""")

md(r"""
## The mechanism

The shape is the one every real system has (vLLM's disaggregated prefill {cite}`vllmdisagg2025`, SGLang's
PD disaggregation {cite}`sglangpd2025`, DistServe, Mooncake): a *router* hands a request to a prefill
instance; the prefill instance runs the prompt, produces the first token and the K/V; the K/V go to a
decode instance, which continues. In `minigpt.distributed.disagg` each is a process on one `torch.distributed`
group (gloo on a CPU, NCCL on GPUs: the same calls), started by `minigpt.distributed.launch`:

- rank 0, the **driver**: arrivals, routing (the prefill worker with the fewest prompt tokens outstanding, the
  decode worker holding the fewest requests), the workers' reports, the pool log, failures;
- ranks $1..N$, **prefill workers**: each runs the serving engine of Chapter 12, unchanged, on requests of
  one token (chunked if `chunk_size` is set); when a request's first token is sampled, its $P$ tokens'
  K/V leave the paged pool, and a sender thread ships them straight to the chosen decode worker;
- ranks $N{+}1..N{+}M$, **decode workers**: each receives K/V into its own paged pool and runs the same
  engine; a received request joins the running batch with $P$ tokens computed, so every later step is a
  decode.

The K/V leave the prefill worker's blocks through its block table into one contiguous tensor of exactly
$P$ tokens:

```{literalinclude} ../minigpt/distributed/kv_transfer.py
:language: python
:pyobject: export_kv
```

and enter fresh blocks of the decode worker's pool (whose block ids have nothing to do with the
sender's):

```{literalinclude} ../minigpt/distributed/kv_transfer.py
:language: python
:pyobject: import_kv
```

On the wire: a six-number header, the prompt's ids, then the K/V tensor, each a `dist.send` with its own
tag. The bytes of the last are [Eq. (2.1)](#eq-2-1) times $P$:

```{math}
:label: eq-19-1
b_\text{transfer} = P \cdot 2 L H_\text{kv} d_h s \qquad \text{(Eq. 19.1)}
```

and over a link of $BW_\text{link}$ bytes/s each way, with a fixed latency $\ell$,

```{math}
:label: eq-19-2
t_\text{transfer} = \ell + \frac{b_\text{transfer}}{BW_\text{link}} \qquad \text{(Eq. 19.2)}
```

(`costs.kv_transfer_bytes`, `costs.kv_transfer_time`). Both workers are the serving engine with one method
changed or added: the prefill side copies a request's K/V out when it ends, before its blocks are freed;
the decode side accepts a request that arrives prefilled.

```{literalinclude} ../minigpt/distributed/disagg.py
:language: python
:pyobject: PrefillEngine
```

```{literalinclude} ../minigpt/distributed/disagg.py
:language: python
:pyobject: DecodeEngine
```

Receives run in threads (one per peer), because a gloo `irecv` cannot be polled: its `is_completed()`
stays false until someone waits on it, and a wait with a timeout closes the connection. A blocking
receive in a thread is what works, and it lets the transfer overlap both engines' steps.
""")

md(r"""
## Equivalence: the same tokens as the colocated engine

Eight requests with prompts of 3 to 70 tokens, prefilled in chunks of 16 tokens on one worker and decoded
on another, against one colocated engine, greedy, fp32. The run starts three processes (a few seconds
each here) and bounds the whole run at 120 s; none of them outlives the cell.
""")

code(r"""
requests = poisson_trace(8, rate=40.0, seed=3, P=(3, 70), D=(2, 24))
cfg = disagg.DisaggConfig(prefill_workers=1, decode_workers=1, chunk_size=16,
                          log_interval_s=0.05)
run = disagg.serve(requests, cfg, timeout_s=120)
plain = Engine.for_model(model, num_blocks=64,
                         config=EngineConfig(max_batch=8))
want = {t.request.id: t.tokens for t in plain.run(
    [Request(r.id, r.prompt, r.max_new_tokens) for r in requests])}
same = all(r.tokens == want[r.id] for r in run.records)
per_token = costs.kv_transfer_bytes(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4, P=1)
formula = sum(costs.kv_transfer_bytes(L=c.L, H_kv=c.H_kv, d_h=c.d_h, s=4,
                                      P=r.P)
              for r in requests if r.max_new_tokens > 1)
sent = run.workers[1]["kv_bytes_sent"]
received = run.workers[2]["kv_bytes_received"]
print(f"prompt lengths P: {sorted(r.P for r in requests)}")
print(f"every request finished: "
      f"{all(r.status == 'finished' for r in run.records)}")
print(f"greedy tokens equal the colocated engine's: {same}")
print(f"Eq. 19.1, {per_token} B per token x sum of P: {formula:,} B")
print(f"counted: sent {sent:,} B, received {received:,} B")
print(f"in the pool log: {sum(x.transfer_bytes for x in run.log):,} B")
assert same and sent == received == formula
glue("eq_per_token", f"{per_token:,}")
glue("eq_bytes", f"{formula:,}")
""")

md(r"""
Every token is the colocated engine's, and the bytes counted on both sides are {glue:text}`eq_bytes`:
{glue:text}`eq_per_token` bytes per token ([Eq. (2.1)](#eq-2-1) for MiniGPT in fp32) times the prompt
lengths, nothing more (the header and the prompt's ids travel too, 8 bytes per number, and are counted
apart). `tests/test_disagg.py` checks the same with more prompts, and checks that a request of one token
never leaves its prefill worker.

The driver's log has a line per interval for both pools, in the style of the engine log: the prefill
pool's prompt throughput, the decode pool's generation throughput, the bytes that crossed:
""")

code(r"""
# NBVAL_IGNORE_OUTPUT
for line in run.log[:3]:
    print(str(line)[:79])
""")

code(r"""
rec = max(run.records, key=lambda r: r.P)
t0 = rec.arrival_s
first = rec.token_s[0]
sent_at = first + (rec.transfer_s or 0.0)
fig, ax = plt.subplots(figsize=(10, 2.6))
ax.barh(1, first - t0, left=t0, color="tab:orange",
        label="queue + prefill (prefill worker)")
ax.barh(1, sent_at - first, left=first, color="tab:red",
        label="K/V transfer (sender thread)")
ax.barh(0, rec.token_s[-1] - sent_at, left=sent_at, color="tab:blue",
        label="decode (decode worker)")
ax.scatter(rec.token_s, [0] * len(rec.token_s), color="k", s=8, zorder=3,
           label="tokens")
ax.set_yticks([0, 1], ["decode worker", "prefill worker"])
ax.set_xlabel("seconds since the run started (measured)")
ax.set_title(f"One request (P = {rec.P}) crosses the pools once: its first "
             "token on the prefill worker, the rest on the decode worker")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4,
          fontsize=8)
fig.tight_layout()
plt.show()
""")

md(r"""
## When a worker dies

A request must end finished, or failed with a reason; never lost. The driver learns of a death two
ways. A send to a dead peer raises in gloo ("Connection closed by peer"), so a prefill worker whose
transfer fails reports it, and the listener thread the driver keeps for each worker ends with the same
error. A receive from a dead peer, though, never completes on its own, so the driver also watches
silence: a worker holding requests that reports nothing for `silence_s` is declared dead. Its requests
go back to the queue, to be prefilled again for another decode worker:

```{literalinclude} ../minigpt/distributed/disagg.py
:language: python
:pyobject: Driver.declare_dead
```

```{literalinclude} ../minigpt/distributed/disagg.py
:language: python
:pyobject: Driver.retry
```

Every message carries the request's attempt number, so a late report of an attempt that was given up is
dropped. `tests/test_disagg.py` kills a decode worker after it has generated a dozen tokens (`die_after`):
with two decode workers every request still finishes, with the colocated engine's tokens, on the other;
with one, the requests it held end `failed` with the reason; and in both cases no process is left. The
launcher lets a worker die without taking the run down (`launch.run(..., expendable=...)`), and still
kills everything at the end.
""")

md(r"""
## Prediction: what the transfer costs

[Eq. (19.2)](#eq-19-2) for a 2048-token prompt, against the prompt's own prefill under the roofline
($\max(F/\pi, N s / BW)$ with $F$ from [Eq. (1.2)](#eq-1-2)):
""")

code(r"""
rows = {}
print(f"{'':<28} {'Llama-2-7B':>12} {'Llama-3-8B':>12}")
for name in ("Llama-2-7B", "Llama-3-8B"):
    m = MODELS[name]
    kv = dict(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2, P=2048)
    pre = costs.roofline_time(
        flops=costs.evaluate(costs.prefill_flops, m, P=2048),
        bytes=costs.weight_bytes(N_params=m.N_params, s=2),
        peak_flops=h100.peak_flops, bandwidth=h100.bandwidth)
    rows[name] = {"bytes": costs.kv_transfer_bytes(**kv), "prefill": pre}
    for link in ("NVLink 4 (H100 SXM)", "PCIe Gen5 x16 (peer)",
                 "InfiniBand NDR 400 Gb/s", "100 GbE"):
        bw = LINKS[link].bandwidth_per_direction
        rows[name][link] = costs.kv_transfer_time(**kv, link_bandwidth=bw)
print(f"{'K/V bytes (Eq. 19.1)':<28} "
      + " ".join(f"{rows[n]['bytes'] / 2**30:>8.2f} GiB" for n in rows))
print(f"{'prefill on an H100':<28} "
      + " ".join(f"{1e3 * rows[n]['prefill']:>9.1f} ms" for n in rows))
for link in rows["Llama-2-7B"]:
    if link in ("bytes", "prefill"):
        continue
    print(f"{link:<28} "
          + " ".join(f"{1e3 * rows[n][link]:>9.1f} ms" for n in rows))
l2 = rows["Llama-2-7B"]
assert l2["100 GbE"] > l2["prefill"] > l2["NVLink 4 (H100 SXM)"]
glue("pr_l2_gib", f"{l2['bytes'] / 2**30:.1f}")
glue("pr_l2_pre", f"{1e3 * l2['prefill']:.0f}")
glue("pr_l2_eth", f"{1e3 * l2['100 GbE']:.0f}")
glue("pr_l2_ib", f"{1e3 * l2['InfiniBand NDR 400 Gb/s']:.0f}")
glue("pr_l2_nvl", f"{1e3 * l2['NVLink 4 (H100 SXM)']:.1f}")
glue("pr_l3_eth", f"{1e3 * rows['Llama-3-8B']['100 GbE']:.0f}")
""")

md(r"""
Llama-2-7B keeps every head's keys and values ($H_\text{kv} = H$), so a 2048-token prompt leaves
{glue:text}`pr_l2_gib` GiB to move: {glue:text}`pr_l2_nvl` ms over NVLink, {glue:text}`pr_l2_ib` ms over
InfiniBand NDR, {glue:text}`pr_l2_eth` ms over 100 GbE, which is longer than the {glue:text}`pr_l2_pre`
ms the prefill itself takes. Grouped-query attention divides the bytes by $H / H_\text{kv}$ = 4
(Llama-3-8B: {glue:text}`pr_l3_eth` ms over the same Ethernet). DistServe places prefill and decode
instances of a model on the same node when the cross-node link is slow, so that the transfer takes NVLink;
Mooncake and vLLM's NIXL connector move blocks over RDMA (InfiniBand or RoCE) and start while the prefill
still runs, layer by layer, so that most of the transfer hides behind compute.

## Measured on this CPU: goodput, colocated against apart

DistServe's metric is *goodput*: a request attains the service-level objectives (SLOs) if its time to
first token is at most $\text{TTFT}_\text{SLO}$ and its time per output token at most
$\text{TPOT}_\text{SLO}$; the *attainment* of a run of $n$ requests is the share that attain both
(`costs.slo_attainment`),

```{math}
:label: eq-19-3
a = \frac{1}{n} \left|\{\, b : \text{TTFT}_b \le \text{TTFT}_\text{SLO} \text{ and }
\text{TPOT}_b \le \text{TPOT}_\text{SLO} \,\}\right| \qquad \text{(Eq. 19.3)}
```

and the goodput is the highest of the rates tried, $\lambda_1 < \lambda_2 < \dots$, up to which every
attainment is at least $a^*$ = 90 %, divided by the chips when systems of different sizes are compared
(`costs.goodput`):

```{math}
:label: eq-19-4
\text{goodput} = \frac{1}{n_\text{chips}} \max \{\, \lambda_k : a_j \ge a^* \text{ for all } j \le k \,\}
\qquad \text{(Eq. 19.4)}
```

`scripts/sweep_disagg.py` served one Poisson trace per rate on MiniGPT, once colocated (one engine, this
process) and once apart (one prefill and one decode worker), with SLOs set from the colocated engine at
the lowest rate. One run per rate: these are single measurements on a shared machine, not medians.
""")

code(r"""
data = json.loads(Path("data/disagg_cpu.json").read_text())
meas = data["measured"]
slo = meas["slo"]
print(f"SLOs: TTFT <= {1e3 * slo['ttft_s']:.0f} ms, "
      f"TPOT <= {1e3 * slo['tpot_s']:.0f} ms")
print(f"  ({meas['slo_rule']})")
print(f"{'rate':>5}  {'colocated':>21}  {'1 prefill + 1 decode':>21}")
print(f"{'req/s':>5}  {'attain  P90 TTFT TPOT':>21}  "
      f"{'attain  P90 TTFT TPOT':>21}")
for a, b in zip(meas["colocated"], meas["disagg_1_1"]):
    print(f"{a['rate']:>5.0f}  " + "  ".join(
        f"{x['attainment']:>5.0%} {1e3 * x['ttft_p90_s']:>6.0f} ms "
        f"{1e3 * x['tpot_p90_s']:>3.0f}" for x in (a, b)))
for x in meas["disagg_1_1"]:
    assert x["kv_bytes"] == x["kv_bytes_formula"]
g_col = meas["goodput_colocated"]
g_dis = meas["goodput_disagg_1_1"]
top = max(meas["rates"])


def at_least(g: float) -> str:
    # the rule cannot see past the highest rate tried
    return f">= {g:.0f}" if g == top else f"{g:.0f}"


print(f"goodput: colocated {at_least(g_col)} req/s (one engine process), "
      f"apart {at_least(g_dis)} req/s (two workers)")
dips = [r["rate"] for r in meas["disagg_1_1"] if r["attainment"] < 0.9]
later = [r["rate"] for r in meas["disagg_1_1"]
         if dips and r["rate"] > min(dips) and r["attainment"] >= 0.9]
glue("cpu_dips", ", ".join(f"{x:.0f}" for x in dips) or "none")
glue("cpu_later", ", ".join(f"{x:.0f}" for x in later) or "none")
glue("cpu_top", f"{top:.0f}")
glue("cpu_cmp", "more than" if g_dis > g_col else "no more than")
glue("cpu_g_col", at_least(g_col).replace(">=", "at least"))
glue("cpu_g_dis", at_least(g_dis).replace(">=", "at least"))
glue("cpu_ttft_slo", f"{1e3 * slo['ttft_s']:.0f}")
glue("cpu_tpot_slo", f"{1e3 * slo['tpot_s']:.0f}")
""")

code(r"""
fig, ax = plt.subplots(figsize=(7, 3.6))
for key, label in (("colocated", "colocated (1 process)"),
                   ("disagg_1_1", "1 prefill + 1 decode worker")):
    rows_ = meas[key]
    ax.plot([r["rate"] for r in rows_], [r["attainment"] for r in rows_],
            "o-", label=label)
ax.axhline(0.9, color="gray", ls="--", lw=1, label="90 % attainment")
ax.set_xscale("log")
ax.set_xlabel("request rate, req/s (measured, one run per rate)")
ax.set_ylabel("SLO attainment")
ax.set_ylim(-0.05, 1.05)
verdict = ("buys goodput" if g_dis > g_col else "buys no goodput")
ax.set_title(f"On two shared CPU cores, splitting the phases {verdict}:\n"
             "three processes compete for the same two cores")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
""")

md(r"""
With TTFT ≤ {glue:text}`cpu_ttft_slo` ms and TPOT ≤ {glue:text}`cpu_tpot_slo` ms, the colocated engine's
goodput was {glue:text}`cpu_g_col` req/s and the split pair's {glue:text}`cpu_g_dis` req/s, {glue:text}`cpu_cmp`
the colocated engine's on twice the processes ({glue:text}`cpu_top` req/s was the highest rate tried). The
split pair missed at {glue:text}`cpu_dips` req/s and met the objectives again at {glue:text}`cpu_later`: a
run that fails at a lower rate than one that passes is the machine's noise, one run per rate, and the goodput
rule, which stops at the first miss, is strict about it. Read this as a finding about the machine, not about
the method: this computer has two CPU cores, shared with other
users, and the driver, the prefill worker and the decode worker are three processes on them. A GPU
deployment gives each instance its own chip; here the prefill worker's matrix products and the decode
worker's steps take turns on the same cores, so the interference that disaggregation removes comes back
through the operating system's scheduler, and the split adds a transfer, two more processes to feed, and
a driver that polls. What this measurement does show is that the mechanism works under load and what it
moves.

## Replayed: Llama on H100s

The replay (`minigpt.serving.goodput`, the engine's replay clock of Chapter 12: each step priced by the
roofline) runs the same scheduler for a published model on published chips. Colocated, each chip is one
replica of the engine (with chunked prefill, 512 tokens per step, and with whole prefills); apart, $N$
prefill chips and $M$ decode chips, the transfer priced by [Eq. (19.2)](#eq-19-2) over InfiniBand NDR.
Goodput is per chip, at SLOs of TTFT ≤ 0.4 s and TPOT ≤ 25 ms (chosen here, in the spirit of DistServe's
chatbot SLOs), for long prompts and for short ones:
""")

code(r"""
rep = data["replayed"]
best = {}
for name, per in rep["models"].items():
    for wname, res in per.items():
        cols = {"colocated, chunked": res["colocated_chunked"],
                "colocated, whole": res["colocated_whole"]}
        cols.update({f"apart {k}": v for k, v in res["ratios"].items()})
        print(f"{name}, {wname} (P {res['P'][0]}-{res['P'][1]}, "
              f"D {res['D'][0]}-{res['D'][1]}): goodput, req/s per chip")
        print("  " + "  ".join(f"{k}: {v['goodput_per_chip']:.1f}"
                               for k, v in list(cols.items())[:2]))
        print("  " + "  ".join(f"{k[6:]}: {v['goodput_per_chip']:.1f}"
                               for k, v in list(cols.items())[2:]))
        best[name, wname] = (res["best_ratio"],
                             res["ratios"][res["best_ratio"]]
                             ["goodput_per_chip"],
                             res["colocated_chunked"]["goodput_per_chip"])
""")

md(r"""
The best prefill:decode ratio for each case, and what the link does to it:
""")

code(r"""
def rel(a: float, b: float) -> str:
    return "above" if a > b else ("below" if a < b else "equal to")


for (name, wname), (ratio, g_apart, g_col) in best.items():
    res = rep["models"][name][wname]
    top = max(res["per_chip_rates"])
    print(f"{name}, {wname}: best split {ratio}: {g_apart:.0f} req/s per chip"
          f" (highest rate tried: {top:.0f})")
    print("  over each link: " + ", ".join(
        f"{k.split(' (')[0]} {v['goodput_per_chip']:.0f}"
        for k, v in res["links"].items()))
l2 = rep["models"]["Llama-2-7B"]
for key, wname in (("long", "long prompts"), ("short", "short prompts")):
    res = l2[wname]
    top = max(res["per_chip_rates"])
    ratio, g_apart, g_chunk = best["Llama-2-7B", wname]
    g_whole = res["colocated_whole"]["goodput_per_chip"]
    fmt = lambda g: f"at least {g:.0f}" if g == top else f"{g:.0f}"  # noqa: E731
    glue(f"rp_{key}_ratio", ratio)
    glue(f"rp_{key}_apart", fmt(g_apart))
    glue(f"rp_{key}_chunk", fmt(g_chunk))
    glue(f"rp_{key}_whole", fmt(g_whole))
    glue(f"rp_{key}_rel_chunk", rel(g_apart, g_chunk))
    glue(f"rp_{key}_rel_whole", rel(g_apart, g_whole))
glue("rp_ratio_list", ", ".join(
    f"{k}: {v['goodput_per_chip']:.0f}"
    for k, v in l2["long prompts"]["ratios"].items()))
links = l2["long prompts"]["links"]
glue("rp_links_same", "did not change" if len(
    {v["goodput_per_chip"] for v in links.values()}) == 1 else "changed")
""")

md(r"""
At the SLOs above, the transfer's cost shows in the TTFT rather than in the goodput. One replay of the long
prompts at 8 requests per second per chip, on the best split, over the fastest and the slowest link:
""")

code(r"""
from minigpt.serving import goodput as G

res = l2["long prompts"]
p_, d_ = (int(x) for x in res["best_ratio"].split(":"))
trace = poisson_trace(120, rate=8.0 * (p_ + d_), seed=3, P=tuple(res["P"]),
                      D=tuple(res["D"]), V=llama.V)
p90 = {}
for link in ("NVLink 4 (H100 SXM)", "100 GbE"):
    lat = G.replay_disaggregated(trace, llama, h100, LINKS[link],
                                 prefill=p_, decode=d_,
                                 decode_config=EngineConfig(max_batch=64))
    ttft = sorted(x.ttft_s for x in lat)
    tpot = sorted(x.tpot_s for x in lat)
    p90[link] = (ttft[int(0.9 * (len(ttft) - 1))],
                 tpot[int(0.9 * (len(tpot) - 1))])
    print(f"{link:<22} P90 TTFT {1e3 * p90[link][0]:6.1f} ms, "
          f"P90 TPOT {1e3 * p90[link][1]:5.1f} ms")
extra = p90["100 GbE"][1] - p90["NVLink 4 (H100 SXM)"][1]
glue("rp_link_tpot", f"{1e3 * extra:.0f}")
glue("rp_link_ttft", f"{1e3 * p90['NVLink 4 (H100 SXM)'][0]:.0f}")
glue("rp_link_ttft_eth", f"{1e3 * p90['100 GbE'][0]:.0f}")
""")

code(r"""
res = rep["models"]["Llama-2-7B"]["long prompts"]
fig, ax = plt.subplots(figsize=(7, 3.6))
for key, label in (("colocated_chunked", "colocated, chunked prefill"),
                   ("colocated_whole", "colocated, whole prefills")):
    ax.plot(res["per_chip_rates"], res[key]["attainment"], "o-", label=label)
r = res["best_ratio"]
ax.plot(res["per_chip_rates"], res["ratios"][r]["attainment"], "s-",
        label=f"apart, {r} (InfiniBand NDR)")
ax.axhline(0.9, color="gray", ls="--", lw=1)
ax.set_xlabel("request rate per chip, req/s (replayed)")
ax.set_ylabel("SLO attainment")
ax.set_ylim(-0.05, 1.05)
ax.set_title("Llama-2-7B on H100s, long prompts: attainment against load, "
             "replayed")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
""")

md(r"""
Replayed at the roofline, the best split for Llama-2-7B with long prompts ({glue:text}`rp_long_ratio`,
prefill:decode) serves {glue:text}`rp_long_apart` req/s per chip: {glue:text}`rp_long_rel_whole` a
colocated replica with whole prefills ({glue:text}`rp_long_whole`), and {glue:text}`rp_long_rel_chunk` one
with chunked prefill ({glue:text}`rp_long_chunk`). With short prompts the split serves
{glue:text}`rp_short_apart` against {glue:text}`rp_short_chunk` colocated. Over the four links the best
split's goodput {glue:text}`rp_links_same` at this resolution: at TTFT ≤ 0.4 s even 100 GbE's transfer fits
(the P90 TTFT goes from {glue:text}`rp_link_ttft` ms over NVLink to {glue:text}`rp_link_ttft_eth` ms), and
the TPOT barely moves ({glue:text}`rp_link_tpot` ms); a tighter TTFT objective is where a slow link loses
requests.

Read the replay for what it is. It prices every step at its roofline, $\max(F/\pi, \text{bytes}/BW)$:
a fused step of a 512-token chunk and a decode batch costs the larger of the two, so the decodes ride along
the chunk almost for free, and colocation with chunked prefill is at its best. On real GPUs the two do
interfere (kernels that share SMs, a batch that cannot be both large for the prefill and fast for the
decode), and that is what DistServe measured: on its workloads it serves several times the request rate of
the colocated systems it compares with, at 90 % attainment (its abstract gives the factors; they changed
between the preprint's versions). The replay also leaves
out what the pools gain by being tuned apart (a parallelism per pool, a batch size per pool, Splitwise's
different chips). What it does show without any measured inefficiency is that the ratio matters as much as
the idea: for long prompts the splits serve {glue:text}`rp_ratio_list` req/s per chip, and a split too
generous to either pool pays for chips that idle. (With short prompts every configuration met the objectives
at every rate tried: the replay's trace is too short a burst to load them, and it says nothing there.) Splitwise {cite}`patel2024splitwise` sizes the two pools by the
phases' needs and even puts them on different hardware; DistServe searches the ratio and the parallelism of
each pool for given SLOs. The first-order version of that search: if one prefill chip serves $\lambda_p$
requests per second within the TTFT objective and one decode chip $\lambda_d$ within the TPOT objective,
$N_p$ and $N_d$ of them serve

```{math}
:label: eq-19-5
\lambda(N_p, N_d) = \min(N_p \lambda_p,\; N_d \lambda_d) \qquad \text{(Eq. 19.5)}
```

and the best split of $n_\text{chips}$ maximises it (`costs.disagg_rate`, `costs.best_pd_ratio`; Exercise
16 asks for it). A short prompt makes $\lambda_p$ large, so one prefill chip can feed many decode chips,
and a split with a whole chip on prefill leaves most of it idle; a colocated replica lends those idle
FLOP/s to its decodes. That is where disaggregation loses.

## What real systems do

- **vLLM** {cite}`vllmdisagg2025`: a *KV connector* (`vllm/distributed/kv_transfer`) with a scheduler side
  (`get_num_new_matched_tokens`: how many tokens a remote prefill supplies; `update_state_after_alloc`) and
  a worker side (`start_load_kv`, `save_kv_layer`, `wait_for_save`). The P2P NCCL connector sends each
  layer's K/V as soon as the layer is computed; the NIXL connector lets the decode instance read the
  prefill's blocks over RDMA; a proxy routes each request to a prefill instance (with `max_tokens=1`),
  then to a decode instance.
- **SGLang** {cite}`sglangpd2025` (`python/sglang/srt/disaggregation/`): a prefill server and a decode
  server with bootstrap queues; the decode side pre-allocates the request's pages first, then the prefill
  side writes into them through a transfer engine (Mooncake's or NIXL).
- **Mooncake** {cite}`qin2025mooncake`: K/V moved by a transfer engine over RDMA, a cache pool in the
  cluster's spare DRAM and SSD, and a global scheduler that picks the prefill and decode instances for a
  request by where its prefix already sits and how loaded each is.
- **DistServe** {cite}`zhong2024distserve`: chooses the parallelism of each pool and their placement for
  given SLOs and a given link (same node when the cross-node link is slow) to maximise per-GPU goodput.
- **Splitwise** {cite}`patel2024splitwise`: phase-specific hardware: prompt machines and token machines of
  different GPU generations, since decode needs bandwidth and capacity more than FLOP/s.

## Where MiniGPT simplifies, and what it costs

- One transfer after the whole prefill, from a gathered copy: the transfer is not hidden behind the
  prefill's later layers (vLLM's P2P connector overlaps them), and each side makes one extra pass over
  $P$ tokens' K/V.
- Greedy requests only (a sampled request's generator state would have to move too), no prefix cache on
  either side, no cancellation.
- The decode worker keeps what it receives in host memory until its pool has room; SGLang's decode side
  reserves the pages before the prefill sends.
- Liveness by silence (`silence_s`): a worker that is only slow for longer than that is declared dead and
  its requests are redone elsewhere, which costs work but never a wrong token.
- The CPU measurement has three processes on two shared cores: it shows the mechanism and its bytes, not
  the gain of separate chips.

## Explorer

What colocation costs the decodes, and what the transfer costs the first token, for a model, a chip and a
link: a decode step of $B$ sequences at $S$ (`costs.mixed_step_time` with $T$ = 0), the same step with a
prefill of $P$ tokens in it, the prefill alone, and the transfer of its K/V ([Eqs. (19.1)–(19.2)](#eq-19-1)).
""")

code(r"""
from minigpt.book import Output, Plot, Series, Slider, explorer
from minigpt.book.explorer_spec import chip_value, preset_value

kv_links = ("NVLink 4 (H100 SXM)", "PCIe Gen5 x16 (peer)",
            "InfiniBand NDR 400 Gb/s", "100 GbE")
step = dict(s=2, N_params="m.N_params", bandwidth="hw.bandwidth",
            peak_flops="hw.peak_flops")
explorer(
    "ch19-apart",
    "Prefill and decode apart: the stall against the transfer",
    sliders=[
        Slider("m", "model", options=[(m.name, preset_value(m))
                                      for m in MODELS.values()
                                      if m.name != "MiniGPT"],
               value=preset_value(llama)),
        Slider("hw", "chip", options=[(n, chip_value(h))
                                      for n, h in HARDWARE.items()],
               value=chip_value(h100)),
        Slider("link", "link between the pools",
               options=[(n, {"bw": LINKS[n].bandwidth_per_direction})
                        for n in kv_links],
               value={"bw": LINKS["InfiniBand NDR 400 Gb/s"]
                      .bandwidth_per_direction}),
        Slider("P", "prompt tokens <i>P</i>", 16, 32768, value=2048,
               log=True),
        Slider("B", "decoding sequences <i>B</i>", 1, 256, value=32,
               log=True),
        Slider("S", "their cached tokens <i>S</i>", 16, 32768, value=1024,
               log=True),
    ],
    outputs=[
        Output("t_dec", "decode step alone", fn="mixed_step_time",
               model="m", args=dict(step, B="B", S="S"),
               fmt="fmt_duration"),
        Output("t_mix", "the same step with the prefill in it",
               fn="mixed_step_time", model="m",
               args=dict(step, B="B", S="S", T="P"), fmt="fmt_duration"),
        Output("t_pre", "the prefill alone", fn="mixed_step_time",
               model="m", args=dict(step, T="P"), fmt="fmt_duration"),
        Output("kv", "K/V to move, Eq. (19.1)", fn="kv_transfer_bytes",
               args=dict(L="m.L", H_kv="m.H_kv", d_h="m.d_h", s=2, P="P"),
               fmt="fmt_bytes"),
        Output("t_x", "transfer time, Eq. (19.2)", fn="kv_transfer_time",
               args=dict(L="m.L", H_kv="m.H_kv", d_h="m.d_h", s=2, P="P",
                         link_bandwidth="link.bw"), fmt="fmt_duration"),
    ],
    plot=Plot("P", 16, 32768, [Series("transfer", value="t_x"),
                               Series("prefill alone", value="t_pre")],
              x_label="prompt tokens P", y_label="seconds", log_x=True,
              log_y=True, y_fmt="fmt_duration"),
)
""", tags=["hide-input"])

md(r"""
## Exercise

Exercise 16 (`exercises/ex16_disaggregation.ipynb`) asks for the transfer's bytes and time, the goodput of
a small trace by hand (the attainment rule and the 90 % rule), and the prefill:decode ratio that a pair of
pool capacities allows.

## The command line

`python -m minigpt.distributed.serve --prefill-workers 1 --decode-workers 1 --requests 16 --rate 20`
serves a Poisson trace this way and prints the pool log and a summary (goodput needs `--ttft-slo` and
`--tpot-slo`).
""")

nbformat.write(nb, PATH)
print(len(nb.cells), "cells", file=sys.stderr)
