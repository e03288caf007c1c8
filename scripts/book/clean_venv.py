"""Run notebooks as Colab opens them: the package installed from its wheel into a fresh venv, each notebook alone.

A reader who opens a notebook from its Colab button has no checkout: the setup cell installs `minigpt`, and
the notebook runs in a folder that holds nothing but itself. This script rebuilds that situation here:

1. build the wheel from a copy of the package's sources (`pip wheel --no-deps --no-build-isolation`), so the
   checkout gets no build/ or egg-info;
2. make a venv outside the repository and install the wheel into it (`pip install --no-deps`); the
   third-party packages (torch, numpy, matplotlib, nbclient...) come from this checkout's venv through a
   `.pth` line naming its site-packages, a folder added to `sys.path` without running its own `.pth` files,
   so the editable install of `minigpt` there is not seen: `minigpt` is the wheel's;
3. copy one notebook into an empty temporary folder and execute it there (nbclient, in the new venv, no
   PYTHONPATH, MINIGPT_DEVICE=cpu).

Usage (tests/test_clean_venv.py runs two notebooks this way in `make test`):
    python scripts/book/clean_venv.py locales/en/notebooks/chapters/17_speculative_decoding.ipynb ...
    python scripts/book/clean_venv.py --all      # every generated English Colab notebook that reads data
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What the wheel is built from: the package and the two files pyproject.toml reads.
SOURCES = ("minigpt", "pyproject.toml", "README.md")

# Executed inside the clean venv: the notebook, alone in its folder, run cell by cell to the end.
_RUNNER = """\
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=int(sys.argv[2]), kernel_name="python3", resources={"metadata": {"path": "."}}).execute()
import minigpt
print("minigpt from", minigpt.__file__)
"""


def build_wheel(dest: Path) -> Path:
    """The package's wheel, built from a copy of its sources into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="minigpt-src-") as src:
        for name in SOURCES:
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, Path(src) / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(ROOT / name, Path(src) / name)
        command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dest), src]
        # This venv's setuptools first (no network); an isolated build only where it cannot build a wheel
        # (a setuptools older than 70.1 without the `wheel` package).
        if subprocess.run([*command, "--no-build-isolation"], capture_output=True).returncode != 0:
            subprocess.run(command, check=True)
    wheels = sorted(dest.glob("minigpt-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one minigpt wheel in {dest}, found {[w.name for w in wheels]}")
    return wheels[0]


def make_venv(folder: Path, wheel: Path) -> Path:
    """A venv at `folder` with `wheel` installed and this venv's third-party packages visible; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "shared_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True)
    return python


def clean_env() -> dict[str, str]:
    """The environment a notebook runs in: this one without PYTHONPATH (no checkout), on the CPU."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(MINIGPT_DEVICE="cpu", PYTHONHASHSEED="0", MPLBACKEND="agg")
    return env


@dataclass(frozen=True)
class Run:
    """One notebook executed alone: did it run to the end, in how many seconds, where minigpt came from."""

    notebook: str
    ok: bool
    seconds: float
    minigpt_from: str
    error: str


def run_notebook(python: Path, notebook: Path, *, timeout: int = 900) -> Run:
    """Execute `notebook`, copied alone into an empty temporary folder, with the venv's `python`."""
    with tempfile.TemporaryDirectory(prefix="colab-nb-") as folder:
        copy = Path(folder) / notebook.name
        shutil.copy2(notebook, copy)
        start = time.monotonic()
        done = subprocess.run([str(python), "-c", _RUNNER, copy.name, str(timeout)], cwd=folder, env=clean_env(),
                              capture_output=True, text=True)
        seconds = time.monotonic() - start
        left = sorted(p.name for p in Path(folder).iterdir())
    where = next((line.split(" ", 2)[2] for line in done.stdout.splitlines() if line.startswith("minigpt from ")), "")
    error = "" if done.returncode == 0 else f"{(done.stderr or done.stdout)[-3000:]}\nfolder: {left}"
    return Run(str(notebook), done.returncode == 0, round(seconds, 1), where, error)


def data_notebooks() -> list[Path]:
    """The generated English Colab notebooks whose code reads the package's sweep data."""
    found = []
    for path in sorted((ROOT / "locales" / "en" / "notebooks").rglob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        if "read_json(" in code or "gpu_results(" in code:
            found.append(path)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--all", action="store_true", help="every generated English notebook that reads data")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    args = parser.parse_args(argv)
    notebooks = data_notebooks() if args.all else args.notebooks
    if not notebooks:
        parser.error("give notebooks, or --all")
    with tempfile.TemporaryDirectory(prefix="clean-venv-") as tmp:
        python = make_venv(Path(tmp) / "venv", build_wheel(Path(tmp) / "wheel"))
        failed = 0
        for notebook in notebooks:
            run = run_notebook(python, notebook.resolve(), timeout=args.timeout)
            print(f"{'ok  ' if run.ok else 'FAIL'} {run.seconds:7.1f} s  {notebook}  (minigpt from {run.minigpt_from})",
                  flush=True)
            if not run.ok:
                failed += 1
                print(run.error, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
