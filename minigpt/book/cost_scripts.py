"""Which of the browser's cost scripts a page loads: the rooms of `minigpt/web/costs/` and what each defines.

The JavaScript twin of `minigpt.costs` has the package's rooms: `costs/core.js` (the object and the
helpers the rooms share) and one script per module, `costs/flops.js` for `costs/flops.py` and so on.
Each room says on one line which other rooms its functions call (``// needs: core, roofline``) and
defines its functions as ``C.name = ...``; both are read here from the scripts themselves, so the
scripts stay the one source. A page loads `core.js`, then the rooms that define the functions its
explorers call, and the rooms those need (`scripts_for`); ``tests/test_costs_js.py`` runs every
function with only those scripts loaded, so a missing ``needs`` fails there.

On the site the Sphinx extension `minigpt.book.sphinx_scripts` adds them to each page that has an
explorer; in a kernel an explorer inlines them all (`bundle`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

FOLDER = "costs"  # under minigpt/web/, and under the site's _static/
CORE = "core"
_NEEDS = re.compile(r"^// needs:(.*)$", re.M)
_DEFINES = re.compile(r"^  C\.(\w+) =", re.M)
_SPEC = re.compile(r'<script type="application/json" class="mgx-spec">(.*?)</script>', re.S)


@dataclass(frozen=True)
class Room:
    """One script of `minigpt/web/costs/`: its name, the rooms it needs, the names it defines."""

    name: str
    needs: tuple[str, ...]
    defines: tuple[str, ...]

    @property
    def path(self) -> str:
        """Its path under `minigpt/web/` (and the site's `_static/`)."""
        return f"{FOLDER}/{self.name}.js"


def _source(name: str) -> str:
    return resources.files("minigpt").joinpath("web", FOLDER, f"{name}.js").read_text(encoding="utf-8")


@cache
def rooms() -> dict[str, Room]:
    """Every room, `core` first and the rest by name, read from the scripts."""
    folder = resources.files("minigpt").joinpath("web", FOLDER)
    names = sorted(p.name[:-3] for p in folder.iterdir() if p.name.endswith(".js"))
    names.remove(CORE)
    found: dict[str, Room] = {}
    for name in [CORE, *names]:
        text = _source(name)
        needs = _NEEDS.findall(text)
        if len(needs) != 1:
            raise ValueError(f"costs/{name}.js must have one '// needs:' line, found {len(needs)}")
        found[name] = Room(name, tuple(n.strip() for n in needs[0].split(",") if n.strip()),
                           tuple(_DEFINES.findall(text)))
    for room in found.values():
        unknown = set(room.needs) - set(found)
        if unknown:
            raise ValueError(f"costs/{room.name}.js needs rooms that do not exist: {sorted(unknown)}")
    return found


@cache
def room_of() -> dict[str, str]:
    """Each function's (or constant's) room; a name defined twice is an error."""
    where: dict[str, str] = {}
    for room in rooms().values():
        for name in room.defines:
            if name in where:
                raise ValueError(f"MiniGPTCosts.{name} is defined in costs/{where[name]}.js and "
                                 f"costs/{room.name}.js")
            where[name] = room.name
    return where


def scripts_for(functions: Iterable[str]) -> list[str]:
    """The scripts (paths under `minigpt/web/`) that `functions` need, in load order: core first."""
    where, everything = room_of(), rooms()
    wanted: set[str] = set()
    todo = []
    for fn in functions:
        if fn not in where:
            raise ValueError(f"no cost script defines {fn!r}; the functions are MiniGPTCosts' "
                             f"({len(where)} names, e.g. {sorted(where)[:3]})")
        todo.append(where[fn])
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo.extend(everything[name].needs)
    return [room.path for room in everything.values() if room.name in wanted or room.name == CORE]


def spec_functions(spec: Mapping[str, Any]) -> set[str]:
    """The MiniGPTCosts names an explorer's spec calls: its outputs, its plot's series, every formatter."""
    calls = [*spec.get("outputs", []), *((spec.get("plot") or {}).get("series", []))]
    formats = [c.get("fmt") for c in [*calls, *spec.get("sliders", [])]] + [(spec.get("plot") or {}).get("y_fmt")]
    return {c["fn"] for c in calls if "fn" in c} | {f["fn"] for f in formats if f}


def page_functions(html: str) -> set[str]:
    """The MiniGPTCosts names the explorers of a built page call (read from their specs)."""
    found: set[str] = set()
    for text in _SPEC.findall(html):
        found |= spec_functions(json.loads(text.replace("<\\/", "</")))
    return found


@cache
def bundle() -> str:
    """Every room in one script, core first: what an explorer inlines in a kernel."""
    return "\n".join(_source(name) for name in rooms())
