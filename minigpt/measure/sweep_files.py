"""Where the sweeps' results live: JSON files shipped inside the package, `minigpt/measure/data/`.

`scripts/sweeps/*.py` write them there and the chapters read them back through `read_json("data/<name>.json")`,
the one function that resolves a sweep's name to its file. The file is part of the installed package, so a
notebook reads it wherever it runs: in the repository, in a venv that installed the wheel, in Colab after the
setup cell's `pip install`, from a folder that holds nothing but the notebook. No torch here.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

#: The package's folder of sweep results (`<sweep>_<device>.json`, `<what>_quality.json`).
DATA_DIR = Path(__file__).resolve().parent / "data"


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
