"""Write the presets of minigpt/costs/presets.py into minigpt/web/costs/presets.js (the block between the markers).

    python scripts/book/sync_presets_js.py          # rewrite the block
    python scripts/book/sync_presets_js.py --check  # exit 1 if presets.js is out of date

The presets have one source, the Python module; the JavaScript block is generated from it and
tests/test_costs_js.py checks that the two agree.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from minigpt.costs.presets import HARDWARE, MODELS

PRESETS_JS = Path(__file__).resolve().parents[2] / "minigpt" / "web" / "costs" / "presets.js"
BEGIN = ("  // ---- Presets: generated from minigpt/costs/presets.py by scripts/book/sync_presets_js.py;"
         " do not edit ----\n")
END = "  // ---- end of presets ----\n"


def block() -> str:
    """The JavaScript assignments of C.MODELS and C.HARDWARE, one preset a line."""
    def table(name: str, presets: dict) -> str:
        rows = "".join(f"    {json.dumps(k)}: {json.dumps(asdict(v), ensure_ascii=False)},\n"
                       for k, v in presets.items())
        return f"  C.{name} = {{\n{rows}  }};\n"

    return BEGIN + table("MODELS", MODELS) + table("HARDWARE", HARDWARE) + END


def synced(source: str) -> str:
    """`source` (presets.js) with its presets block replaced by `block()`."""
    start, end = source.index(BEGIN), source.index(END) + len(END)
    return source[:start] + block() + source[end:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if presets.js is out of date")
    args = parser.parse_args()
    source = PRESETS_JS.read_text(encoding="utf-8")
    new = synced(source)
    if args.check:
        sys.exit(0 if new == source else 1)
    PRESETS_JS.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
