"""A pytest plugin for mutation runs of code that runs in worker processes (`-p mutmut_child_hits`, added
by `mutate.py`), for two things mutmut 3 does not do:

- In its first pass, the functions a test reaches in the processes it starts count as reached by that
  test (see `sitecustomize.py`, next to it, for the child's side). Without it, a function only Part IV's
  worker processes call has no test in mutmut's map, and its mutants count as survived untested.
- Each mutant's process (forked by mutmut from the process that ran the first passes) starts its own
  forkserver. The inherited one belongs to mutmut's process: a fork cannot use it (`os.waitpid` on a
  process that is not its child raises ChildProcessError in `ensure_running`), so every test that starts
  workers failed and every mutant it reached counted as killed, whatever the mutant did. A fresh server
  also has the mutant's environment, so `launch._worker`'s own mutants run in its workers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from mutmut.mutation.trampoline import get_mutant_under_test
from mutmut.state import state

ENV = "MUTMUT_CHILD_HITS"
_folder: Path | None = None
_PID = os.getpid()  # the process the plugin was imported in: mutmut's, which runs the first passes


def pytest_configure(config: pytest.Config) -> None:
    """In a mutant's process (a fork of mutmut's), forget the forkserver it inherited."""
    if os.getpid() != _PID:
        import multiprocessing.forkserver as forkserver

        forkserver._forkserver = server = forkserver.ForkServer()  # the module's functions are its methods
        for name in ("ensure_running", "get_inherited_fds", "connect_to_new_process", "set_forkserver_preload"):
            setattr(forkserver, name, getattr(server, name))


def _stats_pass() -> bool:
    return get_mutant_under_test() == "stats"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """In the first pass, name the folder children write their hits to (a child reads it at start-up)."""
    global _folder
    if not _stats_pass():
        os.environ.pop(ENV, None)
        return
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="mutmut-hits-"))
    os.environ[ENV] = str(_folder)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Add the children's hits to the test's own before mutmut's collector reads them (it runs after)."""
    if _folder is None or not _stats_pass():
        return
    for hits in sorted(_folder.glob("*.hits")):
        taken = hits.with_suffix(".taken")  # renamed first: a child's next hit starts a new file
        hits.rename(taken)
        state()._stats.update(taken.read_text(encoding="utf-8").split())
        taken.unlink()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _folder
    if _folder is not None:
        shutil.rmtree(_folder, ignore_errors=True)
        _folder = None
    os.environ.pop(ENV, None)
