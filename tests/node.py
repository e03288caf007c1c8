"""Node, for the tests that run the browser scripts without a browser (the cost scripts, explorer.js, i18n.js,
MiniGPT's forward): one way to run a script and read the JSON it prints, under the suite's hang guard."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

from limits import HANG_S

from minigpt.book import cost_scripts

NODE = shutil.which("node")
WEB = Path(__file__).resolve().parents[1] / "minigpt" / "web"


def load_costs() -> str:
    """A JavaScript expression that loads every cost script (core first) and is `MiniGPTCosts`."""
    paths = json.dumps([str(WEB / room.path) for room in cost_scripts.rooms().values()])
    return f"(() => {{ for (const p of {paths}) require(p); return globalThis.MiniGPTCosts; }})()"


def run_node(script: str, stdin: str = "", *args: str) -> object:
    """Run `node -e script [args]` with `stdin`, and parse what it printed as JSON (a failing script raises,
    with its stderr)."""
    proc = subprocess.run([NODE, "-e", script, *args], input=stdin, capture_output=True, text=True, timeout=HANG_S,
                          check=True)
    return json.loads(proc.stdout)


def slider_values_of(box: str) -> dict[str, object]:
    """An explorer's slider values as its committed HTML writes them (a string option is written as itself)."""
    values: dict[str, object] = {}
    for name, raw in re.findall(r'data-slider="([^"]+)" data-value="([^"]*)"', box):
        raw = html.unescape(raw)
        try:
            values[name] = json.loads(raw)
        except json.JSONDecodeError:
            values[name] = raw
    return values
