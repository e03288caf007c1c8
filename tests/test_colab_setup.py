"""The setup cell in a simulated Colab: it installs the companion package without touching the
preinstalled torch, numpy and ipywidgets.

A fresh virtualenv stands in for Colab's Python: it sees this project's environment (torch, numpy,
ipywidgets, IPython, setuptools) through a `.pth` line, as Colab's preinstalled packages, but not its
editable `minigpt`. A stand-in `google.colab` module makes the cell take its Colab branch, and
MINIGPT_SOURCE points pip at a copy of this checkout instead of GitHub. The cell runs through
IPython's InteractiveShell, so `%pip` is the real magic.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from limits import HANG_S

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "book"))
from new_notebook import setup_cell_source  # noqa: E402

PROBE = textwrap.dedent(
    """
    import importlib, json, os, sys
    import google.colab  # noqa: F401  (the stand-in: Colab has it imported at startup)
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    result = shell.run_cell(open(sys.argv[1]).read())
    if not result.success:
        sys.exit("setup cell failed: %r" % (result.error_in_exec or result.error_before_exec))
    importlib.invalidate_caches()
    import minigpt, minigpt.book.notebook
    info = {"minigpt": minigpt.__file__, "device": str(shell.user_ns["device"])}
    print("PROBE " + json.dumps(info))
    """
)

PRESERVED = ("torch", "numpy", "ipywidgets")


def _fingerprint(name: str) -> dict[str, object]:
    """Version, location and mtimes of an installed distribution's files that pip would rewrite."""
    from importlib import metadata

    dist = metadata.distribution(name)
    init = Path(dist.locate_file(f"{name}/__init__.py"))
    record = Path(dist.locate_file(str(dist._path.name))) / "RECORD"  # type: ignore[attr-defined]
    return {"version": dist.version, "init": str(init), "init_mtime": init.stat().st_mtime_ns,
            "record_mtime": record.stat().st_mtime_ns}


def test_setup_cell_in_simulated_colab(tmp_path: Path) -> None:
    before = {name: _fingerprint(name) for name in PRESERVED}

    colab = tmp_path / "colab-python"
    subprocess.run([sys._base_executable, "-m", "venv", str(colab)], check=True)  # type: ignore[attr-defined]
    python = colab / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # Colab's preinstalled packages: this interpreter's, with any PYTHONPATH folders of wheels (the GPU run's
    # /tmp/site) but never the checkout itself, which the cell must install from MINIGPT_SOURCE.
    preinstalled = [sysconfig.get_paths()["purelib"]] + [
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT]
    (Path(site) / "colab_preinstalled.pth").write_text("\n".join(preinstalled) + "\n")

    fake = tmp_path / "fake"
    (fake / "google" / "colab").mkdir(parents=True)
    (fake / "google" / "__init__.py").write_text("")
    (fake / "google" / "colab" / "__init__.py").write_text('"""Stand-in for Colab\'s module."""\n')

    src = tmp_path / "src"  # pip builds in place: build a copy, not the checkout
    src.mkdir()
    shutil.copytree(ROOT / "minigpt", src / "minigpt", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, src / name)

    cell = tmp_path / "setup_cell.py"
    cell.write_text(setup_cell_source())
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}
    env.update(
        PYTHONPATH=str(fake),
        MINIGPT_SOURCE=str(src),
        PIP_NO_BUILD_ISOLATION="0",  # (sic) disables isolation: build with the preinstalled setuptools
        PIP_NO_INDEX="1",  # everything the cell needs is already there
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        MINIGPT_DEVICE="cpu",
    )
    run = subprocess.run([str(python), str(probe), str(cell)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=HANG_S)
    assert run.returncode == 0, run.stdout + run.stderr
    line = next(x for x in run.stdout.splitlines() if x.startswith("PROBE "))
    info = json.loads(line.removeprefix("PROBE "))

    assert Path(info["minigpt"]).is_relative_to(Path(site)), f"minigpt imported from {info['minigpt']}"
    assert info["device"] == "cpu"
    after = {name: _fingerprint(name) for name in PRESERVED}
    assert after == before, "the setup cell reinstalled a preinstalled package"


@pytest.mark.parametrize("pkg", PRESERVED)
def test_setup_cell_never_names_preinstalled_packages(pkg: str) -> None:
    pip_line = next(x for x in setup_cell_source().splitlines() if "%pip install" in x)
    assert pkg not in pip_line and "--no-deps" in pip_line
