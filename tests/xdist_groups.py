"""Which tests share a pytest-xdist worker (`--dist loadgroup`), called by conftest's collection hook.

tests/test_xdist_groups.py runs a small suite on two workers with these functions and fails if a group
is spread over both.
"""

from __future__ import annotations

import pytest


def group_module_fixtures(items: list[pytest.Item]) -> None:
    """A test that uses a module-scoped fixture (the hostile class graded once, a model exported once) runs on
    the worker that runs the module's other users of it (pytest-xdist `--dist loadgroup`): spread over two
    workers, each would build the fixture, and two gradings of the hostile class at once doubled its cost.
    A test already in a group (the process-group tests) keeps its group."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or any(True for _ in item.iter_markers("xdist_group")):
            continue
        if any(d.scope == "module" for name in info.names_closure for d in info.name2fixturedefs.get(name, ())):
            item.add_marker(pytest.mark.xdist_group(f"module-fixture:{item.module.__name__}"))


def xdist_groups_under_pytest_9(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Make `--dist loadgroup` group. pytest-xdist 3.8 (the newest) marks a grouped test by appending
    "@group" to `item._nodeid`, which pytest 9 no longer reads (a node's id is `item._id`): every group was
    silently spread over the workers (seen: the hostile class graded on both, the process-group tests on
    both at once). So the suffix goes where pytest 9 keeps the id, on the workers only; xdist's scheduler
    then sends each group to one worker, as it documents."""
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId

    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names and not item.nodeid.endswith("@" + "_".join(names)):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")
