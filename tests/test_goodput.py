"""Chapter 19's formulas and goodput: Eq. (19.1) is Eq. (2.1)·P, Eq. (19.2) adds the latency once, attainment
needs both objectives (a one-token request only its TTFT), goodput stops at the first rate that misses, the best
split maximises the slower pool; the replay of a disaggregated pair gives every request its first token from the
prefill engine and the rest after the transfer.

Plausible bugs: attainment that counts TTFT or TPOT alone; a one-token request's nan TPOT counted as a miss;
goodput as the highest passing rate even above a failing one; a replayed decode that starts before the K/V
arrive (TTFT and the second token too early)."""

from __future__ import annotations

import math

import pytest

from minigpt import costs
from minigpt.costs.presets import HARDWARE, KV_LINKS, MODELS
from minigpt.serving import EngineConfig, Request
from minigpt.serving import goodput as G


def test_transfer_bytes_and_time() -> None:
    m = MODELS["Llama-2-7B"]
    per = costs.kv_bytes_per_token(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2)
    assert per == 524288  # 2 · 32 · 32 · 128 · 2: half a MiB per token
    assert costs.kv_transfer_bytes(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2, P=2048) == 2048 * per
    t = costs.kv_transfer_time(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2, P=2048, link_bandwidth=50e9, link_latency=1e-5)
    assert t == pytest.approx(1e-5 + 2048 * per / 50e9)
    with pytest.raises(ValueError, match="link_bandwidth"):
        costs.kv_transfer_time(L=1, H_kv=1, d_h=1, s=2, P=1, link_bandwidth=0)
    with pytest.raises(ValueError, match="link_latency"):
        costs.kv_transfer_time(L=1, H_kv=1, d_h=1, s=2, P=1, link_bandwidth=1.0, link_latency=-1)


def test_a_layer_by_layer_transfer_hides_behind_the_prefill_as_worked_by_hand() -> None:
    """Three layers of 1, 3 and 1 s, messages of 2 s (1 s latency, 4 B at 4 B/s). By hand: layer 0 ready at
    1, sent 1-3; layer 1 ready at 4, sent 4-6; layer 2 ready at 5, link free at 6, sent 6-8: 3 s after the
    prefill's end at 5 (one message of all three: 1 + 12/4 = 4 s). The bugs it catches: a message started
    at its layer's end while the link is busy (2 s), messages chained from the start (6 - 5 = 1 s), the
    latency paid once (messages of 1 s, then one latency: 2 s), the mean layer time (5/3 s each: 8/3 s)."""
    t = costs.layerwise_transfer_exposed(layer_s=[1.0, 3.0, 1.0], layer_bytes=4, link_bandwidth=4.0, link_latency=1.0)
    assert t == 3.0
    # Compute-bound: only the last message shows, whatever the layers take; link-bound: L messages less the
    # compute after the first layer.
    assert costs.layerwise_transfer_exposed(layer_s=[5.0, 9.0, 7.0], layer_bytes=4, link_bandwidth=4.0,
                                            link_latency=1.0) == 2.0
    assert costs.layerwise_transfer_exposed(layer_s=[1.5, 0.5, 0.5], layer_bytes=4, link_bandwidth=4.0,
                                            link_latency=1.0) == 1.5 + 3 * 2.0 - 2.5
    inf = float("inf")
    for bad, name in [(dict(layer_s=[]), "layer_s"), (dict(layer_s=[-1.0]), "layer_s"),
                      (dict(layer_s=[inf]), "layer_s"),
                      (dict(layer_s=[True]), "layer_s"), (dict(layer_s=["1"]), "layer_s"), (dict(layer_s=(1.0,)), None),
                      (dict(layer_s=[1.0], link_latency=-1), "link_latency"),
                      (dict(layer_s=[1.0], link_latency=inf), "link_latency"),
                      (dict(layer_s=[1.0], link_latency="0"), "link_latency"),
                      (dict(layer_s=[1.0], layer_bytes=-1), "layer_bytes"),
                      (dict(layer_s=[1.0], layer_bytes=4.0), "layer_bytes"),
                      (dict(layer_s=[1.0], link_bandwidth=0), "link_bandwidth")]:
        if name is None:  # a tuple of seconds is a list of seconds
            assert costs.layerwise_transfer_exposed(**{"layer_bytes": 4, "link_bandwidth": 4.0, **bad}) == 1.0
            continue
        with pytest.raises(ValueError, match="^" + name):
            costs.layerwise_transfer_exposed(**{"layer_bytes": 4, "link_bandwidth": 4.0, **bad})


def test_attainment_needs_both_objectives_and_one_token_requests_have_no_tpot() -> None:
    ttft = [0.1, 0.1, 0.5, 0.1]
    tpot = [0.01, 0.05, 0.01, math.nan]
    assert costs.slo_attainment(ttft=ttft, tpot=tpot, ttft_slo=0.2, tpot_slo=0.02) == 0.5
    with pytest.raises(ValueError, match="one value per request"):
        costs.slo_attainment(ttft=[0.1], tpot=[0.1, 0.2], ttft_slo=1, tpot_slo=1)


def test_goodput_stops_at_the_first_rate_that_misses() -> None:
    assert costs.goodput(rates=[1, 2, 4, 8], attainments=[1.0, 0.95, 0.5, 0.99]) == 2
    assert costs.goodput(rates=[4, 1, 2], attainments=[0.2, 0.95, 0.91], chips=2) == 1.0
    assert costs.goodput(rates=[1], attainments=[0.89]) == 0.0
    with pytest.raises(ValueError, match="target"):
        costs.goodput(rates=[1], attainments=[1.0], target=0)


def test_best_split_maximises_the_slower_pool() -> None:
    assert costs.best_pd_ratio(chips=5, prefill_rate=3.0, decode_rate=1.0) == {"prefill": 1, "decode": 4}
    assert costs.best_pd_ratio(chips=4, prefill_rate=3.0, decode_rate=3.0) == {"prefill": 2, "decode": 2}
    assert costs.best_pd_ratio(chips=3, prefill_rate=1.0, decode_rate=1.0) == {"prefill": 1, "decode": 2}  # tie
    with pytest.raises(ValueError, match="chips"):
        costs.best_pd_ratio(chips=1, prefill_rate=1.0, decode_rate=1.0)


def test_replayed_pair_decodes_after_the_transfer() -> None:
    m, hw = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
    slow = KV_LINKS["100 GbE"]
    reqs = [Request(f"r{i}", tuple(range(1000 + 100 * i)), 8, arrival_s=0.5 * i) for i in range(4)]
    reqs.append(Request("one", (1, 2, 3), 1, arrival_s=0.1))
    fast = G.replay_disaggregated(reqs, m, hw, KV_LINKS["NVLink 4 (H100 SXM)"], decode_config=EngineConfig())
    lat = G.replay_disaggregated(reqs, m, hw, slow, decode_config=EngineConfig())
    for r, a, b in zip(reqs, fast, lat, strict=True):
        assert len(b.token_s) == r.max_new_tokens
        assert a.token_s[0] == b.token_s[0]  # the first token does not wait for the link
        if r.max_new_tokens > 1:
            move = costs.kv_transfer_time(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2, P=r.P,
                                          link_bandwidth=slow.bandwidth_per_direction)
            assert b.token_s[1] - b.token_s[0] >= move  # the second token waits for the K/V
            assert b.token_s[1] > a.token_s[1]
    col = G.replay_colocated(reqs, m, hw)
    assert [len(x.token_s) for x in col] == [r.max_new_tokens for r in reqs]
    assert G.attainment_of(col, ttft_slo=10.0, tpot_slo=10.0) == 1.0


def test_goodput_bound_is_the_slower_pool_at_its_objective() -> None:
    """Eq. (19.6): the prefill pool's rate 1/t_pre, the decode pool's B/((D − 1)·step) at the largest B
    whose step (plus the transfer spread over the D − 1 gaps) meets the TPOT objective and whose caches fit.
    The bugs it catches: a decode rate taken at B_max regardless of the objective, a transfer charged to the
    TTFT, a memory cap that ignores the weights."""
    from minigpt.costs.presets import HARDWARE, MODELS

    m, h = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"]
    chip = dict(L=m.L, d=m.d, N_params=m.N_params, s=2, bandwidth=h.bandwidth, peak_flops=h.peak_flops,
                H_kv=m.H_kv, d_h=m.d_h, d_ffn=m.d_ffn, V=m.V, ffn_matrices=m.ffn_matrices)
    P, D, ttft, tpot, link = 2048, 256, 0.4, 0.025, 50e9
    t_pre = costs.mixed_step_time(T=P, **chip)
    gap = costs.kv_transfer_time(L=m.L, H_kv=m.H_kv, d_h=m.d_h, s=2, P=P, link_bandwidth=link) / (D - 1)
    S = P + D // 2
    fit = int((h.memory_bytes * 0.9 - m.N_params * 2) // (S * costs.kv_bytes_per_token(L=m.L, H_kv=m.H_kv,
                                                                                        d_h=m.d_h, s=2)))
    B = max(b for b in range(1, fit + 1) if costs.mixed_step_time(B=b, S=S, **chip) + gap <= tpot)
    decode = B / ((D - 1) * costs.mixed_step_time(B=B, S=S, **chip))
    args = dict(chip, P=P, D=D, ttft_slo=ttft, tpot_slo=tpot, link_bandwidth=link, memory_bytes=h.memory_bytes)
    for n, k in [(1, 1), (1, 3), (3, 1)]:
        got = costs.disagg_goodput_bound(**args, prefill_chips=n, decode_chips=k)
        assert got == pytest.approx(min(n / t_pre, k * decode) / (n + k), rel=1e-12)
    assert costs.disagg_goodput_bound(**dict(args, ttft_slo=0.5 * t_pre), prefill_chips=1, decode_chips=1) == 0
    assert costs.disagg_goodput_bound(**dict(args, tpot_slo=1e-4), prefill_chips=1, decode_chips=1) == 0
    with pytest.raises(ValueError, match="D"):
        costs.disagg_goodput_bound(**dict(args, D=1), prefill_chips=1, decode_chips=1)


def test_goodput_bound_counts_the_decode_chips_d_minus_1_tokens_by_hand() -> None:
    """A chip worked out on paper: memory-bound (π huge), 1,000 weight bytes at 1,000 B/s, K/V of 2 bytes per
    token, P = 4, one sequence per decode step (B_max = 1), an instant link. The prefill reads the weights once:
    t_pre = 1 s, one request per second. With D = 2 and D = 3 the mean context is the same, S = P + D // 2 = 5,
    so a decode step reads 1,000 + 5·2 bytes: 1.01 s. A request's first token comes from its prefill chip, so
    the decode chip makes D − 1 steps per request: 1/1.01 req/s at D = 2, half that at D = 3. With one chip
    in each pool the bound is min(1, 1/1.01)/2 at D = 2 and (1/2.02)/2 at D = 3.
    The bug it catches: a decode chip charged all D tokens (2× low at D = 2, 1.5× at D = 3)."""
    chip = dict(L=1, d=1, N_params=1000, s=1, bandwidth=1000.0, peak_flops=1e30, H_kv=1, d_h=1, d_ffn=4)
    run = dict(chip, P=4, ttft_slo=10.0, tpot_slo=2.0, link_bandwidth=1e30, prefill_chips=1, decode_chips=1,
               B_max=1)
    assert costs.mixed_step_time(B=1, S=5, **chip) == pytest.approx(1.01)
    assert costs.mixed_step_time(T=4, **chip) == pytest.approx(1.0)
    assert costs.disagg_goodput_bound(**run, D=2) == pytest.approx(1 / 1.01 / 2, rel=1e-9)
    assert costs.disagg_goodput_bound(**run, D=3) == pytest.approx(1 / 2.02 / 2, rel=1e-9)


def test_a_disaggregated_replay_defaults_to_one_chip_on_each_side() -> None:
    """Guards the defaults of `replay_disaggregated` (prefill=1, decode=1): a default of two prefill chips
    would halve the prefill queue of every caller that names no split."""
    m, hw, link = MODELS["Llama-2-7B"], HARDWARE["H100 SXM"], KV_LINKS["100 GbE"]
    reqs = [Request(f"r{i}", tuple(range(3000)), 4, arrival_s=0.0) for i in range(4)]  # a queue at prefill
    default = G.replay_disaggregated(reqs, m, hw, link)
    assert default == G.replay_disaggregated(reqs, m, hw, link, prefill=1, decode=1)
    assert default != G.replay_disaggregated(reqs, m, hw, link, prefill=2, decode=1)


def test_the_p90s_read_a_disaggregated_runs_records_too() -> None:
    """`latencies` and `p90` take any record with a "finished" status, arrival and token times (a
    disaggregated run's), and count the others as missing the objectives. Guards the status read from
    nothing (every record then counts as failed)."""
    from types import SimpleNamespace

    done = SimpleNamespace(status="finished", arrival_s=1.0, token_s=[1.5, 1.7, 1.9])
    lost = SimpleNamespace(status="failed", arrival_s=2.0, token_s=[])
    lat = G.latencies([done, lost])
    assert lat[0].ttft_s == pytest.approx(0.5) and lat[0].tpot_s == pytest.approx(0.2)
    assert lat[1].ttft_s == math.inf
    assert G.p90([done, lost]) == pytest.approx({"ttft_p90_s": 0.5, "tpot_p90_s": 0.2})
