"""A pytest plugin for mutation runs of code that runs in worker processes (`-p mutmut_child_hits`, added
by `mutate.py`), for two things mutmut 3 does not do:

- In its first pass, the functions a test reaches in the processes it starts count as reached by that
  test (see `sitecustomize.py`, next to it, for the child's side). Without it, a function only Part IV's
  worker processes call has no test in mutmut's map, and its mutants count as survived untested.
- In its first pass, what a fixture of a wider scope than the test (a module's trace served once, a
  model loaded once) reaches counts as reached by every test that uses the fixture, not only by the
  first one, during whose setup it ran: mutmut would run a mutant of the driver only against the first
  test of the module, never against the one that checks what the mutant changes.
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


_by_fixture: dict[int, set[str]] = {}  # id of a wider-scoped FixtureDef -> the functions its setup reached
_items: list[pytest.Item] = []


def _take_children() -> None:
    """Move the hits children have written so far into the test process's own."""
    if _folder is None:
        return
    for hits in sorted(_folder.glob("*.hits")):
        taken = hits.with_suffix(".taken")  # renamed first: a child's next hit starts a new file
        hits.rename(taken)
        state()._stats.update(taken.read_text(encoding="utf-8").split())
        taken.unlink()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """The functions a wider-scoped fixture's setup reaches, in this process and in the workers it starts."""
    if not _stats_pass() or fixturedef.scope == "function":
        yield
        return
    _take_children()
    before = set(state()._stats)
    yield
    _take_children()
    _by_fixture.setdefault(id(fixturedef), set()).update(set(state()._stats) - before)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    _items[:] = items


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Give each wider-scoped fixture's functions to every test that uses it (mutmut names tests as below)."""
    if not _stats_pass() or not _by_fixture:
        return
    for item in _items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        test = item.nodeid.removeprefix("mutants/")
        for defs in info.name2fixturedefs.values():
            for name in _by_fixture.get(id(defs[-1]), ()):
                state().tests_by_mangled_function_name[name].add(test)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Add the children's hits to the test's own before mutmut's collector reads them (it runs after)."""
    if _stats_pass():
        _take_children()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _folder
    _by_fixture.clear()
    _items.clear()
    if _folder is not None:
        shutil.rmtree(_folder, ignore_errors=True)
        _folder = None
    os.environ.pop(ENV, None)
