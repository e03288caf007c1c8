"""Mutation testing of the package's mechanism modules with mutmut 3 (`make mutate`; not part of `make test`).

    python scripts/maintenance/mutate.py minigpt/runtime/eviction.py      # one module, every mutant
    python scripts/maintenance/mutate.py --all                             # every mechanism module
    python scripts/maintenance/mutate.py --report                          # mutation/report.md from results

A module runs in its own scratch copy (`_build/mutate/<module>/`: the package, the tests, the exercises
and the chapters' data, with a `[tool.mutmut]` section written for that module), so runs never touch the
work tree and two modules never share mutmut's state. mutmut mutates the module's functions, runs the
module's tests once to learn which test calls which function, and then runs, for each mutant, only the
tests that reach it (forked, `--max-children` at a time). A module's tests are the test files that import
it, plus `EXTRA_TESTS`; a mutant those miss counts as survived, never as killed. Most test files
import the cost model's facade, so a `minigpt/costs/` module keeps only the files that name what
it defines, plus the ones that loop over every formula, and never the end-to-end ones.

Each run's counts go to `mutation/results/<module>.json` (committed): mutants, killed, survived, timed
out, no tests, and the names of the survivors, and `--report` renders every result and the triage of
`mutation/triage.yml` (each survivor killed by a named test, or equivalent with the reason) into
`mutation/report.md`, each score with its 95 % Wilson interval.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its report, next to it
from mutate_reach import COSTS_END_TO_END, COSTS_TESTS, EXTRA_TESTS, GRADING_CHILD_TESTS  # noqa: E402, F401
from mutate_report import load_triage, module_code_id, render, score, source_id, wilson  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRATCH = ROOT / "_build" / "mutate"
RESULTS = ROOT / "mutation" / "results"
MUTMUT = "3.8.1"  # the version requirements-mutate.txt pins
#: The mechanism modules (the issue's list): caches, attention, speculative, MLA, eviction, window; the
#: serving engine; Part IV's processes; the formulas; the exporters; the exercises' checkers.
MECHANISMS = ("minigpt/runtime/*.py", "minigpt/runtime/attention/*.py", "minigpt/serving/*.py",
              "minigpt/distributed/*.py", "minigpt/costs/*.py", "minigpt/interop/*.py",
              "minigpt/exercises/*.py")
TARGET = 0.90


def modules() -> list[str]:
    """Every mechanism module (package-relative paths), `__init__` files left out (re-exports only)."""
    found = {p.relative_to(ROOT).as_posix() for pattern in MECHANISMS for p in ROOT.glob(pattern)}
    return sorted(m for m in found if not m.endswith("__init__.py"))


def tests_of(module: str) -> list[str]:
    """The test files that import `module`: by its dotted name, by name from its package, or through its
    package's facade (`from minigpt import costs`, `from minigpt.serving import Engine`), plus
    `EXTRA_TESTS`. A module of the cost model keeps of these the ones that name what it defines
    (`COSTS_TESTS`)."""
    dotted = module[:-3].replace("/", ".")
    package, _, name = dotted.rpartition(".")
    top = package.split(".")[1] if package.count(".") else name
    pattern = re.compile(rf"\b{re.escape(dotted)}\b|from {re.escape(package)} import [^\n]*\b{re.escape(name)}\b"
                         rf"|^from minigpt\.{re.escape(top)} import |^from minigpt import [^\n]*\b{re.escape(top)}\b",
                         re.M)
    costs = module.startswith("minigpt/costs/")
    names = _names_of(module) if costs else pattern
    found = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
             if pattern.search(text := p.read_text(encoding="utf-8")) and names.search(text)}
    if costs:
        found = (found | set(COSTS_TESTS)) - set(COSTS_END_TO_END)
    if module.startswith("minigpt/exercises/ex"):  # the seed tests name questions by id, not by import
        found |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").glob("test_seed_independence*.py")}
    return sorted((found | set(EXTRA_TESTS.get(module, ()))) - set(GRADING_CHILD_TESTS))


def _names_of(module: str) -> re.Pattern[str]:
    """A pattern of `module`'s dotted name and its public top-level functions and classes."""
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)
             and not node.name.startswith("_")]
    words = [module[:-3].replace("/", "."), *names]
    return re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b")


def decorated(module: str) -> list[str]:
    """The functions of `module` mutmut 3 leaves alone: every decorated one but a staticmethod or classmethod
    (properties, `@torch.no_grad()`, caches); the report lists how many, as a blind spot of the score."""
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    return sorted(f"{node.name}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.decorator_list
                  and not (len(node.decorator_list) == 1 and isinstance(node.decorator_list[0], ast.Name)
                           and node.decorator_list[0].id in ("staticmethod", "classmethod")))


def _slug(module: str) -> str:
    return module[:-3].replace("/", ".")


def _workdir(slug: str, only: list[str], tests: list[str]) -> Path:
    """A fresh copy of what the tests read, with mutmut's configuration for the modules `only`."""
    work = SCRATCH / slug
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("minigpt", "tests", "exercises", "appendices", "scripts", "chapters", "decoder_ring"):
        shutil.copytree(ROOT / part, work / part, ignore=ignore)
    for part in ("intro.md", "references.bib", "_toc.yml"):  # with the pages: what test_notation and test_prose read
        shutil.copy2(ROOT / part, work / part)
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    config += (
        "\n[tool.mutmut]\n"
        'source_paths = ["minigpt"]\n'
        f"only_mutate = {json.dumps(only)}\n"
        'also_copy = ["exercises", "chapters", "decoder_ring", "appendices", "scripts", "intro.md", "references.bib", '
        '"_toc.yml"]\n'
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:xdist", "-p", "no:cacheprovider", "-p", "mutmut_child_hits", "-m", '
        '"not site and not source_text and not compiles", "-q"]\n'
        # A mutant that hangs (a loop that never ends) is killed after 4x its tests' clean time in CPU
        # seconds, plus 1 s, doubled (mutmut's default, 15x, let one mutant of kv_cache.py run 15 minutes).
        "timeout_multiplier = 4.0\n"
        # ... and after 4x (that time + 10 s) of wall time. The clean time counts each test's
        # call, not the module fixtures a mutant's tests set up again (test_costs_js runs node on
        # every formula, ~2 s): mutmut's 1 s would stop a mutant of a formula those tests pass at
        # about 6 s and count it killed (a timeout).
        "timeout_constant = 10.0\n"
    )
    (work / "pyproject.toml").write_text(config, encoding="utf-8")
    return work


def _mutmut(work: Path, *args: str) -> int:
    """Run mutmut in `work`; its progress (a spinner per mutant) goes to `work/mutmut.log`. mutmut forks a
    worker per mutant: it runs in its own process group, and if this script stops for any reason (an error,
    Ctrl-C, SIGTERM) the whole group is killed, so no worker outlives it.

    torch runs on one thread (`OMP_NUM_THREADS=1`): mutmut forks each worker from a process that
    ran the tests, and a fork of a process whose OpenMP pool has started waits forever at the pool's
    first barrier (gdb: `gomp_team_barrier_wait_end` in a LayerNorm); every mutant whose tests run
    a model then hung until its wall limit and counted as a timeout (killed), whatever its tests
    said.

    Its processes find `mutmut_children/` on their path: the pytest plugin and the `sitecustomize` with
    which the worker processes a test starts report the functions they reach in mutmut's first pass, so
    a mutant of a function only Part IV's ranks call runs the tests that start them."""
    children = work / "scripts" / "maintenance" / "mutmut_children"  # see its sitecustomize.py
    path = os.pathsep.join(filter(None, [str(children), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": path}
    with open(work / "mutmut.log", "w", encoding="utf-8") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mutmut", *args], cwd=work, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True, env=env)
        previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        try:
            return proc.wait()
        finally:
            signal.signal(signal.SIGTERM, previous)
            with contextlib.suppress(ProcessLookupError):  # workers may outlive mutmut's own process
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _exit_codes(work: Path, module: str) -> dict[str, int | None]:
    meta = work / "mutants" / (module + ".meta")
    return json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"] if meta.exists() else {}


def run_module(module: str, *, names: list[str] | None = None, max_children: int = 2) -> dict:
    """Run mutmut on `module` (every mutant, or `names`); write and return its result."""
    tests = tests_of(module)
    if not tests:
        raise SystemExit(f"{module}: no test file imports it; add it to EXTRA_TESTS (mutate_reach.py)")
    work = _workdir(_slug(module), [module], tests)
    start = time.monotonic()
    rc = _mutmut(work, "run", f"--max-children={max_children}", *(names or []))
    codes = _exit_codes(work, module)
    if rc != 0 or not codes:
        raise SystemExit(f"{module}: mutmut exited {rc} with {len(codes)} mutants; see {work / 'mutmut.log'}")
    if names is not None:
        codes = {k: v for k, v in codes.items() if k in set(names)}
    from mutmut.stats import status_by_exit_code  # mutmut's own reading of its exit codes (installed by make mutate)

    counts: dict[str, int] = {}
    for code in codes.values():
        status = status_by_exit_code[code]
        counts[status] = counts.get(status, 0) + 1
    result = {"module": module, "tests": tests, "mutmut": MUTMUT, "sampled": names is not None,
              "mutants": len(codes), "counts": dict(sorted(counts.items())),
              "survivors": sorted(k for k, v in codes.items() if status_by_exit_code[v] == "survived"),
              "not_mutated": decorated(module), "source": source_id(module),
              "code": module_code_id(module),
              "seconds": round(time.monotonic() - start)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{_slug(module)}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def _triage() -> dict[str, dict]:
    return load_triage(ROOT / "mutation" / "triage.yml")


def report() -> str:
    """mutation/report.md, rendered from `RESULTS` and mutation/triage.yml (`mutate_report.render`)."""
    return render(RESULTS, _triage(), modules(), MUTMUT, TARGET)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="package-relative paths (minigpt/runtime/eviction.py)")
    parser.add_argument("--all", action="store_true", help="every mechanism module")
    parser.add_argument("--max-children", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--list", action="store_true", help="print each module with its tests, run nothing")
    parser.add_argument("--report", action="store_true", help="write mutation/report.md from the results")
    args = parser.parse_args()
    if args.report:
        (ROOT / "mutation" / "report.md").write_text(report(), encoding="utf-8")
        return
    chosen = modules() if args.all else args.modules
    unknown = sorted(set(chosen) - set(modules()))
    if unknown:
        raise SystemExit(f"not a mechanism module: {unknown}; modules are {MECHANISMS}")
    if not chosen:
        parser.error("name modules, or --all")
    for module in chosen:
        if args.list:
            print(module, " ".join(tests_of(module)))
            continue
        result = run_module(module, max_children=args.max_children)
        killed, decided = score(result)
        lo, hi = wilson(killed, decided)
        print(f"{module}: {killed}/{decided} killed ({killed / max(decided, 1):.0%}, 95 % {lo:.0%}-{hi:.0%}), "
              f"{result['counts']}, {result['seconds']} s")


if __name__ == "__main__":
    main()
