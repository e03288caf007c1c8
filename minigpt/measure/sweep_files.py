"""Where the sweeps' results live: JSON files shipped inside the package, `minigpt/measure/data/`.

`scripts/sweeps/*.py` write them there and the chapters read them back through `read_json("data/<name>.json")`,
the one function that resolves a sweep's name to its file. The file is part of the installed package, so a
notebook reads it wherever it runs: in the repository, in a venv that installed the wheel, in Colab after the
setup cell's `pip install`, from a folder that holds nothing but the notebook. No torch here.

A replay (a prediction from the presets of `minigpt.costs.presets`) writes `preset_record` under `PRESETS_KEY`:
the fields of each preset its run read, with the command that wrote the file, so that tests/test_replay_data.py
can name the file a corrected preset made stale and what to run again.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from pathlib import Path, PurePosixPath
from typing import Any

#: The package's folder of sweep results (`<sweep>_<device>.json`, `<what>_quality.json`).
DATA_DIR = Path(__file__).resolve().parent / "data"
#: The key under which a sweep's JSON records the presets its run read (`preset_record`).
PRESETS_KEY = "presets"
#: The tables of `minigpt.costs.presets` whose records (models, chips, links) a replay reads, in the order
#: `preset_record` looks a preset up. `ALL_HARDWARE` is `HARDWARE` and `RECENT_HARDWARE` together.
PRESET_TABLES = ("MODELS", "MOE_MODELS", "LATENT_MODELS", "REPLAY_MODELS", "HARDWARE", "RECENT_HARDWARE",
                 "LINKS", "KV_LINKS", "HOST_LINKS", "ACHIEVED_HOST_LINKS")


def sweep_file(path: str | Path) -> Path:
    """The file a chapter means by `path`: `"data/<name>.json"` is the package's `DATA_DIR/<name>.json`,
    whatever the working folder; any other path (absolute, or with other folders) is taken as it stands.
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or a Path such as 'data/hardware_cpu.json', got {type(path).__name__}")
    parts = PurePosixPath(Path(path).as_posix()).parts
    if len(parts) == 2 and parts[0] == "data":
        name = parts[1]
        if not name.endswith(".json") or name.startswith("."):
            raise ValueError(f"path must name a sweep's JSON file such as 'data/hardware_cpu.json', got {str(path)!r}")
        return DATA_DIR / name
    return Path(path)


def read_json(path: str | Path) -> dict[str, Any]:
    """Read sweep results written by `write_json`: `path` as `sweep_file` resolves it."""
    file = sweep_file(path)
    if not file.is_file():
        known = ", ".join(sorted(p.name for p in DATA_DIR.glob("*.json")))
        raise FileNotFoundError(f"no sweep results at {file} (path={str(path)!r}); the package ships: {known}")
    return json.loads(file.read_text(encoding="utf-8"))


def write_json(path: str | Path, data: dict[str, Any]) -> None:
    """Write sweep results as indented, key-sorted JSON (stable diffs), creating the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def sweep_output(name: str, device: str = "cpu") -> Path:
    """Where a sweep script writes by default: `DATA_DIR/<name>_<device>.json`."""
    if not name.replace("_", "").isalnum() or device not in ("cpu", "cuda"):
        raise ValueError(f"name must be a sweep's name such as 'hardware' and device 'cpu' or 'cuda', "
                         f"got {name!r}, {device!r}")
    return DATA_DIR / f"{name}_{device}.json"


def preset_fields(preset: Any) -> dict[str, Any]:
    """A preset's fields as JSON holds them, less its `name` (the record's key) and its `source` (prose a
    run does not read): `{"memory_bytes": 85520809984, "bandwidth": 3350000000000.0, ...}`."""
    if not dataclasses.is_dataclass(preset) or isinstance(preset, type):
        raise TypeError(f"a preset is a record of minigpt.costs.presets (a dataclass), got {type(preset).__name__}")
    return {f.name: getattr(preset, f.name) for f in dataclasses.fields(preset) if f.name not in ("name", "source")}


def preset_tables() -> dict[str, dict[str, Any]]:
    """`PRESET_TABLES` by name: each a table of `minigpt.costs.presets` (imported here, not at module load)."""
    from minigpt.costs import presets

    return {table: getattr(presets, table) for table in PRESET_TABLES}


def preset_record(*used: Any, script: str, argv: list[str] | None = None) -> dict[str, Any]:
    """What a replay read from `minigpt.costs.presets`, for its JSON's `PRESETS_KEY`: each preset in `used`
    (the very objects the run took from the tables) under every table that holds it, with its fields today,
    and the `script` and command line (`argv`, default `sys.argv[1:]`) that wrote the file, so that a test can
    say which file a corrected preset made stale and what to run again (tests/test_replay_data.py).
    """
    if not used:
        raise ValueError("preset_record needs the presets the run read, got none")
    tables: dict[str, dict[str, Any]] = {}
    for preset in used:
        found = [table for table, rows in preset_tables().items() if rows.get(getattr(preset, "name", None)) is preset]
        if not found:
            raise ValueError(f"{preset!r} is not in any of {', '.join(PRESET_TABLES)}: record the table's own "
                             "preset, not a copy")
        for table in found:
            tables.setdefault(table, {})[preset.name] = preset_fields(preset)
    argv = list(sys.argv[1:] if argv is None else argv)
    return {"script": script, "command": shlex.join(["python", script, *argv]),
            "tables": {table: dict(sorted(rows.items())) for table, rows in sorted(tables.items())}}
