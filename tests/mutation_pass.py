"""What the tests share, and what they must not share in `make mutate`'s first pass.

mutmut 3 learns which test reaches which function in a first pass (`MUTANT_UNDER_TEST == "stats"`), from the
calls each test makes while it runs, and then runs a mutant against those tests alone. A result computed once and
shared by several tests (a cache, a module-scoped fixture) is attributed to the first test that computed it: the
others are never run against the mutants of what it called, and a mutant only they would kill counts as a
survivor. In that pass, therefore, every test computes its own: `per_mutant` calls through, and a fixture of
scope `shared_scope` is set up per test. Everywhere else both share as before (`make test` keeps its speed).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any


def in_first_pass() -> bool:
    """Whether mutmut is learning which test reaches which function (its `stats` pass)."""
    return os.environ.get("MUTANT_UNDER_TEST", "") == "stats"


def shared_scope(fixture_name: str, config: Any) -> str:
    """A pytest scope (`@pytest.fixture(scope=shared_scope)`): "module", the fixture computed once for its file's
    tests, but "function" in mutmut's first pass, so that each test using it is seen reaching what it calls."""
    return "function" if in_first_pass() else "module"


def per_mutant(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with its results cached per arguments and per mutant of `make mutate`: mutmut forks each mutant's run
    from the process that ran the tests first, so a cache keyed by the arguments alone would hand a mutated case
    generator what the unmutated one drew. In mutmut's first pass every call runs `fn`: a test served from the
    cache would never be run against the mutants of what `fn` calls."""
    cached = functools.cache(lambda mutant, *args: fn(*args))

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        return fn(*args) if in_first_pass() else cached(os.environ.get("MUTANT_UNDER_TEST", ""), *args)

    return call
