"""minigpt.measure.sweep_files: a chapter's "data/<name>.json" is the package's file, from any folder.

Catches: a sweep read relative to the working folder (the chapter fails when Colab runs it from a folder
that holds nothing but the notebook), a sweep script writing outside the package, a gpu_results that looks
in the notebook's folder, and a missing file reported without saying which ones exist.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minigpt.book import gpu_data
from minigpt.measure import sweep_files, sweeps


def test_a_chapters_path_is_the_packaged_file_from_any_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)  # an empty folder, as Colab runs a notebook
    assert sweeps.sweep_file("data/gqa_cpu.json") == sweep_files.DATA_DIR / "gqa_cpu.json"
    assert sweeps.read_json("data/gqa_cpu.json")["points"]
    assert sweep_files.DATA_DIR.parent == Path(sweeps.__file__).resolve().parent


def test_other_paths_stand_as_given(tmp_path: Path):
    sweeps.write_json(tmp_path / "x.json", {"a": 1})
    assert sweeps.read_json(tmp_path / "x.json") == {"a": 1}
    assert sweeps.sweep_file("runs/data/x.json") == Path("runs/data/x.json")


def test_bad_names_are_refused_clearly():
    with pytest.raises(FileNotFoundError, match=r"path='data/nope_cpu.json'.*the package ships: .*gqa_cpu\.json"):
        sweeps.read_json("data/nope_cpu.json")
    with pytest.raises(ValueError, match="path must name a sweep's JSON file"):
        sweeps.sweep_file("data/gqa_cpu.csv")
    with pytest.raises(TypeError, match="path must be a str or a Path"):
        sweeps.sweep_file(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="device 'cpu' or 'cuda'"):
        sweeps.sweep_output("hardware", "tpu")


def test_sweep_scripts_write_into_the_package():
    assert sweeps.sweep_output("hardware") == sweep_files.DATA_DIR / "hardware_cpu.json"
    assert sweeps.sweep_output("flash", "cuda") == sweep_files.DATA_DIR / "flash_cuda.json"


def test_gpu_results_read_the_package_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(gpu_data, "DATA_DIR", tmp_path / "pkg")
    (tmp_path / "data").mkdir()
    sweeps.write_json(tmp_path / "data" / "flash_cuda.json", {"where": "cwd"})
    assert gpu_data.gpu_results("flash") is None  # the notebook's folder is not where the data lives
    sweeps.write_json(tmp_path / "pkg" / "flash_cuda.json", {"where": "package"})
    assert gpu_data.gpu_results("flash") == {"where": "package"}
