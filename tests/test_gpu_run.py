"""scripts/maintenance/gpu_run.py, the GPU run's driver: its stage budget, its JUnit reading, its unpacking of the
returned files into minigpt/measure/data, and its refusals. (The run itself was rehearsed end to end on CPU; see its
docstring.)"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "maintenance" / "gpu_run.py"


@pytest.fixture(scope="module")
def gpu_run():
    spec = importlib.util.spec_from_file_location("gpu_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_junit_counts_reads_passes_failures_and_skips(gpu_run, tmp_path: Path) -> None:
    tests = tmp_path / "test_tiny.py"
    tests.write_text("import pytest\n\ndef test_a():\n    pass\n\ndef test_b():\n    assert 1 == 2\n\n"
                     "@pytest.mark.skip(reason='x')\ndef test_c():\n    pass\n")
    xml = tmp_path / "out.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests), f"--junitxml={xml}"],
                   cwd=tmp_path, capture_output=True)
    counts = gpu_run.junit_counts(xml)
    assert (counts["tests"], counts["passed"], counts["failures"], counts["skipped"]) == (3, 1, 1, 1)
    assert counts["failed"] == ["test_tiny::test_b"]
    assert gpu_run.junit_counts(tmp_path / "missing.xml") == {"junit": "missing"}


def test_unpack_writes_the_device_data_and_a_summary_without_log_tails(gpu_run, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    returned, data = tmp_path / "returned", tmp_path / "data"
    returned.mkdir()
    data.mkdir()
    staged = tmp_path / "staged" / "data"
    staged.mkdir(parents=True)
    (staged / "hardware_cuda.json").write_text('{"models": []}')
    (staged / "hardware_cpu.json").write_text('{"not": "this device"}')
    with tarfile.open(returned / "data.tar.gz", "w:gz") as tar:
        tar.add(staged, arcname="data")
    summary = {"device": "cuda", "ok": False, "stages": {"unit": {"rc": 1, "tail": "a long log", "tests": 3}}}
    (returned / "summary.json").write_text(json.dumps(summary))
    (returned / "env.json").write_text(json.dumps({"device_name": "NVIDIA H200", "nvidia_smi": "a table"}))
    monkeypatch.setattr(sys.modules["gpu_pack"], "DATA", data)  # gpu_run imports its parts by name
    gpu_run.unpack(returned)
    assert sorted(p.name for p in data.iterdir()) == ["gpu_run_cuda.json", "hardware_cuda.json"]
    assert json.loads((data / "hardware_cuda.json").read_text()) == {"models": []}
    written = json.loads((data / "gpu_run_cuda.json").read_text())
    assert written["stages"]["unit"] == {"rc": 1, "tests": 3}
    assert written["env"] == {"device_name": "NVIDIA H200"}
    (returned / "summary.json").write_text(json.dumps(dict(summary, device="cpu")))  # a CPU rehearsal's files
    with pytest.raises(SystemExit, match="takes a GPU run's files"):
        gpu_run.unpack(returned)


@pytest.mark.parametrize("argv, env, message", [
    (["--out", "x", "--budget", "0"], {}, "--budget and --sweep-time-scale must be positive"),
    (["--out", "x", "--sweep-time-scale", "-1"], {}, "--budget and --sweep-time-scale must be positive"),
    (["--out", "x", "--workers", "0"], {}, "--workers at least 1"),
    (["--out", "x"], {"MINIGPT_DEVICE": "tpu"}, "MINIGPT_DEVICE must be cpu or cuda"),
    ([], {}, "--out is required"),
    (["--out", "x", "--stages", "docs"], {}, "invalid choice: 'docs'"),
])
def test_bad_arguments_are_refused_by_name(argv: list[str], env: dict[str, str], message: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), *argv], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", **env})
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "x").exists()


def test_sweeps_leave_the_test_reserve_and_say_what_they_skipped(gpu_run, tmp_path: Path) -> None:
    run = gpu_run.Run(tmp_path / "out", budget_s=50.0, device="cpu")
    try:
        gpu_run.stage_sweeps(run, reserve_s=45.0, scale=1.0)
    finally:
        shutil.rmtree(run.stage_dir)
    sweeps = run.record["stages"]["sweeps"]["sweeps"]
    assert set(sweeps) == {name for name, _, _ in gpu_run.SWEEPS}
    assert all("skipped" in r and "kept for the tests" in r["skipped"] for r in sweeps.values())


def test_chapters_read_the_recorded_gpu_data_or_say_how_to_record_it(tmp_path: Path) -> None:
    from minigpt.book.gpu_data import gpu_results, no_gpu_results, recorded_on

    assert gpu_results("flash", tmp_path) is None
    assert "scripts/maintenance/gpu_run.py" in no_gpu_results("flash") and "flash_cuda.json" in no_gpu_results("flash")
    env = {"date": "2026-12-01", "device_name": "NVIDIA H200", "dtype": "bfloat16", "torch": "2.11.0+cu130"}
    (tmp_path / "flash_cuda.json").write_text(json.dumps({"environment": env, "memory": []}))
    run = gpu_results("flash", tmp_path)
    assert run["memory"] == []
    assert recorded_on(run) == "recorded 2026-12-01 on NVIDIA H200, bfloat16, torch 2.11.0+cu130"
    with pytest.raises(ValueError, match="sweep must be a sweep's name"):
        gpu_results("../flash", tmp_path)


@pytest.mark.parametrize("device_name, preset", [
    ("NVIDIA H200", "H200"), ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA A100-SXM4-40GB", "A100 40GB"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB"), ("Tesla T4", "T4"), ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA L4", None), ("x86_64", None),
])
def test_a_gpu_is_matched_to_its_datasheet(device_name: str, preset: str | None) -> None:
    from minigpt.book.gpu_data import datasheet

    found = datasheet(device_name)
    assert (found.name if found else None) == preset


def test_distributed_stage_records_a_single_gpu_and_runs_nothing(gpu_run, tmp_path: Path, monkeypatch) -> None:
    run = gpu_run.Run(tmp_path / "out", 100.0, "cuda")
    monkeypatch.setattr(sys.modules["gpu_sweeps"], "child", lambda *a, **k: pytest.fail("NCCL must not run on one GPU"))
    gpu_run.stage_distributed(run, 0.0, gpus=1)
    assert run.record["stages"]["distributed"]["gpus"] == 1
    assert "NCCL needs 2 or more" in run.record["stages"]["distributed"]["skipped"]


def test_distributed_stage_runs_the_nccl_sweep_on_two_gpus(gpu_run, tmp_path: Path, monkeypatch) -> None:
    run = gpu_run.Run(tmp_path / "out", 100.0, "cuda")
    calls = []
    monkeypatch.setattr(sys.modules["gpu_sweeps"], "child",
                        lambda run, name, cmd, limit: calls.append(cmd) or {"rc": 0})
    gpu_run.stage_distributed(run, 0.0, gpus=2)
    assert calls and "--backend" in calls[0] and calls[0][calls[0].index("--backend") + 1] == "nccl"
    assert calls[0][calls[0].index("--worlds") + 1:calls[0].index("--out")] == ["1", "2"]
    serve = calls[1]  # Chapter 19's disaggregated path on NCCL, its tokens checked
    assert serve[1:3] == ["-m", "minigpt.distributed.serve"] and "--check-colocated" in serve
    assert serve[serve.index("--backend") + 1] == "nccl" and serve[serve.index("--device") + 1] == "cuda"
