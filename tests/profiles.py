"""Hypothesis profiles: how many examples a property draws.

`ci` (the default, what `make test` runs) keeps the counts each test names: the counts whose power was
checked against the mutants kept in the tests (CONTRIBUTING.md, "The suite's budget"). `thorough`
(`make test-thorough`, or `HYPOTHESIS_PROFILE=thorough`) draws ten times as many, for a search before a
release or after a change to a mechanism. A test names its count with `examples(n)`, never a bare number,
so that one switch scales them all.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE_ENV = "HYPOTHESIS_PROFILE"
PROFILES = {"ci": 1, "thorough": 10}
#: The active profile's name; an unknown one is an error, not a silent default.
PROFILE = os.environ.get(PROFILE_ENV, "ci")
if PROFILE not in PROFILES:
    raise ValueError(f"{PROFILE_ENV}={PROFILE!r}: allowed are {', '.join(sorted(PROFILES))}")


def examples(n: int) -> int:
    """The number of examples a property draws under the active profile: n under `ci`, 10 n under `thorough`."""
    if n < 1:
        raise ValueError(f"n={n}: a property draws at least one example")
    return n * PROFILES[PROFILE]


# No deadline anywhere: a property never fails because one example ran slowly on a busy machine, and
# `too_slow` is not a failure either (the generation time is load, not a bug).
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
settings.register_profile("thorough", parent=settings.get_profile("ci"), max_examples=1000)
settings.load_profile(PROFILE)
