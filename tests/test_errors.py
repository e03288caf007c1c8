"""Bad input gets a clear error that names the parameter and what is allowed."""

import json
import shutil

import pytest
import torch

from minigpt import KVCache, MiniGPT, ModelConfig, Tokenizer, generate, load_pretrained
from minigpt.corpus.grammar import vocabulary
from minigpt.runtime.checkpoint import save_checkpoint


@pytest.fixture(scope="module")
def model() -> MiniGPT:
    torch.manual_seed(0)
    return MiniGPT(ModelConfig(L=1, S_max=16)).eval()


@pytest.mark.parametrize(
    "fields,match",
    [
        ({"H": 4, "H_kv": 3}, "H_kv must divide H"),
        ({"H": 2, "H_kv": 4}, "H_kv must divide H"),
        ({"L": 0}, "L must be a positive integer"),
        ({"d_h": -16}, "d_h must be a positive integer"),
        ({"V": 2.5}, "V must be a positive integer"),
    ],
)
def test_bad_config(fields, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**fields)


def test_config_d_mismatch_and_unknown_field():
    with pytest.raises(ValueError, match=r"d must equal H·d_h = 4·16 = 64, got d=65"):
        ModelConfig.from_dict({"H": 4, "d_h": 16, "d": 65})
    with pytest.raises(ValueError, match="unknown ModelConfig fields \\['n_embd'\\]"):
        ModelConfig.from_dict({"n_embd": 64})


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"prompt": []}, "prompt is empty"),
        ({"prompt": list(range(17))}, "prompt has P=17 tokens but S_max is 16"),
        ({"max_new_tokens": -1}, "max_new_tokens must be a non-negative integer"),
        ({"max_new_tokens": 16}, r"max_new_tokens=16 does not fit.*allowed: max_new_tokens <= 15"),
        ({"temperature": -0.5}, "temperature must be a finite number >= 0"),
        ({"top_k": 0}, r"top_k must be None or an integer >= 1"),
        ({"top_k": 601}, r"top_k must be None or an integer in 1..600"),
        ({"prompt": "Yesterday I"}, "tokenizer must be given"),
        ({"prompt": [[1, 2], [3]]}, "equal length P"),
        ({"seed": "x"}, "seed must be None or an integer"),
    ],
)
def test_bad_generate_arguments(model, kwargs, match):
    args = {"prompt": [1, 2], "max_new_tokens": 3, **kwargs}
    with pytest.raises(ValueError, match=match):
        generate(model, args.pop("prompt"), args.pop("max_new_tokens"), **args)


def test_unknown_word_is_named():
    with pytest.raises(ValueError, match="zebra"):
        Tokenizer(vocabulary()).encode("Yesterday I zebra")


def test_token_id_out_of_range(model):
    with pytest.raises(ValueError, match=r"token id 600 is out of range: ids must be in 0..599"):
        model(torch.tensor([[1, 600]]))


def test_cache_overflow(model):
    cache = model.new_cache(1, S_max=4)
    model(torch.tensor([[1, 2, 3]]), cache)
    message = "KV cache overflow: it holds S=3 tokens and 2 more were written, but S_max is 4"
    with pytest.raises(ValueError, match=message):
        model(torch.tensor([[4, 5]]), cache)
    assert cache.S == 3  # nothing half-written counts


def test_cache_with_wrong_dtype_batch_or_size(model):
    with pytest.raises(ValueError, match="cache is torch.float16 on cpu but the model is torch.float32"):
        model(torch.tensor([[1]]), KVCache(model.config, dtype=torch.float16))
    with pytest.raises(ValueError, match="tokens hold B=2 sequences but the cache was built for B=1"):
        model(torch.tensor([[1], [2]]), model.new_cache(1))
    with pytest.raises(ValueError, match="S_max must be an integer in 1..16"):
        KVCache(model.config, S_max=17)
    with pytest.raises(ValueError, match="B must be a positive integer"):
        KVCache(model.config, B=0)


def test_tokens_must_be_long_2d(model):
    with pytest.raises(ValueError, match=r"tokens must be a torch.long tensor of shape \[B, T\]"):
        model(torch.tensor([1.0, 2.0]))


def test_bad_checkpoints(tmp_path, model):
    tok = Tokenizer(vocabulary())
    save_checkpoint(model, tok, {"note": "test"}, tmp_path)
    assert load_pretrained(tmp_path).config == model.config
    # corrupted weights
    bad = tmp_path / "bad"
    shutil.copytree(tmp_path, bad, ignore=shutil.ignore_patterns("bad"))
    raw = (bad / "minigpt.safetensors").read_bytes()
    (bad / "minigpt.safetensors").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="are corrupted"):
        load_pretrained(bad)
    # card that does not match the weights
    mism = tmp_path / "mismatch"
    shutil.copytree(tmp_path, mism, ignore=shutil.ignore_patterns("bad", "mismatch"))
    card = json.loads((mism / "minigpt.json").read_text())
    card["config"]["L"] = 2
    (mism / "minigpt.json").write_text(json.dumps(card))
    with pytest.raises(ValueError, match="checkpoint mismatch"):
        load_pretrained(mism)
    # card that is not JSON
    (mism / "minigpt.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_pretrained(mism)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_pretrained(tmp_path / "nowhere")
