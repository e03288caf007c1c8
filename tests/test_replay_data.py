"""The committed replays were computed from the presets as they stand.

A replay (predicted, not measured) is a script's output committed to the package; the chapters read it
rather than re-running it. When a preset is corrected, its replays must be run again. The bug this catches:
the H100's capacity corrected to the 81,559 MiB nvidia-smi reports while Chapter 12's paging replay kept
the pool of 80 GiB (7,609 blocks of 16 tokens instead of 7,568), and a host link repriced while the swap
rows kept the old rate.
"""

from __future__ import annotations

import pytest

from minigpt.costs.presets import ACHIEVED_HOST_LINKS, HARDWARE, MODELS
from minigpt.measure import sweeps
from minigpt.serving.replay import replay_blocks


@pytest.fixture(scope="module")
def paging() -> dict:
    return sweeps.read_json("data/paging_cpu.json")["replay"]


@pytest.mark.parametrize("chip", ["A100 80GB", "H100 SXM"])
def test_the_paging_replay_pools_are_todays_presets(paging: dict, chip: str):
    row = paging[chip]
    blocks = replay_blocks(MODELS[row["model"]], HARDWARE[chip], block_size=paging["block_size"], s=paging["s"])
    assert row["num_blocks"] == blocks, f"{chip}: rerun scripts/sweeps/sweep_paging.py --replay-only"
    assert row["preemption"]["num_blocks"] == blocks // 4
    rates = {name: ACHIEVED_HOST_LINKS[name].bandwidth_per_direction for name in row["host_link_bytes_per_s"]}
    assert row["host_link_bytes_per_s"] == rates and row["host_link"] in rates
    swaps = {key.removeprefix("swap ").removesuffix(" serial") for key in row["preemption"] if key.startswith("swap")}
    assert swaps == set(rates)


def test_the_tight_replay_pool_is_todays_presets(paging: dict):
    tight = paging["tight"]
    model, hw = MODELS[tight["model"]], HARDWARE[tight["hardware"]]
    assert tight["num_blocks"] == replay_blocks(model, hw, block_size=paging["block_size"], s=paging["s"])


def test_the_disaggregation_replay_pools_are_todays_presets():
    """Chapter 19's replay binds its pools with long prompts: an H100 pool of 80 GiB's blocks (before the
    81,559 MiB correction) gave Llama-2-7B's 2:1 split 14 req/s per chip instead of 16."""
    replayed = sweeps.read_json("data/disagg_cpu.json")["replayed"]
    hw = HARDWARE[replayed["chip"]]
    assert set(replayed["pool_blocks"]) == set(replayed["models"])
    for name, blocks in replayed["pool_blocks"].items():
        assert blocks == replay_blocks(MODELS[name], hw), f"{name}: rerun sweep_disagg.py --skip-measured"
