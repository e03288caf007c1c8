"""The GPU run's unit tests and strict nbval, side by side under pytest-xdist, and their JUnit counts."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from gpu_budget import ROOT, Run
from gpu_env import SANDBOX_WORKS

NOTEBOOK_GLOBS = ("chapters/*.ipynb", "exercises/*.ipynb", "decoder_ring/*.ipynb")  # the Makefile's NOTEBOOKS


def _xdist(workers: int, dist: str | None = None) -> list[str]:
    """pytest-xdist's options where it is installed (the GPU machine has it; this project's venv does not)."""
    try:
        import xdist  # noqa: F401
    except ImportError:
        return []
    return ["-n", str(workers)] + (["--dist", dist] if dist else [])


def junit_counts(path: Path) -> dict[str, object]:
    """Tests, failures, errors, skips and the first failing test ids, from a JUnit XML file."""
    if not path.is_file():
        return {"junit": "missing"}
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    failed = [f"{c.get('classname')}::{c.get('name')}" for s in suites for c in s.iter("testcase")
              if c.find("failure") is not None or c.find("error") is not None]
    counts["failed"] = failed[:40]
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    return counts


def stage_tests(run: Run, stages: list[str], workers: int) -> None:
    """unit and nbval side by side, each with `workers` pytest-xdist workers."""
    problem = run.record["sandbox"]
    sandbox_env = {"MINIGPT_SKIP_SANDBOX": "1"} if problem != SANDBOX_WORKS and "unit" in stages else {}
    import importlib.util  # llama.cpp's tests need its CPU wheel (README, "llama.cpp"); no torch in this process

    if importlib.util.find_spec("llama_cpp") is None:
        sandbox_env["MINIGPT_SKIP_LLAMACPP"] = "1"  # the run's summary says so
    notebooks = sorted(p for g in NOTEBOOK_GLOBS for p in glob.glob(str(ROOT / g)))
    jobs = {}
    if "unit" in stages:
        xml = run.stage_dir / "logs" / "unit.xml"
        jobs["unit"] = ([sys.executable, "-m", "pytest", "tests", "-m", "not site", "-p", "no:cacheprovider", "-q",
                         "-rfE", f"--junitxml={xml}", *_xdist(workers)], xml)
    if "nbval" in stages:
        xml = run.stage_dir / "logs" / "nbval.xml"
        jobs["nbval"] = ([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
                          "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "--nbval-cell-timeout=300", "-q", "-rfE",
                          f"--junitxml={xml}", *_xdist(workers, "loadfile"), *notebooks], xml)
    env = dict(run.env, **sandbox_env)
    procs = {}
    t0 = time.monotonic()
    for name, (cmd, _) in jobs.items():
        log = open(run.log(name), "w")  # noqa: SIM115 - closed below
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        procs[name] = (subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True), log)
    for name, (proc, log) in procs.items():
        try:
            rc, timed_out = proc.wait(timeout=max(1.0, run.left())), False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            rc, timed_out = proc.wait(), True
        log.close()
        result = {"command": " ".join(jobs[name][0][:8]) + " ...", "rc": rc, "timed_out": timed_out,
                  "seconds": round(time.monotonic() - t0, 1), **junit_counts(jobs[name][1])}
        if rc != 0:
            result["tail"] = run.log(name).read_text(errors="replace")[-2500:]
        run.stage(name, result)
