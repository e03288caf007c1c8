"""Reference solutions for exercises/ex16_disaggregation.ipynb (instructors only; not in the package or the book).

Each `# %% solution:qN` block replaces the notebook cell tagged `solution:qN`.
"""


# %% solution:q1
def layerwise_transfer(model, P, layer_s, link_bandwidth, latency):
    """Seconds after the prefill until the last layer's K/V has arrived: sent layer by layer, then as one message.

    Two clocks: the prefill's (when layer l is ready) and the link's (when it is free). Layer l's message starts
    at the later of the two and takes latency + its bytes / bandwidth.
    """
    layer_bytes = P * 2 * model.H_kv * model.d_h * 2
    send = latency + layer_bytes / link_bandwidth
    ready = free = 0.0
    for t in layer_s:
        ready += t
        free = max(ready, free) + send
    return free - ready, latency + model.L * layer_bytes / link_bandwidth


# %% solution:q2
def split_goodput(runs, prefill_workers, decode_workers, prefill_ms_per_token,
                  decode_step_ms, ttft_slo, tpot_slo):
    """Each run routed as Question 3 routes it (the least loaded worker of each pool; a prefill worker runs its
    prompts one after another), each request judged on its TTFT (arrival to prefill end, the wait included) and,
    with two tokens or more, its TPOT (one decode step); the runs in increasing rate; the last rate before the first
    run under 90 %, per chip of the split."""
    ordered = sorted(runs, key=lambda r: r["rate"])
    attainments = []
    for run in ordered:
        busy_until = [0] * prefill_workers
        prefills = []  # (prefill worker, prefill end, P)
        holds = []  # (decode worker, last token)
        ok = 0
        for t, P, D in zip(run["arrivals_ms"], run["prompt_tokens"], run["new_tokens"], strict=True):
            tokens_on = [sum(n for w, end, n in prefills if w == k and end > t) for k in range(prefill_workers)]
            held_by = [sum(1 for w, last in holds if w == k and last > t) for k in range(decode_workers)]
            worker = tokens_on.index(min(tokens_on))
            begin = max(t, busy_until[worker])
            first = begin + P * prefill_ms_per_token
            last = first + (D - 1) * decode_step_ms
            busy_until[worker] = first
            prefills.append((worker, first, P))
            holds.append((held_by.index(min(held_by)), last))
            ttft_ok = first - t <= ttft_slo
            tpot_ok = D == 1 or (last - first) / (D - 1) <= tpot_slo
            ok += ttft_ok and tpot_ok
        attainments.append(ok / len(run["arrivals_ms"]))
    best = 0
    for run, a in zip(ordered, attainments, strict=True):
        if a < 0.9:
            break
        best = run["rate"]
    return attainments, best / (prefill_workers + decode_workers)


# %% solution:q3
def route_requests(arrivals_ms, prompt_tokens, new_tokens, prefill_workers,
                   decode_workers, prefill_ms_per_token, decode_step_ms):
    """At each arrival: loads from the requests not yet done there (prefill: whole prompts until the prefill's end;
    decode: requests until their last token); the least loaded worker, the lowest number on a tie; the prefill
    starts when both the request and its worker are free."""
    free_at = [0] * prefill_workers
    routed = []  # (prefill worker, prefill end, P, decode worker, last token)
    out = []
    for t, P, D in zip(arrivals_ms, prompt_tokens, new_tokens, strict=True):
        p_load = [0] * prefill_workers
        d_load = [0] * decode_workers
        for p, end, n, d, last in routed:
            if end > t:
                p_load[p] += n
            if last > t:
                d_load[d] += 1
        p = p_load.index(min(p_load))
        d = d_load.index(min(d_load))
        start = max(t, free_at[p])
        end = start + P * prefill_ms_per_token
        free_at[p] = end
        routed.append((p, end, P, d, end + (D - 1) * decode_step_ms))
        out.append([p, d, end - t])
    return out


# %% solution:q4
def receive_kv(pools, free_blocks, kv):
    """The payload into the first ceil(P / b) free blocks, in the list's order: token t to row t % b of block
    table[t // b], keys into pools[0], values into pools[1]; the other rows untouched."""
    b, P = pools.shape[4], kv.shape[3]
    table = list(free_blocks[: -(-P // b)])
    out = pools.clone()
    for t in range(P):
        out[:, :, table[t // b], :, t % b] = kv[:, :, :, t]
    return table, out
