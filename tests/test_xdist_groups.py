"""`--dist loadgroup` keeps a group on one worker: the suite's grouping (tests/xdist_groups.py) checked on a
small suite run on two workers.

The bug it guards: pytest-xdist 3.8 writes a test's group where pytest 9 no longer reads it, and every
group is then spread over the workers without a word (the hostile class graded twice, the process-group
tests on both workers at once). Without `xdist_groups_under_pytest_9` in the hook below this test fails
(checked: the marked group then ran on both workers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from limits import HANG_S

TESTS = Path(__file__).resolve().parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import pytest
from xdist_groups import group_module_fixtures, xdist_groups_under_pytest_9


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    group_module_fixtures(items)
    xdist_groups_under_pytest_9(config, items)
"""

# Two files, each with tests in a group, tests using a module-scoped fixture, and free tests between them;
# every test writes which worker ran it.
SUITE = """
import json, os, time
from pathlib import Path
import pytest

def record(name):
    out = Path(os.environ["GROUP_LOG"]) / (name + ".json")
    out.write_text(json.dumps(os.environ.get("PYTEST_XDIST_WORKER")))
    time.sleep(0.05)  # long enough that both workers are handed work

@pytest.fixture(scope="module")
def shared():
    return object()

@pytest.mark.xdist_group("marked")
@pytest.mark.parametrize("i", range(4))
def test_marked(i):
    record(f"marked-{{__name__}}-{{i}}")

@pytest.mark.parametrize("i", range(4))
def test_fixture(i, shared):
    record(f"fixture:{{__name__}}-{{i}}")

@pytest.mark.parametrize("i", range(8))
def test_free(i):
    record(f"free-{{__name__}}-{{i}}")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="xdist workers on a POSIX machine")
def test_each_group_runs_on_one_worker(tmp_path: Path) -> None:
    suite, log = tmp_path / "suite", tmp_path / "log"
    suite.mkdir()
    log.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    for name in ("test_a", "test_b"):
        (suite / f"{name}.py").write_text(SUITE.format())
    env = {**os.environ, "GROUP_LOG": str(log)}
    command = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider",
               str(suite)]
    proc = subprocess.run(command, cwd=suite, env=env, capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = {p.stem: json.loads(p.read_text()) for p in log.glob("*.json")}
    assert len(ran) == 2 * 16, sorted(ran)

    def workers(prefix: str) -> set[str]:
        return {worker for name, worker in ran.items() if name.startswith(prefix)}

    assert workers("free-") == {"gw0", "gw1"}, "the free tests should use both workers (else this proves nothing)"
    assert len(workers("marked-")) == 1, f"the xdist_group('marked') tests ran on {workers('marked-')}"
    for module in ("test_a", "test_b"):
        got = workers(f"fixture:{module}-")
        assert len(got) == 1, f"{module}'s users of a module-scoped fixture ran on {got}"
