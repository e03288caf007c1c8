"""Tensors a mechanism makes live on the device of the tensors it was given, whatever torch's default device
is: a reader who sets `torch.set_default_device("cuda")` in Colab (or a library that does) must not get index
tensors on one device and the cache on another. The default device is `meta` here, so a tensor made without
`device=` shows up on the wrong device on a CPU-only machine (issue 36's sampled survivors: `device=` dropped
from the ragged mask, the varlen step's decode owners and the quantized cache's value scales)."""

from __future__ import annotations

import dataclasses

import torch

from minigpt import ModelConfig
from minigpt.runtime.paged_cache import PagedKVCache
from minigpt.runtime.quantized_cache import QuantizedKVCache
from minigpt.runtime.ragged import visible_mask
from minigpt.runtime.varlen import flatten

CONFIG = ModelConfig(L=1, H=2, H_kv=1, d_h=4, d_ffn=16, V=11, S_max=16)


def _tensors(obj: object) -> dict[str, torch.Tensor]:
    """Every tensor field of a dataclass, nested dataclasses and lists of tensors included, by path."""
    found: dict[str, torch.Tensor] = {}
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        if torch.is_tensor(value):
            found[f.name] = value
        elif dataclasses.is_dataclass(value):
            found |= {f"{f.name}.{k}": v for k, v in _tensors(value).items()}
        elif isinstance(value, list):
            found |= {f"{f.name}[{i}]": v for i, v in enumerate(value) if torch.is_tensor(v)}
    return found


def test_the_ragged_mask_is_made_on_the_lengths_device() -> None:
    with torch.device("meta"):
        mask = visible_mask(torch.tensor([1, 3], device="cpu"), 2)
    assert mask.device.type == "cpu"
    assert mask.tolist()[0][0][:3] == [True, True, False]  # sequence 0 of S = 1: query 0 sees keys 0 and 1


def test_a_varlen_step_puts_every_index_on_the_pools_device() -> None:
    pool = PagedKVCache(CONFIG, num_blocks=8, block_size=4)
    seqs = [pool.add_sequence(), pool.add_sequence()]
    with torch.device("meta"):
        batch = flatten(pool, seqs, [[1, 2, 3], [4]])  # a prefill of 3 and a one-token sequence (a decode row)
    found = _tensors(batch)
    assert "decode.owner" in found and "slot_mapping" in found
    assert {name: t.device.type for name, t in found.items()} == dict.fromkeys(found, "cpu")


def test_a_quantized_cache_keeps_codes_and_scales_on_its_device() -> None:
    for key_axis in ("token", "channel"):
        with torch.device("meta"):
            cache = QuantizedKVCache(CONFIG, 2, key_axis=key_axis, token_group=4, device="cpu")
        tensors = {k: v.device.type for k, v in vars(cache).items() if torch.is_tensor(v)}
        assert {"k", "v", "k_scale", "v_scale"} <= set(tensors) and set(tensors.values()) == {"cpu"}, tensors
