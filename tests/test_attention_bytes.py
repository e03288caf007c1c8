"""Chapter 15's HBM byte model, Eq. (15.1), in both loop orders, against a walk that records every value read
or written, element by element (Q outer: FlashAttention-2/3 and minigpt's flash_attention; K/V outer:
FlashAttention-1's Algorithm 1)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from minigpt import costs


def _walk(P: int, d: int, bq: int, bk: int, kv_outer: bool, causal: bool) -> int:
    """Values moved, counted per access: each (tensor, row) touched adds d values (1 for ℓ, m, lse)."""
    moved: Counter[str] = Counter()
    q_tiles = [range(i0, min(i0 + bq, P)) for i0 in range(0, P, bq)]
    k_tiles = [range(j0, min(j0 + bk, P)) for j0 in range(0, P, bk)]

    def sees(rows: range, keys: range) -> bool:  # a tile is visited if its last row reaches its first key
        return not causal or rows[-1] >= keys[0]

    if kv_outer:
        for _ in range(P):
            moved["O init"] += d
            moved["l, m init"] += 2
        for keys in k_tiles:
            moved["K, V"] += 2 * d * len(keys)
            for rows in q_tiles:
                if sees(rows, keys):
                    for _ in rows:
                        moved["Q, O in, O out"] += 3 * d
                        moved["l, m in and out"] += 4
    else:
        for rows in q_tiles:
            moved["Q"] += d * len(rows)
            for keys in k_tiles:
                if sees(rows, keys):
                    moved["K, V"] += 2 * d * len(keys)
            moved["O, lse"] += (d + 1) * len(rows)
    return sum(moved.values())


@settings(max_examples=examples(40), deadline=None)
@given(P=st.integers(1, 70), d=st.sampled_from([1, 4, 16]), bq=st.integers(1, 20), bk=st.integers(1, 20),
       kv_outer=st.booleans(), causal=st.booleans())
def test_tiled_attention_hbm_bytes_counts_every_access(P, d, bq, bk, kv_outer, causal):
    """Catches: the causal skip applied per key instead of per whole tile, the re-reads counted once instead
    of per tile, the log-sum-exp (or ℓ, m) left out."""
    got = costs.tiled_attention_hbm_bytes(P=P, d_h=d, s=2, block_q=bq, block_k=bk, kv_outer=kv_outer,
                                          causal=causal, H=3, B=2)
    assert got == 2 * 3 * 2 * _walk(P, d, bq, bk, kv_outer, causal)


@pytest.mark.parametrize("P, d_h, sram", [(1024, 64, 192 * 1024), (8192, 128, 192 * 1024), (100, 16, 4096)])
def test_kv_outer_with_the_papers_blocks_is_flashattention_1(P, d_h, sram):
    """Algorithm 1 with B_c = ⌈M/4d⌉ (and every query row in each pass) is the chapter's FA1 count."""
    b_c = -(-(sram // 2) // (4 * d_h))
    fa1 = costs.tiled_attention_hbm_bytes(P=P, d_h=d_h, s=2, block_q=min(b_c, d_h), block_k=b_c, kv_outer=True)
    assert fa1 == costs.flash_attention_hbm_bytes(P=P, d_h=d_h, s=2, sram_bytes=sram)


def test_q_outer_saving_is_about_2_B_r_over_d_h_at_long_P():
    """The large-P limit the chapter quotes: 4P² score values against ⌈P/B_r⌉·2·P·d_h re-read K/V values."""
    for d_h, (b_r, b_c) in costs.attention_kernels.FA2_TILES.items():
        P = 1 << 17
        std = costs.standard_attention_hbm_bytes(P=P, d_h=d_h, s=2)
        fa2 = costs.tiled_attention_hbm_bytes(P=P, d_h=d_h, s=2, block_q=b_r, block_k=b_c)
        assert std / fa2 == pytest.approx(2 * b_r / d_h, rel=0.03)
