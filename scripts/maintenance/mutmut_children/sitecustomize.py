"""Child processes' trampoline hits for mutmut's first pass (read at interpreter start-up, from the
`PYTHONPATH` that `mutate.py` gives mutmut; a no-op unless `MUTMUT_CHILD_HITS` names a folder).

mutmut 3 learns which test reaches which function by recording the trampoline hits of the test's own
process; a function that only a worker process calls (Part IV's ranks, started by
`minigpt.distributed.launch`) looked reached by no test, and its mutants counted as survived without a
test run. In a process started while `mutmut_child_hits` (the pytest plugin) has set `MUTMUT_CHILD_HITS`,
each hit is appended to `<folder>/<pid>.hits`, and the plugin adds them to the running test's hits.
A worker that outlives a test writes again, for the next test, every name it hits once the plugin has
taken its file. A hit never fails the process that makes it: the forkserver that
`launch` starts keeps the environment it began with, and the trampoline of `launch._worker` runs before
the worker takes the caller's, so a hit may name the folder of an ended session (it is dropped).
The mutants themselves need nothing of this: a worker gets the caller's environment,
`MUTANT_UNDER_TEST` included, so the mutant a test runs is the one its workers run.
"""

import os

if os.environ.get("MUTMUT_CHILD_HITS"):
    try:
        import mutmut.mutation.trampoline as _trampoline
    except ImportError:  # a child without mutmut: nothing to record
        pass
    else:
        _seen: set[str] = set()

        def _record(name: str, caller: str | None = None) -> None:
            folder = os.environ.get("MUTMUT_CHILD_HITS")
            if not folder:
                return
            path = os.path.join(folder, f"{os.getpid()}.hits")
            if name in _seen and os.path.exists(path):
                return
            if not os.path.exists(path):
                _seen.clear()  # the plugin took the file: a new test began
            try:
                with open(path, "a", encoding="utf-8") as f:
                    f.write(name + "\n")
            except OSError:  # a folder of an ended session (a forkserver keeps the environment it began with)
                return
            _seen.add(name)

        _trampoline.record_trampoline_hit = _record
