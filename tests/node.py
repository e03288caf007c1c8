"""Node, for the tests that run the browser scripts without a browser (costs.js, explorer.js, i18n.js,
MiniGPT's forward): one way to run a script and read the JSON it prints, under the suite's hang guard."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

from limits import HANG_S

NODE = shutil.which("node")


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
