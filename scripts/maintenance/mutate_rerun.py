"""Run the survivors of the saved sample again with the tests written since (`make mutate-rerun`).

A sample's draw belongs to the code it was drawn from: any change to a mechanism module changes the
population, so the same seed draws other mutants, and a whole new sample takes an hour of two quiet cores.
A survivor, though, is one change to one function: where the function's text (and so every mutant mutmut
makes of it, numbered within the function) is the same now as at the commit its group ran, the survivor
named in `mutation/results/sample.json` is the same program change, and running it against today's tests
says whether a test written since kills it. This script does that, one mutmut session per subpackage with
only the survivors' modules' test files, and records each result in `sample.json` under `reruns` (its
status before, its status now, the commit) without touching the draw; the report says how many ran again.

A survivor whose function changed is not run (it is another mutant now) and is listed; so is one the
triage already calls equivalent. A killed mutant is not run again: tests are only ever added to kill it.
With no subpackage named, the survivors of the full runs (`mutation/results/<module>.json`) run again too,
each against the commit that last wrote its result, and the result's counts follow.

    python scripts/maintenance/mutate_rerun.py            # every survivor whose function is unchanged
    python scripts/maintenance/mutate_rerun.py --list     # which would run, and which changed, run nothing
    python scripts/maintenance/mutate_rerun.py --module minigpt/exercises/ex06.py   # one full run's survivors
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutate  # noqa: E402
from mutate_sample import SAMPLE, GroupFailed, run_group  # noqa: E402

SURVIVED = ("survived", "no tests", "suspicious")


def module_of(name: str) -> str:
    """`minigpt.runtime.varlen.x_flatten__mutmut_142` -> `minigpt/runtime/varlen.py`."""
    parts = name.split(".")
    i = next(k for k, p in enumerate(parts) if p.startswith(("x_", "xǁ")))
    return "/".join(parts[:i]) + ".py"


def _functions(path: str, source: str) -> dict[str, str]:
    """The text of every function mutmut writes for `source` (each mutant and each original), by name."""
    from mutmut.mutation.file_mutation import mutate_file_contents

    scratch = mutate.SCRATCH / "population"
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["minigpt"]\n', encoding="utf-8")
    here = os.getcwd()
    os.chdir(scratch)
    try:
        code = mutate_file_contents(path, source).code
    finally:
        os.chdir(here)
    lines = code.splitlines()
    return {node.name: "\n".join(lines[node.lineno - 1:node.end_lineno]) for node in ast.walk(ast.parse(code))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def unchanged(names: list[str], commit: str) -> tuple[list[str], list[str]]:
    """`names` split into the mutants whose mutated function and original read the same at `commit` and in
    the working tree, and the others."""
    same, changed = [], []
    by_module: dict[str, list[str]] = {}
    for name in names:
        by_module.setdefault(module_of(name), []).append(name)
    for path, of_module in sorted(by_module.items()):
        then_src = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=mutate.ROOT, capture_output=True,
                                  text=True).stdout
        then = _functions(path, then_src) if then_src else {}
        now = _functions(path, (mutate.ROOT / path).read_text(encoding="utf-8"))
        for name in of_module:
            fn = name.split(".")[-1]
            orig = fn.rsplit("__mutmut_", 1)[0] + "__mutmut_orig"
            ok = fn in now and all(k in then and then[k] == now.get(k) for k in (fn, orig))
            (same if ok else changed).append(name)
    return same, changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-children", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--list", action="store_true", help="print what would run, run nothing")
    parser.add_argument("--full", action="store_true", help="only the full runs' survivors, not the sample's")
    parser.add_argument("--module", action="append", default=[], metavar="PATH",
                        help="only this full run's survivors (minigpt/exercises/ex06.py), not the sample's; repeatable")
    parser.add_argument("groups", nargs="*", help="subpackages to run (runtime, serving, ...); all by default")
    args = parser.parse_args()
    full = {json.loads(p.read_text(encoding="utf-8"))["module"] for p in mutate.RESULTS.glob("minigpt.*.json")
            } if args.module else set()
    unknown = sorted(set(args.module) - full)
    if unknown or (args.module and args.groups):
        parser.error(f"--module takes a module with a full result ({', '.join(sorted(full))}), and no subpackage "
                     f"beside it; got {unknown or args.groups}")
    if not SAMPLE.exists():
        raise SystemExit(f"{SAMPLE.relative_to(mutate.ROOT)} does not exist: run make mutate-sample first")
    r = json.loads(SAMPLE.read_text(encoding="utf-8"))
    triage = mutate._triage()
    reruns = r.setdefault("reruns", {})
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=mutate.ROOT, capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "minigpt", "tests"], cwd=mutate.ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty and not args.list:  # each result names the commit whose package and tests it ran
        raise SystemExit(f"commit the package and the tests first: a rerun records HEAD ({head[:10]})\n{dirty}")
    todo: dict[str, list[str]] = {}
    for name, status in sorted(r["status"].items()):
        if (status in SURVIVED and triage.get(name, {}).get("verdict") != "equivalent"
                and not args.full and not args.module and (not args.groups or name.split(".")[1] in args.groups)):
            todo.setdefault(name.split(".")[1], []).append(name)
    failed = []
    for group, names in sorted(todo.items()):
        at: dict[str, list[str]] = {}  # each survivor's last run: its group's, or an earlier rerun's
        for name in names:
            at.setdefault(reruns.get(name, {}).get("commit") or r["groups"][group]["commit"], []).append(name)
        same = []
        for commit, of_commit in sorted(at.items()):
            kept, changed = unchanged(of_commit, commit)
            same += kept
            for name in changed:
                print(f"{group}: {name} changed since {commit[:10]}: not run (another mutant now)", flush=True)
        if args.list:
            print(f"{group}: {len(same)} to run again: " + " ".join(same), flush=True)
            continue
        if not same:
            continue
        drawn: dict[str, list[str]] = {}
        for name in same:
            drawn.setdefault(module_of(name), []).append(name)
        begun = time.monotonic()
        try:
            found = run_group(f"rerun.{group}", drawn, args.max_children)
        except GroupFailed as e:
            print(f"{group}: FAILED, {e}", flush=True)
            failed.append(group)
            continue
        for name, status in found.items():
            reruns[name] = {"was": r["status"][name], "status": status, "commit": head}
            r["status"][name] = status
        r["seconds"] += round(time.monotonic() - begun)
        SAMPLE.write_text(json.dumps(r, indent=1) + "\n", encoding="utf-8")
        killed = sum(s in ("killed", "timeout") for s in found.values())
        print(f"{group}: {killed} of {len(found)} survivors killed now, {round(time.monotonic() - begun)} s",
              flush=True)
    for path in [] if args.groups else sorted(mutate.RESULTS.glob("minigpt.*.json")):
        if not _rerun_full(path, triage, head, args):
            failed.append(path.name)
    if failed:
        raise SystemExit(f"groups not run: {failed}")


def _rerun_full(path: Path, triage: dict, head: str, args: argparse.Namespace) -> bool:
    """A full run's survivors (`mutation/results/<module>.json`) run again the same way, each against the commit
    that last wrote the result (or an earlier rerun's); the result's counts and survivors follow. False if
    mutmut failed."""
    r = json.loads(path.read_text(encoding="utf-8"))
    names = [n for n in r["survivors"] if triage.get(n, {}).get("verdict") != "equivalent"]
    if r.get("sampled") or not names or (args.module and r["module"] not in args.module):
        return True
    reruns = r.setdefault("reruns", {})
    written = subprocess.run(["git", "log", "-1", "--format=%H", "--", str(path.relative_to(mutate.ROOT))],
                             cwd=mutate.ROOT, capture_output=True, text=True).stdout.strip()
    at: dict[str, list[str]] = {}
    for name in names:
        at.setdefault(reruns.get(name, {}).get("commit") or written, []).append(name)
    same = []
    for commit, of_commit in sorted(at.items()):
        kept, changed = unchanged(of_commit, commit)
        same += kept
        for name in changed:
            print(f"{r['module']}: {name} changed since {commit[:10]}: not run (another mutant now)", flush=True)
    if args.list:
        print(f"{r['module']}: {len(same)} to run again: " + " ".join(same), flush=True)
        return True
    if not same:
        return True
    try:
        found = run_group(f"rerun.{mutate._slug(r['module'])}", {r["module"]: same}, args.max_children)
    except GroupFailed as e:
        print(f"{r['module']}: FAILED, {e}", flush=True)
        return False
    for name, status in found.items():
        reruns[name] = {"was": "survived", "status": status, "commit": head}
        if status != "survived":
            r["survivors"].remove(name)
            r["counts"]["survived"] -= 1
            r["counts"][status] = r["counts"].get(status, 0) + 1
    path.write_text(json.dumps(r, indent=1) + "\n", encoding="utf-8")
    print(f"{r['module']}: {sum(s != 'survived' for s in found.values())} of {len(found)} survivors killed now",
          flush=True)
    return True


if __name__ == "__main__":
    main()
