"""Export MiniGPT for the browser: its weights and vocabulary as one static script, written at build time.

The manifest also carries a bank of sentences of the grammar corpus (`SENTENCES`, drawn with a fixed seed): the
prompts of "Watch the engine"'s mode "MiniGPT's own tokens" are drawn from it (`minigpt/web/engine/minigpt_tokens.js`).

`make book` runs `python -m minigpt.book.web_export _build/assets/minigpt-web`; Sphinx's
`html_extra_path` publishes that folder as `<site>/minigpt-web/`. Nothing here is committed: the
only copy of the weights in the repository is the shipped checkpoint (`minigpt/data/`).

The weights travel as a script (`minigpt_weights.js`: a JSON manifest plus base64 float32 data)
rather than a `.bin` fetched at run time, because browsers refuse `fetch()` on `file://` pages: a
reader who opens the downloaded site from disk gets a working model too. The same file loads in node
(`require`), which is how `tests/test_minigpt_js.py` checks the JavaScript forward pass against PyTorch.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from minigpt import Pretrained, load_pretrained
from minigpt.book.cost_scripts import scripts_for
from minigpt.corpus import generate_sentences

FORMAT = "minigpt-web/1"
#: How many sentences of the grammar corpus the manifest carries, and the seed they are drawn with.
SENTENCES, SENTENCES_SEED = 256, 0
WEIGHTS_ASSET = "minigpt_weights.js"
# The MiniGPTCosts functions minigpt_live.js calls (the counts beside each step, and how they print).
LIVE_COSTS = ("weight_bytes", "kv_bytes_per_token", "kv_cache_bytes", "prefill_flops", "decode_step_flops",
              "decode_step_bytes", "fmt_flops", "fmt_bytes")
# The browser-side files served next to the weights (sources in minigpt/web/), in the page's load order:
# the cost scripts those functions need (chapters/01_minigpt_live.md loads the same list).
LIVE_SCRIPTS = (*scripts_for(LIVE_COSTS), "minigpt_forward.js", "i18n.js", "minigpt_live_charts.js", "minigpt_live.js",
                "minigpt_live.css")
# "Watch the engine" (decoder_ring/watch_engine.md): the cost twin's functions its step times and labels call,
# the engine twin (minigpt/web/engine/, the scheduler without the page: what node runs in the tests), the page.
ENGINE_COSTS = ("layer_flops", "lm_head_flops", "weight_bytes", "kv_bytes_per_token", "roofline_time",
                "step_time_with_swap", "MODELS", "HARDWARE", "fmt_duration", "fmt_percent")
ENGINE_TWIN = (*scripts_for(ENGINE_COSTS), "minigpt_forward.js", "engine/core.js", "engine/prefix_cache.js",
               "engine/scheduler.js", "engine/meters.js", "engine/engine.js", "engine/minigpt_tokens.js")
ENGINE_SCRIPTS = (*ENGINE_TWIN, "i18n.js", "engine/views.js", "engine/watch_text.js", "engine/watch.js",
                  "engine/watch.css")
SCRIPTS = tuple(dict.fromkeys((*LIVE_SCRIPTS, *ENGINE_SCRIPTS)))


def web_weights(pretrained: Pretrained) -> tuple[dict[str, Any], bytes]:
    """The manifest (config, vocabulary, tensor table) and the float32 little-endian bytes of every tensor."""
    model, tokenizer = pretrained.model, pretrained.tokenizer
    tensors, chunks, offset = [], [], 0
    for name, value in model.state_dict().items():
        data = value.detach().to("cpu", torch.float32).contiguous()
        tensors.append({"name": name, "shape": list(data.shape), "offset": offset})
        chunks.append(data.numpy().astype("<f4").tobytes())
        offset += data.numel()
    raw = b"".join(chunks)
    manifest = {
        "format": FORMAT,
        "config": model.config.to_dict(),
        "vocab": tokenizer.vocab,
        "dtype": "float32",
        "N_params": offset,
        "tensors": tensors,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "sentences": generate_sentences(SENTENCES, seed=SENTENCES_SEED),
    }
    return manifest, raw


def weights_script(manifest: dict[str, Any], raw: bytes) -> str:
    """The text of `minigpt_weights.js`: sets `MiniGPTWeights = {manifest, data}` (browser) or exports it (node)."""
    payload = json.dumps({"manifest": manifest, "data": base64.b64encode(raw).decode("ascii")}, sort_keys=True)
    return (
        "// MiniGPT's weights for the browser, written by `python -m minigpt.book.web_export` from the shipped\n"
        "// checkpoint (minigpt/data/). Generated at build time; do not edit or commit.\n"
        "(function (root) {\n"
        f"  var asset = {payload};\n"
        "  root.MiniGPTWeights = asset;\n"
        '  if (typeof module !== "undefined" && module.exports) module.exports = asset;\n'
        '})(typeof globalThis !== "undefined" ? globalThis : this);\n'
    )


def export_web_assets(directory: Path | str, pretrained: Pretrained | None = None) -> Path:
    """Write `minigpt_weights.js` and copy the page's scripts into `directory`; returns the weights' path.

    Each file is written to a temporary name and renamed, so an interrupted build never leaves a
    half-written asset behind.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    pretrained = load_pretrained() if pretrained is None else pretrained
    manifest, raw = web_weights(pretrained)
    files = {WEIGHTS_ASSET: weights_script(manifest, raw)}
    web = resources.files("minigpt").joinpath("web")
    files.update({name: web.joinpath(name).read_text(encoding="utf-8") for name in SCRIPTS})
    for name, text in files.items():
        tmp = directory / (name + ".tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(directory / name)
    return directory / WEIGHTS_ASSET


def main(argv: list[str] | None = None) -> int:
    """Command line: `python -m minigpt.book.web_export DIRECTORY [--checkpoint DIR]`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="where to write the assets (e.g. _build/assets/minigpt-web)")
    parser.add_argument("--checkpoint", type=Path, default=None,
                        help="checkpoint folder (default: the shipped one, minigpt/data/)")
    args = parser.parse_args(argv)
    pretrained = load_pretrained(args.checkpoint) if args.checkpoint is not None else None
    path = export_web_assets(args.directory, pretrained)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB) and {', '.join(SCRIPTS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
