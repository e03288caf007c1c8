"""Shared pytest setup: the `site` and `sandbox` markers, the built site used by the site tests, and the rule
that a browser check or a sandbox check may be skipped only when the user says so."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import profiles  # the Hypothesis profile (ci or thorough), loaded before any test module is imported
import pytest
from xdist_groups import group_module_fixtures, xdist_groups_under_pytest_9

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
CHROMIUM = Path("/usr/bin/chromium")
#: Set to 1 to run `make test` on a machine without chromium: the browser check is then skipped, said so
#: in the last line of the run. Without it, a missing chromium fails the run (CI installs it: `.ci/run`).
SKIP_BROWSER_ENV = "MINIGPT_SKIP_BROWSER"
#: Set to 1 where bubblewrap cannot build a sandbox (the GPU machine: scripts/maintenance/gpu_run.py): the grader's
#: tests (marker `sandbox`) are then skipped, said so in the last line. Without it, a missing sandbox fails the run.
SKIP_SANDBOX_ENV = "MINIGPT_SKIP_SANDBOX"
#: Set to 1 to run without llama.cpp (llama-cpp-python, installed by `make install` from wheels/): the tests
#: marked `llamacpp` are then skipped, said so in the last line. Without it, a missing llama_cpp fails the run.
SKIP_LLAMACPP_ENV = "MINIGPT_SKIP_LLAMACPP"


def pytest_report_header(config: pytest.Config) -> str:
    return (f"hypothesis profile: {profiles.PROFILE} (examples x{profiles.PROFILES[profiles.PROFILE]}; "
            f"{profiles.PROFILE_ENV}=thorough for ten times as many)")


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # One torch thread per pytest-xdist worker (`make test` runs one worker per core): two workers each
        # with a pool as wide as the machine would fight over its cores, and the tests' tiny forwards were
        # 30-50x slower with a contended pool (measured). A test about threads sets them itself.
        import torch

        torch.set_num_threads(1)
    config.addinivalue_line(
        "markers", "site: needs the built book in _build/html (run after `make book`; `make site`)"
    )
    config.addinivalue_line("markers", "sandbox: grades in a bubblewrap sandbox (needs a working bwrap)")
    config.addinivalue_line("markers", "llamacpp: runs a GGUF file in llama.cpp (needs llama_cpp)")
    config.addinivalue_line(
        "markers", "source_text: reads the package's source text (its layout, or mutants made from it); "
        "deselected under `make mutate`, whose copy of the package is rewritten"
    )
    config.addinivalue_line(
        "markers", "compiles: traces the package with torch.compile; deselected under `make mutate` (Dynamo "
        "cannot trace mutmut's trampolines, a ContextVar read in every mutated function)"
    )


def _browser_skipped_by_choice() -> bool:
    return os.environ.get(SKIP_BROWSER_ENV, "") == "1"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    group_module_fixtures(items)
    xdist_groups_under_pytest_9(config, items)
    _skip_sandbox_if_told(config, items)
    _skip_llamacpp_if_told(config, items)
    site_items = [item for item in items if item.get_closest_marker("site")]
    if not site_items or CHROMIUM.exists():
        return
    if not _browser_skipped_by_choice():
        _refuse(config, site_items,
                f"the browser check needs Debian's chromium at {CHROMIUM} (apt-get install chromium; .ci/run does). "
                f"To run without it, set {SKIP_BROWSER_ENV}=1: {_count(site_items)} then skipped.")
        return
    skip = pytest.mark.skip(reason=f"chromium is absent and {SKIP_BROWSER_ENV}=1")
    for item in site_items:
        item.add_marker(skip)
    config.stash[_SKIPPED] = len(site_items)


_SKIPPED = pytest.StashKey[int]()


def _count(items: list[pytest.Item]) -> str:
    return "its test is" if len(items) == 1 else f"its {len(items)} tests are"


_REFUSED = pytest.StashKey[str]()


def _refuse(config: pytest.Config, items: list[pytest.Item], message: str) -> None:
    """Stop the run because a tool these tests need is missing. A UsageError says so before any test runs;
    but raised in a pytest-xdist worker it shows only as an INTERNALERROR without the message ("no tests
    ran"), so there each of these tests fails with the message instead (`pytest_runtest_setup`)."""
    if not hasattr(config, "workerinput"):
        raise pytest.UsageError(message)
    for item in items:
        item.stash[_REFUSED] = message


def pytest_runtest_setup(item: pytest.Item) -> None:
    message = item.stash.get(_REFUSED, None)
    if message is not None:
        pytest.fail(message, pytrace=False)


_SANDBOX_SKIPPED = pytest.StashKey[tuple[int, str]]()


def _skip_sandbox_if_told(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a working bwrap the `sandbox` tests fail the run, unless MINIGPT_SKIP_SANDBOX=1 skips them."""
    sandbox_items = [item for item in items if item.get_closest_marker("sandbox")]
    if not sandbox_items:
        return
    from minigpt.grading.sandbox import unavailable

    why = unavailable()
    if why is None:
        return
    if os.environ.get(SKIP_SANDBOX_ENV, "") != "1":
        _refuse(config, sandbox_items, f"the grader's tests need a bubblewrap sandbox: {why}. To run without it, "
                f"set {SKIP_SANDBOX_ENV}=1: {_count(sandbox_items)} then skipped.")
        return
    skip = pytest.mark.skip(reason=f"no bubblewrap sandbox here and {SKIP_SANDBOX_ENV}=1")
    for item in sandbox_items:
        item.add_marker(skip)
    config.stash[_SANDBOX_SKIPPED] = (len(sandbox_items), why)


_LLAMACPP_SKIPPED = pytest.StashKey[tuple[int, str]]()


def _skip_llamacpp_if_told(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without llama_cpp the `llamacpp` tests fail the run, unless MINIGPT_SKIP_LLAMACPP=1 skips them."""
    marked = [item for item in items if item.get_closest_marker("llamacpp")]
    if not marked:
        return
    from minigpt.interop.llamacpp import unavailable

    why = unavailable()
    if why is None:
        return
    if os.environ.get(SKIP_LLAMACPP_ENV, "") != "1":
        _refuse(config, marked, f"the llama.cpp tests need llama_cpp ({why[:200]}); `make install` installs it "
                f"from wheels/. To run without it, set {SKIP_LLAMACPP_ENV}=1: {_count(marked)} then skipped.")
        return
    skip = pytest.mark.skip(reason=f"llama_cpp unavailable and {SKIP_LLAMACPP_ENV}=1")
    for item in marked:
        item.add_marker(skip)
    config.stash[_LLAMACPP_SKIPPED] = (len(marked), why)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    skipped = config.stash.get(_SKIPPED, 0)
    if skipped:
        terminalreporter.write_line(
            f"BROWSER CHECK NOT RUN: {skipped} site tests skipped ({SKIP_BROWSER_ENV}=1, chromium absent)",
            yellow=True, bold=True,
        )
    sandbox_skipped = config.stash.get(_SANDBOX_SKIPPED, None)
    if sandbox_skipped:
        terminalreporter.write_line(
            f"SANDBOX CHECK NOT RUN: {sandbox_skipped[0]} grader tests skipped ({SKIP_SANDBOX_ENV}=1: "
            f"{sandbox_skipped[1][:120]})", yellow=True, bold=True,
        )
    llamacpp_skipped = config.stash.get(_LLAMACPP_SKIPPED, None)
    if llamacpp_skipped:
        terminalreporter.write_line(
            f"LLAMA.CPP CHECK NOT RUN: {llamacpp_skipped[0]} tests skipped ({SKIP_LLAMACPP_ENV}=1: "
            f"{llamacpp_skipped[1][:120]})", yellow=True, bold=True,
        )


@pytest.fixture(scope="module")
def one_torch_thread():
    """Many tiny forwards: one torch thread, since on a shared CPU the thread pool's overhead made them 30-50x
    slower (measured). A module asks for it with `pytestmark = pytest.mark.usefixtures("one_torch_thread")`."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def server(built_site: Path):
    """The built site over HTTP on a loopback port: one server per session (per xdist worker)."""
    from site_browser import serve

    with serve(built_site) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium: one per session (per xdist worker), shared by every site test it runs."""
    from site_browser import chromium

    with chromium() as launched:
        yield launched


@pytest.fixture(scope="session")
def built_site() -> Path:
    """`_build/html`, building the book first (`make book`) if it is missing."""
    if not (SITE / "index.html").is_file():
        subprocess.run(["make", "book"], cwd=ROOT, check=True)
    return SITE
